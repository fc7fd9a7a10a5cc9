/* hpetwild: a hostile guest of the HPET (dev/hpet.c; docs/SECURITY.md).
 *
 * (default) periodic timer 0 with a period of 1 tick and of 0 ticks, edge
 *   and level (a level interrupt whose status is left set, so that the I/O
 *   APIC delivers it again at every EOI), each with interrupts on for a
 *   while, the handler turning the 1-tick timer off after 1000 interrupts:
 *   the VM goes on (the PM timer advances to the end of each
 *   wait); routes outside the capability (not taken, no interrupt on those
 *   pins); byte, word and misaligned accesses (read 0, change nothing);
 *   writes to the read-only registers; the main counter written while it
 *   runs; the counter just below 2^64 with a comparator past the wrap; 2000
 *   random values written to random registers of the page with the
 *   counter on and pins unmasked. It leaves the HPET counting with legacy
 *   replacement on (the PIT cut off) and a 1-tick periodic timer 0.
 * mode=storm: timer 0 every tick and a level interrupt never cleared, with
 *   interrupts on, for ever: the guest never leaves its handlers (as on a
 *   PC), the hypervisor runs on and the time limit (vm.timeout=) stops it.
 * mode=check: the next VM finds the HPET as at reset (halted, counter 0,
 *   no legacy route, comparators all ones, timers off), and the PIT's IRQ0
 *   through the I/O APIC (the legacy route the last VM left does not cut it
 *   off here). */
#include "guests/rt/hpet.h"
#include "guests/rt/rt.h"

#define HPET         0xfed00000u
#define LAPIC_MMIO   0xfee00000u
#define PM_HZ        3579545ull
#define PM_MASK      0xffffffu



#define PIN   20u     /* in every timer's route capability */
#define VEC   0x50u
#define VEC_BAD 0x51u /* pins a route outside the capability would reach */
#define VEC_PIT 0x52u
#define STORM 2000u

static volatile unsigned irqs[256];
static uint32_t seed = 0x2545f491u;

static uint32_t next_rand(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static uint32_t rd(unsigned off) { return rt_hpet_read(HPET, off); }
static void wr(unsigned off, uint32_t v) { rt_hpet_write(HPET, off, v); }

static volatile unsigned storm_limit;
#define STORM_IRQS 1000u

/* EOI only: a level interrupt's status is left set, and the I/O APIC
 * delivers it again at once. With storm_limit set, the handler turns timer
 * 0 off (and clears its status) at that many interrupts: a timer every
 * tick keeps an interrupt waiting at every instruction boundary, as on a
 * PC, and the guest would not leave its handlers. */
static void on_irq(struct rt_frame *f)
{
	unsigned n = ++irqs[f->vector & 0xff];
	if (storm_limit && n >= storm_limit) {
		wr(HPET_TCFG(0), 0);
		wr(HPET_STATUS, 1);
		storm_limit = 0;
	}
	*(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + 0xb0) = 0;
}

static uint32_t pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & PM_MASK;
}

/* Interrupts on for `us` by the PM timer: returns when the time is up,
 * which is the check that the VM keeps running. */
static bool wait_us(uint64_t us)
{
	uint32_t start = pm_now();
	uint64_t ticks = us * PM_HZ / 1000000;
	sti();
	while (((pm_now() - start) & PM_MASK) < ticks)
		;
	cli();
	return true;
}

static uint64_t counter64(void)
{
	return rt_hpet_counter(HPET);
}

/* Each comparator write spends VAL_SET: the accumulator's two halves take
 * one VAL_SET each, then the period its two. */
static void timer0_periodic(uint32_t extra, uint32_t period)
{
	uint32_t cfg = HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_ROUTE(PIN) | extra;
	uint64_t first = counter64() + 1000000;   /* 10 ms: the writes are slow exits */
	wr(HPET_TCFG(0), cfg | HPET_TN_VAL_SET);
	wr(HPET_TCMP(0) + 4, (uint32_t)(first >> 32));
	wr(HPET_TCFG(0), cfg | HPET_TN_VAL_SET);
	wr(HPET_TCMP(0), (uint32_t)first);
	wr(HPET_TCMP(0), period);
	wr(HPET_TCMP(0) + 4, 0);
}

/* Timer 0 off, and what it sent taken. */
static void quiet(void)
{
	wr(HPET_TCFG(0), 0);
	wait_us(2000);
}

static void storms(void)
{
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	rt_ioapic_route(PIN, VEC, false);
	irqs[VEC] = 0;
	storm_limit = STORM_IRQS;
	timer0_periodic(0, 1);
	bool ran = wait_us(50000);
	tap_ok(ran && irqs[VEC] > 0, irqs[VEC], "interrupts, and the wait ends",
	       "periodic timer 0 every tick (10 ns), edge, 50 ms with interrupts on: the VM goes on");
	storm_limit = 0;
	quiet();
	irqs[VEC] = 0;
	timer0_periodic(0, 0);
	ran = wait_us(20000);
	tap_ok(ran && irqs[VEC] <= 1, irqs[VEC], "at most one interrupt",
	       "periodic timer 0 with a period of 0: one match, no loop");
	quiet();
	rt_ioapic_route(PIN, VEC, true);
	irqs[VEC] = 0;
	storm_limit = STORM_IRQS;
	timer0_periodic(HPET_TN_LEVEL, 1);
	ran = wait_us(30000);
	tap_ok(ran && irqs[VEC] >= STORM_IRQS && !storm_limit, irqs[VEC], "1000 deliveries, then on",
	       "level, every tick, the status left set: delivered at every EOI, 1000 times");
	wr(HPET_TCFG(0), 0);
	wr(HPET_STATUS, 7);
	rt_ioapic_route(PIN, VEC, false);
}

static void routes(void)
{
	static const unsigned bad[] = { 0, 1, 2, 5, 8, 16, 19, 24, 31 };
	for (unsigned p = 0; p < 24; p++)
		if (p != 2 && p != PIN)
			rt_ioapic_route(p, VEC_BAD, false);
	bool kept = true;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wr(HPET_TCFG(1), HPET_TN_INT_ENB | HPET_TN_ROUTE(PIN));
		wr(HPET_TCFG(1), HPET_TN_INT_ENB | HPET_TN_ROUTE(bad[i]));
		kept &= ((rd(HPET_TCFG(1)) >> 9) & 0x1f) == PIN;
	}
	tap_ok(kept, rd(HPET_TCFG(1)), "the route unchanged", "routes outside the capability are not taken");
	wr(HPET_TCFG(2), HPET_TN_INT_ENB | HPET_TN_ROUTE(5));   /* route 0 stays: nowhere */
	wr(HPET_TCMP(2), rd(HPET_COUNTER) + 1000);
	irqs[VEC_BAD] = 0;
	wait_us(5000);
	tap_eq(irqs[VEC_BAD], 0, "a timer with no valid route interrupts no pin");
	for (unsigned p = 0; p < 24; p++)
		rt_ioapic_mask(p);
	rt_ioapic_route(PIN, VEC, false);
	wr(HPET_TCFG(1), 0);
	wr(HPET_TCFG(2), 0);
}

static void odd_accesses(void)
{
	uint32_t cfg = rd(HPET_CONFIG), cap = rd(HPET_CAP), t0 = rd(HPET_TCFG(0));
	volatile uint8_t *b = (volatile uint8_t *)(uintptr_t)HPET;
	volatile uint16_t *w = (volatile uint16_t *)(uintptr_t)HPET;
	bool zero = true;
	for (unsigned off = 0; off < 0x160; off++)
		zero &= b[off] == 0;
	for (unsigned off = 0; off < 0x160; off += 2)
		zero &= w[off / 2] == 0;
	for (unsigned off = 1; off < 0x160; off += 4)
		zero &= *(volatile uint32_t *)(uintptr_t)(HPET + off) == 0 &&
			*(volatile uint32_t *)(uintptr_t)(HPET + off + 1) == 0 &&
			*(volatile uint32_t *)(uintptr_t)(HPET + off + 2) == 0;
	/* across the page's end: the other half is nobody's (all ones) */
	(void)*(volatile uint32_t *)(uintptr_t)(HPET + 0xffe);
	tap_ok(zero, 0, "0", "byte, word and misaligned reads of every register read 0");
	for (unsigned off = 0; off < 0x160; off++)
		b[off] = 0xff;
	for (unsigned off = 0; off < 0x160; off += 2)
		w[off / 2] = 0xffff;
	for (unsigned off = 1; off < 0x160; off += 4)
		*(volatile uint32_t *)(uintptr_t)(HPET + off) = 0xffffffffu;
	*(volatile uint32_t *)(uintptr_t)(HPET + 0xffe) = 0xffffffffu;
	tap_ok(rd(HPET_CONFIG) == cfg && rd(HPET_CAP) == cap && rd(HPET_TCFG(0)) == t0, rd(HPET_CONFIG),
	       "unchanged", "byte, word and misaligned writes change nothing");
	/* read-only registers */
	uint32_t cap_hi = rd(HPET_CAP + 4), route_cap = rd(HPET_TCFG(0) + 4);
	wr(HPET_CAP, 0);
	wr(HPET_CAP + 4, 0);
	wr(HPET_TCFG(0) + 4, 0xffffffffu);
	wr(HPET_TFSB(0), 0xffffffffu);
	wr(HPET_TFSB(0) + 4, 0xffffffffu);
	wr(0x008, 1);
	wr(0x160, 1);
	tap_ok(rd(HPET_CAP) == cap && rd(HPET_CAP + 4) == cap_hi && rd(HPET_TCFG(0) + 4) == route_cap &&
	       rd(HPET_TFSB(0)) == 0 && rd(0x008) == 0 && rd(0x160) == 0, rd(HPET_CAP), "unchanged",
	       "writes to read-only and reserved registers change nothing");
}

static void counter_games(void)
{
	uint64_t c = counter64();
	wr(HPET_COUNTER, 0);
	wr(HPET_COUNTER + 4, 0);
	tap_ok(counter64() >= c, c, "counting on", "the counter written while it runs: ignored");
	/* just below 2^64, a 64-bit one-shot past the wrap */
	wr(HPET_CONFIG, 0);
	wr(HPET_COUNTER, 0xfffff000u);
	wr(HPET_COUNTER + 4, 0xffffffffu);
	wr(HPET_TCFG(1), HPET_TN_INT_ENB | HPET_TN_ROUTE(PIN));
	wr(HPET_TCMP(1) + 4, 0);
	wr(HPET_TCMP(1), 0x100);
	irqs[VEC] = 0;
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	wait_us(5000);
	tap_ok(irqs[VEC] == 1 && counter64() < 0x100000000ull, irqs[VEC], "one, after the wrap",
	       "the counter wraps past 2^64 and a comparator after the wrap matches once");
	wr(HPET_TCFG(1), 0);
	/* 32-bit periodic with the largest period */
	timer0_periodic(HPET_TN_32MODE, 0xffffffffu);
	wait_us(2000);
	wr(HPET_TCFG(0), 0);
}

static void random_writes(void)
{
	rt_ioapic_route(PIN, VEC, false);
	rt_ioapic_route(2, VEC, false);
	for (unsigned i = 0; i < STORM; i++) {
		unsigned off = (next_rand() % 0x180) & ~3u;
		uint32_t v = next_rand();
		if (off == HPET_STATUS)
			continue;
		wr(off, v);
		if (i % 100 == 99)
			wait_us(500);
	}
	bool ran = wait_us(5000);
	tap_ok(ran, 0, "the wait ends", "2000 random writes to the HPET's registers: the VM runs");
	cli();
}

/* What the next VM must not inherit. */
static void leave_mess(void)
{
	wr(HPET_CONFIG, HPET_CFG_ENABLE | HPET_CFG_LEGACY);
	timer0_periodic(0, 1);
	wr(HPET_TCFG(2), HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_ROUTE(PIN + 1));
	wr(HPET_TCMP(2), rd(HPET_COUNTER) + 5);
	rt_printf("hpetwild: leaving the HPET counting, legacy route on, timer 0 every tick\n");
}

static int check_mode(void)
{
	tap_begin("hpetwild");
	tap_ok(rd(HPET_CONFIG) == 0 && counter64() == 0 && rd(HPET_STATUS) == 0, rd(HPET_CONFIG),
	       "halted, 0, no status", "the HPET is halted, its counter 0, no status, no legacy route");
	bool reset = true;
	for (unsigned n = 0; n < 3; n++)
		reset &= (rd(HPET_TCFG(n)) & 0xffff & ~0x30u) == 0 && rd(HPET_TCMP(n)) == 0xffffffffu &&
			 rd(HPET_TCMP(n) + 4) == 0xffffffffu;
	tap_ok(reset, rd(HPET_TCFG(0)), "off, comparators all ones", "the timers are as at reset");
	rt_ioapic_route(2, VEC_PIT, false);
	irqs[VEC_PIT] = 0;
	outb(0x43, 0x34);
	outb(0x40, (uint8_t)1193);
	outb(0x40, (uint8_t)(1193 >> 8));
	wait_us(20000);
	outb(0x43, 0x30);
	rt_ioapic_mask(2);
	tap_ok(irqs[VEC_PIT] >= 5, irqs[VEC_PIT], "5 or more in 20 ms",
	       "the PIT's IRQ0 reaches the I/O APIC (no legacy route left behind)");
	return tap_end();
}

/* Timer 0 every tick, edge, and timer 2 level on another pin, never
 * acknowledged, interrupts on: only the time limit ends this VM. */
static int storm_mode(void)
{
	rt_printf("hpetwild: timer 0 every tick and a level interrupt never cleared, "
		  "interrupts on, forever\n");
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	rt_ioapic_route(PIN, VEC, false);
	rt_ioapic_route(PIN + 1, VEC, true);
	wr(HPET_TCFG(2), HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_ROUTE(PIN + 1));
	wr(HPET_TCMP(2), rd(HPET_COUNTER) + 100000);
	timer0_periodic(0, 1);
	sti();
	for (;;)
		(void)pm_now();
	return 0;
}

int guest_main(void)
{
	rt_set_handler(VEC, on_irq);
	rt_set_handler(VEC_BAD, on_irq);
	rt_set_handler(VEC_PIT, on_irq);
	char mode[16];
	if (rt_arg("mode", mode, sizeof(mode)) && !strcmp(mode, "check"))
		return check_mode();
	if (rt_arg("mode", mode, sizeof(mode)) && !strcmp(mode, "storm"))
		return storm_mode();
	tap_begin("hpetwild");
	storms();
	routes();
	odd_accesses();
	counter_games();
	random_writes();
	int status = tap_end();
	leave_mess();
	return status;
}
