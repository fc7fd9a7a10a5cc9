/* isa-debug-exit: the way QEMU-style test kernels report their result. */
#include "dev/debug_exit.h"

#include "lightpath/abi.h"

void debug_exit_init(void *opaque, struct dev_host *h)
{
	struct debug_exit *dev = opaque;
	dev->host = h;
	dev->base = LP_DEBUG_EXIT_PORT;
}

const struct dev_desc debug_exit_desc = {
	.name = "isa-debug-exit",
	DEV_RANGES({ .base = LP_DEBUG_EXIT_PORT, .len = DEBUG_EXIT_PORTS,
		   .fn = debug_exit_io, .light = true }),
	.init = debug_exit_init,
};

int debug_exit_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct debug_exit *dev = opaque;
	(void)addr;

	if (!is_write) {
		*data = 0;
		return IO_OK;
	}
	uint64_t value = *data;
	if (size < 8)
		value &= (1ull << (8 * size)) - 1;
	dev_vm_end(dev->host, (unsigned)value, "isa-debug-exit");
	return IO_VM_END;
}
