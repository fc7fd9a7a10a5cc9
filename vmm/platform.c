#include "vmm/platform.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/tsc.h"
#include "dev/pc_irq.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

#define CONSOLE_POLL_US 5000u   /* host serial input is polled this often */
#define COM1 0x3f8

static void add_port(struct vm *vm, const struct io_range *r)
{
	if (vm_register_io(vm, r))
		panic("vm%u: too many port ranges", vm->id);
}

static void add_mmio(struct vm *vm, const struct io_range *r)
{
	if (vm_register_mmio(vm, r))
		panic("vm%u: too many MMIO ranges", vm->id);
}

/* x2APIC MSRs, IA32_APIC_BASE, IA32_TSC_DEADLINE: the local APIC decides. An
 * EOI, a self-IPI (an NMI too) or a TPR change can make an interrupt
 * deliverable: the hazard check at the end of the exit then injects it. */
static int lapic_msr_handler(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (lapic_msr(&v->lapic, msr, val, is_write) == LAPIC_GP)
		return -1;
	if (is_write && msr == MSR_APIC_BASE)
		exit_cpuid_apic_changed(v);   /* CPUID.1:EDX.APIC follows the enable */
	if (is_write && (lapic_irr_nonempty(&v->lapic) || platform_nmi_pending(v)))
		v->pending |= VCPU_PENDING_RECHECK;
	return 0;
}

/* The local APIC's and the I/O APIC's MMIO pages, the same way: an EOI, a
 * TPR write, an IPI or an unmasked redirection entry can make an interrupt
 * (or an NMI) deliverable. */
static int apic_mmio_checked(struct vcpu *v, uint64_t addr, uint64_t *data, unsigned size,
			     bool is_write, void *opaque)
{
	int ret = (addr & ~0xfffull) == LAPIC_BASE ? lapic_mmio(v, addr, data, size, is_write, opaque)
						   : ioapic_mmio(v, addr, data, size, is_write, opaque);
	if (is_write && (lapic_irr_nonempty(&v->lapic) || platform_nmi_pending(v)))
		v->pending |= VCPU_PENDING_RECHECK;
	return ret;
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

void platform_create(struct vm *vm)
{
	struct vcpu *v = vm->vcpu;
	struct io_range r[3];

	pic_init(&vm->pic, vm);
	lapic_init(&v->lapic, vm, 0, true);
	ioapic_init(&vm->ioapic, vm, 0, pc_ioapic_deliver, &v->lapic);
	lapic_set_eoi_hook(&v->lapic, pc_lapic_eoi, &vm->ioapic);
	/* as the BIOS leaves them: no device interrupt on an exception vector */
	pc_irq_firmware_setup(&vm->pic, &vm->ioapic, &v->lapic);

	pic_ranges(&vm->pic, r);
	for (int i = 0; i < 3; i++) {
		if (r[i].fn == pic_io)
			r[i].fn = pic_io_checked;
		add_port(vm, &r[i]);
	}
	pit_init(&vm->pit, vm);
	pit_ranges(&vm->pit, r);
	add_port(vm, &r[0]);
	add_port(vm, &r[1]);
	struct rtc_time now;
	host_wall_clock(&now);
	rtc_init(&vm->rtc, vm, &now);
	rtc_set_memory(&vm->rtc, vm->mem_size, 0, 1);
	rtc_range(&vm->rtc, &r[0]);
	add_port(vm, &r[0]);
	pci_host_init(&vm->pci, vm);
	pci_host_range(&vm->pci, &r[0]);
	add_port(vm, &r[0]);
	i8042_init(&vm->kbd, vm);
	i8042_ranges(&vm->kbd, r);
	add_port(vm, &r[0]);
	add_port(vm, &r[1]);
	fwcfg_init(&vm->fwcfg, vm, vm->mem_size, 1);
	fwcfg_range(&vm->fwcfg, &r[0]);
	add_port(vm, &r[0]);
	acpi_pm_init(&vm->acpi_pm, vm);
	acpi_pm_range(&vm->acpi_pm, &r[0]);
	add_port(vm, &r[0]);

	ioapic_range(&vm->ioapic, &r[0]);
	r[0].fn = apic_mmio_checked;
	add_mmio(vm, &r[0]);
	lapic_range(&v->lapic, &r[0]);
	r[0].fn = apic_mmio_checked;
	add_mmio(vm, &r[0]);
	/* last: the light path's MMIO lookup finds the APICs first */
	hpet_init(&vm->hpet, vm, hpet_legacy_pit, &vm->pit);
	hpet_range(&vm->hpet, &r[0]);
	add_mmio(vm, &r[0]);

	vm_register_msr(vm, MSR_APIC_BASE, 1, lapic_msr_handler);
	vm_register_msr(vm, MSR_TSC_DEADLINE, 1, lapic_msr_handler);
	vm_register_msr(vm, MSR_X2APIC_FIRST, MSR_X2APIC_LAST - MSR_X2APIC_FIRST + 1,
			lapic_msr_handler);
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
	struct vcpu *v = vm->vcpu;
	bool from_pic, test;
	int pending = platform_intr_pending(v, &from_pic, &test);
	unsigned highest_isr = 0;
	for (int i = 255; i >= 0; i--)
		if (v->lapic.isr[i / 32] & (1u << (i % 32))) {
			highest_isr = (unsigned)i;
			break;
		}
	kprintf("lightpath: vm%u: ioapic lines 0x%x, uart ier 0x%x rx %u irq %u, ioapic pin4 0x%lx, "
		"lapic irr %s isr 0x%x tpr 0x%x, pending vector %d, %s\n", vm->id, vm->ioapic.lines,
		vm->uart.ier, vm->uart.rx_count, vm->uart.irq_level, vm->ioapic.rte[4],
		lapic_irr_nonempty(&v->lapic) ? "set" : "empty", highest_isr, v->lapic.tpr, pending,
		vendor_interrupt_state(v));
}

/* Moves held input into the guest's receive FIFO while it has room. */
static void console_backlog_feed(struct vm *vm)
{
	while (vm->console_backlog_len && vm->uart.rx_count < UART16550_RX_FIFO) {
		uart16550_receive(&vm->uart, vm->console_backlog[vm->console_backlog_head]);
		vm->console_backlog_head = (vm->console_backlog_head + 1) % VM_CONSOLE_BACKLOG;
		vm->console_backlog_len--;
	}
}

/* One typed byte for the guest, in order behind what is held already. */
static void console_to_guest(struct vm *vm, uint8_t ch)
{
	if (!vm->console_backlog_len && vm->uart.rx_count < UART16550_RX_FIFO)
		uart16550_receive(&vm->uart, ch);
	else if (vm->console_backlog_len < VM_CONSOLE_BACKLOG)
		vm->console_backlog[(vm->console_backlog_head + vm->console_backlog_len++) %
				    VM_CONSOLE_BACKLOG] = ch;
	else
		uart16550_receive(&vm->uart, ch);   /* both full: lost, the guest sees an overrun */
}

/* Host console input: bytes typed on COM1 go to the guest's UART as fast as
 * its receive FIFO takes them. The host UART is read even when the guest
 * does not read its own, so that the keys above always work; what the FIFO
 * cannot take waits in the VM's backlog (VM_CONSOLE_BACKLOG bytes). */
static void console_poll(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = t->opaque;
	console_backlog_feed(vm);
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
			console_to_guest(vm, ch);
		}
	}
	vm_timer_arm(vm, t, now + tsc_hz() / (1000000 / CONSOLE_POLL_US));
}

void platform_start(struct vm *vm)
{
	vm->console_backlog_head = vm->console_backlog_len = 0;
	vm->console_timer.fire = console_poll;
	vm->console_timer.opaque = vm;
	vm->console_timer.host_clock = true;
	vm_timer_arm(vm, &vm->console_timer, rdtsc() + tsc_hz() / (1000000 / CONSOLE_POLL_US));
}

int platform_intr_pending(struct vcpu *v, bool *from_pic, bool *test)
{
	const struct pic8259 *pic = &v->vm->pic;
	*test = false;
	*from_pic = false;
	if (v->test_irq) {
		*test = true;
		return v->test_irq;
	}
	/* the common case on every heavy exit: nothing requested anywhere */
	if (!lapic_irr_nonempty(&v->lapic) && !(pic->chip[0].irr & ~pic->chip[0].imr) &&
	    !(pic->chip[1].irr & ~pic->chip[1].imr))
		return -1;
	return pc_intr_pending(&v->lapic, &v->vm->pic, from_pic);
}

int platform_intr_ack(struct vcpu *v, int vector, bool from_pic, bool test)
{
	if (test) {
		v->test_irq = 0;
		return vector;
	}
	int ret = pc_intr_ack(&v->lapic, &v->vm->pic, vector, from_pic);
	pit_irq_taken(&v->vm->pit);   /* a late IRQ0 edge can go now */
	hpet_irq_taken(&v->vm->hpet); /* and a late HPET edge */
	return ret;
}

bool platform_nmi_source(struct vcpu *v)
{
	return ioapic_nmi_pin(&v->vm->ioapic);
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
