/* PCI mechanism #1 on an empty bus. */
#include "dev/pci_host.h"

void pci_host_init(struct pci_host *dev)
{
	dev->address = 0;
	dev->config_reads = 0;
}

void pci_host_range(struct pci_host *dev, struct io_range *r)
{
	r->base = PCI_CONFIG_ADDRESS;
	r->len = PCI_HOST_PORTS;
	r->fn = pci_host_io;
	r->opaque = dev;
	r->light = true;
	r->name = "pci-host";
}

int pci_host_io(struct vcpu *vcpu, uint64_t addr, uint64_t *data, unsigned size,
		bool is_write, void *opaque)
{
	struct pci_host *dev = opaque;
	(void)vcpu;

	if (addr == PCI_CONFIG_ADDRESS && size == 4) {
		if (is_write)
			dev->address = (uint32_t)*data & 0x80fffffcu;
		else
			*data = dev->address;
		return IO_OK;
	}
	if (is_write)
		return IO_OK;   /* configuration writes: nobody is there */
	if (addr >= PCI_CONFIG_DATA)
		dev->config_reads++;
	*data = size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
	return IO_OK;
}
