#include "dev/mmio_test.h"

#include "lib/string.h"
#include "lightpath/abi.h"

void mmio_test_init(void *opaque, struct dev_host *h)
{
	struct mmio_test *dev = opaque;
	(void)h;
	memset(dev, 0, sizeof(*dev));
	dev->base = LP_MMIO_TEST_BASE;
}

int mmio_test_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct mmio_test *dev = opaque;
	uint64_t off = addr - dev->base;
	uint64_t mask = size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
	uint64_t record = size | (uint64_t)is_write << 8 | off << 16;

	if (off + size <= MMIO_TEST_SCRATCH_END) {
		if (is_write) {
			uint64_t v = *data;
			memcpy(dev->scratch + off, &v, size);
		} else {
			uint64_t v = 0;
			memcpy(&v, dev->scratch + off, size);
			*data = v;
		}
	} else if (!is_write && off == MMIO_TEST_COUNT) {
		*data = dev->count & mask;
	} else if (!is_write && off == MMIO_TEST_LAST) {
		*data = dev->last & mask;
	} else if (is_write && off == MMIO_TEST_RESET) {
		memset(dev->scratch, 0, sizeof(dev->scratch));
		dev->count = 0;
		dev->last = 0;
		return IO_OK;
	} else if (!is_write) {
		*data = ~0ull & mask;
	}
	dev->count++;
	dev->last = record;
	return IO_OK;
}

const struct dev_desc mmio_test_desc = {
	.name = "mmio-test", .mmio = true,
	DEV_RANGES({ .base = LP_MMIO_TEST_BASE, .len = MMIO_TEST_SIZE,
		   .fn = mmio_test_io, .light = false }),
	.init = mmio_test_init,
};
