/* Second-stage page tables (AMD nested page tables, Intel EPT) that map
 * guest RAM and nothing else: GPA 0..mem_size onto the VM's host memory, in
 * 2 MiB pages. The two formats share their layout and differ only in the
 * permission and memory-type bits. */
#ifndef VMM_STAGE2_H
#define VMM_STAGE2_H

#include <stdint.h>

struct vm;

/* Builds the tables into vm->npt_root. Returns negative when out of
 * memory or when mem_size is not whole 2 MiB pages (a partial last page
 * would map host memory). */
int stage2_map_ram(struct vm *vm, uint64_t table_flags, uint64_t leaf_flags);
void stage2_free(struct vm *vm);

#endif
