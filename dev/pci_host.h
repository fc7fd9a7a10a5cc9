/* PCI configuration mechanism #1: 0xCF8 is the 32-bit CONFIG_ADDRESS
 * register (reads back what was written, reserved bits 30:24 and 1:0 as
 * zero), 0xCFC-0xCFF the data window (any size and offset within the
 * dword) onto bus 0 (dev/pci_bus.h). With the enable bit clear, or an
 * access that crosses the window's dword, reads are all-ones and writes
 * dropped. A VM's bus is empty until a device is put on it (none is yet):
 * then every configuration read returns all-ones (no device answers, not
 * even a host bridge) and writes are dropped.
 *
 * Why no host bridge on an empty bus: Linux's type-1 probe (pci_check_type1) needs only
 * CONFIG_ADDRESS to read back 0x80000000; its sanity check then looks for a
 * host bridge or an Intel/Compaq device on bus 0 (unless DMI says 2001+),
 * and with none it reports "PCI: System does not support PCI" and goes on
 * without PCI, which costs no bus scan at all. Byte and word accesses to
 * 0xCF8-0xCFB are not the address register (they read all-ones), so the
 * type-2 probe fails as it should. */
#ifndef DEV_PCI_HOST_H
#define DEV_PCI_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"
#include "dev/pci_bus.h"

#define PCI_CONFIG_ADDRESS 0xcf8u
#define PCI_CONFIG_DATA    0xcfcu
#define PCI_HOST_PORTS     8u      /* 0xcf8-0xcff */

struct pci_host {
	uint32_t address;
	uint64_t config_reads;  /* data-port reads, for statistics and tests */
	struct pci_bus bus;
};

void pci_host_init(struct pci_host *dev);
int pci_host_io(struct vcpu *vcpu, uint64_t addr, uint64_t *data, unsigned size,
		bool is_write, void *opaque);
void pci_host_range(struct pci_host *dev, struct io_range *r);

#endif
