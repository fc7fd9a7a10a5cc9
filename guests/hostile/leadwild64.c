/* leadwild64: a hostile guest of the timer lead (timer=lead, the default;
 * vmm/timer_lead.h; docs/SECURITY.md, case 23). lightpath fires a VM's
 * timers up to its lead ahead of their deadlines and waits for them before
 * the guest runs again: a guest must never see a timer fire early, and must
 * not be able to make lightpath wait for long.
 *
 * With interrupts off, each of these is armed at a random distance and
 * polled until it has fired; the poll reads the evidence that it fired and,
 * after it, what says the time (the evidence then must not be early):
 *  - the TSC-deadline timer: its vector in the IRR, then RDTSC >= deadline;
 *  - the local APIC timer, one-shot: its vector in the IRR, then RDTSC at
 *    or past the count's end (the timer's rate measured against the TSC
 *    first, rounded so that the end it gives is never late);
 *  - an HPET comparator, level-triggered to a masked I/O APIC pin: its
 *    status bit, then the main counter >= the comparator;
 *  - the deadline and the comparator armed to fall due within 2 us of each
 *    other either way, so that in some rounds one exit fires both ahead of
 *    their deadlines and lightpath waits for the later.
 * Then a storm with interrupts on: the deadline's handler re-arms it at a
 * random distance (0 included: due at once) 2000 times; every handler runs
 * at or after its deadline. The itest case checks the VM's `timer lead:`
 * statistics line (the lead within its bound, the time waited too). */
#include "guests/rt/hpet.h"
#include "guests/rt/rt.h"

#define VEC_DEADLINE  0x42u
#define VEC_ONESHOT   0x43u
#define VEC_HPET      0x44u
#define APIC_EXTD     (1ull << 10)
#define X2APIC_IRR(v) (0x820u + ((v) >> 5))
#define X2APIC_TMICT  0x838u
#define X2APIC_TMCCT  0x839u
#define X2APIC_TDCR   0x83eu
#define LVT_MASKED    (1u << 16)
#define LVT_TSCDL     (2u << 17)
#define HPET_BASE     0xfed00000u
#define HPET_TIMER    2u
#define ROUNDS        200u
#define STORM         2000u
#define SPREAD        30000u   /* TSC ticks: the farthest a timer is armed */
#define POLL_MAX      200000u  /* polls before a timer counts as lost */
#define HPET_MIN_TICKS 300u     /* the least a comparator is set ahead (21 us) */

static uint64_t seed = 0x243f6a8885a308d3ull;
static volatile unsigned storm_irqs, storm_early;
static volatile uint64_t storm_deadline;

static uint64_t next_rand(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static bool irr_has(unsigned vec)
{
	return rdmsr(X2APIC_IRR(vec)) >> (vec & 31) & 1;
}

/* A vector the IRR holds with interrupts off: taken (and ended) now. */
static void take_pending(void)
{
	sti();
	asm volatile("nop");
	cli();
}

static void on_quiet(struct rt_frame *f)
{
	(void)f;
	wrmsr(MSR_X2APIC_EOI, 0);
}

static void on_storm(struct rt_frame *f)
{
	(void)f;
	uint64_t t = rdtsc();
	storm_early += t < storm_deadline;
	if (++storm_irqs < STORM) {
		storm_deadline = t + next_rand() % (SPREAD / 4);
		wrmsr(MSR_TSC_DEADLINE, storm_deadline);
	}
	wrmsr(MSR_X2APIC_EOI, 0);
}

struct armed {
	bool deadline, oneshot, hpet, hpet_raced;
	uint64_t tsc_deadline, oneshot_end, hpet_match;
};

static uint64_t tsc_per_tick_q16;   /* TSC ticks per APIC timer tick, 16.16, not above */

/* The APIC timer's rate against the TSC: each TSC read inside the two count
 * reads, so that the TSC interval is the shorter and the rate not above. */
static void calibrate_apic_timer(void)
{
	wrmsr(MSR_X2APIC_LVTT, VEC_ONESHOT | LVT_MASKED);
	wrmsr(X2APIC_TMICT, ~0u);
	uint32_t c0 = (uint32_t)rdmsr(X2APIC_TMCCT);
	uint64_t t0 = rdtsc();
	while (rdtsc() - t0 < rt_tsc_per_ms())
		asm volatile("pause");
	uint64_t t1 = rdtsc();
	uint32_t c1 = (uint32_t)rdmsr(X2APIC_TMCCT);
	wrmsr(X2APIC_TMICT, 0);
	tsc_per_tick_q16 = c0 > c1 ? ((t1 - t0) << 16) / (c0 - c1) : 0;
}

static uint64_t hpet_counter(void)
{
	return rt_hpet_counter(HPET_BASE);
}

struct rates {
	uint64_t hpet_per_tsc_q32;   /* HPET ticks per TSC tick, 32.32 */
	uint64_t tsc_per_hpet;       /* TSC ticks per HPET tick */
	uint64_t jitter;             /* 2 us in TSC ticks */
};

static void arm(struct armed *a, const struct rates *r)
{
	uint64_t now = rdtsc();
	if (a->hpet) {
		/* the last round's match, if its comparator raced the counter */
		rt_hpet_write(HPET_BASE, HPET_STATUS, 1u << HPET_TIMER);
		uint64_t counter = hpet_counter();
		now = rdtsc();
		uint64_t ticks = HPET_MIN_TICKS + (((next_rand() % SPREAD) * r->hpet_per_tsc_q32) >> 32);
		a->hpet_match = counter + ticks;   /* below 2^32: see guest_main */
		rt_hpet_write(HPET_BASE, HPET_TCMP(HPET_TIMER), (uint32_t)a->hpet_match);
		/* a comparator the counter passed before the write matches only
		 * after the counter wraps (as on hardware): no match to wait for */
		a->hpet = hpet_counter() < a->hpet_match;
		a->hpet_raced = !a->hpet;
		/* armed together: the deadline within 2 us of the comparator's time
		 * either way, so that in some rounds one exit fires both ahead */
		a->tsc_deadline = now + ticks * r->tsc_per_hpet - r->jitter +
				  next_rand() % (2 * r->jitter + 1);
	} else {
		a->tsc_deadline = now + next_rand() % SPREAD;
	}
	if (a->deadline)
		wrmsr(MSR_TSC_DEADLINE, a->tsc_deadline);
	if (a->oneshot) {
		uint32_t count = 1 + (uint32_t)(next_rand() % (SPREAD / 8));
		a->oneshot_end = rdtsc() + ((count * tsc_per_tick_q16) >> 16);
		wrmsr(X2APIC_TMICT, count);
	}
}

/* Polls until every armed timer fired; counts what was seen early and what
 * never came. */
static void poll(struct armed *a, unsigned *early, unsigned *lost)
{
	bool d = !a->deadline, o = !a->oneshot, h = !a->hpet;
	for (unsigned i = 0; i < POLL_MAX && !(d && o && h); i++) {
		if (!d && irr_has(VEC_DEADLINE)) {
			*early += rdtsc() < a->tsc_deadline;
			d = true;
		}
		if (!o && irr_has(VEC_ONESHOT)) {
			*early += rdtsc() < a->oneshot_end;
			o = true;
		}
		if (!h && (rt_hpet_read(HPET_BASE, HPET_STATUS) >> HPET_TIMER & 1)) {
			*early += hpet_counter() < a->hpet_match;
			rt_hpet_write(HPET_BASE, HPET_STATUS, 1u << HPET_TIMER);
			h = true;
		}
	}
	*lost += !d + !o + !h;
	take_pending();
}

int guest_main(void)
{
	cli();
	tap_begin("leadwild64");
	rt_set_handler(VEC_DEADLINE, on_quiet);
	rt_set_handler(VEC_ONESHOT, on_quiet);
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	wrmsr(X2APIC_TDCR, 0xb);   /* divide by 1 */
	calibrate_apic_timer();
	tap_ok(tsc_per_tick_q16 != 0, tsc_per_tick_q16, "not 0",
	       "the APIC timer counts down against the TSC");

	/* the HPET: timer 2, level, to the first pin it can use, masked there */
	rt_map_mmio(HPET_BASE);
	uint32_t routes = rt_hpet_read(HPET_BASE, HPET_TCFG(HPET_TIMER) + 4);
	unsigned pin = routes ? (unsigned)__builtin_ctz(routes) : 0;
	uint64_t period_fs = rt_hpet_read(HPET_BASE, HPET_CAP + 4);   /* fs per tick */
	rt_ioapic_route(pin, VEC_HPET, true);
	rt_ioapic_mask(pin);
	/* the comparator's high half 0 once, with the counter stopped: the
	 * counter's stays 0 for 300 s, so each round writes the low half only
	 * (a write of one half never makes a match of the other's old value) */
	rt_hpet_write(HPET_BASE, HPET_TCMP(HPET_TIMER) + 4, 0);
	rt_hpet_write(HPET_BASE, HPET_TCMP(HPET_TIMER), ~0u);
	rt_hpet_write(HPET_BASE, HPET_TCFG(HPET_TIMER),
		      HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_ROUTE(pin));
	rt_hpet_write(HPET_BASE, HPET_STATUS, 1u << HPET_TIMER);
	rt_hpet_write(HPET_BASE, HPET_CONFIG, HPET_CFG_ENABLE);
	/* HPET ticks per TSC tick, 32.32 (the HPET's rate, 10^15 / period_fs,
	 * is below 2^32 Hz) */
	uint64_t hpet_hz = period_fs ? 1000000000000000ull / period_fs : 0;
	uint64_t tsc_hz = rt_tsc_per_ms() * 1000;
	struct rates rates = {
		.hpet_per_tsc_q32 = hpet_hz < (1ull << 32) ? (hpet_hz << 32) / tsc_hz : 0,
		.tsc_per_hpet = hpet_hz ? tsc_hz / hpet_hz : 0,
		.jitter = tsc_hz / 500000,
	};

	static const struct { const char *what; struct armed a; } kinds[] = {
		{ "TSC deadline: its vector in the IRR, then RDTSC at or past the deadline",
		  { .deadline = true } },
		{ "local APIC one-shot count: its vector in the IRR, then RDTSC at or past the "
		  "count's end", { .oneshot = true } },
		{ "HPET comparator (level, masked pin): its status bit, then the main counter at "
		  "or past the comparator", { .hpet = true } },
		{ "TSC deadline and HPET comparator armed together: neither seen early",
		  { .deadline = true, .hpet = true } },
	};
	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		unsigned early = 0, lost = 0, raced = 0;
		wrmsr(MSR_X2APIC_LVTT, kinds[k].a.deadline ? VEC_DEADLINE | LVT_TSCDL : VEC_ONESHOT);
		for (unsigned r = 0; r < ROUNDS; r++) {
			struct armed a = kinds[k].a;
			arm(&a, &rates);
			raced += a.hpet_raced;
			poll(&a, &early, &lost);
		}
		tap_ok(!early && !lost, early * 1000 + lost, "0 early, 0 lost", "%u rounds, %s",
		       ROUNDS, kinds[k].what);
		if (kinds[k].a.hpet)
			tap_ok(raced < ROUNDS / 2, raced, "under half", "%s: the counter passed the "
			       "comparator before its write in few rounds", kinds[k].what);
	}
	rt_hpet_write(HPET_BASE, HPET_CONFIG, 0);

	/* the storm: re-armed from its own handler, interrupts on */
	rt_set_handler(VEC_DEADLINE, on_storm);
	wrmsr(MSR_X2APIC_LVTT, VEC_DEADLINE | LVT_TSCDL);
	storm_deadline = rdtsc();
	wrmsr(MSR_TSC_DEADLINE, storm_deadline);
	sti();
	for (unsigned long i = 0; storm_irqs < STORM && i < 1000000000ul; i++)
		asm volatile("pause");
	cli();
	tap_eq(storm_irqs, STORM, "%u deadlines re-armed from the handler (0 to %u ticks ahead): "
	       "each interrupt came", STORM, SPREAD / 4);
	tap_eq(storm_early, 0, "and no handler ran before its deadline");
	wrmsr(MSR_X2APIC_LVTT, LVT_MASKED);
	return tap_end();
}
