/* PM1a event/control block. */
#include "dev/acpi_pm.h"

#include "dev/acpi.h"

void acpi_pm_init(void *opaque, struct dev_host *h)
{
	struct acpi_pm *pm = opaque;
	pm->host = h;
	pm->sci_line = dev_irq_line(h, acpi_pm_desc.irq);
	pm->sts = 0;
	pm->en = 0;
	pm->cnt = PM1_CNT_SCI_EN;
	pm->sci = false;
}

const struct dev_desc acpi_pm_desc = {
	.name = "acpi-pm1",
	.irq = ACPI_SCI_IRQ,
	DEV_RANGES({ .base = ACPI_PM_BASE, .len = ACPI_PM_PORTS,
		   .fn = acpi_pm_io, .light = false }),   /* may end the VM */
	.init = acpi_pm_init,
};

static void update_sci(struct acpi_pm *pm)
{
	bool level = (pm->sts & pm->en) != 0;
	if (level != pm->sci) {
		pm->sci = level;
		irq_line_set(&pm->sci_line, level);
	}
}

static uint16_t reg_value(const struct acpi_pm *pm, unsigned reg)
{
	switch (reg) {
	case 0: return pm->sts;
	case 1: return pm->en;
	default: return pm->cnt;   /* SLP_EN reads 0 */
	}
}

/* A write of `v` to the bytes of register `reg` selected by `bytes`. */
static int reg_write(struct acpi_pm *pm, unsigned reg, uint16_t v, uint16_t bytes)
{
	switch (reg) {
	case 0:
		pm->sts &= ~(v & bytes & PM1_STS_MASK); /* write 1 to clear */
		break;
	case 1:
		pm->en = (uint16_t)((pm->en & ~bytes) | (v & bytes & PM1_EN_MASK));
		break;
	default: {
		uint16_t n = (uint16_t)((pm->cnt & ~bytes) | (v & bytes));
		pm->cnt = (uint16_t)((n & PM1_CNT_RW_MASK) | PM1_CNT_SCI_EN);
		if ((n & PM1_CNT_SLP_EN) && PM1_CNT_SLP_TYP(n) == ACPI_S5_SLP_TYP) {
			dev_vm_end(pm->host, 0, "ACPI power-off");
			return IO_VM_END;
		}
		break;
	}
	}
	update_sci(pm);
	return IO_OK;
}

int acpi_pm_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct acpi_pm *pm = opaque;
	uint64_t off0 = addr - ACPI_PM_BASE;

	if (!is_write) {
		uint64_t v = 0;
		for (unsigned i = 0; i < size; i++) {
			uint64_t off = off0 + i;
			uint64_t b = off < ACPI_PM_PORTS ? (reg_value(pm, (unsigned)off / 2) >> (8 * (off & 1))) & 0xff
							 : 0xff;
			v |= b << (8 * i);
		}
		*data = v;
		return IO_OK;
	}
	/* Group the written bytes by register, so that a 16-bit write of
	 * SLP_TYP | SLP_EN is one register write. */
	for (unsigned reg = 0; reg < 3; reg++) {
		uint16_t v = 0, bytes = 0;
		for (unsigned i = 0; i < size; i++) {
			uint64_t off = off0 + i;
			if (off / 2 != reg)
				continue;
			unsigned shift = 8 * (unsigned)(off & 1);
			v |= (uint16_t)(((*data >> (8 * i)) & 0xff) << shift);
			bytes |= (uint16_t)(0xff << shift);
		}
		if (bytes) {
			int rc = reg_write(pm, reg, v, bytes);
			if (rc != IO_OK)
				return rc;
		}
	}
	return IO_OK;
}
