/* PCI configuration mechanism #1 and the ECAM window onto bus 0. */
#include "dev/pci_host.h"

#define CONFIG_ENABLE (1u << 31)

void pci_host_init(void *opaque, struct dev_host *h)
{
	struct pci_host *dev = opaque;
	(void)h;
	dev->address = 0;
	dev->config_reads = 0;
	pci_bus_init(&dev->bus);
}

const struct dev_desc pci_host_desc = {
	.name = "pci-host",
	DEV_RANGES({ .base = PCI_CONFIG_ADDRESS, .len = PCI_HOST_PORTS,
		   .fn = pci_host_io, .light = true }),
	.init = pci_host_init,
};

int pci_host_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pci_host *dev = opaque;

	if (addr == PCI_CONFIG_ADDRESS && size == 4) {
		if (is_write)
			dev->address = (uint32_t)*data & 0x80fffffcu;
		else
			*data = dev->address;
		return IO_OK;
	}
	unsigned k = (unsigned)(addr - PCI_CONFIG_DATA);
	bool cycle = addr >= PCI_CONFIG_DATA && k + size <= 4 && (dev->address & CONFIG_ENABLE);
	uint8_t bus = (uint8_t)(dev->address >> 16), devfn = (uint8_t)(dev->address >> 8);
	unsigned off = (dev->address & 0xfc) + k;
	if (is_write) {
		if (cycle)
			pci_bus_write(&dev->bus, bus, devfn, off, size, (uint32_t)*data);
		return IO_OK;
	}
	if (addr >= PCI_CONFIG_DATA)
		dev->config_reads++;
	*data = cycle ? pci_bus_read(&dev->bus, bus, devfn, off, size)
		      : size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
	return IO_OK;
}

const struct dev_desc pci_ecam_desc = {
	.name = "pci-ecam", .mmio = true,   /* (no init: pci_host_desc's object) */
	DEV_RANGES({ .base = PCI_ECAM_GPA, .len = PCI_ECAM_SIZE,
		   .fn = pci_ecam_mmio, .light = false }),
};

int pci_ecam_mmio(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pci_host *dev = opaque;

	uint64_t off = addr - PCI_ECAM_GPA;
	uint8_t devfn = (uint8_t)(off / PCI_ECAM_FUNC_SIZE);
	unsigned reg = (unsigned)(off % PCI_ECAM_FUNC_SIZE);
	bool ok = off < PCI_ECAM_SIZE && (size == 1 || size == 2 || size == 4) &&
		  !(reg & (size - 1));
	bool present = ok && pci_bus_read(&dev->bus, 0, devfn, PCI_VENDOR_ID, 2) != 0xffff;
	if (is_write) {
		if (present && reg < PCI_CFG_SIZE)
			pci_bus_write(&dev->bus, 0, devfn, reg, size, (uint32_t)*data);
		return IO_OK;
	}
	dev->config_reads++;
	if (!present)
		*data = size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
	else
		*data = reg < PCI_CFG_SIZE ? pci_bus_read(&dev->bus, 0, devfn, reg, size) : 0;
	return IO_OK;
}
