#include "vmm/platform.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/smp.h"
#include "core/tsc.h"
#include "dev/acpi.h"
#include "dev/acpi_pm.h"
#include "dev/debug_exit.h"
#include "dev/fwcfg.h"
#include "dev/hpet.h"
#include "dev/i8042.h"
#include "dev/ioapic.h"
#include "dev/mmio_test.h"
#include "dev/pc_irq.h"
#include "dev/pci_host.h"
#include "dev/pic8259.h"
#include "dev/pit8254.h"
#include "dev/pmtimer.h"
#include "dev/postcode.h"
#include "dev/rtc.h"
#include "dev/uart16550.h"
#include "dev/virtio_blk.h"
#include "dev/virtio_net.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/firmware.h"
#include "vmm/guest_clock.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

#define CONSOLE_POLL_US 5000u   /* host serial input is polled this often */
#define COM1 0x3f8
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
 * struct dev_host: the services below (interrupt lines, timers, the clock,
 * the console, ending the VM) are all they reach, and only this file sees the
 * devices. */
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

/* The services a device reaches (dev/device.h). */
void dev_console_putc(struct dev_host *h, char c)
{
	vm_console_putc(h->head.vm, c);
}

void dev_vm_end(struct dev_host *h, unsigned status, const char *why)
{
	vm_end(h->head.vm, status, why);
}

struct guest_clock *dev_clock(struct dev_host *h)
{
	return &h->head.vm->clock;
}

/* Every interrupt line of the PC ends here: the 8259s and the I/O APIC
 * latch it, and the hazard check at the end of the exit injects what
 * became deliverable. */
void irq_line_set(const struct irq_line *l, bool level)
{
	struct dev_host *pc = l->host;
	if (l->gsi >= IOAPIC_PINS)
		return;
	pc_irq_set(&pc->pic, &pc->ioapic, l->gsi, level);
	vcpu_notify(pc->head.vm->vcpu);   /* the 8259's output is the boot vCPU's LINT0 */
}

enum irq_edge_state irq_line_edge_state(const struct irq_line *l)
{
	struct dev_host *pc = l->host;
	return pc_irq_edge_state(&pc->pic, &pc->ioapic, &pc->head.vm->vcpu->lapic, l->gsi);
}

/* The VM's APIC bus: an interrupt message (an IPI, an I/O APIC
 * redirection) reaches the local APICs of this VM's vCPUs that it names,
 * and no other: nothing a guest sends leaves its VM. Lowest priority goes
 * to one of them, the lowest TPR (the first on a tie). */
static struct vcpu *vcpu_of(struct lapic *a)
{
	return (struct vcpu *)(void *)((char *)a - __builtin_offsetof(struct vcpu, lapic));
}

static void apic_deliver(struct vcpu *t, const struct lapic *from, const struct apic_msg *m)
{
	if (from)   /* an IPI (the I/O APIC sends from 0) */
		__atomic_add_fetch(&t->ipis.received, 1, __ATOMIC_RELAXED);
	lapic_msg_receive(&t->lapic, m);
	vcpu_notify(t);   /* the hazard check (or a kick) injects it */
}

static void apic_bus_send(void *ctx, struct lapic *from, const struct apic_msg *m)
{
	struct vm *vm = ((struct dev_host *)ctx)->head.vm;
	struct vcpu *lowest = 0;
	if (from)
		vcpu_of(from)->ipis.sent++;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *t = vm->vcpus[i];
		if (!lapic_msg_targets(&t->lapic, from, m))
			continue;
		if (m->delivery_mode != LAPIC_DM_LOWEST)
			apic_deliver(t, from, m);
		else if (!lowest || (lapic_tpr(&t->lapic) & 0xf0) < (lapic_tpr(&lowest->lapic) & 0xf0))
			lowest = t;
	}
	if (lowest)
		apic_deliver(lowest, from, m);
}

static void ioapic_to_bus(void *ctx, const struct ioapic_irq *irq)
{
	struct apic_msg m = pc_ioapic_msg(irq);
	apic_bus_send(ctx, 0, &m);
}

static struct irq_line pc_line(struct dev_host *pc, unsigned gsi)
{
	return (struct irq_line){ .host = pc, .gsi = (uint8_t)gsi };
}

static void add_mmio(struct vm *vm, const struct io_range *r)
{
	if (vm_register_mmio(vm, r))
		panic("vm%u: too many MMIO ranges", vm->id);
}

/* After a write that can make an interrupt (or an NMI) deliverable: the
 * hazard check at the end of the exit then injects it. */
static inline void recheck_if_deliverable(struct vcpu *v)
{
	if (lapic_irr_nonempty(&v->lapic) || platform_nmi_pending(v))
		v->pending |= VCPU_PENDING_RECHECK;
}

/* x2APIC MSRs, IA32_APIC_BASE, IA32_TSC_DEADLINE: the local APIC decides. An
 * EOI, a self-IPI (an NMI too) or a TPR change can make an interrupt
 * deliverable: the hazard check at the end of the exit then injects it. */
static int lapic_msr_handler(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (lapic_msr(&v->lapic, msr, val, is_write) == LAPIC_GP)
		return -1;
	if (is_write && msr == MSR_APIC_BASE) {
		exit_cpuid_apic_changed(v);   /* CPUID.1:EDX.APIC follows the enable */
		vendor_apic_mode_changed(v);
		v->pending |= VCPU_PENDING_RECHECK;   /* a disable cleared IRR and TPR */
	}
	if (is_write)
		recheck_if_deliverable(v);
	return 0;
}

/* The x2APIC EOI, a VM's most frequent MSR write (one per interrupt), in
 * a VM of one vCPU: registered on its own, so that it skips the model's
 * decode of the other x2APIC registers. A read, a reserved bit set or xAPIC
 * mode go to the model, which raises the #GP. */
static int lapic_eoi_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write || *val || !lapic_x2apic(&v->lapic))
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_eoi(&v->lapic);
	recheck_if_deliverable(v);
	return 0;
}

/* The x2APIC SELF IPI, the same way: the vector goes to the vCPU's own IRR
 * (Linux sends its IPIs to itself, irq_work among them, this way). A read,
 * a reserved bit set or xAPIC mode go to the model, which raises the #GP;
 * a vector below 16 is the model's ESR error, in lapic_accept. */
static int lapic_self_ipi_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write || (*val & ~0xffull) || !lapic_x2apic(&v->lapic))
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_accept(&v->lapic, (uint8_t)*val, false);
	v->pending |= VCPU_PENDING_RECHECK;   /* deliverable now, unless the PPR says no */
	return 0;
}

/* IA32_TSC_DEADLINE, the same way (Linux writes it at every timer event
 * it programs): a write goes straight to the timer. A deadline already
 * due delivers at once, to IRR. */
static int lapic_tsc_deadline_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write)
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_tsc_deadline_write(&v->lapic, *val);
	recheck_if_deliverable(v);
	return 0;
}

/* An EOI in a VM of several vCPUs, on the light path: for an edge-triggered
 * vector it changes only the vCPU's own ISR (other CPUs write its IRR and
 * TMR, under the VM lock, never its ISR); a level-triggered one goes on to
 * the I/O APIC, which needs the lock (false). What the EOI uncovers is
 * delivered by the heavy path (the hazard check leaves the light loop in
 * such a VM). */
static bool eoi_light(struct vcpu *v)
{
	if (!lapic_eoi_edge(&v->lapic))
		return false;
	recheck_if_deliverable(v);
	return true;
}

/* A fixed IPI to another vCPU on the sender's light path (docs/SMP.md;
 * KVM's "fastpath" for the x2APIC write; here the xAPIC MOV too): the vector is posted to the
 * target lock-free and the target is kicked; it moves the vector to its
 * IRR on its own heavy path (vcpu_take_notices). False: not that kind of
 * write, the bus must deliver it with the VM lock held. */
static bool ipi_post_light(struct vcpu *v, uint64_t icr)
{
	struct vm *vm = v->vm;
	int64_t dest = lapic_fixed_unicast_dest(&v->lapic, icr);
	if (dest < 0 || dest >= vm->nr_vcpus || dest == v->lapic.id)
		return false;
	struct vcpu *t = vm->vcpus[dest];   /* vCPU i has APIC ID i */
	if (lapic_x2apic(&t->lapic) != lapic_x2apic(&v->lapic))
		return false;   /* mixed modes match IDs differently: the bus decides */
	uint8_t vec = (uint8_t)icr;
	lapic_icr_record(&v->lapic, icr);
	__atomic_or_fetch(&t->posted[vec / 32], 1u << (vec % 32), __ATOMIC_RELEASE);
	v->ipis.sent++;
	v->ipis.sent_light++;
	__atomic_add_fetch(&t->ipis.received, 1, __ATOMIC_RELAXED);
	vcpu_notify(t);
	return true;
}

/* The local APIC's MSRs in a VM of several vCPUs: a fixed IPI to another
 * vCPU completes here on the light path; everything else touches shared
 * state (the bus, the VM's timers, the I/O APIC at EOI) and needs the VM
 * lock, which the heavy path holds. */
static int lapic_msr_shared(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (vm_shared_ok(v->vm))
		return lapic_msr_handler(v, msr, val, is_write);
	if (is_write && msr == LAPIC_X2APIC_MSR(LAPIC_ICR_LO) && ipi_post_light(v, *val))
		return 0;
	if (is_write && msr == LAPIC_X2APIC_MSR(LAPIC_EOI) && !*val && lapic_x2apic(&v->lapic) &&
	    eoi_light(v))
		return 0;
	return MSR_NEEDS_LOCK;
}

/* The local APIC's and the I/O APIC's MMIO pages, the same way: an EOI, a
 * TPR write, an IPI or an unmasked redirection entry can make an interrupt
 * (or an NMI) deliverable. */
static int apic_mmio_checked(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			     bool is_write, void *opaque)
{
	int ret = (addr & ~0xfffull) == LAPIC_BASE ? lapic_mmio(v, addr, data, size, is_write, opaque)
						   : ioapic_mmio(v, addr, data, size, is_write, opaque);
	if (is_write)
		recheck_if_deliverable(v);
	return ret;
}

/* The local APIC page in a VM of one vCPU. The EOI, an xAPIC guest's most
 * frequent MMIO access (one per interrupt), goes straight to the model's EOI
 * (lapic_mmio's decode and lapic_write's switch would end there too), as
 * lapic_eoi_msr does for the x2APIC's; every other access goes through
 * lapic_mmio. A write can make an interrupt deliverable, as above. */
static int lapic_mmio_checked(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			      bool is_write, void *opaque)
{
	struct lapic *a = opaque;
	if (!is_write)
		return lapic_mmio(v, addr, data, size, is_write, opaque);
	if (addr == LAPIC_BASE + LAPIC_EOI && size >= 4 && lapic_hw_enabled(a) && !lapic_x2apic(a))
		lapic_eoi(a);
	else
		lapic_mmio(v, addr, data, size, is_write, opaque);   /* (a write is always IO_OK) */
	recheck_if_deliverable(v);   /* (a is v's own APIC: a VM of one vCPU) */
	return IO_OK;
}

/* The local APIC page in a VM of several vCPUs, on the light path: a
 * fixed IPI to another vCPU by a MOV to ICR_LO completes there (xAPIC
 * mode); every other access needs the VM lock. */
static int lapic_mmio_shared(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			     bool is_write, void *opaque)
{
	(void)opaque;   /* the boot vCPU's: the page is each vCPU's own */
	if (vm_shared_ok(v->vm))
		return apic_mmio_checked(v, addr, data, size, is_write, &v->lapic);
	/* (the page is decoded only in xAPIC mode with the APIC enabled) */
	bool xapic = lapic_hw_enabled(&v->lapic) && !lapic_x2apic(&v->lapic);
	if (is_write && size == 4 && addr == LAPIC_BASE + LAPIC_ICR_LO && xapic &&
	    ipi_post_light(v, (uint32_t)*data))
		return IO_OK;
	if (is_write && size == 4 && addr == LAPIC_BASE + LAPIC_EOI && xapic && eoi_light(v))
		return IO_OK;
	return IO_NEEDS_LOCK;
}

/* The HPET in a VM of several vCPUs, on the light path: a read of the main
 * counter only reads the VM's time (Linux's calibrations and clocksource
 * read it back to back and give up on slow reads); the rest needs the VM
 * lock. (clock_read_fast's last_read store races between vCPUs harmlessly:
 * such a VM never polls, guest_clock_init.) */
static int hpet_mmio_shared(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			    bool is_write, void *opaque)
{
	if (vm_shared_ok(v->vm) ||
	    (!is_write && ((addr - HPET_BASE) & ~7ull) == HPET_REG_COUNTER))
		return hpet_mmio(v, addr, data, size, is_write, opaque);
	return IO_NEEDS_LOCK;
}

/* The 8259s: an EOI or an unmask can make a waiting IRQ deliverable. */
static int pic_io_checked(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			  bool is_write, void *opaque)
{
	int ret = pic_io(v, addr, data, size, is_write, opaque);
	if (is_write)
		v->pending |= VCPU_PENDING_RECHECK;
	return ret;
}

/* The HPET's legacy replacement route takes IRQ0 from the PIT. */
static void hpet_legacy_pit(void *pit, bool on)
{
	pit_irq_replace(pit, on);
}

/* Reads the host's CMOS clock once per VM: the guest's RTC starts there. */
static uint8_t host_cmos(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static unsigned bcd(uint8_t v, bool binary)
{
	return binary ? v : (v >> 4) * 10 + (v & 0xf);
}

static void host_wall_clock(struct rtc_time *t)
{
	for (int tries = 0; tries < 1000000 && (host_cmos(0x0a) & 0x80); tries++)
		;   /* wait out an update in progress */
	bool binary = host_cmos(0x0b) & 0x04;
	t->second = (uint8_t)bcd(host_cmos(0x00), binary);
	t->minute = (uint8_t)bcd(host_cmos(0x02), binary);
	t->hour = (uint8_t)bcd(host_cmos(0x04) & 0x7f, binary);
	t->day = (uint8_t)bcd(host_cmos(0x07), binary);
	t->month = (uint8_t)bcd(host_cmos(0x08), binary);
	t->year = (uint16_t)(2000 + bcd(host_cmos(0x09), binary));
	if (!t->day || t->day > 31 || !t->month || t->month > 12 || t->hour > 23)
		*t = (struct rtc_time){ 2026, 1, 1, 0, 0, 0 };   /* no usable host RTC */
}

/* ---- disk = and net = : virtio functions (docs/VIRTIO.md) ---- */

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

/* The guest's access to a BAR (the MMIO range's opaque is its slot): at
 * an offset from where the BAR is now, which virtio_bar_moved keeps. */
static int virtio_bar4_mmio(struct vcpu *vcpu, uint64_t addr, uint64_t *data, unsigned size,
			    bool is_write, void *opaque)
{
	struct virtio_slot *slot = opaque;
	(void)vcpu;
	if (is_write)
		virtio_pci_write(slot->t, addr - slot->base[0], size, *data);
	else
		*data = virtio_pci_read(slot->t, addr - slot->base[0], size);
	return IO_OK;
}

static int virtio_msix_mmio(struct vcpu *vcpu, uint64_t addr, uint64_t *data, unsigned size,
			    bool is_write, void *opaque)
{
	struct virtio_slot *slot = opaque;
	(void)vcpu;
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
	struct irq_line l = pc_line(slot->pc, slot->gsi);
	irq_line_set(&l, level);
}

/* A queue stopped at its doorbell's budget with work left: the vCPU that
 * ran the doorbell (this CPU's) takes the rest at its next exit, like a
 * kick from another CPU (vcpu_take_notices -> platform_take_kicks). Not
 * vcpu_notify, whose same-CPU form only sets a hazard bit: a self-IPI also
 * ends a host wait (a halted vCPU) and makes the next VMRUN exit at once,
 * so the vCPU passes its heavy path (time limit, VM end) between budgets. */
static void virtio_resume_later(struct virtio_pci *t)
{
	(void)t;
	struct vcpu *self = this_cpu()->current;
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
				      .fn = i ? virtio_msix_mmio : virtio_bar4_mmio, .opaque = slot,
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

void platform_print_stats(struct vm *vm)
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
 * (platform_take_kicks) when the kick arrives. */
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

void platform_take_kicks(struct vm *vm)
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

bool platform_kick_source(const struct vm *vm)
{
	return vm->net != 0;
}

/* The platform's devices, in the order their ranges are registered. The
 * MMIO lookup scans them in this order: the local APIC's page first (an
 * xAPIC guest's EOI, its most frequent MMIO access), then the I/O APIC and
 * the HPET, the bench's test device, the virtio BARs, PCI's ECAM window
 * last (configuration is rare). `at` is the device object's place in
 * struct dev_host, the callbacks' opaque; `one` and `several` are the
 * platform's wrappers of the device's first callback (every range that
 * has it) in a VM of one vCPU and of several, 0 for the callback itself. */
#define PC_AT(field) __builtin_offsetof(struct dev_host, field)
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
	  .one = apic_mmio_checked, .several = apic_mmio_checked },
	{ .desc = &hpet_desc, .at = PC_AT(hpet), .several = hpet_mmio_shared },
	{ .desc = &mmio_test_desc, .at = PC_AT(mmio_test) },
	{ .desc = PC_VIRTIO },
	{ .desc = &pci_ecam_desc, .at = PC_AT(pci), .pci = true },
};

/* Registers the ranges of one device. In a VM of several vCPUs only a
 * lock_free device stays light: the light path takes no lock. */
static void add_device(struct vm *vm, const struct pc_device *d)
{
	const struct dev_desc *desc = d->desc;
	bool several = vm->nr_vcpus > 1;
	io_handler_fn wrap = several ? d->several : d->one;
	void *opaque = d->at == PC_BOOT_LAPIC ? (void *)&vm->vcpu->lapic : (char *)vm->pc + d->at;
	for (unsigned i = 0; i < desc->nr_ranges; i++) {
		const struct dev_range *rg = &desc->ranges[i];
		struct io_range r = {
			.base = rg->base, .len = rg->len, .opaque = opaque,
			.name = rg->name ? rg->name : desc->name,
			.fn = wrap && rg->fn == desc->ranges[0].fn ? wrap : rg->fn,
			.light = rg->light && (!several || desc->lock_free),
		};
		if (desc->mmio ? vm_register_mmio(vm, &r) : vm_register_io(vm, &r))
			panic("vm%u: too many %s ranges", vm->id, desc->mmio ? "MMIO" : "port");
	}
}

/* The devices' own state, in the order of their dependencies (the HPET's
 * legacy route reaches the PIT, every local APIC the I/O APIC). */
static void init_devices(struct vm *vm, struct dev_host *pc)
{
	uart16550_init(&pc->uart, pc, pc_line(pc, UART16550_COM1_IRQ));
	debug_exit_init(&pc->debug_exit, pc);
	pmtimer_init(&pc->pmtimer, &vm->clock);
	postcode_init(&pc->postcode);
	mmio_test_init(&pc->mmio_test, LP_MMIO_TEST_BASE);
	pic_init(&pc->pic);
	ioapic_init(&pc->ioapic, 0, ioapic_to_bus, pc);
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {   /* vCPU i has APIC ID i */
		struct lapic *a = &vm->vcpus[i]->lapic;
		lapic_init(a, pc, i, i == 0);
		lapic_set_eoi_hook(a, pc_lapic_eoi, &pc->ioapic);
		lapic_set_send_hook(a, apic_bus_send, pc);
	}
	/* as the BIOS leaves them: no device interrupt on an exception vector */
	pc_irq_firmware_setup(&pc->pic, &pc->ioapic, &vm->vcpu->lapic);
	pit_init(&pc->pit, pc, pc_line(pc, PIT_IRQ));
	struct rtc_time now;
	host_wall_clock(&now);
	rtc_init(&pc->rtc, &vm->clock, &now);
	rtc_set_memory(&pc->rtc, vm->mem_size, 0, 1);
	pci_host_init(&pc->pci);
	i8042_init(&pc->kbd, pc);
	fwcfg_init(&pc->fwcfg, vm->mem_size, vm->nr_vcpus);
	acpi_pm_init(&pc->acpi_pm, pc, pc_line(pc, ACPI_SCI_IRQ));
	hpet_init(&pc->hpet, pc, hpet_legacy_pit, &pc->pit);
	pc->guest_mem = (struct vq_guest_mem){ vm, guest_in_ram, guest_read, guest_write, guest_ram };
}

void platform_create(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	bool pci = vm->disk || vm->net;

	memset(vm->port_map, VM_PORT_SLOW, sizeof(vm->port_map));   /* nobody */
	init_devices(vm, pc);
	for (size_t i = 0; i < sizeof(pc_devices) / sizeof(pc_devices[0]); i++) {
		const struct pc_device *d = &pc_devices[i];
		if (d->desc == PC_VIRTIO) {
			if (vm->disk)
				create_disk(vm, pc);
			if (vm->net)
				create_net(vm, pc);
		} else if (pci || !d->pci) {
			add_device(vm, d);
		}
	}

	msr_handler_fn lapic_fn = vm->nr_vcpus > 1 ? lapic_msr_shared : lapic_msr_handler;
	if (vm->nr_vcpus == 1) {   /* first: the first registration of an MSR holds */
		vm_register_msr(vm, LAPIC_X2APIC_MSR(LAPIC_EOI), 1, lapic_eoi_msr);
		vm_register_msr(vm, LAPIC_X2APIC_MSR(LAPIC_SELF_IPI), 1, lapic_self_ipi_msr);
		vm_register_msr(vm, MSR_TSC_DEADLINE, 1, lapic_tsc_deadline_msr);
	}
	vm_register_msr(vm, MSR_APIC_BASE, 1, lapic_fn);
	vm_register_msr(vm, MSR_TSC_DEADLINE, 1, lapic_fn);
	vm_register_msr(vm, MSR_X2APIC_FIRST, MSR_X2APIC_LAST - MSR_X2APIC_FIRST + 1, lapic_fn);
}

/* Two keys on the host console are lightpath's, not the guest's: Ctrl-]
 * prints one line of the VM's interrupt state (for when a guest seems to
 * hang), Ctrl-^ ends the VM that has the console (for one that never ends by
 * itself). A Linux shell does not need either. */
#define CONSOLE_DUMP_KEY 0x1d   /* Ctrl-] */
#define CONSOLE_END_KEY  0x1e   /* Ctrl-^ (Ctrl-6 on most terminals) */
/* With VMs side by side, console input goes to one of them at a time and
 * Ctrl-\ passes it to the next (passed to the guest when VMs run one
 * after the other, as before). */
#define CONSOLE_SWITCH_KEY 0x1c /* Ctrl-\ */
/* Bytes read from the host UART per poll at most: a flood cannot hold the
 * hypervisor in the poll. */
#define CONSOLE_POLL_MAX 256u

static void dump_interrupt_state(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	struct vcpu *v = vm->vcpu;
	bool from_pic, test;
	int pending = platform_intr_pending(v, &from_pic, &test);
	int highest_isr = lapic_highest_vec(&v->lapic, LAPIC_ISR);
	kprintf("lightpath: vm%u: rip 0x%lx, ioapic lines 0x%x, uart ier 0x%x rx %u irq %u, ioapic pin4 "
		"0x%lx, lapic irr %s isr %d tpr 0x%x, pending vector %d, %s\n", vm->id,
		vendor_guest_rip(v), pc->ioapic.lines,
		pc->uart.ier, pc->uart.rx_count, pc->uart.irq_level, pc->ioapic.rte[4],
		lapic_irr_nonempty(&v->lapic) ? "set" : "empty", highest_isr, lapic_tpr(&v->lapic), pending,
		vendor_interrupt_state(v));
	/* the timers: a guest that waits for one that never comes shows it here */
	const struct lapic *a = &v->lapic;
	uint64_t now = clock_now(&vm->clock), next = 0;
	for (unsigned i = 0; i < vm->nr_timers; i++)
		if (!vm->timers[i]->host_clock && (!next || vm->timers[i]->deadline_tsc < next))
			next = vm->timers[i]->deadline_tsc;
	long next_us = next ? (long)((int64_t)(next - now) / (int64_t)(tsc_hz() / 1000000)) : 0;
	kprintf("lightpath: vm%u: lapic timer lvt 0x%x init %u %s%s, %u fires; vm timers %u, next "
		"device timer %ld us from now%s\n", vm->id, a->lvt[LVT_TIMER], a->timer_init,
		a->timer_running ? "running" : "stopped", a->timer.armed ? " armed" : "",
		(unsigned)a->timer_fires, vm->nr_timers, next_us,
		vm->clock.polling ? " (the clock polls)" : "");
	/* what the VM has cost so far: two of these lines bracket a guest
	 * command (make linux-report's dd: exits and instructions per request) */
	uint64_t exits = 0, heavy = 0;
	for (unsigned r = 0; r < LP_EXIT_COUNT; r++) {
		exits += v->stats.exits[r];
		heavy += v->stats.heavy[r];
	}
	kprintf("lightpath: vm%u: so far %lu exits (%lu heavy), %lu disk reads (%lu KiB), host TSC "
		"%lu\n", vm->id, exits, heavy, vm->disk ? pc->blk.stats.reads : 0,
		vm->disk ? pc->blk.stats.bytes_read >> 10 : 0, rdtsc());
}

/* Moves held input into the guest's receive FIFO while it has room. */
static void console_backlog_feed(struct dev_host *pc)
{
	while (pc->console_backlog_len && pc->uart.rx_count < UART16550_RX_FIFO) {
		uart16550_receive(&pc->uart, pc->console_backlog[pc->console_backlog_head]);
		pc->console_backlog_head = (pc->console_backlog_head + 1) % CONSOLE_BACKLOG;
		pc->console_backlog_len--;
	}
}

/* One typed byte for the guest, in order behind what is held already. */
static void console_to_guest(struct dev_host *pc, uint8_t ch)
{
	if (!pc->console_backlog_len && pc->uart.rx_count < UART16550_RX_FIFO)
		uart16550_receive(&pc->uart, ch);
	else if (pc->console_backlog_len < CONSOLE_BACKLOG)
		pc->console_backlog[(pc->console_backlog_head + pc->console_backlog_len++) %
				    CONSOLE_BACKLOG] = ch;
	else
		uart16550_receive(&pc->uart, ch);   /* both full: lost, the guest sees an overrun */
}

/* Host console input: bytes typed on COM1 go to the guest's UART as fast as
 * its receive FIFO takes them. The host UART is read even when the guest
 * does not read its own, so that the keys above always work; what the FIFO
 * cannot take waits in the VM's backlog (VM_CONSOLE_BACKLOG bytes). */
static void console_poll(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = t->opaque;
	console_backlog_feed(vm->pc);
	vm_console_idle(vm);
	/* only the VM that has the console reads the host UART */
	for (unsigned n = 0; n < CONSOLE_POLL_MAX && vm_console_input_mine(vm) &&
	     (inb(COM1 + 5) & 1); n++) {
		uint8_t ch = inb(COM1);
		if (ch == CONSOLE_SWITCH_KEY && vm_side_by_side) {
			vm_console_switch(vm);
		} else if (ch == CONSOLE_DUMP_KEY) {
			dump_interrupt_state(vm);
		} else if (ch == CONSOLE_END_KEY) {
			vm_fault(vm, "Ctrl-^ typed on the console");
			return;                   /* an ended VM has no timers */
		} else {
			console_to_guest(vm->pc, ch);
		}
	}
	vm_timer_arm(t, now + tsc_hz() / (1000000 / CONSOLE_POLL_US));
}

void platform_start(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	pc->console_backlog_head = pc->console_backlog_len = 0;
	vm_timer_init(&pc->console_timer, pc, console_poll, vm);
	pc->console_timer.host_clock = true;
	vm_timer_arm(&pc->console_timer, rdtsc() + tsc_hz() / (1000000 / CONSOLE_POLL_US));
	char err[120];
	if (vm->net && net_link_attach(pc->net_port, vm->net, err, sizeof(err)))
		vm_fault(vm, "net = %s: %s", vm->net, err);
	else if (vm->net)
		kprintf("lightpath: vm%u: network device %02x:%02x:%02x:%02x:%02x:%02x on link %s\n",
			vm->id, pc->net_port->mac[0], pc->net_port->mac[1], pc->net_port->mac[2],
			pc->net_port->mac[3], pc->net_port->mac[4], pc->net_port->mac[5], vm->net);
}

bool platform_intr_requested(const struct vcpu *v)
{
	const struct pic8259 *pic = &v->vm->pc->pic;
	/* (with virtual-interrupt delivery the CPU takes the APIC's own) */
	return v->test_irq || (!lapic_cpu_delivers(&v->lapic) && lapic_irr_nonempty(&v->lapic)) ||
	       (pic->chip[0].irr & ~pic->chip[0].imr) || (pic->chip[1].irr & ~pic->chip[1].imr);
}

int platform_intr_pending(struct vcpu *v, bool *from_pic, bool *test)
{
	*test = false;
	*from_pic = false;
	if (v->test_irq) {
		*test = true;
		return v->test_irq;
	}
	/* the common case on every heavy exit: nothing requested anywhere */
	if (!platform_intr_requested(v))
		return -1;
	return pc_intr_pending(&v->lapic, &v->vm->pc->pic, from_pic);
}

int platform_intr_take(struct vcpu *v)
{
	int vec = v->test_irq;
	if (vec) {
		v->test_irq = 0;
		return vec;
	}
	vec = pc_intr_take(&v->lapic, &v->vm->pc->pic);
	if (vec >= 0)
		platform_irq_retry(v);
	return vec;
}

void platform_irq_retry(struct vcpu *v)
{
	pit_irq_taken(&v->vm->pc->pit);    /* a late IRQ0 edge can go now */
	hpet_irq_taken(&v->vm->pc->hpet);  /* and a late HPET edge */
}

bool platform_nmi_source(struct vcpu *v)
{
	return ioapic_nmi_pin(&v->vm->pc->ioapic);
}

int platform_cr8_write(struct vcpu *v, uint64_t val)
{
	if (val >> 4)
		return -1;
	lapic_write(&v->lapic, LAPIC_TPR, (uint32_t)val << 4);   /* TPR[3:0] becomes 0 */
	v->pending |= VCPU_PENDING_RECHECK;   /* a lower TPR can make an interrupt deliverable */
	return 0;
}

uint64_t platform_cr8_read(struct vcpu *v)
{
	return lapic_read(&v->lapic, LAPIC_TPR) >> 4;
}
