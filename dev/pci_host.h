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
 * type-2 probe fails as it should.
 *
 * ECAM (PCI Express 5.0, 7.2.2), for a VM with a function on its bus: bus
 * 0's configuration space as 1 MiB of memory at PCI_ECAM_GPA (in the MMIO
 * hole, below the virtio BARs at 0xfe000000; announced by the ACPI MCFG
 * table, dev/acpi.h), offset = devfn << 12 | register. Accesses of 1, 2 or
 * 4 bytes, naturally aligned, reach the same functions as mechanism #1;
 * registers 256-4095 (PCIe extended space, which no function here has)
 * read 0 and ignore writes: a zero header at 0x100 is PCIe's "no extended
 * capability" (PCIe 5.0, 7.6.3), where Linux's walk ends (all-ones would
 * end it too, taken as "no extended space"). An absent function reads
 * all-ones there too; other widths or misaligned accesses read all-ones
 * and write nothing. */
#ifndef DEV_PCI_HOST_H
#define DEV_PCI_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"
#include "dev/pci_bus.h"

#define PCI_CONFIG_ADDRESS 0xcf8u
#define PCI_CONFIG_DATA    0xcfcu
#define PCI_HOST_PORTS     8u      /* 0xcf8-0xcff */
#define PCI_ECAM_GPA       0xe0000000ull
#define PCI_ECAM_SIZE      0x100000ull   /* bus 0: 32 devices x 8 functions x 4 KiB */
#define PCI_ECAM_FUNC_SIZE 4096u

struct pci_host {
	uint32_t address;
	uint64_t config_reads;  /* data-port reads, for statistics and tests */
	struct pci_bus bus;
};

void pci_host_init(void *dev, struct dev_host *h);
int pci_host_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc pci_host_desc;
/* The ECAM window (a heavy MMIO range: configuration cycles are rare). */
int pci_ecam_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc pci_ecam_desc;

#endif
