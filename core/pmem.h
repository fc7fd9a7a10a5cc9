/* Physical memory: a first-fit allocator over the free ranges of the boot
 * memory map. Everything below 4 GiB is identity mapped, so a physical
 * address is also a pointer. */
#ifndef CORE_PMEM_H
#define CORE_PMEM_H

#include <stdint.h>

#include "core/bootinfo.h"

void pmem_init(const struct boot_info *bi, uint64_t reserved_end);
/* Returns a zeroed block of `size` bytes aligned to `align` (a power of two),
 * or 0 when no free range is large enough. */
uint64_t pmem_alloc(uint64_t size, uint64_t align);
void pmem_free(uint64_t addr, uint64_t size);
uint64_t pmem_free_bytes(void);

#endif
