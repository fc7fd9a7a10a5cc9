/* The PC platform's object (struct dev_host), for the files that make up the
 * PC: its wiring (vmm/platform.c), the services devices reach
 * (vmm/dev_host.c), the APIC bus, the virtio glue and console input. The
 * devices themselves see only the opaque struct dev_host of dev/device.h. */
#ifndef VMM_DEV_HOST_H
#define VMM_DEV_HOST_H

#include <stdint.h>

#include "dev/acpi_pm.h"
#include "dev/debug_exit.h"
#include "dev/fwcfg.h"
#include "dev/hpet.h"
#include "dev/i8042.h"
#include "dev/ioapic.h"
#include "dev/mmio_test.h"
#include "dev/pci_host.h"
#include "dev/pic8259.h"
#include "dev/pit8254.h"
#include "dev/pmtimer.h"
#include "dev/postcode.h"
#include "dev/rtc.h"
#include "dev/uart16550.h"
#include "dev/virtio_blk.h"
#include "dev/virtio_net.h"
#include "vmm/vm.h"

#define CONSOLE_BACKLOG 4096u   /* typed bytes held for a guest that is not reading */

/* A virtio function's place in the PC: its two MMIO ranges (vm->mmio
 * indices: BAR 4, BAR 1) and where they are, its INTx line and its
 * interrupt counts. */
struct virtio_slot {
	struct dev_host *pc;
	struct virtio_pci *t;
	unsigned mmio[2];
	uint64_t base[2];                 /* where BAR 4 and BAR 1 are now */
	unsigned gsi;
	uint64_t msi_sent, msi_dropped;   /* MSI-X messages: delivered, outside the APICs' window */
	uint64_t intx_raised;
};

/* The PC of one VM: its devices, the wiring of their interrupt lines, and the
 * host console's input for it. The devices know it only as their opaque
 * struct dev_host: the services of dev/device.h (interrupt lines, timers, the
 * clock, the console, ending the VM; vmm/dev_host.c) are all they reach. */
struct dev_host {
	struct dev_host_head head;   /* first: dev_host_vm() */
	struct uart16550 uart;
	struct debug_exit debug_exit;
	struct pmtimer pmtimer;
	struct postcode postcode;
	struct mmio_test mmio_test;
	struct pic8259 pic;
	struct ioapic ioapic;
	struct pit8254 pit;
	struct rtc rtc;
	struct pci_host pci;
	struct i8042 kbd;
	struct fwcfg fwcfg;
	struct acpi_pm acpi_pm;
	struct hpet hpet;
	struct vm_timer console_timer;
	/* disk = and net = (docs/VIRTIO.md): virtio functions on the PCI bus, their
	 * wiring, the guest memory their queues reach, the disk's image (a
	 * private copy when writable) and the network device's link port */
	struct virtio_blk blk;
	struct virtio_net net;
	struct virtio_slot blk_slot, net_slot;
	uint8_t *disk_copy;
	struct net_port *net_port;
	struct vq_guest_mem guest_mem;
	/* host console input the guest's UART could not take yet (a ring) */
	uint8_t console_backlog[CONSOLE_BACKLOG];
	unsigned console_backlog_head, console_backlog_len;
};
_Static_assert(__builtin_offsetof(struct dev_host, head) == 0, "dev_host_vm() reads the head");

#endif
