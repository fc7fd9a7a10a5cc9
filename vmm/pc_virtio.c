/* disk = and net = (docs/VIRTIO.md): the virtio functions on the PC's PCI
 * bus, where firmware would place them; their BARs as MMIO ranges that
 * follow the guest's moves, their interrupts (MSI-X on the APIC bus, INTx on
 * a PCI line), the guest memory their queues reach, and the network link. */
#include "vmm/pc_virtio.h"

#include "core/console.h"
#include "core/smp.h"
#include "dev/pci_host.h"
#include "dev/virtio_blk.h"
#include "dev/virtio_net.h"
#include "lib/string.h"
#include "vmm/apic_bus.h"
#include "vmm/dev_host.h"
#include "vmm/firmware.h"
#include "vmm/io_registry.h"
#include "vmm/vcpu_run.h"
#include "vmm/vm.h"

static void add_mmio(struct vm *vm, const struct io_range *r)
{
	if (vm_register_mmio(vm, r))
		panic("vm%u: too many MMIO ranges", vm->id);
}

/* Where firmware would place them: BARs in the MMIO hole, INTA# on a PCI
 * interrupt line of the I/O APIC and the 8259. */
#define BLK_DEVFN      PCI_DEVFN(FW_PCI_DISK_DEV, 0)   /* where the ACPI tables say */
#define BLK_BAR4_GPA   0xfe000000ull
#define BLK_BAR1_GPA   0xfe004000ull
#define BLK_INTX_GSI   FW_PCI_DISK_GSI
#define NET_DEVFN      PCI_DEVFN(FW_PCI_NET_DEV, 0)
#define NET_BAR4_GPA   0xfe008000ull
#define NET_BAR1_GPA   0xfe00c000ull
#define NET_INTX_GSI   FW_PCI_NET_GSI

/* The virtqueues reach the VM's RAM, every range checked (gpa_to_host). */
static bool guest_in_ram(void *ctx, uint64_t gpa, uint64_t len)
{
	return gpa_to_host(ctx, gpa, len) != 0;
}

static int guest_read(void *ctx, uint64_t gpa, void *dst, size_t len)
{
	const void *p = gpa_to_host(ctx, gpa, len);
	if (!p)
		return -1;
	memcpy(dst, p, len);
	return 0;
}

static int guest_write(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	void *p = gpa_to_host(ctx, gpa, len);
	if (!p)
		return -1;
	memcpy(p, src, len);
	return 0;
}

/* Guest RAM is one mapping for the VM's life: the rings are read through it. */
static uint8_t *guest_ram(void *ctx)
{
	return (uint8_t *)(uintptr_t)((struct vm *)ctx)->mem_hpa;
}

/* The guest's access to a BAR (the MMIO range's dev is its slot): at
 * an offset from where the BAR is now, which virtio_bar_moved keeps. */
static int virtio_bar4_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct virtio_slot *slot = dev;
	if (is_write)
		virtio_pci_write(slot->t, addr - slot->base[0], size, *data);
	else
		*data = virtio_pci_read(slot->t, addr - slot->base[0], size);
	return IO_OK;
}

static int virtio_msix_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct virtio_slot *slot = dev;
	if (is_write)
		virtio_pci_msix_write(slot->t, addr - slot->base[1], size, *data);
	else
		*data = virtio_pci_msix_read(slot->t, addr - slot->base[1], size);
	return IO_OK;
}

/* What a BAR decodes moved: its MMIO range follows (length 0: nowhere). */
static void virtio_bar_moved(struct pci_func *f, unsigned bar, uint64_t addr, bool enabled)
{
	struct virtio_slot *slot = ((struct virtio_pci *)f)->host;
	struct vm *vm = slot->pc->head.vm;
	unsigned i = bar == VIRTIO_PCI_BAR ? 0 : 1;
	/* a BAR moved onto the VM's RAM (or past 2^64) decodes nothing there:
	 * RAM answers those addresses without an exit anyway */
	bool usable = addr >= vm->mem_size && addr + f->bar_size[bar] > addr;
	slot->base[i] = usable ? addr : vm->mem_size;
	vm->mmio[slot->mmio[i]].base = slot->base[i];
	vm->mmio[slot->mmio[i]].len = enabled && usable ? f->bar_size[bar] : 0;
}

/* An MSI-X message: a write to the local APICs' window (address 0xFEEx_xxxx:
 * destination in bits 19:12, logical in bit 2; data: vector, delivery mode)
 * is an interrupt message on the VM's APIC bus. */
static void virtio_msi(struct virtio_pci *t, uint64_t addr, uint32_t data)
{
	struct virtio_slot *slot = t->host;
	unsigned dm = (data >> 8) & 7;
	if ((addr >> 20) != 0xfee || (dm != LAPIC_DM_FIXED && dm != LAPIC_DM_LOWEST &&
				      dm != LAPIC_DM_NMI)) {
		slot->msi_dropped++;   /* a PCI write nobody decodes, or a mode a device may not send */
		return;
	}
	struct apic_msg m = {
		.dest = (uint32_t)(addr >> 12) & 0xff, .vector = (uint8_t)data,
		.delivery_mode = (uint8_t)dm, .shorthand = LAPIC_SH_NONE, .logical = addr & 4,
	};
	apic_bus_send(slot->pc, 0, &m);
	slot->msi_sent++;
}

static void virtio_intx(struct virtio_pci *t, bool level)
{
	struct virtio_slot *slot = t->host;
	slot->intx_raised += level;
	struct irq_line l = dev_irq_line(slot->pc, slot->gsi);
	irq_line_set(&l, level);
}

/* A queue stopped at its doorbell's budget with work left: the vCPU that
 * ran the doorbell (this CPU's) takes the rest at its next exit, like a
 * kick from another CPU (vcpu_take_notices -> pc_virtio_take_kicks). Not
 * vcpu_notify, whose same-CPU form only sets a hazard bit: a self-IPI also
 * ends a host wait (a halted vCPU) and makes the next VMRUN exit at once,
 * so the vCPU passes its heavy path (time limit, VM end) between budgets. */
static void virtio_resume_later(struct virtio_pci *t)
{
	(void)t;
	struct vcpu *self = exit_vcpu();
	if (!self)
		return;
	__atomic_store_n(&self->kicked, true, __ATOMIC_RELEASE);
	smp_kick(self->host_cpu);
}

/* Puts the function `t` (initialised) on the bus at devfn, as firmware
 * leaves it: BARs placed, memory decode and bus mastering on, INTA# routed
 * to `gsi`. Its BARs are light MMIO ranges in a VM of one vCPU: the light
 * path's decode takes their 32-bit MOVs (nothing the device does needs the
 * heavy path's state); with several, the device's state is shared and
 * needs the VM lock, which the heavy path holds. */
static void virtio_place(struct vm *vm, struct dev_host *pc, struct virtio_slot *slot,
			 struct virtio_pci *t, uint8_t devfn, uint64_t bar4, uint64_t bar1, unsigned gsi,
			 const char *name)
{
	if (pci_bus_add(&pc->pci.bus, &t->pci))
		panic("vm%u: cannot put its %s on the PCI bus", vm->id, name);
	*slot = (struct virtio_slot){ .pc = pc, .t = t, .gsi = gsi };
	t->host = slot;
	t->msi = virtio_msi;
	t->intx = virtio_intx;
	t->resume_later = virtio_resume_later;
	for (unsigned i = 0; i < 2; i++) {   /* placed (and sized) by virtio_bar_moved */
		struct io_range r = { .base = vm->mem_size, .len = 0,
				      .fn = i ? virtio_msix_mmio : virtio_bar4_mmio, .dev = slot,
				      .light = vm->nr_vcpus == 1, .name = name };
		add_mmio(vm, &r);
		slot->mmio[i] = vm->nr_mmio - 1;
	}
	t->pci.bar_moved = virtio_bar_moved;
	struct pci_bus *bus = &pc->pci.bus;
	pci_bus_write(bus, 0, devfn, PCI_BAR0 + 4 * VIRTIO_PCI_BAR, 4, (uint32_t)bar4);
	pci_bus_write(bus, 0, devfn, PCI_BAR0 + 4 * VIRTIO_PCI_BAR + 4, 4, (uint32_t)(bar4 >> 32));
	pci_bus_write(bus, 0, devfn, PCI_BAR0 + 4 * VIRTIO_PCI_MSIX_BAR, 4, (uint32_t)bar1);
	pci_bus_write(bus, 0, devfn, PCI_INTR_LINE, 1, gsi);
	pci_bus_write(bus, 0, devfn, PCI_COMMAND, 2, PCI_CMD_MEM | PCI_CMD_MASTER);
}

void pc_virtio_print_stats(struct vm *vm)
{
	const struct dev_host *pc = vm->pc;
	if (!pc)
		return;
	if (vm->disk) {
		const struct virtio_blk *b = &pc->blk;
		const struct virtio_slot *s = &pc->blk_slot;
		kprintf("  disk: %lu reads (%lu KiB), %lu writes (%lu KiB), %lu flushes; interrupts: "
			"%lu MSI-X messages, %lu dropped, %lu INTx\n", b->stats.reads,
			b->stats.bytes_read >> 10, b->stats.writes, b->stats.bytes_written >> 10,
			b->stats.flushes, s->msi_sent, s->msi_dropped, s->intx_raised);
		kprintf("  disk refused: %lu outside the image, %lu malformed, %lu writes to a read-only "
			"disk, %lu unsupported, %lu broken rings; %lu resets, %lu undefined accesses\n",
			b->stats.out_of_range, b->stats.bad_requests, b->stats.ro_writes,
			b->stats.unsupported, b->stats.queue_errors, b->t.resets, b->t.bad_accesses);
		if (b->t.budget_stops)
			kprintf("  disk: %lu doorbell turns stopped at their budget (%u descriptors, %u KiB); "
				"the longest of them: %lu descriptors, %lu KiB\n", b->t.budget_stops,
				VQ_DOORBELL_BUDGET, VIRTIO_DOORBELL_BYTES >> 10, b->t.longest_turn_descs,
				b->t.longest_turn_bytes >> 10);
	}
	if (vm->net) {
		const struct virtio_net *n = &pc->net;
		const struct net_port *p = pc->net_port;
		const struct virtio_slot *s = &pc->net_slot;
		kprintf("  net %s %02x:%02x:%02x:%02x:%02x:%02x: %lu frames sent (%lu KiB), %lu received "
			"(%lu KiB); interrupts: %lu MSI-X messages, %lu dropped, %lu INTx\n", vm->net,
			p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4], p->mac[5],
			n->stats.tx_frames, n->stats.tx_bytes >> 10, n->stats.rx_frames,
			n->stats.rx_bytes >> 10, s->msi_sent, s->msi_dropped, s->intx_raised);
		kprintf("  net refused: %lu bad transmit chains, %lu bad receive chains, %lu receive "
			"buffers too small, %lu frames lost to a full inbox, %lu broken rings; %lu resets, "
			"%lu undefined accesses\n", n->stats.tx_bad, n->stats.rx_bad,
			n->stats.rx_short, p->stats.inbox_full, n->stats.queue_errors, n->t.resets,
			n->t.bad_accesses);
		if (n->t.budget_stops)
			kprintf("  net: %lu doorbell turns stopped at their budget (%u descriptors, %u KiB); "
				"the longest of them: %lu descriptors, %lu KiB\n", n->t.budget_stops,
				VQ_DOORBELL_BUDGET, VIRTIO_DOORBELL_BYTES >> 10, n->t.longest_turn_descs,
				n->t.longest_turn_bytes >> 10);
	}
}

static void create_disk(struct vm *vm, struct dev_host *pc)
{
	uint8_t *image = pc->disk_copy ? pc->disk_copy : (uint8_t *)(uintptr_t)vm->disk;
	if (virtio_blk_init(&pc->blk, BLK_DEVFN, image, vm->disk_size, vm->disk_ro, "lightpath-vda",
			    &pc->guest_mem))
		panic("vm%u: cannot create its disk", vm->id);
	virtio_place(vm, pc, &pc->blk_slot, &pc->blk.t, BLK_DEVFN, BLK_BAR4_GPA, BLK_BAR1_GPA,
		     BLK_INTX_GSI, "virtio-blk");
}

/* Another VM left frames on this VM's port: its CPU takes them in
 * (pc_virtio_take_kicks) when the kick arrives. */
static void net_wake(struct net_port *p)
{
	struct vm *vm = p->owner;
	vcpu_notify(vm->vcpu);
}

static void create_net(struct vm *vm, struct dev_host *pc)
{
	struct net_port *p = pc->net_port;
	static const uint8_t oui[5] = { 0x52, 0x54, 0x00, 0x4c, 0x50 };   /* locally administered */
	if (vm->has_mac) {
		memcpy(p->mac, vm->mac, sizeof(p->mac));
	} else {
		memcpy(p->mac, oui, sizeof(oui));
		p->mac[5] = (uint8_t)vm->id;
	}
	p->wake = net_wake;
	p->owner = vm;
	if (virtio_net_init(&pc->net, NET_DEVFN, p, &pc->guest_mem))
		panic("vm%u: cannot create its network device", vm->id);
	virtio_place(vm, pc, &pc->net_slot, &pc->net.t, NET_DEVFN, NET_BAR4_GPA, NET_BAR1_GPA,
		     NET_INTX_GSI, "virtio-net");
}

void pc_virtio_take_kicks(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	if (vm->disk && pc->blk.t.more)
		virtio_pci_resume(&pc->blk.t);
	if (pc->net_port) {   /* one receive turn, whether marked or woken */
		struct virtio_net *n = &pc->net;
		bool rx = (n->t.more >> VIRTIO_NET_RX & 1) || virtio_net_rx_waiting(n);
		n->t.more &= ~(1u << VIRTIO_NET_RX);
		if (n->t.more)
			virtio_pci_resume(&n->t);
		if (rx)
			virtio_net_receive(n);
	}
}

bool pc_virtio_kick_source(const struct vm *vm)
{
	return vm->net != 0;
}

void pc_virtio_create(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	pc->guest_mem = (struct vq_guest_mem){ vm, guest_in_ram, guest_read, guest_write, guest_ram };
	if (vm->disk)
		create_disk(vm, pc);
	if (vm->net)
		create_net(vm, pc);
}

void pc_virtio_start(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	char err[120];
	if (vm->net && net_link_attach(pc->net_port, vm->net, err, sizeof(err)))
		vm_fault(vm, "net = %s: %s", vm->net, err);
	else if (vm->net)
		kprintf("lightpath: vm%u: network device %02x:%02x:%02x:%02x:%02x:%02x on link %s\n",
			vm->id, pc->net_port->mac[0], pc->net_port->mac[1], pc->net_port->mac[2],
			pc->net_port->mac[3], pc->net_port->mac[4], pc->net_port->mac[5], vm->net);
}
