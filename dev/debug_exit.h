/* isa-debug-exit (QEMU's test device) at port 0xf4: a guest write of value v
 * ends the VM with status v (QEMU exits with (v << 1) | 1). */
#ifndef DEV_DEBUG_EXIT_H
#define DEV_DEBUG_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define DEBUG_EXIT_PORTS 4u /* QEMU's default iosize */

struct debug_exit {
	struct dev_host *host;
	uint16_t base;
};

void debug_exit_init(void *dev, struct dev_host *h);

/* Write: calls dev_vm_end(host, value of `size` bytes, "isa-debug-exit") and
 * returns IO_VM_END. Read: returns 0, as QEMU does. */
int debug_exit_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

extern const struct dev_desc debug_exit_desc;

#endif
