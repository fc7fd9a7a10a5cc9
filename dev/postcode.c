/* POST-code sink at port 0x80. */
#include "dev/postcode.h"

#include "lightpath/abi.h"

void postcode_init(void *opaque, struct dev_host *h)
{
	struct postcode *dev = opaque;
	(void)h;
	dev->base = LP_BENCH_PORT_OUT;
	dev->last = 0;
}

const struct dev_desc postcode_desc = {
	.name = "postcode",
	DEV_RANGES({ .base = LP_BENCH_PORT_OUT, .len = POSTCODE_PORTS,
		   .fn = postcode_io, .light = true }),
	.init = postcode_init,
};

int postcode_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct postcode *dev = opaque;
	(void)addr;
	(void)size;

	if (is_write)
		dev->last = (uint8_t)*data;
	else
		*data = dev->last;
	return IO_OK;
}
