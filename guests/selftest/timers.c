/* timers: the PC's timers as Linux relies on them (vmm/guest_clock.h).
 *
 * Linux 6.1 calibrates its TSC by timing port reads of the PIT and the ACPI
 * PM timer with RDTSC (arch/x86/kernel/tsc.c), then keeps time with the TSC
 * only if the tick it counts (jiffies, from the PIT's or the local APIC's
 * periodic interrupt) agrees with it. This guest does what Linux does, in
 * its own code:
 *  - port 0x61: bit 0 gates PIT channel 2, bit 5 is its OUT;
 *  - channel 2 in mode 0: OUT low at the control word, high at terminal
 *    count, the first byte of a two-byte count stops the count, the gate
 *    pauses it; in mode 2 a low gate holds OUT high and a rising gate
 *    reloads the count; the counter latch and read-back commands;
 *  - the fast calibration (quick_pit_calibrate): MSB polling of channel 2
 *    counting down from 0xffff, which must reach its 500 ppm error bound
 *    within 50 ms of the PIT and agree with the TSC rate the PM timer gives;
 *  - the slow one (pit_calibrate_tsc): 1000 polls of port 0x61 in 10 ms at
 *    least, none more than 10 times longer than the shortest;
 *  - the PM-timer reference (tsc_read_refs): three reads within 0x20000
 *    TSC ticks;
 *  - periodic interrupts, none lost: the PIT's IRQ0 through the 8259 and the
 *    local APIC's periodic timer, each for 80 ms with interrupts off for
 *    30 ms in the middle; the interrupts counted must be the periods that
 *    ended by the TSC (within 2), none merged, none doubled (those that
 *    fell due while the host did not run the VM may come late: up to
 *    200 ms more are given to them).
 * Under an emulator each port read is a VM exit that costs far more than on
 * a PC: lightpath hides that cost from the guest's clocks while it polls
 * them (vmm/guest_clock.h), which is what makes the calibrations pass.
 * While it does not poll, the VM's time is the host's, and a host that does
 * not run QEMU for a few milliseconds (a loaded machine, CI) stalls the VM
 * as a PC's SMI would. A check such a stall can defeat times its try with
 * the TSC and makes it again (a few tries) when the TSC shows the stall made
 * it meaningless; a try whose TSC readings show none is checked strictly,
 * so clocks that disagree still fail. */
#include "guests/rt/rt.h"

#define PIT_CH0   0x40
#define PIT_CH2   0x42
#define PIT_CMD   0x43
#define PORT61    0x61
#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_DATA 0xa1

#define PIT_HZ    1193182ull
#define PM_HZ     3579545ull
#define PM_MASK   0xffffffu

#define LAPIC_MMIO     0xfee00000u
#define LAPIC_EOI      0x0b0
#define LAPIC_LVT_TMR  0x320
#define LAPIC_TMR_INIT 0x380
#define LAPIC_TMR_DIV  0x3e0

#define VEC_PIT   0x20u
#define VEC_LAPIC 0x41u

#define IRQ_PERIOD_US  1000u   /* both periodic timers: 1 kHz */
#define IRQ_ON_MS      25u     /* interrupts on, off, on again */
#define IRQ_OFF_MS     30u
#define CATCH_UP_MS    200u    /* for the late ones of a host that stalled */

static uint64_t tsc_khz;       /* measured against the PM timer */

/* ---- small helpers ---- */

static uint32_t pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & PM_MASK;
}

static void tsc_wait(uint64_t ticks)
{
	uint64_t t0 = rdtsc();
	while (rdtsc() - t0 < ticks)
		;
}

static uint64_t us_to_tsc(uint64_t us)
{
	return tsc_khz * us / 1000;
}

static void gate2(bool on)
{
	outb(PORT61, (uint8_t)((inb(PORT61) & ~0x03) | (on ? 0x01 : 0x00)));
}

static bool out2(void)
{
	return inb(PORT61) & 0x20;
}

/* Channel 2 read back by the read-back command: status then count. */
static uint8_t status2(void)
{
	outb(PIT_CMD, 0xe8);            /* read-back: status only, channel 2 */
	return inb(PIT_CH2);
}

static uint16_t latch2(void)
{
	outb(PIT_CMD, 0x80);            /* counter latch, channel 2 */
	uint8_t lo = inb(PIT_CH2);
	return (uint16_t)(lo | inb(PIT_CH2) << 8);
}

static void load2(uint8_t control, uint16_t count)
{
	outb(PIT_CMD, control);
	outb(PIT_CH2, (uint8_t)count);
	outb(PIT_CH2, (uint8_t)(count >> 8));
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* ---- the TSC rate by the PM timer ---- */

/* The TSC rate against `ms` of the PM timer, as Linux's calibrations do it:
 * the TSC read at every poll (which keeps lightpath's clock polling, and
 * timed: vmm/guest_clock.h), each end a PM timer read between two TSC reads
 * (tsc_read_refs). The PM read is taken at the middle of its two TSC reads;
 * half their distance at each end, and a PM tick, is the error. A host that
 * stalls the VM between the two reads of an end (QEMU descheduled; the VM's
 * time is the host's until polling starts) makes that end's pair far apart,
 * and the rate wrong by as much (+1.25% and +2.5% were seen when the ends
 * were read without a bracket): such a try is made again, up to 5 tries;
 * the one with the smallest error is kept. */
struct tsc_rate {
	uint64_t khz;
	uint64_t err_ppm;       /* the error bound, parts per million */
	unsigned try;           /* 1..5 */
};

#define MEASURE_TRIES   5
#define MEASURE_MAX_PPM 488     /* 1/2048, Linux's bound for the fast calibration */

static void measure_tsc_khz(unsigned ms, struct tsc_rate *r)
{
	uint64_t need = PM_HZ * ms / 1000;
	r->khz = 0;
	r->err_ppm = ~0ull;
	r->try = 0;
	for (unsigned try = 1; try <= MEASURE_TRIES; try++) {
		/* a few polls first: the first read of a spell runs at host speed */
		for (unsigned i = 0; i < 4; i++) {
			(void)rdtsc();
			(void)pm_now();
		}
		uint64_t a0 = rdtsc();
		uint32_t last = pm_now();
		uint64_t b0 = rdtsc(), a1, b1, elapsed = 0;
		do {
			a1 = rdtsc();
			uint32_t p = pm_now();
			elapsed += (p - last) & PM_MASK;
			last = p;
		} while (elapsed < need);
		b1 = rdtsc();
		uint64_t span = (a1 + b1) / 2 - (a0 + b0) / 2;
		uint64_t khz = span * PM_HZ / (elapsed * 1000);
		/* half of each bracket, one PM tick (a read may come just before
		 * the next one), in millionths of the span */
		uint64_t err = (b0 - a0 + b1 - a1) / 2 + span / elapsed;
		uint64_t ppm = err * 1000000 / (span ? span : 1);
		if (ppm < r->err_ppm) {
			r->khz = khz;
			r->err_ppm = ppm;
			r->try = try;
		}
		if (ppm <= MEASURE_MAX_PPM)
			break;
	}
}

/* ---- port 0x61 and channel 2 ---- */

static void check_port61_and_channel2(void)
{
	outb(PORT61, (uint8_t)((inb(PORT61) & ~0x02) | 0x01));
	tap_eq(inb(PORT61) & 0x03, 0x01, "port 0x61: gate on, speaker off read back");
	outb(PIT_CMD, 0xb0);            /* channel 2, lo/hi, mode 0 */
	tap_eq(out2(), 0, "mode 0: OUT2 (port 0x61 bit 5) low after the control word");
	uint8_t st = status2();
	tap_ok(st & 0x40, st, "null count set",
	       "mode 0: the status says null count until a count is written");
	/* From the count's load to the first byte of the next one below, the
	 * count (0xffff, 54.9 ms) must not reach 0: if the host stalls the VM
	 * for that long (its time is the host's while it does not poll), OUT
	 * rises or the count wraps and the checks prove nothing. Such a try
	 * (by the TSC, 50 ms or more) is made again, up to 5 tries. */
	uint8_t st4;
	uint16_t held, live, both;
	uint64_t span_us;
	unsigned tries = 0;
	for (;;) {
		uint64_t t0 = rdtsc();
		outb(PIT_CH2, 0xff);
		outb(PIT_CH2, 0xff);
		tsc_wait(us_to_tsc(50));
		st4 = status2();
		/* the counter latch holds its value while the count goes on */
		outb(PIT_CMD, 0x80);
		tsc_wait(us_to_tsc(400));
		uint8_t lo = inb(PIT_CH2);
		held = (uint16_t)(lo | inb(PIT_CH2) << 8);
		live = latch2();
		/* read-back of status and count together: status first */
		outb(PIT_CMD, 0xc8);
		st = inb(PIT_CH2);
		lo = inb(PIT_CH2);
		both = (uint16_t)(lo | inb(PIT_CH2) << 8);
		/* mode 0: the first byte of a new count stops the count, OUT low */
		outb(PIT_CH2, 0x00);
		span_us = (rdtsc() - t0) * 1000 / tsc_khz;
		if (span_us < 50000 || ++tries == 5)
			break;
		outb(PIT_CMD, 0xb0);    /* again: channel 2, lo/hi, mode 0 */
	}
	unsigned try = tries < 5 ? tries + 1 : 5;
	tap_ok(st4 == 0x30, st4, "0x30",
	       "mode 0 status after a count: OUT low, count loaded, lo/hi, mode 0 (0x%x; try %u)",
	       st4, try);
	tap_ok(held > live && held - live >= 400, held - live, ">= 400 ticks",
	       "a latched count holds while the PIT counts on (%u then %u; try %u)", held, live, try);
	tap_ok(st == 0x30 && both <= live, both, "status 0x30 then a count below the last",
	       "read-back of status and count: status 0x%x first, then count %u (try %u)", st, both,
	       try);
	uint16_t c1 = latch2();
	tsc_wait(us_to_tsc(300));
	uint16_t c2 = latch2();
	tap_ok(c1 == c2 && !out2(), c1 - c2, "0 (stopped)",
	       "mode 0: half a new count written, the count stops (%u, %u) and OUT2 is low; "
	       "%llu us from the load (try %u)", c1, c2, (unsigned long long)span_us, try);

	/* mode 0: OUT2 rises 0x100 ticks (214.5 us) after the count's second
	 * byte. The load lies between two TSC reads, the rise between the TSC
	 * read before the last poll that saw OUT2 low and the one after the
	 * first that saw it high: if the host stalled the VM inside either
	 * pair (its time is the host's while it does not poll: 2.4-7.8 ms were
	 * seen), the time measured proves nothing. A try whose two pairs add
	 * up to 1 ms or more is made again, up to 5 tries; one without sees
	 * the rise within 1.3 ms of the load if the PIT agrees with the TSC. */
	uint64_t us, unc_us;
	bool rose;
	tries = 0;
	for (;;) {
		uint64_t a0 = rdtsc();
		outb(PIT_CH2, 0x01);    /* count 0x100 */
		uint64_t b0 = rdtsc(), low = a0, a, b;
		for (;;) {
			a = rdtsc();
			rose = out2();
			b = rdtsc();
			if (rose || b - a0 >= us_to_tsc(100000))
				break;
			low = a;
		}
		us = (b - a0) * 1000 / tsc_khz;
		unc_us = (b0 - a0 + b - low) * 1000 / tsc_khz;
		if (unc_us < 1000 || ++tries == 5)
			break;
		outb(PIT_CMD, 0xb0);    /* again: a new count's first byte */
		outb(PIT_CH2, 0x00);
	}
	tap_ok(rose && us >= 200 && us < 2000, us, "about 215 us",
	       "mode 0: OUT2 rises at terminal count, 0x100 ticks after the count (%llu us, "
	       "%llu us uncertain; try %u)", (unsigned long long)us, (unsigned long long)unc_us,
	       tries < 5 ? tries + 1 : 5);

	/* the gate pauses mode 0. The count (0x8000, 27.5 ms) must not reach 0
	 * while the gate is high (a host stall while the VM does not poll):
	 * a try where it ran 25 ms or more by the TSC is made again. */
	uint16_t c3;
	uint64_t run_us;
	tries = 0;
	for (;;) {
		uint64_t t0 = rdtsc();
		load2(0xb0, 0x8000);
		gate2(false);
		uint64_t t1 = rdtsc();
		c1 = latch2();
		tsc_wait(us_to_tsc(300));
		c2 = latch2();
		uint64_t t2 = rdtsc();
		gate2(true);
		tsc_wait(us_to_tsc(300));
		c3 = latch2();
		run_us = (t1 - t0 + rdtsc() - t2) * 1000 / tsc_khz;
		if (run_us < 25000 || ++tries == 5)
			break;
	}
	tap_ok(c1 == c2 && c3 < c2, c1 - c2, "0 while the gate is low",
	       "mode 0: a low gate pauses the count (%u, %u), a high one resumes it (%u); "
	       "%llu us with the gate high (try %u)", c1, c2, c3, (unsigned long long)run_us,
	       tries < 5 ? tries + 1 : 5);

	/* mode 2: a low gate holds OUT high and stops the count, a rising one
	 * reloads it. The count's period is 0x1000 ticks (3.4 ms): if the host
	 * does not run the VM for longer than that between the load and the
	 * gate's fall (a loaded host under an emulator: stalls of 3-15 ms were
	 * seen), the count wraps and c1 is anything; if it stalls between the
	 * rising gate and the latch, the reloaded count falls below c3. Such a
	 * try tells nothing (the PIT and the TSC still agree): it is made again,
	 * up to 5 tries. */
	uint16_t c4;
	bool high;
	uint64_t fall_us, rise_ticks;
	tries = 0;
	do {
		uint64_t t0 = rdtsc();
		load2(0xb4, 0x1000);    /* channel 2, lo/hi, mode 2 (the gate is high) */
		tsc_wait(us_to_tsc(500));
		c1 = latch2();
		gate2(false);
		fall_us = (rdtsc() - t0) * 1000 / tsc_khz;
		c2 = latch2();
		tsc_wait(us_to_tsc(300));
		c3 = latch2();
		high = out2();
		uint64_t t1 = rdtsc();
		gate2(true);
		c4 = latch2();
		rise_ticks = (rdtsc() - t1) * PIT_HZ / (tsc_khz * 1000);
	} while ((fall_us >= 3000 || c3 + rise_ticks + 50 >= 0x1000) && ++tries < 5);
	tap_ok(c2 == c3 && high && c1 < 0x1000 - 400 && c4 > c3, c3 - c2,
	       "0 while low, then reloaded",
	       "mode 2: %u after 500 us, a low gate stops the count (%u, %u) with OUT2 %s, "
	       "a rising one reloads it (%u); %llu us from the load to the gate's fall (try %u)",
	       c1, c2, c3, high ? "high" : "low", c4, (unsigned long long)fall_us,
	       tries < 5 ? tries + 1 : 5);
	gate2(false);
}

/* ---- Linux's calibrations, rewritten ---- */

/* One MSB poll: the LSB read and ignored, then the MSB. */
static bool msb_is(uint8_t v)
{
	(void)inb(PIT_CH2);
	return inb(PIT_CH2) == v;
}

/* Polls while the MSB is v: the TSC at the last poll that saw v, and the
 * uncertainty of that moment (from the poll before it to the end). True if
 * it saw v more than 5 times. */
static bool msb_wait(uint8_t v, uint64_t *tsc, uint64_t *err)
{
	uint64_t t = 0, prev = 0;
	unsigned n = 0;
	while (n < 50000 && msb_is(v)) {
		prev = t;
		t = rdtsc();
		n++;
	}
	*err = rdtsc() - prev;
	*tsc = t;
	return n > 5;
}

#define QUICK_MAX_STEPS (50 * PIT_HZ / 1000 / 256)   /* 50 ms of MSB steps */
#define QUICK_TRIES     5

struct quick {
	uint64_t khz;
	unsigned steps;
	uint64_t d1, d2, delta;
	const char *why;
	bool stalled;           /* an MSB seen 5 times or less in its 256 ticks by the TSC */
};

/* An MSB seen 5 times or less: if the TSC says the wait (for 0xff, from the
 * load) took 128 PIT ticks or more, the polls were that far apart (the host
 * stalled the VM before its clock polled) and the PIT agrees with the TSC:
 * the try proves nothing. Quicker, and the PIT disagrees. */
static bool quick_stalled(uint64_t since)
{
	return (rdtsc() - since) * PIT_HZ >= 128 * tsc_khz * 1000;
}

static void quick_calibrate(struct quick *q)
{
	uint64_t t0, t, d2 = 0;
	memset(q, 0, sizeof(*q));
	outb(PORT61, (uint8_t)((inb(PORT61) & ~0x02) | 0x01));
	uint64_t since = rdtsc();
	load2(0xb0, 0xffff);
	(void)msb_is(0);                /* the count starts at the next clock */
	if (!msb_wait(0xff, &t0, &q->d1)) {
		q->why = "MSB 0xff seen 5 times or less";
		q->stalled = quick_stalled(since);
		return;
	}
	for (unsigned i = 1; i <= QUICK_MAX_STEPS; i++) {
		since = rdtsc();
		if (!msb_wait((uint8_t)(0xff - i), &t, &d2)) {
			q->why = "an MSB seen 5 times or less";
			q->stalled = quick_stalled(since);
			break;
		}
		q->steps = i;
		q->d2 = d2;
		q->delta = t - t0;
		/* fail fast when even 50 ms cannot bring the error below 500 ppm */
		if (i == 1 && q->d1 + d2 >= (q->delta * QUICK_MAX_STEPS) >> 11) {
			q->why = "error too large for 50 ms (fail-fast)";
			return;
		}
		if (q->d1 + d2 >= q->delta >> 11)
			continue;
		if (!msb_is((uint8_t)(0xfe - i))) {
			q->why = "the last MSB check";
			return;
		}
		q->khz = q->delta * PIT_HZ / (i * 256ull * 1000);
		return;
	}
	if (!q->why)
		q->why = "50 ms of PIT were not enough";
}

static void check_quick_calibration(void)
{
	struct quick q;
	unsigned try = 0;
	do
		quick_calibrate(&q);
	while (!q.khz && q.stalled && ++try < QUICK_TRIES);
	try = try < QUICK_TRIES ? try + 1 : QUICK_TRIES;
	rt_printf("timers: fast PIT calibration: %llu kHz after %u MSB steps, d1 %llu d2 %llu "
		  "delta %llu TSC ticks%s%s%s (try %u)\n", (unsigned long long)q.khz, q.steps,
		  (unsigned long long)q.d1, (unsigned long long)q.d2, (unsigned long long)q.delta,
		  q.why ? "; failed: " : "", q.why ? q.why : "",
		  q.stalled ? ", the host stalled it" : "", try);
	tap_ok(q.khz != 0, q.steps, "success",
	       "fast PIT calibration (MSB polling, Linux's quick_pit_calibrate) succeeds (try %u)", try);
	tap_ok(q.khz && diff(q.khz, tsc_khz) * 1000 <= tsc_khz, q.khz, "the PM timer's rate",
	       "the PIT counts 1.193182 MHz of the TSC: %llu kHz by the PIT, %llu kHz by the PM timer",
	       (unsigned long long)q.khz, (unsigned long long)tsc_khz);
}

/* Channel 2 counts `ms` while port 0x61 is polled; per poll, the TSC step. */
static void check_slow_calibration(void)
{
	bool ok = false;
	unsigned polls = 0, try;
	uint64_t lo = 0, hi = 0, khz = 0;
	for (try = 0; try < 3 && !ok; try++) {
		outb(PORT61, (uint8_t)((inb(PORT61) & ~0x02) | 0x01));
		load2(0xb0, (uint16_t)(PIT_HZ / 100));   /* 10 ms */
		uint64_t t1 = rdtsc(), t = t1, t2 = t1;
		polls = 0;
		lo = ~0ull;
		hi = 0;
		while (!(inb(PORT61) & 0x20)) {
			t2 = rdtsc();
			uint64_t d = t2 - t;
			t = t2;
			lo = d < lo ? d : lo;
			hi = d > hi ? d : hi;
			polls++;
		}
		khz = (t2 - t1) / 10;
		/* Linux tries up to three times too (native_calibrate_tsc): a try a
		 * host stall disturbed is taken again, not failed */
		ok = polls >= 1000 && hi <= 10 * lo && diff(khz, tsc_khz) * 100 <= tsc_khz;
	}
	rt_printf("timers: slow PIT calibration: %u polls of port 0x61 in 10 ms, steps %llu..%llu "
		  "TSC ticks, %llu kHz (try %u)\n", polls, (unsigned long long)lo,
		  (unsigned long long)hi, (unsigned long long)khz, try);
	tap_ok(polls >= 1000 && hi <= 10 * lo, polls, ">= 1000 polls, none 10 times the shortest",
	       "slow PIT calibration (Linux's pit_calibrate_tsc) accepts a 10 ms window");
	tap_ok(diff(khz, tsc_khz) * 100 <= tsc_khz, khz, "within 1% of the PM timer's rate",
	       "slow PIT calibration agrees with the PM timer (%llu kHz)", (unsigned long long)khz);
}

/* Three PM timer reads between two TSC reads (Linux's acpi_pm_read_verified
 * inside tsc_read_refs), within 0x20000 TSC ticks, in 5 tries. */
static void check_pm_reference(void)
{
	uint64_t best = ~0ull;
	for (unsigned i = 0; i < 5; i++) {
		uint64_t t1 = rdtsc();
		(void)pm_now();
		(void)pm_now();
		(void)pm_now();
		uint64_t d = rdtsc() - t1;
		best = d < best ? d : best;
		if (d < 0x20000)
			break;
	}
	tap_ok(best < 0x20000, best, "< 0x20000",
	       "PM-timer reference (Linux's tsc_read_refs): three reads in %llu TSC ticks",
	       (unsigned long long)best);
}

/* RDTSCP while the guest polls its clocks (Linux's rdtsc_ordered uses it
 * where the CPU has it, e.g. in delay_tsc): lightpath makes it exit like
 * RDTSC and answers on the light path with the VM's time and the guest's
 * TSC_AUX. Both must be what a CPU gives: TSC_AUX as written, the time
 * never going back against RDTSC. */
#define MSR_TSC_AUX 0xc0000103u
#define RDTSCP_POLLS 200

static void check_rdtscp_polling(void)
{
	struct cpuid_regs e0 = cpuid(0x80000000u, 0);
	if (e0.eax < 0x80000001u || !(cpuid(0x80000001u, 0).edx & (1u << 27))) {
		tap_skip("RDTSCP while polling: the CPU offers no RDTSCP");
		return;
	}
	wrmsr(MSR_TSC_AUX, 0x5a5au);
	ureg_t light_b = 0, heavy_b = 0, light_a = 0, heavy_a = 0;
	sreg_t n0 = lp_hypercall(LP_HC_STATS, LP_EXIT_RDTSC, 0, 0, &light_b, &heavy_b);
	unsigned bad_aux = 0, back = 0;
	uint64_t last = rdtsc();
	for (unsigned i = 0; i < RDTSCP_POLLS; i++) {
		(void)pm_now();   /* the clock read that keeps the polling on */
		uint32_t lo, hi, aux;
		asm volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
		uint64_t t = ((uint64_t)hi << 32) | lo;
		bad_aux += aux != 0x5a5au;
		back += t < last;
		last = t;
		uint64_t r = rdtsc();
		back += r < last;
		last = r;
	}
	sreg_t n1 = lp_hypercall(LP_HC_STATS, LP_EXIT_RDTSC, 0, 0, &light_a, &heavy_a);
	tap_eq(bad_aux, 0, "RDTSCP while polling: ECX is the TSC_AUX written, %u times",
	       RDTSCP_POLLS);
	tap_eq(back, 0, "RDTSCP and RDTSC while polling: the time never goes back");
	/* both instructions exit while the clock polls, and both go light
	 * unless light=off (the first few, before polling is seen, may not
	 * exit; a code page first met may take one heavy) */
	sreg_t cfg = lp_hypercall(LP_HC_CONFIG, 0, 0, 0, NULL, NULL);
	uint64_t light = light_a - light_b, heavy = heavy_a - heavy_b;
	if (cfg >= 0 && !(cfg & LP_CONFIG_LIGHT))
		tap_ok(n0 >= 0 && n1 >= 0 && light + heavy >= 2 * RDTSCP_POLLS - 8, light + heavy,
		       ">= 392", "RDTSCP and RDTSC exit while polling (light=off: heavy)");
	else
		tap_ok(n0 >= 0 && n1 >= 0 && light >= 2 * RDTSCP_POLLS - 8 && heavy <= 4, heavy,
		       "<= 4 heavy, >= 392 light",
		       "RDTSCP and RDTSC exits while polling are light (%llu light)",
		       (unsigned long long)light);
}

/* ---- periodic interrupts ---- */

static volatile unsigned pit_irqs, lapic_irqs;

static void on_pit(struct rt_frame *f)
{
	(void)f;
	pit_irqs++;
	outb(PIC1_CMD, 0x20);           /* non-specific EOI */
}

static void on_lapic(struct rt_frame *f)
{
	(void)f;
	lapic_irqs++;
	*(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + LAPIC_EOI) = 0;
}

static void lapic_write(unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + off) = v;
}

/* Counts one timer's interrupts over on, off, on again, from one that came
 * on time; expected: the periods that ended by the TSC. The timer was
 * started at TSC t_start with the counter at c_start. If the host stalled
 * the VM before the count starts (its time is the host's here), the
 * interrupts that fell due meanwhile come late, one by one, after it: they
 * would be counted for periods that ended before the count did (3 too many
 * were seen). The start is therefore an interrupt after which the TSC shows
 * none due and still to come; until then (at most CATCH_UP_MS) the next
 * interrupt is taken as the start instead, and each such try is counted. */
static void count_ticks(const char *what, volatile unsigned *counter, uint64_t t_start,
			unsigned c_start)
{
	uint64_t period = us_to_tsc(IRQ_PERIOD_US), t0;
	uint64_t give_up = rdtsc() + us_to_tsc(CATCH_UP_MS * 1000);
	unsigned n0, late = 0, tries = 0;
	for (;;) {
		unsigned c = *counter;
		sti();
		while (*counter == c && rdtsc() < give_up)
			;
		cli();
		t0 = rdtsc();
		n0 = *counter;
		tries++;
		unsigned due = (unsigned)((t0 - t_start) / period);
		late = due > n0 - c_start ? due - (n0 - c_start) : 0;
		if (!late || t0 >= give_up)
			break;
	}
	sti();
	tsc_wait(us_to_tsc(IRQ_ON_MS * 1000));
	cli();
	tsc_wait(us_to_tsc(IRQ_OFF_MS * 1000));   /* periods end, none can be taken */
	sti();
	tsc_wait(us_to_tsc(IRQ_ON_MS * 1000));
	/* Interrupts that fell due while the host did not run this VM come
	 * late, one by one, each after the last was taken: wait (at most
	 * CATCH_UP_MS, interrupts on) until they have caught up. */
	uint64_t end = rdtsc(), t1 = end;
	unsigned got, want;
	for (;;) {
		cli();
		t1 = rdtsc();
		got = *counter - n0;
		want = (unsigned)((t1 - t0) / period);
		if (got + 2 >= want || t1 - end > us_to_tsc(CATCH_UP_MS * 1000))
			break;
		sti();
		tsc_wait(us_to_tsc(100));
	}
	tap_ok(got + 2 >= want && got <= want + 2, got, "the periods that ended, within 2",
	       "%s: %u interrupts for %u periods, %u ms of them with interrupts off "
	       "(try %u: counted from an interrupt with %u due still to come)", what, got, want,
	       IRQ_OFF_MS, tries, late);
}

static void check_pit_irq0(void)
{
	outb(PIC1_CMD, 0x11);           /* the master as Linux programs it, base 0x20 */
	outb(PIC1_DATA, VEC_PIT);
	outb(PIC1_DATA, 0x04);
	outb(PIC1_DATA, 0x01);
	outb(PIC1_DATA, 0xfe);          /* only IRQ0 */
	outb(PIC2_DATA, 0xff);
	outb(PIT_CMD, 0x34);            /* channel 0, lo/hi, mode 2 */
	unsigned count = (unsigned)(PIT_HZ * IRQ_PERIOD_US / 1000000);
	outb(PIT_CH0, (uint8_t)count);
	unsigned c_start = pit_irqs;
	uint64_t t_start = rdtsc();
	outb(PIT_CH0, (uint8_t)(count >> 8));
	count_ticks("PIT IRQ0 at 1 kHz", &pit_irqs, t_start, c_start);
	outb(PIT_CMD, 0x30);            /* mode 0, one last count, then quiet */
	outb(PIT_CH0, 0xff);
	outb(PIT_CH0, 0xff);
	outb(PIC1_DATA, 0xff);
}

static void check_lapic_periodic(void)
{
	lapic_write(LAPIC_TMR_DIV, 0xb);                  /* divide by 1 */
	lapic_write(LAPIC_LVT_TMR, (1u << 17) | VEC_LAPIC); /* periodic */
	unsigned c_start = lapic_irqs;
	uint64_t t_start = rdtsc();
	lapic_write(LAPIC_TMR_INIT, IRQ_PERIOD_US * 1000);  /* lightpath's bus: 1 GHz */
	count_ticks("local APIC periodic timer at 1 kHz", &lapic_irqs, t_start, c_start);
	lapic_write(LAPIC_TMR_INIT, 0);
	lapic_write(LAPIC_LVT_TMR, 1u << 16);
}

int guest_main(void)
{
	tap_begin("timers");
	cli();
	rt_set_handler(VEC_PIT, on_pit);
	rt_set_handler(VEC_LAPIC, on_lapic);
	struct tsc_rate rate;
	measure_tsc_khz(10, &rate);
	tsc_khz = rate.khz;
	rt_printf("timers: TSC %llu kHz by the PM timer, within %llu ppm (try %u)\n",
		  (unsigned long long)tsc_khz, (unsigned long long)rate.err_ppm, rate.try);
	if (!tap_ok(tsc_khz >= 1000, tsc_khz, ">= 1 MHz", "the TSC counts against the PM timer"))
		return tap_end();
	check_port61_and_channel2();
	check_quick_calibration();
	check_slow_calibration();
	check_pm_reference();
	check_rdtscp_polling();
	if (rt_arg_u64("irqs", 1)) {
		check_pit_irq0();
		check_lapic_periodic();
	}
	return tap_end();
}
