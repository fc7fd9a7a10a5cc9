/* dev/hpet.c: registers, the counter against the VM's clock, one-shot,
 * periodic and 32-bit timers, level and edge interrupts, legacy routing
 * (with the PIT cut off), and what a hostile guest may write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/hpet.h"
#include "dev/pit8254.h"
#include "tests/unit/stubs.h"

#define TSC_HZ 1000000000ull   /* 10 TSC ticks per HPET tick */
#define T0     1000000ull      /* the VM's time at init */

static struct hpet h;
static struct pit8254 pit;
static unsigned legacy_calls;
static bool legacy_on;

static void legacy_hook(void *ctx, bool on)
{
	legacy_calls++;
	legacy_on = on;
	if (ctx)
		pit_irq_replace(ctx, on);
}

static void start(void)
{
	stubs_reset();
	stub_tsc_hz = TSC_HZ;
	stub_tsc = T0;
	legacy_calls = 0;
	legacy_on = false;
	hpet_init(&h, FAKE_HOST);
	hpet_set_legacy(&h, legacy_hook, NULL);
}

static uint64_t rd(unsigned off, unsigned size)
{
	uint64_t v = 0xdeadbeefcafef00dull;
	assert_int_equal(hpet_mmio(&h, HPET_BASE + off, &v, size, false), IO_OK);
	return v;
}

static void wr(unsigned off, unsigned size, uint64_t val)
{
	assert_int_equal(hpet_mmio(&h, HPET_BASE + off, &val, size, true), IO_OK);
}

#define CFG(n) (HPET_REG_TIMER(n) + HPET_TIMER_CONFIG)
#define CMP(n) (HPET_REG_TIMER(n) + HPET_TIMER_CMP)
#define ROUTE(p) ((uint64_t)(p) << HPET_TN_ROUTE_SHIFT)

/* The TSC at which the counter (started at T0 from 0) reads `ticks`. */
static uint64_t tsc_of(uint64_t ticks)
{
	return T0 + ticks * (TSC_HZ / HPET_HZ);
}

static void test_range_and_caps(void **state)
{
	(void)state;
	start();
	assert_true(hpet_desc.mmio);
	/* light: its 32-bit MOVs on the light path */
	assert_true(stub_desc_range_is(&hpet_desc, 0, 0xfed00000u, 0x1000, hpet_mmio, true));
	assert_string_equal(hpet_desc.name, "hpet");

	assert_int_equal(rd(0x000, 4), 0x8086a201u);
	assert_int_equal(rd(0x004, 4), 10000000u);     /* fs per tick: 100 MHz */
	assert_int_equal(rd(0x000, 8), 0x009896808086a201ull);
	wr(0x000, 8, 0);                               /* read-only */
	wr(0x004, 4, 0x1234);
	assert_int_equal(rd(0x000, 8), 0x009896808086a201ull);
	/* reset state */
	assert_int_equal(rd(HPET_REG_CONFIG, 8), 0);
	assert_int_equal(rd(HPET_REG_STATUS, 8), 0);
	assert_int_equal(rd(HPET_REG_COUNTER, 8), 0);
	for (unsigned n = 0; n < 3; n++) {
		uint64_t c = rd(CFG(n), 8);
		assert_int_equal(c >> 32, HPET_ROUTE_CAP);
		assert_int_equal((uint32_t)c, HPET_TN_SIZE_CAP | (n == 0 ? HPET_TN_PER_CAP : 0));
		assert_int_equal(rd(CMP(n), 8), ~0ull);
		assert_int_equal(rd(HPET_REG_TIMER(n) + HPET_TIMER_FSB, 8), 0);
	}
	/* reserved registers and the absent timers 3-31 */
	assert_int_equal(rd(0x008, 8), 0);
	assert_int_equal(rd(0x018, 4), 0);
	assert_int_equal(rd(0x0f8, 8), 0);
	assert_int_equal(rd(0x160, 8), 0);
	assert_int_equal(rd(0x3f8, 4), 0);
	assert_int_equal(rd(0xffc, 4), 0);
	wr(0x160, 8, ~0ull);
	assert_int_equal(rd(0x160, 8), 0);
	/* read-only timer bits: caps, FSB enable; periodic only on timer 0 */
	wr(CFG(1), 8, ~0ull);
	uint64_t c1 = rd(CFG(1), 8);
	assert_int_equal(c1 >> 32, HPET_ROUTE_CAP);
	assert_false(c1 & (HPET_TN_PERIODIC | HPET_TN_PER_CAP | HPET_TN_FSB_EN | HPET_TN_FSB_CAP));
	assert_int_equal(h.bad_accesses, 0);
}

static void test_counter(void **state)
{
	(void)state;
	start();
	/* halted: writable, 32-bit halves and 64-bit */
	wr(HPET_REG_COUNTER, 4, 0x11111111);
	wr(HPET_REG_COUNTER + 4, 4, 0x22222222);
	assert_int_equal(rd(HPET_REG_COUNTER, 8), 0x2222222211111111ull);
	wr(HPET_REG_COUNTER, 8, 0);
	stub_tsc += 12345;
	assert_int_equal(rd(HPET_REG_COUNTER, 8), 0);  /* halted */
	stub_tsc = T0;
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	assert_int_equal(rd(HPET_REG_CONFIG, 4), HPET_CFG_ENABLE);
	stub_tsc = T0 + 9;
	assert_int_equal(rd(HPET_REG_COUNTER, 4), 0);
	stub_tsc = T0 + 10;
	assert_int_equal(rd(HPET_REG_COUNTER, 4), 1);
	stub_tsc = T0 + TSC_HZ;                      /* one second */
	assert_int_equal(rd(HPET_REG_COUNTER, 8), HPET_HZ);
	/* a write while it runs is ignored */
	wr(HPET_REG_COUNTER, 8, 5);
	assert_int_equal(rd(HPET_REG_COUNTER, 8), HPET_HZ);
	/* halting freezes it; starting again counts on from there */
	wr(HPET_REG_CONFIG, 4, 0);
	stub_tsc += 5000;
	assert_int_equal(rd(HPET_REG_COUNTER, 8), HPET_HZ);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	stub_tsc += 100;
	assert_int_equal(rd(HPET_REG_COUNTER, 8), HPET_HZ + 10);
	/* 32-bit reads of the high half; the wrap of 2^64 */
	wr(HPET_REG_CONFIG, 4, 0);
	wr(HPET_REG_COUNTER, 8, ~0ull - 4);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	assert_int_equal(rd(HPET_REG_COUNTER + 4, 4), 0xffffffffu);
	stub_tsc += 100;
	assert_int_equal(rd(HPET_REG_COUNTER, 8), 5);
	/* a counter read is a clock read */
	assert_int_equal(stub_clock.last_read, stub_tsc);
}

/* A one-shot edge timer on pin 20: one edge at the comparator, none
 * after in 64-bit mode; the comparator stays. */
static void test_one_shot_edge(void **state)
{
	(void)state;
	start();
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(20));
	wr(CMP(2), 8, 1000);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	assert_int_equal(stubs_next_deadline(), tsc_of(1000));
	stubs_advance_to(tsc_of(1000) - 1);
	assert_int_equal(stub_irq_raises[20], 0);
	stubs_advance_to(tsc_of(1000));
	assert_int_equal(stub_irq_raises[20], 1);
	assert_false(stub_irq_level[20]);              /* an edge: back low */
	assert_int_equal(rd(CMP(2), 8), 1000);
	assert_int_equal(rd(HPET_REG_STATUS, 4), 0);    /* edge: no status */
	assert_int_equal(stubs_next_deadline(), 0);
	stubs_advance_to(tsc_of(1ull << 33));
	assert_int_equal(stub_irq_raises[20], 1);
	/* a comparator behind the counter: no match (it would come after 2^64) */
	wr(CMP(2), 8, 5);
	assert_int_equal(stubs_next_deadline(), 0);
	/* disabled interrupt: a match sends nothing */
	wr(CFG(2), 4, ROUTE(20));
	wr(CMP(2), 8, (1ull << 33) + 100);
	stubs_advance_to(tsc_of((1ull << 33) + 200));
	assert_int_equal(stub_irq_raises[20], 1);
	assert_int_equal(h.matches, 2);
}

/* 32-bit mode: the comparator is 32 bits, high-half writes are ignored,
 * a one-shot timer matches each time the low half wraps. */
static void test_32bit_mode(void **state)
{
	(void)state;
	start();
	wr(CFG(1), 4, HPET_TN_INT_ENB | HPET_TN_32MODE | ROUTE(21));
	assert_int_equal(rd(CMP(1), 8), 0xffffffffu);  /* truncated on entering 32-bit mode */
	wr(CMP(1) + 4, 4, 0x12345678);
	assert_int_equal(rd(CMP(1), 8), 0xffffffffu);
	wr(CMP(1), 8, 0xabcdef0000000100ull);
	assert_int_equal(rd(CMP(1), 8), 0x100);
	wr(HPET_REG_COUNTER, 8, 0x700000000ull);       /* high half set: ignored by the match */
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	stubs_advance_to(tsc_of(0x100));
	assert_int_equal(stub_irq_raises[21], 1);
	stubs_advance_to(tsc_of(0x100 + (1ull << 32) - 1));
	assert_int_equal(stub_irq_raises[21], 1);
	stubs_advance_to(tsc_of(0x100 + (1ull << 32)));
	assert_int_equal(stub_irq_raises[21], 2);
	assert_int_equal(rd(HPET_REG_COUNTER, 8), 0x800000100ull);
}

/* Linux's periodic setup: VAL_SET, the first value, then the period. */
#define P 10000u   /* 100 us: HPET_MIN_KEPT_PERIOD, the shortest kept edge by edge */
static void test_periodic(void **state)
{
	(void)state;
	start();
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | HPET_TN_32MODE |
		      ROUTE(22));
	assert_true(rd(CFG(0), 4) & HPET_TN_VAL_SET);
	wr(CMP(0), 4, 5000);
	assert_false(rd(CFG(0), 4) & HPET_TN_VAL_SET); /* cleared by the write */
	wr(CMP(0), 4, P);                              /* the period only */
	assert_int_equal(rd(CMP(0), 4), 5000);
	stubs_advance_to(tsc_of(5000));
	assert_int_equal(stub_irq_raises[22], 1);
	assert_int_equal(rd(CMP(0), 4), 5000 + P);
	stubs_advance_to(tsc_of(5000 + 10 * P));
	assert_int_equal(stub_irq_raises[22], 11);
	assert_int_equal(rd(CMP(0), 4), 5000 + 11 * P);
	/* the CPU has not taken the last edge: those due are kept... */
	stub_irq_edge_state = IRQ_EDGE_WAITING;
	stubs_advance_to(tsc_of(5000 + 13 * P));
	assert_int_equal(stub_irq_raises[22], 11);
	assert_int_equal(h.t[0].late, 3);
	/* ...and sent one at a time as it takes them */
	stub_irq_edge_state = IRQ_EDGE_FREE;
	hpet_irq_taken(&h);
	assert_int_equal(stub_irq_raises[22], 12);
	hpet_irq_taken(&h);
	hpet_irq_taken(&h);
	hpet_irq_taken(&h);
	assert_int_equal(stub_irq_raises[22], 14);
	assert_int_equal(h.late_any, 0);
	/* a host stall of many periods: one fire, one division */
	stub_tsc = tsc_of(5000 + 1013 * P);
	unsigned fires = stubs_advance_to(stub_tsc);
	assert_int_equal(fires, 1);
	assert_int_equal(rd(CMP(0), 4), 5000 + 1014 * P);
	assert_int_equal(h.matches, 14 + 1000);
	/* 64-bit periodic, VAL_SET with a 64-bit write */
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | ROUTE(22));
	wr(CMP(0), 8, 20000000);
	wr(CMP(0), 8, 2 * P);
	h.t[0].late = 0;
	unsigned before = stub_irq_raises[22];
	stubs_advance_to(tsc_of(20000000));
	assert_int_equal(stub_irq_raises[22], before + 1);
	assert_int_equal(rd(CMP(0), 8), 20000000 + 2 * P);
	/* a period under HPET_MIN_KEPT_PERIOD: a fire's matches merge */
	wr(CMP(0), 8, P - 1);
	stub_irq_edge_state = IRQ_EDGE_WAITING;
	stub_tsc = tsc_of(20000000 + 2 * P + 50 * P);
	stubs_advance_to(stub_tsc);
	assert_int_equal(h.t[0].late, 1);
	stub_irq_edge_state = IRQ_EDGE_FREE;
	wr(CFG(0), 4, 0);
}

/* Level-triggered: the status bit and the line, write 1 to clear. */
static void test_level_status(void **state)
{
	(void)state;
	start();
	wr(CFG(2), 4, HPET_TN_LEVEL | ROUTE(23));      /* interrupt disabled */
	wr(CMP(2), 8, 100);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	stubs_advance_to(tsc_of(100));
	assert_int_equal(rd(HPET_REG_STATUS, 4), 4);   /* the status even so */
	assert_false(stub_irq_level[23]);
	wr(CFG(2), 4, HPET_TN_LEVEL | HPET_TN_INT_ENB | ROUTE(23));
	assert_true(stub_irq_level[23]);               /* enabled with the status set */
	wr(HPET_REG_STATUS, 4, 3);                     /* other bits: nothing */
	assert_true(stub_irq_level[23]);
	wr(HPET_REG_STATUS, 4, 4);
	assert_int_equal(rd(HPET_REG_STATUS, 4), 0);
	assert_false(stub_irq_level[23]);
	/* halting the counter lowers the line, the status stays */
	wr(CMP(2), 8, 300);
	stubs_advance_to(tsc_of(300));
	assert_true(stub_irq_level[23]);
	wr(HPET_REG_CONFIG, 4, 0);
	assert_false(stub_irq_level[23]);
	assert_int_equal(rd(HPET_REG_STATUS, 4), 4);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	assert_true(stub_irq_level[23]);
	/* switching to edge clears the status and the line */
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(23));
	assert_int_equal(rd(HPET_REG_STATUS, 4), 0);
	assert_false(stub_irq_level[23]);
}

/* LEG_RT_CNF: timer 0 on IRQ0, timer 1 on IRQ8, the routes ignored, and
 * the PIT's IRQ0 cut off. */
static void test_legacy_route(void **state)
{
	(void)state;
	start();
	pit_init(&pit, FAKE_HOST);
	hpet_init(&h, FAKE_HOST);
	hpet_set_legacy(&h, legacy_hook, &pit);
	/* PIT channel 0, mode 2, 1 ms */
	uint64_t v = 0x34;
	pit_io(&pit, 0x43, &v, 1, true);
	v = 1193 & 0xff;
	pit_io(&pit, 0x40, &v, 1, true);
	v = 1193 >> 8;
	pit_io(&pit, 0x40, &v, 1, true);
	stubs_advance_to(T0 + 5 * TSC_HZ / 1000 + 100);
	unsigned pit_irqs = stub_irq_raises[0];
	assert_true(pit_irqs >= 4);

	wr(HPET_REG_CONFIG, 4, HPET_CFG_LEGACY);
	assert_int_equal(legacy_calls, 1);
	assert_true(legacy_on);
	stubs_advance_to(stub_tsc + 10 * TSC_HZ / 1000);
	assert_int_equal(stub_irq_raises[0], pit_irqs);  /* no PIT IRQ0 */

	wr(CFG(0), 4, HPET_TN_INT_ENB | ROUTE(20));
	wr(CFG(1), 4, HPET_TN_INT_ENB | ROUTE(21));
	uint64_t now_ticks = 0;
	wr(CMP(0), 8, now_ticks + 100);
	wr(CMP(1), 8, now_ticks + 200);
	uint64_t t_start = stub_tsc;
	wr(HPET_REG_CONFIG, 4, HPET_CFG_LEGACY | HPET_CFG_ENABLE);
	stubs_advance_to(t_start + 200 * 10);
	assert_int_equal(stub_irq_raises[0], pit_irqs + 1);
	assert_int_equal(stub_irq_raises[8], 1);
	assert_int_equal(stub_irq_raises[20], 0);
	assert_int_equal(stub_irq_raises[21], 0);

	/* off again: the PIT's IRQ0 comes back, the timers use their routes */
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	assert_int_equal(legacy_calls, 2);
	assert_false(legacy_on);
	unsigned before = stub_irq_raises[0];
	stubs_advance_to(stub_tsc + 5 * TSC_HZ / 1000);
	assert_true(stub_irq_raises[0] >= before + 4);
	vm_timer_cancel(&pit.timer);
}

/* What a hostile guest may do: nothing crashes, loops or divides by 0. */
static void test_hostile(void **state)
{
	(void)state;
	start();
	/* a route not in the capability is not taken */
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(5));
	assert_int_equal((rd(CFG(2), 4) & HPET_TN_ROUTE_MASK), 0);
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(20));
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(2));
	assert_int_equal((rd(CFG(2), 4) & HPET_TN_ROUTE_MASK), ROUTE(20));
	/* route 0 (reset) delivers nowhere */
	wr(CFG(1), 4, HPET_TN_INT_ENB);
	wr(CMP(1), 8, 10);
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	stubs_advance_to(tsc_of(20));
	assert_int_equal(stub_irq_calls, 0);

	/* odd sizes and misaligned accesses: read 0, change nothing */
	uint64_t cap = rd(0, 8);
	assert_int_equal(rd(0x000, 1), 0);
	assert_int_equal(rd(0x000, 2), 0);
	assert_int_equal(rd(0x001, 4), 0);
	assert_int_equal(rd(0x004, 8), 0);
	assert_int_equal(rd(0xffe, 4), 0);
	assert_int_equal(rd(0xffc, 8), 0);
	wr(HPET_REG_CONFIG, 1, 0);
	wr(HPET_REG_CONFIG + 2, 4, 0);
	wr(HPET_REG_STATUS, 2, 0xff);
	assert_int_equal(rd(HPET_REG_CONFIG, 4), HPET_CFG_ENABLE);
	assert_int_equal(rd(0, 8), cap);
	assert_int_equal(h.bad_accesses, 9);
	uint64_t v = 7;   /* beyond the page (a range never passes it) */
	assert_int_equal(hpet_mmio(&h, HPET_BASE + 0x1000, &v, 4, false), IO_OK);
	assert_int_equal(v, 0);

	/* periodic with period 0: a one-shot, no division by 0, no loop */
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | ROUTE(22));
	uint64_t c = rd(HPET_REG_COUNTER, 8);
	wr(CMP(0), 8, c + 10);
	wr(CMP(0), 8, 0);
	assert_int_equal(stubs_advance_to(tsc_of(c + 1000000)), 1);
	assert_int_equal(stub_irq_raises[22], 1);
	assert_int_equal(stubs_next_deadline(), 0);
	/* 32-bit periodic, period 0: again only once per 2^32 ticks */
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | HPET_TN_32MODE |
		      ROUTE(22));
	c = rd(HPET_REG_COUNTER, 8);
	wr(CMP(0), 4, (uint32_t)(c + 10));
	wr(CMP(0), 4, 0);
	assert_int_equal(stubs_advance_to(tsc_of(c + 1000000)), 1);
	assert_int_equal(stubs_next_deadline(), tsc_of(c + 10 + (1ull << 32)));

	/* period 1 tick: each fire is one division; the backlog is capped */
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | ROUTE(22));
	c = rd(HPET_REG_COUNTER, 8);
	wr(CMP(0), 8, c + 1);
	wr(CMP(0), 8, 1);
	stub_irq_edge_state = IRQ_EDGE_WAITING;
	assert_int_equal(stubs_advance_to(tsc_of(c + 1)), 1);
	stub_tsc = tsc_of(c + 10000000);                  /* a 100 ms stall */
	assert_int_equal(stubs_advance_to(tsc_of(c + 10000000)), 1);
	assert_int_equal(h.t[0].late, 1);                 /* merged: no backlog */
	/* a kept period: the backlog is capped */
	wr(CMP(0), 8, HPET_MIN_KEPT_PERIOD);
	c = rd(HPET_REG_COUNTER, 8);
	stub_tsc = tsc_of(c + 100000ull * HPET_MIN_KEPT_PERIOD);
	assert_int_equal(stubs_advance_to(stub_tsc), 1);
	assert_int_equal(h.t[0].late, HPET_MAX_LATE);
	/* masked everywhere: the backlog goes */
	stub_irq_edge_state = IRQ_EDGE_MASKED;
	hpet_irq_taken(&h);
	assert_int_equal(h.t[0].late, 0);
	/* period 2^64 - 1 and a comparator at the end: no overflow */
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | ROUTE(22));
	c = rd(HPET_REG_COUNTER, 8);
	wr(CMP(0), 8, c + 1);
	wr(CMP(0), 8, ~0ull);
	stubs_advance_to(tsc_of(c + 2));
	assert_int_equal(stubs_next_deadline(), 0);

	/* the counter written while it runs: ignored, timers keep their time */
	wr(CFG(2), 4, HPET_TN_INT_ENB | ROUTE(20));
	c = rd(HPET_REG_COUNTER, 8);
	wr(CMP(2), 8, c + 50);
	wr(HPET_REG_COUNTER, 8, 0);
	wr(HPET_REG_COUNTER + 4, 4, 0xffffffff);
	assert_true(rd(HPET_REG_COUNTER, 8) >= c);
	assert_int_equal(stubs_next_deadline(), tsc_of(c + 50));

	/* junk in every register of the page, then a sane timer still works */
	for (unsigned off = 0; off < HPET_SIZE; off += 4)
		wr(off, 4, 0xffffffffu);
	assert_int_equal(rd(0, 8), cap);
	wr(HPET_REG_CONFIG, 4, 0);
	for (unsigned n = 0; n < 3; n++)
		vm_timer_cancel(&h.t[n].timer);
}

/* A comparator whose match fell due before the vCPU's exit ran the timer:
 * an access takes it first (a config write does not lose it). */
static void test_catch_up_before_write(void **state)
{
	(void)state;
	start();
	wr(HPET_REG_CONFIG, 4, HPET_CFG_ENABLE);
	wr(CFG(0), 4, HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | ROUTE(20));
	wr(CMP(0), 8, P);
	wr(CMP(0), 8, P);
	stub_tsc = tsc_of(2 * P + P / 2);               /* no timer has run */
	assert_int_equal(rd(CMP(0), 8), 3 * P);
	assert_int_equal(stub_irq_raises[20], 1);
	assert_int_equal(h.t[0].late, 1);              /* the second waits its turn */
	wr(CFG(0), 4, HPET_TN_INT_ENB | ROUTE(20));
	assert_int_equal(stubs_next_deadline(), tsc_of(3 * P));   /* one-shot at 3P */
	assert_int_equal(rd(CMP(0), 8), 3 * P);
	hpet_irq_taken(&h);                             /* the CPU took the first */
	assert_int_equal(stub_irq_raises[20], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range_and_caps),
		cmocka_unit_test(test_counter),
		cmocka_unit_test(test_one_shot_edge),
		cmocka_unit_test(test_32bit_mode),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_level_status),
		cmocka_unit_test(test_legacy_route),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_catch_up_before_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
