/* Host console input for the VM that has the console: bytes typed on COM1
 * go to the guest's UART, and lightpath's own keys (the interrupt-state
 * dump, the VM's end, passing the console on). */
#include "vmm/console_input.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/tsc.h"
#include "vmm/dev_host.h"
#include "vmm/platform_intr.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vm_console.h"

#define CONSOLE_POLL_US 5000u   /* host serial input is polled this often */
#define COM1 0x3f8

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

void console_input_start(struct vm *vm)
{
	struct dev_host *pc = vm->pc;
	pc->console_backlog_head = pc->console_backlog_len = 0;
	vm_timer_init(&pc->console_timer, pc, console_poll, vm);
	pc->console_timer.host_clock = true;
	vm_timer_arm(&pc->console_timer, rdtsc() + tsc_hz() / (1000000 / CONSOLE_POLL_US));
}
