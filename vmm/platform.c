/* The PC every VM gets, wired: its devices in one table, each one inited
 * and its ranges registered on the VM's ports and MMIO pages; then what
 * only a PC wires: the I/O APIC and every local APIC to the APIC bus, the
 * interrupt controllers as firmware leaves them, the HPET's legacy route. */
#include "vmm/platform.h"

#include "core/console.h"
#include "core/pmem.h"
#include "dev/acpi.h"
#include "dev/pc_irq.h"
#include "lib/string.h"
#include "vmm/apic_bus.h"
#include "vmm/console_input.h"
#include "vmm/dev_host.h"
#include "vmm/io_registry.h"
#include "vmm/lapic_access.h"
#include "vmm/pc_virtio.h"
#include "vmm/vm.h"

#define PLATFORM_BYTES ((sizeof(struct dev_host) + 0xfffull) & ~0xfffull)

#define DISK_BYTES(vm) (((vm)->disk_size + 0xfffull) & ~0xfffull)
#define NET_PORT_BYTES ((sizeof(struct net_port) + 0xfffull) & ~0xfffull)

bool platform_alloc(struct vm *vm)
{
	struct dev_host *pc = (struct dev_host *)(uintptr_t)pmem_alloc(PLATFORM_BYTES, 4096);
	if (!pc)
		return false;
	memset(pc, 0, sizeof(*pc));
	pc->head.vm = vm;
	vm->pc = pc;
	/* a writable disk is the VM's own copy: the module may serve other VMs */
	if (vm->disk && !vm->disk_ro) {
		pc->disk_copy = (uint8_t *)(uintptr_t)pmem_alloc(DISK_BYTES(vm), 4096);
		if (!pc->disk_copy)
			return false;
		memcpy(pc->disk_copy, vm->disk, vm->disk_size);
	}
	if (vm->net) {
		pc->net_port = (struct net_port *)(uintptr_t)pmem_alloc(NET_PORT_BYTES, 4096);
		if (!pc->net_port)
			return false;
		memset(pc->net_port, 0, sizeof(*pc->net_port));
	}
	return true;
}

void platform_free(struct vm *vm)
{
	if (vm->pc && vm->pc->disk_copy)
		pmem_free((uint64_t)(uintptr_t)vm->pc->disk_copy, DISK_BYTES(vm));
	if (vm->pc && vm->pc->net_port) {
		net_link_detach(vm->pc->net_port);   /* before its memory goes: nobody sends to it */
		pmem_free((uint64_t)(uintptr_t)vm->pc->net_port, NET_PORT_BYTES);
	}
	if (vm->pc)
		pmem_free((uint64_t)(uintptr_t)vm->pc, PLATFORM_BYTES);
	vm->pc = 0;
}

#define PC_AT(field) __builtin_offsetof(struct dev_host, field)
/* The platform a device object in it belongs to. */
#define PC_OF(dev, field) ((struct dev_host *)(void *)((char *)(dev) - PC_AT(field)))

/* The HPET in a VM of several vCPUs, on the light path: a read of the main
 * counter only reads the VM's time (Linux's calibrations and clocksource
 * read it back to back and give up on slow reads); the rest needs the VM
 * lock. (clock_read_fast's last_read store races between vCPUs harmlessly:
 * such a VM never polls, guest_clock_init.) */
static int hpet_mmio_shared(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	if (vm_shared_ok(PC_OF(dev, hpet)->head.vm) ||
	    (!is_write && ((addr - HPET_BASE) & ~7ull) == HPET_REG_COUNTER))
		return hpet_mmio(dev, addr, data, size, is_write);
	return IO_NEEDS_LOCK;
}

/* The 8259s: an EOI or an unmask can make a waiting IRQ deliverable (the
 * accessing vCPU's hazard check looks). */
static int pic_io_checked(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	int ret = pic_io(dev, addr, data, size, is_write);
	if (is_write)
		exit_vcpu()->pending |= VCPU_PENDING_RECHECK;
	return ret;
}

/* The HPET's legacy replacement route takes IRQ0 from the PIT. */
static void hpet_legacy_pit(void *pit, bool on)
{
	pit_irq_replace(pit, on);
}

/* The platform's devices, the one list of them: platform_create inits
 * each (its descriptor's init) and registers its ranges, in this order.
 * The MMIO lookup scans them in this order: the local APIC's page first
 * (an xAPIC guest's EOI, its most frequent MMIO access), then the I/O APIC
 * and the HPET, the bench's test device, the virtio BARs, PCI's ECAM
 * window last (configuration is rare). `at` is the device object's place
 * in struct dev_host, the callbacks' dev; `one` and `several` are the
 * platform's wrappers of the device's first callback (every range that
 * has it) in a VM of one vCPU and of several, 0 for the callback itself. */
#define PC_BOOT_LAPIC UINT32_MAX   /* not in dev_host: the boot vCPU's */
#define PC_VIRTIO ((const struct dev_desc *)0)   /* disk = and net = go here */

static const struct pc_device {
	const struct dev_desc *desc;
	io_handler_fn one, several;
	uint32_t at;
	bool pci;   /* only with a PCI function on the bus (disk = or net =) */
} pc_devices[] = {
	{ .desc = &uart16550_desc, .at = PC_AT(uart) },
	{ .desc = &debug_exit_desc, .at = PC_AT(debug_exit) },
	{ .desc = &pmtimer_desc, .at = PC_AT(pmtimer) },
	{ .desc = &postcode_desc, .at = PC_AT(postcode) },
	{ .desc = &pic8259_desc, .at = PC_AT(pic), .one = pic_io_checked, .several = pic_io_checked },
	{ .desc = &pit8254_desc, .at = PC_AT(pit) },
	{ .desc = &rtc_desc, .at = PC_AT(rtc) },
	{ .desc = &pci_host_desc, .at = PC_AT(pci) },
	{ .desc = &i8042_desc, .at = PC_AT(kbd) },
	{ .desc = &fwcfg_desc, .at = PC_AT(fwcfg) },
	{ .desc = &acpi_pm_desc, .at = PC_AT(acpi_pm) },
	{ .desc = &lapic_desc, .at = PC_BOOT_LAPIC,
	  .one = lapic_mmio_checked, .several = lapic_mmio_shared },
	{ .desc = &ioapic_desc, .at = PC_AT(ioapic),
	  .one = ioapic_mmio_checked, .several = ioapic_mmio_checked },
	{ .desc = &hpet_desc, .at = PC_AT(hpet), .several = hpet_mmio_shared },
	{ .desc = &mmio_test_desc, .at = PC_AT(mmio_test) },
	{ .desc = PC_VIRTIO },
	{ .desc = &pci_ecam_desc, .at = PC_AT(pci), .pci = true },
};

/* Inits one device and registers its ranges. In a VM of several vCPUs
 * only a lock_free device stays light: there the light path takes no lock
 * (docs/SMP.md, "Locks"). */
static void add_device(struct vm *vm, const struct pc_device *d)
{
	const struct dev_desc *desc = d->desc;
	bool several = vm->nr_vcpus > 1;
	io_handler_fn wrap = several ? d->several : d->one;
	void *dev = d->at == PC_BOOT_LAPIC ? (void *)&vm->vcpu->lapic : (char *)vm->pc + d->at;
	if (desc->init)
		desc->init(dev, vm->pc);
	for (unsigned i = 0; i < desc->nr_ranges; i++) {
		const struct dev_range *rg = &desc->ranges[i];
		struct io_range r = {
			.base = rg->base, .len = rg->len, .dev = dev,
			.name = rg->name ? rg->name : desc->name,
			.fn = wrap && rg->fn == desc->ranges[0].fn ? wrap : rg->fn,
			.light = rg->light && (!several || desc->lock_free),
		};
		if (desc->mmio ? vm_register_mmio(vm, &r) : vm_register_io(vm, &r))
			panic("vm%u: too many %s ranges", vm->id, desc->mmio ? "MMIO" : "port");
	}
}

/* What only a PC wires, after every device of the table is inited: the
 * I/O APIC's messages and every local APIC (each vCPU's own, APIC ID i for
 * vCPU i) on the APIC bus, a level EOI back to the I/O APIC; the interrupt
 * controllers as the BIOS leaves them (no device interrupt on an exception
 * vector); the HPET's legacy route, which takes IRQ0 from the PIT. */
static void wire_pc(struct vm *vm, struct dev_host *pc)
{
	ioapic_set_deliver(&pc->ioapic, ioapic_to_bus, pc);
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct lapic *a = &vm->vcpus[i]->lapic;
		lapic_init(a, pc, i, i == 0);
		a->timer.home = vm->vcpus[i];
		lapic_set_eoi_hook(a, pc_lapic_eoi, &pc->ioapic);
		lapic_set_send_hook(a, apic_bus_send, pc);
	}
	pc_irq_firmware_setup(&pc->pic, &pc->ioapic, &vm->vcpu->lapic);
	hpet_set_legacy(&pc->hpet, hpet_legacy_pit, &pc->pit);
}

void platform_create(struct vm *vm)
{
	bool pci = vm->disk || vm->net;

	memset(vm->port_map, VM_PORT_SLOW, sizeof(vm->port_map));   /* nobody */
	for (size_t i = 0; i < sizeof(pc_devices) / sizeof(pc_devices[0]); i++) {
		const struct pc_device *d = &pc_devices[i];
		if (d->desc == PC_VIRTIO)
			pc_virtio_create(vm);
		else if (pci || !d->pci)
			add_device(vm, d);
	}
	wire_pc(vm, vm->pc);
	lapic_register_msrs(vm);
}

void platform_start(struct vm *vm)
{
	console_input_start(vm);
	pc_virtio_start(vm);
}
