/* The VM's timers (struct vm_timer, dev/device.h): the armed ones of every
 * device in one list, the host timer programmed for the earliest, and
 * timer=lead's early fires (vmm/timer_lead.h). */
#include "vmm/vm_timers.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/timer.h"
#include "core/tsc.h"
#include "dev/tick_math.h"
#include "vmm/guest_clock.h"
#include "vmm/vcpu_run.h"
#include "vmm/vm.h"

#define TIMER_MIN_PERIOD_US 50u

void vm_timers_init(struct vm *vm)
{
	vm->timer_min_gap = tsc_hz() / (1000000 / TIMER_MIN_PERIOD_US);
	vm->timers_mode = vm->nr_vcpus > 1 ? VM_TIMERS_HOMED : 0;
	_Static_assert(TIMER_LEAD_MAX_NS < TIMER_MIN_PERIOD_US * 1000 / 2,
		       "a timer re-armed by its early fire must not be due within the lead");
	vm->timer_lead = (struct timer_lead){
		.on = vm->opt->timer_lead && vm->nr_vcpus == 1,
		.lead = tsc_from_ns(TIMER_LEAD_START_NS),
		.max = tsc_from_ns(TIMER_LEAD_MAX_NS),
		.margin = tsc_from_ns(TIMER_LEAD_MARGIN_NS) + 1,
	};
}

/* When a device timer due at `deadline` in the VM's time is due in host
 * TSC: the VM's time is the host's plus the offset, or (polling) advances
 * only at exits: then guest_clock_after_exit runs it, and it has no host
 * deadline (0). Monotonic in `deadline`, so the earliest device timer is
 * also the earliest in host time. */
static uint64_t guest_deadline_to_host(const struct vm *vm, uint64_t deadline)
{
	if (vm->clock.polling)
		return 0;
	int64_t off = vm->clock.offset;   /* 0 or less: the time polling hid */
	if (!off)                         /* no polling yet: the common case */
		return deadline;
	uint64_t h = deadline - (uint64_t)off;
	if (off < 0 && h < deadline)
		return UINT64_MAX;   /* beyond the host TSC's range: never */
	if ((off > 0 && h > deadline) || !h)
		return 1;   /* before the host TSC's start: due */
	return h;
}

/* A VM of several vCPUs: each timer has a home vCPU (vm_timer.home: a
 * local APIC timer its own, the others vCPU 0), and a CPU's host timer is
 * programmed for its vCPU's timers, and for another vCPU's only when that
 * vCPU's CPU will not wake for it in time (it was armed from here, earlier
 * than what that CPU is programmed for). Before, every CPU of the VM woke
 * at every timer of the VM and queued on the VM lock to find nothing due:
 * with 10 vCPUs halted under QEMU, vCPU 0 waited its turn behind nine at
 * each of them and got nowhere (hostile-timerfill). Outside any vCPU (the
 * VM's start and end) the CPU is programmed for every timer, as with one
 * vCPU. Under the VM lock. */
static void reprogram_homed(struct vm *vm)
{
	struct vcpu *me = exit_vcpu();
	if (me && me->vm != vm)
		me = 0;
	uint64_t next = UINT64_MAX, next_guest = UINT64_MAX;
	for (unsigned i = 0; i < vm->nr_timers; i++) {
		const struct vm_timer *t = vm->timers[i];
		uint64_t h = t->deadline_tsc;
		if (!t->host_clock) {
			next_guest = h < next_guest ? h : next_guest;
			h = guest_deadline_to_host(vm, h);
		}
		if (!h || h >= next)
			continue;
		const struct vcpu *home = t->home ? t->home : vm->vcpus[0];
		if (me && home != me && home->timer_programmed && h >= home->timer_programmed)
			continue;   /* its home's CPU wakes for it */
		next = h;
	}
	vm->clock.next_due = next_guest;   /* a clock read past it runs the timers */
	timer_program(next == UINT64_MAX ? 0 : next);
	if (me)
		me->timer_programmed = next;
}

/* One vCPU: the host timer for the VM's earliest timer: the earliest of
 * each clock found first, the VM's one converted once. */
static void reprogram_one(struct vm *vm)
{
	uint64_t next = 0, next_guest = UINT64_MAX;
	for (unsigned i = 0; i < vm->nr_timers; i++) {
		const struct vm_timer *t = vm->timers[i];
		uint64_t d = t->deadline_tsc;   /* never 0: vm_timer_arm */
		if (!t->host_clock)
			next_guest = d < next_guest ? d : next_guest;
		else if (!next || d < next)
			next = d;
	}
	vm->clock.next_due = next_guest;   /* a clock read past it runs the timers */
	if (next_guest != UINT64_MAX) {
		uint64_t h = guest_deadline_to_host(vm, next_guest);
		if (h && vm->timer_lead.on && h != UINT64_MAX) {   /* timer=lead: ahead of it */
			uint64_t lead = vm->timer_lead.lead;
			vm->timer_lead.programmed = lead;
			h = h > lead ? h - lead : 1;
		}
		if (h && (!next || h < next))
			next = h;
	}
	timer_program(next);
}

void vm_timers_reprogram(struct vm *vm)
{
	if (vm->timers_mode & VM_TIMERS_HOMED)
		reprogram_homed(vm);
	else
		reprogram_one(vm);
}

static __attribute__((noinline)) void timers_changed_slow(struct vm *vm)
{
	if (vm->timers_mode == VM_TIMERS_HOMED)
		reprogram_homed(vm);
}

/* The list changed: the host timer follows, unless vm_timers_run is firing
 * (it reprograms once, after). One test for one vCPU, as before homes. */
static inline void timers_changed(struct vm *vm)
{
	if (__builtin_expect(vm->timers_mode != 0, 0))
		timers_changed_slow(vm);
	else
		reprogram_one(vm);
}

static void timer_unlink(struct vm *vm, struct vm_timer *t)
{
	for (unsigned i = 0; i < vm->nr_timers; i++) {
		if (vm->timers[i] == t) {
			vm->timers[i] = vm->timers[--vm->nr_timers];
			return;
		}
	}
}

void vm_timer_arm(struct vm_timer *t, uint64_t deadline_tsc)
{
	struct vm *vm = dev_host_vm(t->host);
	if (vm->ended) {   /* nothing runs for a VM that has ended */
		vm_timer_cancel(t);
		return;
	}
	if (!t->armed) {   /* an armed one only moves */
		if (vm->nr_timers == VM_MAX_TIMERS)
			panic("vm%u: more than %u timers armed", vm->id, VM_MAX_TIMERS);
		vm->timers[vm->nr_timers++] = t;
	}
	t->armed = true;
	t->deadline_tsc = deadline_tsc ? deadline_tsc : 1;
	timers_changed(vm);
}

void vm_timer_cancel(struct vm_timer *t)
{
	if (!t->armed)
		return;
	struct vm *vm = dev_host_vm(t->host);
	t->armed = false;
	timer_unlink(vm, t);
	timers_changed(vm);
}

/* After timers fired in a VM of several vCPUs: a device's interrupt
 * reached its vCPU through irq_line_set and the APIC bus, which notified
 * it; a local APIC timer only set its own IRR, so its vCPU is told here. */
static void vm_timers_fired(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (lapic_irr_nonempty(&vm->vcpus[i]->lapic))
			vcpu_notify(vm->vcpus[i]);
}

bool vm_timers_run(struct vm *vm)
{
	bool any = false;
	/* one TSC read for both clocks: the host's and the VM's same instant */
	uint64_t host = rdtsc(), guest = clock_at(&vm->clock, host);
	uint64_t min_gap = vm->timer_min_gap;
	/* timer=lead: a device timer due within the lead fires now, as at its
	 * deadline (vmm/timer_lead.h); `ahead` is the VM's time it fires by */
	uint64_t lead = vm->clock.polling ? 0 : timer_lead_window(&vm->timer_lead);
	uint64_t ahead = guest + lead;
	vm->timers_mode |= VM_TIMERS_FIRING;   /* a fire() that (re)arms a timer: reprogrammed below */
	for (unsigned i = 0; i < vm->nr_timers;) {
		struct vm_timer *t = vm->timers[i];
		uint64_t due = t->deadline_tsc;
		if (due > (t->host_clock ? host : ahead)) {
			i++;
			continue;
		}
		uint64_t now = host;
		if (!t->host_clock) {
			now = guest;
			if (due > guest) {   /* within the lead */
				now = due;
				timer_lead_fired_early(&vm->timer_lead, due);
			} else if (lead) {
				timer_lead_fired_late(&vm->timer_lead, guest - due);
			}
		}
		t->armed = false;
		timer_unlink(vm, t);      /* fire() may re-arm it */
		t->fire(t, now);
		/* a guest's periodic timer re-arming itself within a few ticks would
		 * keep an interrupt pending at every VMRUN and starve the guest (and
		 * every later VM): at most one expiry per TIMER_MIN_PERIOD_US (of the
		 * timer's own clock) */
		if (t->armed && t->deadline_tsc < now + min_gap)
			t->deadline_tsc = now + min_gap;
		any = true;
		i = 0;
		if (!t->host_clock && !vm->clock.polling)
			guest = clock_now(&vm->clock);   /* fire() may have ended polling */
		if (vm->clock.polling)   /* or started it: the VM's time stops at exits */
			lead = 0;
		ahead = guest + lead;
	}
	vm->timers_mode &= (uint8_t)~VM_TIMERS_FIRING;
	if (!vm->timers_mode) {
		reprogram_one(vm);
		if (any)   /* a device timer may have raised an interrupt */
			vm->vcpu->pending |= VCPU_PENDING_RECHECK;
		return any;
	}
	/* several vCPUs: when nothing fired and this CPU's host timer still
	 * counts (a kick woke it), what it counts to stands: a timer armed
	 * elsewhere since is due no earlier, or the CPU that armed it wakes
	 * for it (reprogram_homed). Not after the host timer ran out, early or
	 * not: it must be programmed again. */
	struct vcpu *me = exit_vcpu();
	if (any || !me || me->vm != vm || !timer_counting())
		reprogram_homed(vm);
	if (any)
		vm_timers_fired(vm);
	return any;
}

void vm_timer_lead_wait_slow(struct vm *vm)
{
	struct timer_lead *l = &vm->timer_lead;
	/* The early fires compared their deadlines with the host's time plus
	 * the offset (the lead is 0 while the guest polls its clocks), and the
	 * offset changes only when polling ends: the same time here, whatever
	 * polling did since. Waited in host ticks, never longer than the bound. */
	uint64_t host = rdtsc();
	uint64_t wait = timer_lead_arrived(l, host + (uint64_t)vm->clock.offset);
	uint64_t until = host + (wait < l->max ? wait : l->max);
	while (rdtsc() < until)
		asm volatile("pause" ::: "memory");
}

void vm_timer_lead_print_stats(const struct vm *vm)
{
	const struct timer_lead *l = &vm->timer_lead;
	if (!l->early && !l->missed)
		return;
	kprintf("  timer lead: %lu timers fired ahead of their deadline, %lu past it; %lu waits "
		"(%lu us in all), %lu found the deadline passed; lead %lu ns\n", l->early, l->missed,
		l->waits, muldiv64(l->waited, 1000000, tsc_hz()), l->late,
		muldiv64(l->lead, 1000000000ull, tsc_hz()));
}

/* Empties the VM's timer list in one pass: each entry is disarmed by the
 * list, not looked up, so the loop ends whatever state the timers are in. */
void vm_timers_cancel_all(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_timers; i++)
		vm->timers[i]->armed = false;
	vm->nr_timers = 0;
	timers_changed(vm);
}
