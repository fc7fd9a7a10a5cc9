/* A test device for the instruction emulator (the Jailhouse idea): 4 KiB of
 * MMIO whose first half reads back what was written (any size), plus
 * counters a guest uses to check that an instruction made exactly the
 * accesses it should. */
#ifndef DEV_MMIO_TEST_H
#define DEV_MMIO_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define MMIO_TEST_SIZE        0x1000u
#define MMIO_TEST_SCRATCH_END 0x800u   /* [0, 0x800): read back what was written */
#define MMIO_TEST_COUNT       0x800u   /* RO u64: accesses so far (this one excluded) */
#define MMIO_TEST_LAST        0x808u   /* RO u64: last access: size | write << 8 | offset << 16 */
#define MMIO_TEST_RESET       0x810u   /* WO: clears the scratch area and the counters */

struct mmio_test {
	uint64_t base;
	uint64_t count, last;
	uint8_t scratch[MMIO_TEST_SCRATCH_END];
};

void mmio_test_init(void *dev, struct dev_host *h);
int mmio_test_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc mmio_test_desc;

#endif
