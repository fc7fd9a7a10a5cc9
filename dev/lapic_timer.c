/* Local APIC: the timer (one-shot, periodic, TSC deadline), counting in
 * the VM's time on a vm_timer. The files of the model:
 * dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

#include "dev/tick_math.h"

static unsigned divide_shift(uint32_t div)
{
	unsigned v = (div & 3) | ((div & 8) >> 1);
	return (v + 1) & 7; /* 0b111 -> divide by 1 */
}

static uint64_t bus_ticks(const struct lapic *a, uint64_t tsc_delta)
{
	return muldiv64(tsc_delta, LAPIC_BUS_HZ, a->tsc_hz);
}

static uint64_t tsc_for_ticks(const struct lapic *a, uint64_t ticks)
{
	return muldiv64_ceil(ticks, a->tsc_hz, LAPIC_BUS_HZ);
}

static uint64_t timer_period(const struct lapic *a)
{
	return (uint64_t)a->timer_init << divide_shift(a->timer_div);
}

static void timer_deliver(struct lapic *a)
{
	uint32_t lvt = a->lvt[LVT_TIMER];
	a->timer_fires++;
	if (!(lvt & LAPIC_LVT_MASKED))
		lapic_accept(a, (uint8_t)lvt, false);
}

/* Accepts the next periodic interrupt due unless the last one still waits
 * in IRR (it would merge with it); `taken`: the CPU just took one. A masked
 * LVT drops them: the count goes on, no interrupt is sent. */
void lapic_timer_send_late(struct lapic *a, bool taken)
{
	uint32_t lvt = a->lvt[LVT_TIMER];
	if (lvt & LAPIC_LVT_MASKED) {
		a->timer_late = 0;
		return;
	}
	if (!a->timer_late || lapic_vec_test(a, LAPIC_IRR, (uint8_t)lvt))
		return;
	if (taken || a->timer_late > 1)   /* not the period that just ended */
		a->timer_fires_late++;
	a->timer_late--;
	timer_deliver(a);
}

/* A (re)start moves an armed timer with vm_timer_arm alone: a cancel first
 * would program the host timer once more for nothing. */
static void timer_start(struct lapic *a, uint64_t now)
{
	a->timer_running = a->timer_init != 0;
	a->timer_periods = 0;
	a->timer_late = 0;
	if (!a->timer_running) {
		vm_timer_cancel(&a->timer);
		return;
	}
	a->timer_start = now;
	vm_timer_arm(&a->timer, now + tsc_for_ticks(a, timer_period(a)));
}

static void deadline_arm(struct lapic *a, uint64_t now)
{
	if (!a->tsc_deadline) {
		vm_timer_cancel(&a->timer);
		return;
	}
	/* Due once the guest's TSC has reached it: an unsigned compare in guest
	 * TSC, as the CPU makes it (around a wrap of the guest's TSC, which its
	 * IA32_TSC writes can bring near, not of the VM's time). Armed in the
	 * VM's time (the clock without those writes), in which the timer
	 * service counts; one beyond its range never fires. */
	uint64_t guest_now = now + (uint64_t)a->tsc_offset;
	if (a->tsc_deadline <= guest_now) {
		if (a->timer.armed)   /* not when it fired: vm_timers_run disarmed it */
			vm_timer_cancel(&a->timer);
		a->tsc_deadline = 0;
		timer_deliver(a);
		return;
	}
	uint64_t ahead = a->tsc_deadline - guest_now;
	vm_timer_arm(&a->timer, ahead > UINT64_MAX - now ? UINT64_MAX : now + ahead);
}

/* A one-shot or periodic count's expiry (out of line: the deadline's path
 * in lapic_timer_fire then saves no register). */
static __attribute__((noinline)) void timer_fire_count(struct vm_timer *t, struct lapic *a,
							unsigned mode, uint64_t now)
{
	if (!a->timer_running)
		return;
	uint64_t period = timer_period(a);
	uint64_t elapsed = bus_ticks(a, now - a->timer_start);
	if (elapsed < period) { /* early: wait for the rest */
		vm_timer_arm(t, a->timer_start + tsc_for_ticks(a, period));
		return;
	}
	if (mode != LAPIC_TIMER_PERIODIC) {
		a->timer_running = false;
		timer_deliver(a);
		return;
	}
	/* Every period that ended is one interrupt: those the guest could not
	 * take yet (the last still in IRR) are sent as it takes them. */
	uint64_t k = elapsed / period, late = a->timer_late + (k - a->timer_periods);
	a->timer_periods = k;
	a->timer_late = late > LAPIC_MAX_LATE ? LAPIC_MAX_LATE : (uint32_t)late;
	lapic_timer_send_late(a, false);
	vm_timer_arm(t, a->timer_start + tsc_for_ticks(a, (k + 1) * period));
}

void lapic_timer_fire(struct vm_timer *t, uint64_t now)
{
	struct lapic *a = t->opaque;
	unsigned mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);

	if (mode == LAPIC_TIMER_TSCDEADLINE) {
		if (a->tsc_deadline)
			deadline_arm(a, now); /* delivers if due, re-arms if early */
		return;
	}
	timer_fire_count(t, a, mode, now);
}

static uint32_t timer_current_at(const struct lapic *a, uint64_t now)
{
	unsigned mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);
	if (!a->timer_running || mode == LAPIC_TIMER_TSCDEADLINE)
		return 0;
	uint64_t counts = bus_ticks(a, now - a->timer_start) >> divide_shift(a->timer_div);
	if (mode == LAPIC_TIMER_PERIODIC)
		return a->timer_init - (uint32_t)(counts % a->timer_init);
	return counts >= a->timer_init ? 0 : a->timer_init - (uint32_t)counts;
}

uint32_t lapic_timer_current(struct lapic *a)
{
	return timer_current_at(a, clock_access(a->clock, true));
}

void lapic_timer_write_lvt(struct lapic *a, uint32_t v)
{
	unsigned old_mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);
	unsigned new_mode = LAPIC_TIMER_MODE(v);
	a->lvt[LVT_TIMER] = v;
	lapic_mirror(a, LAPIC_LVT_TIMER, v);
	/* Switching into or out of TSC-deadline mode disarms the timer and
	 * clears both the initial count and the deadline. One-shot <-> periodic
	 * keeps counting; the mode applies at the next expiry. */
	if ((old_mode == LAPIC_TIMER_TSCDEADLINE) != (new_mode == LAPIC_TIMER_TSCDEADLINE)) {
		vm_timer_cancel(&a->timer);
		a->timer_running = false;
		a->timer_init = 0;
		lapic_mirror(a, LAPIC_TIMER_INIT, 0);
		a->tsc_deadline = 0;
	}
}

void lapic_timer_write_init(struct lapic *a, uint32_t v)
{
	if (LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE)
		return; /* ignored in TSC-deadline mode */
	a->timer_init = v;
	lapic_mirror(a, LAPIC_TIMER_INIT, v);
	timer_start(a, clock_access(a->clock, false));
}

/* A new divisor applies from now on: the current count keeps its value and
 * goes on counting at the new rate (the period end moves accordingly). */
void lapic_timer_write_divide(struct lapic *a, uint32_t div)
{
	if (!a->timer_running || LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE) {
		a->timer_div = div;
		lapic_mirror(a, LAPIC_TIMER_DIV, div);
		return;
	}
	uint64_t now = clock_access(a->clock, false);
	uint32_t cur = timer_current_at(a, now);
	a->timer_div = div;
	lapic_mirror(a, LAPIC_TIMER_DIV, div);
	if (!cur) {
		a->timer_running = false;
		vm_timer_cancel(&a->timer);
		return;
	}
	/* Pretend the count was loaded when, at the new rate, it would have
	 * reached `cur` now. */
	uint64_t done = (uint64_t)(a->timer_init - cur) << divide_shift(div);
	a->timer_start = now - tsc_for_ticks(a, done);
	a->timer_periods = 0;   /* within the first period of the new start */
	vm_timer_arm(&a->timer, a->timer_start + tsc_for_ticks(a, timer_period(a)));
}

void lapic_tsc_deadline_write(struct lapic *a, uint64_t value)
{
	/* Outside TSC-deadline mode (or with the APIC disabled) the write is
	 * ignored. */
	if (lapic_hw_enabled(a) && LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE) {
		a->tsc_deadline = value;
		deadline_arm(a, clock_access(a->clock, false));
	}
}

