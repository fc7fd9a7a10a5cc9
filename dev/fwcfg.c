/* fw_cfg items, built on the fly from the VM's configuration. */
#include "dev/fwcfg.h"

void fwcfg_init(void *opaque, struct dev_host *h)
{
	struct fwcfg *dev = opaque;
	unsigned ncpus = dev_nr_vcpus(h);
	dev->selector = 0;
	dev->offset = 0;
	dev->ram_size = dev_ram_size(h);
	dev->ncpus = (uint16_t)ncpus;
	dev->max_cpus = (uint16_t)ncpus;
}

const struct dev_desc fwcfg_desc = {
	.name = "fw_cfg",
	DEV_RANGES({ .base = FWCFG_BASE, .len = FWCFG_PORTS, .fn = fwcfg_io, .light = true }),
	.init = fwcfg_init,
};

static uint8_t le_byte(uint64_t v, uint32_t off, uint32_t len)
{
	return off < len ? (uint8_t)(v >> (8 * off)) : 0;
}

/* Byte `off` of the selected item; 0 past its end or for unknown items. */
static uint8_t item_byte(const struct fwcfg *dev, uint32_t off)
{
	switch (dev->selector) {
	case FW_CFG_SIGNATURE:
		return off < 4 ? (uint8_t)"QEMU"[off] : 0;
	case FW_CFG_ID:
		return le_byte(1, off, 4);           /* traditional interface only */
	case FW_CFG_RAM_SIZE:
		return le_byte(dev->ram_size, off, 8);
	case FW_CFG_NB_CPUS:
		return le_byte(dev->ncpus, off, 2);
	case FW_CFG_MAX_CPUS:
		return le_byte(dev->max_cpus, off, 2);
	case FW_CFG_FILE_DIR:
		return 0;                            /* count (BE u32) = 0, no entries */
	default:
		return 0;
	}
}

int fwcfg_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct fwcfg *dev = opaque;

	if (addr == FWCFG_BASE) {
		/* the selector: a 16-bit register (a byte write sets its low
		 * byte); reads return 0 */
		if (is_write) {
			dev->selector = (uint16_t)(size >= 2 ? *data : (*data & 0xff));
			dev->offset = 0;
		} else {
			*data = 0;
		}
		return IO_OK;
	}
	if (is_write)
		return IO_OK;   /* writes to items are ignored (QEMU 2.4+) */
	/* the data port is one byte wide: a wider read takes that many
	 * consecutive bytes of the item */
	uint64_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)item_byte(dev, dev->offset++) << (8 * i);
	*data = v;
	return IO_OK;
}
