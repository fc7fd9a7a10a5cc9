/* hpet: the PC's HPET (IA-PC HPET 1.0a) as an OS finds and uses it, flat
 * 32-bit and 64-bit paged:
 *  - the ACPI HPET table (RSDP scan, RSDT), its block ID equal to the
 *    capabilities register's low half, the base in a SystemMemory GAS;
 *  - the capabilities (3 timers, 64-bit counter, legacy routing, a period
 *    of at most 100 ns, timer 0 periodic-capable, no FSB delivery);
 *  - the main counter: halted it holds (and takes a write), running it
 *    counts at the announced rate against the PM timer (loose bounds: 2%);
 *  - timer 0 one-shot (64-bit) and periodic (32-bit mode, Linux's VAL_SET
 *    sequence) through the I/O APIC, a 32-bit timer matching when the low
 *    half wraps, a level-triggered timer whose status bit is set with its
 *    interrupt disabled and cleared by writing 1 (once enabled, the handler
 *    clears it and exactly one interrupt arrives);
 *  - legacy replacement: timer 0 on IRQ0 (I/O APIC pin 2) while the PIT
 *    runs at 1 kHz and is not heard; the PIT back when the route is off.
 * Waits are timed with the PM timer; interrupts are counted per vector.
 *
 * Under an emulator on a busy host the VM can stall for tens of ms between
 * any two instructions while its clocks run on (as a PC's SMI would). So:
 *  - timers are set up with the counter halted and then started, as Linux
 *    sets its periodic HPET up: no stall between reading the counter and
 *    writing a comparator can leave the comparator behind the counter (a
 *    match then comes only after the wrap, on hardware too). The one timer
 *    written while the counter runs checks, after the write, that the
 *    counter had not reached it yet, and is set up again if it had;
 *  - an interrupt must have come by the time the PM timer shows its
 *    match's time passed (lightpath fires a timer that is due at the clock
 *    read that shows it, however late its host timer is: dev/device.h):
 *    what is measured is that ordering, which no stall can change. */
#include "guests/rt/hpet.h"
#include "guests/rt/rt.h"

#define HPET_EXPECTED_BASE 0xfed00000u
#define LAPIC_MMIO   0xfee00000u
#define LAPIC_EOI    0x0b0
#define PM_HZ        3579545ull
#define PM_MASK      0xffffffu



#define VEC_EDGE   0x50u
#define VEC_LEVEL  0x51u
#define VEC_LEGACY 0x52u

static uintptr_t hpet;
static uint32_t period_fs;
static volatile unsigned irqs[256];
static volatile uint32_t counter_at_irq;

/* ---- access ---- */

static uint32_t rd(unsigned off) { return rt_hpet_read(hpet, off); }
static void wr(unsigned off, uint32_t v) { rt_hpet_write(hpet, off, v); }

static uint64_t counter64(void)
{
	return rt_hpet_counter(hpet);
}

static void lapic_eoi(void)
{
	*(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + LAPIC_EOI) = 0;
}

static void on_edge(struct rt_frame *f)
{
	counter_at_irq = rd(HPET_COUNTER);
	irqs[f->vector & 0xff]++;
	lapic_eoi();
}

/* Level: the handler clears the status bit first, or the line stays high
 * and the I/O APIC delivers again after the EOI. */
static void on_level(struct rt_frame *f)
{
	irqs[f->vector & 0xff]++;
	wr(HPET_STATUS, 1u << 2);
	lapic_eoi();
}

static uint32_t pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & PM_MASK;
}

/* Waits, interrupts on, until *count reaches `until` or the PM timer reads
 * `us` past `start` (a PM reading); true if the count was reached. An
 * interrupt due by the PM reading that ends the wait is taken before the
 * loop tests its count again. */
static bool wait_since(uint32_t start, uint64_t us, volatile unsigned *count, unsigned until)
{
	uint64_t ticks = us * PM_HZ / 1000000;
	sti();
	while ((!count || *count < until) && ((pm_now() - start) & PM_MASK) < ticks)
		;
	cli();
	return count && *count >= until;
}

/* Waits `us` by the PM timer, interrupts on, or until *count reaches `until`. */
static void wait_us(uint64_t us, volatile unsigned *count, unsigned until)
{
	wait_since(pm_now(), us, count, until);
}

/* Rounding between the HPET's and the PM timer's ticks: an interrupt due
 * `us` after a PM reading must have come when the PM timer reads this much
 * more. */
#define DUE_SLACK_US 10u

/* Starts the halted counter with `config`; returns a PM reading taken after
 * it started, from which its timers' matches are at most their distance. */
static uint32_t counter_start(uint32_t config)
{
	wr(HPET_CONFIG, config | HPET_CFG_ENABLE);
	return pm_now();
}

static uint64_t ticks_us(uint64_t us)
{
	return us * 1000000000ull / period_fs;
}

/* ---- the ACPI table ---- */

static bool checksum_ok(const uint8_t *p, uint32_t len)
{
	uint8_t sum = 0;
	for (uint32_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return sum == 0;
}

static const uint8_t *find_hpet_table(void)
{
	for (uintptr_t a = 0xe0000; a < 0x100000; a += 16) {
		const uint8_t *p = (const uint8_t *)a;
		if (memcmp(p, "RSD PTR ", 8) || !checksum_ok(p, 20))
			continue;
		const uint8_t *rsdt = (const uint8_t *)(uintptr_t)*(const uint32_t *)(p + 16);
		if (memcmp(rsdt, "RSDT", 4))
			return 0;
		uint32_t len = *(const uint32_t *)(rsdt + 4);
		for (uint32_t off = 36; off + 4 <= len; off += 4) {
			const uint8_t *t = (const uint8_t *)(uintptr_t)*(const uint32_t *)(rsdt + off);
			if (!memcmp(t, "HPET", 4))
				return t;
		}
		return 0;
	}
	return 0;
}

static bool check_table(void)
{
	const uint8_t *t = find_hpet_table();
	if (!tap_ok(t != 0, 0, "an HPET table", "ACPI: the RSDT lists an HPET table"))
		return false;
	uint32_t len = *(const uint32_t *)(t + 4);
	tap_ok(len >= 56 && checksum_ok(t, len), len, "56 bytes, good checksum",
	       "ACPI: the HPET table's length and checksum");
	uint64_t base = *(const uint64_t *)(t + 44);
	tap_ok(t[40] == 0 && base == HPET_EXPECTED_BASE, base, "SystemMemory 0xfed00000",
	       "ACPI: the timer block is memory at 0x%llx", (unsigned long long)base);
	tap_eq(t[52], 0, "ACPI: HPET number 0");
	hpet = (uintptr_t)base;
	rt_map_mmio(base);
	tap_eq(*(const uint32_t *)(t + 36), rd(HPET_CAP), "ACPI: the block ID is the capabilities' low half");
	return true;
}

/* ---- capabilities and the counter ---- */

static void check_caps(void)
{
	uint32_t cap = rd(HPET_CAP);
	period_fs = rd(HPET_CAP + 4);
	tap_ok((cap & 0xff) != 0, cap & 0xff, "non-zero", "capabilities: a revision ID");
	tap_eq((cap >> 8) & 0x1f, 2, "capabilities: NUM_TIM_CAP 2 (3 timers)");
	tap_ok((cap & (1u << 13)) && (cap & (1u << 15)), cap, "COUNT_SIZE_CAP, LEG_RT_CAP",
	       "capabilities: a 64-bit counter and legacy replacement routing");
	tap_ok(period_fs > 0 && period_fs <= 100000000u, period_fs, "1..10^8 fs",
	       "capabilities: a counter period of %u fs", period_fs);
	wr(HPET_CAP, 0);
	wr(HPET_CAP + 4, 1);
	tap_ok(rd(HPET_CAP) == cap && rd(HPET_CAP + 4) == period_fs, rd(HPET_CAP), "unchanged",
	       "capabilities: read-only");
	bool ok = true;
	for (unsigned n = 0; n < 3; n++) {
		uint32_t c = rd(HPET_TCFG(n));
		ok &= (c & HPET_TN_SIZE_CAP) && !(c & HPET_TN_FSB_CAP) && rd(HPET_TCFG(n) + 4) != 0;
		ok &= !!(c & HPET_TN_PER_CAP) == (n == 0);
	}
	tap_ok(ok, rd(HPET_TCFG(0)), "64-bit, no FSB, routes, timer 0 periodic",
	       "timers: size, FSB, route and periodic capabilities");
}

static void check_counter(void)
{
	wr(HPET_CONFIG, 0);
	wr(HPET_COUNTER, 0x89abcdef);
	wr(HPET_COUNTER + 4, 0x1);
	wait_us(1000, 0, 0);
	tap_eq(counter64(), 0x189abcdefull, "counter: halted, it holds what was written");
	wr(HPET_COUNTER, 0);
	wr(HPET_COUNTER + 4, 0);
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	/* the rate against the PM timer over 50 ms; each end a counter read
	 * between two PM reads; a try whose ends were more than 1 ms apart
	 * (a host stall) is made again */
	uint64_t hz = 0, want = 1000000000000000ull / period_fs;
	for (unsigned try = 0; try < 3; try++) {
		uint32_t a0 = pm_now();
		uint64_t c0 = counter64();
		uint32_t a1 = pm_now();
		wait_us(50000, 0, 0);
		uint32_t b0 = pm_now();
		uint64_t c1 = counter64();
		uint32_t b1 = pm_now();
		uint32_t wa = (a1 - a0) & PM_MASK, wb = (b1 - b0) & PM_MASK;
		uint64_t pm = ((b0 + wb / 2) - (a0 + wa / 2)) & PM_MASK;
		hz = pm ? (c1 - c0) * PM_HZ / pm : 0;
		if (wa < PM_HZ / 1000 && wb < PM_HZ / 1000)
			break;
	}
	tap_ok(hz > want - want / 50 && hz < want + want / 50, hz, "the announced rate within 2%",
	       "counter: counts at %llu Hz by the PM timer (announced %llu Hz)",
	       (unsigned long long)hz, (unsigned long long)want);
#ifdef __x86_64__
	uint64_t c64 = *(volatile uint64_t *)(hpet + HPET_COUNTER);
	uint64_t cap64 = *(volatile uint64_t *)(hpet + HPET_CAP);
	tap_ok(cap64 == ((uint64_t)period_fs << 32 | rd(HPET_CAP)) && c64 >> 32 == 0 && c64 > 0, c64,
	       "the capabilities and a counter below 2^32", "64-bit reads of the capabilities and counter");
#endif
	uint64_t c = counter64();
	wr(HPET_COUNTER, 0);   /* a write while it runs: not taken */
	tap_ok(counter64() >= c, c, "counting on", "counter: a write while it runs changes nothing");
}

/* ---- timers ---- */

static unsigned pin_a, pin_b;   /* two I/O APIC pins timers may use */

static void pick_pins(void)
{
	uint32_t cap = rd(HPET_TCFG(0) + 4) & rd(HPET_TCFG(2) + 4);
	pin_a = pin_b = 0;
	for (unsigned p = 3; p < 24; p++) {
		if (!(cap & (1u << p)))
			continue;
		if (!pin_a)
			pin_a = p;
		else if (!pin_b)
			pin_b = p;
	}
	tap_ok(pin_a && pin_b, cap, "two pins above 2", "timers 0 and 2 can use I/O APIC pins %u and %u",
	       pin_a, pin_b);
	/* a route outside the capability is not taken */
	wr(HPET_TCFG(2), HPET_TN_ROUTE(pin_a));
	wr(HPET_TCFG(2), HPET_TN_ROUTE(1));
	tap_eq((rd(HPET_TCFG(2)) >> 9) & 0x1f, pin_a, "timers: a route not in the capability is not taken");
	wr(HPET_TCFG(2), 0);
}

static void check_one_shot(void)
{
	rt_ioapic_route(pin_a, VEC_EDGE, false);
	irqs[VEC_EDGE] = 0;
	wr(HPET_CONFIG, 0);
	wr(HPET_TCFG(0), HPET_TN_INT_ENB | HPET_TN_ROUTE(pin_a));
	uint64_t cmp = counter64() + ticks_us(1000);
	wr(HPET_TCMP(0) + 4, (uint32_t)(cmp >> 32));
	wr(HPET_TCMP(0), (uint32_t)cmp);
	uint32_t t0 = counter_start(0);
	bool came = wait_since(t0, 1000 + DUE_SLACK_US, &irqs[VEC_EDGE], 1);
	wait_us(5000, 0, 0);   /* room for a second one */
	tap_ok(came, irqs[VEC_EDGE], "by then",
	       "one-shot: the interrupt has come when the PM timer shows the match's time passed");
	tap_eq(irqs[VEC_EDGE], 1, "one-shot: timer 0 interrupts once through the I/O APIC");
	tap_ok((int32_t)(counter_at_irq - (uint32_t)cmp) >= 0, counter_at_irq, "at or after the comparator",
	       "one-shot: not before the counter reached the comparator");
	wr(HPET_TCFG(0), 0);

	/* Written while the counter runs, as an OS programs its next event: a
	 * try counts only if the counter, read after the write, had not reached
	 * the comparator (a stall between the read and the write can put it
	 * past, and then a match comes only after the counter wraps). */
	bool ahead = false;
	unsigned tries = 0;
	uint32_t t1 = 0;
	while (!ahead && tries++ < 5) {
		wr(HPET_TCFG(0), 0);
		wait_us(2000, 0, 0);   /* a raced try's interrupt, if it came, is taken here */
		irqs[VEC_EDGE] = 0;
		wr(HPET_TCFG(0), HPET_TN_INT_ENB | HPET_TN_ROUTE(pin_a));
		cmp = counter64() + ticks_us(1000);
		wr(HPET_TCMP(0) + 4, (uint32_t)(cmp >> 32));
		wr(HPET_TCMP(0), (uint32_t)cmp);
		t1 = pm_now();
		ahead = (int64_t)(counter64() - cmp) < 0;
	}
	if (!ahead) {
		tap_skip("one-shot written while counting: a host stall raced every try");
		/* the last try's interrupt, raised while IF=0, is taken here: not
		 * in the periodic check's count (35 interrupts for 34 periods) */
		wait_us(2000, 0, 0);
	} else {
		came = wait_since(t1, 1000 + DUE_SLACK_US, &irqs[VEC_EDGE], 1);
		wait_us(5000, 0, 0);
		tap_ok(came && irqs[VEC_EDGE] == 1, irqs[VEC_EDGE], "1, by its time",
		       "one-shot: written while the counter runs, once when the counter reaches it");
	}
	wr(HPET_TCFG(0), 0);
}

static void check_periodic(void)
{
	uint32_t period = (uint32_t)ticks_us(1000);
	irqs[VEC_EDGE] = 0;
	/* Linux's sequence: the counter halted, VAL_SET, the first match, then
	 * the period; the counter started after */
	wr(HPET_CONFIG, 0);
	wr(HPET_TCFG(0), HPET_TN_INT_ENB | HPET_TN_PERIODIC | HPET_TN_VAL_SET | HPET_TN_32MODE | HPET_TN_ROUTE(pin_a));
	uint32_t first = rd(HPET_COUNTER) + 5 * period;
	wr(HPET_TCMP(0), first);
	wr(HPET_TCMP(0), period);   /* VAL_SET is spent: the period only */
	uint32_t c = rd(HPET_TCMP(0));
	tap_eq(c, first, "periodic: the second write sets the period only");
	counter_start(0);
	wait_us(30000, 0, 0);
	/* The interrupts must be the periods that went by, none doubled: the
	 * count is compared with the comparator's progress with interrupts
	 * off (one may be on its way at the compare); edges kept late are
	 * taken in the waits between compares. */
	uint32_t cmp = 0, matches = 0, n = 0;
	bool caught_up = false, doubled = false;
	for (unsigned i = 0; i < 100 && !caught_up; i++) {
		cli();
		cmp = rd(HPET_TCMP(0));
		matches = (cmp - first) / period;
		n = irqs[VEC_EDGE];
		doubled |= n > matches;
		caught_up = n + 1 >= matches;
		if (!caught_up)
			wait_us(2000, 0, 0);
	}
	wr(HPET_TCFG(0), HPET_TN_PERIODIC | HPET_TN_32MODE | HPET_TN_ROUTE(pin_a));   /* interrupt off */
	wait_us(2000, 0, 0);   /* the one on its way is taken before the next check */
	tap_eq((cmp - first) % period, 0, "periodic: the comparator advances by whole periods");
	tap_ok(matches >= 25, matches, "25 or more in 30 ms", "periodic: %u periods of 1 ms went by",
	       matches);
	tap_ok(caught_up && !doubled, n, "one per period (one may be on its way)",
	       "periodic: %u interrupts for %u periods", n, matches);
	wr(HPET_TCFG(0), 0);
}

static void check_32bit_wrap(void)
{
	wr(HPET_TCFG(1), HPET_TN_INT_ENB | HPET_TN_32MODE | HPET_TN_ROUTE(pin_a));
	wr(HPET_TCMP(1) + 4, 0x1234);
	wr(HPET_TCMP(1), 0x100);
	tap_eq(rd(HPET_TCMP(1) + 4), 0, "32-bit mode: the comparator's high half reads 0, writes ignored");
	wr(HPET_CONFIG, 0);
	wr(HPET_COUNTER, 0xfffff000u);
	wr(HPET_COUNTER + 4, 1);
	irqs[VEC_EDGE] = 0;
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	wait_us(50000, &irqs[VEC_EDGE], 1);
	tap_eq(irqs[VEC_EDGE], 1, "32-bit mode: a match when the counter's low half wraps");
	tap_ok(counter64() >> 32 >= 2, counter64(), "high half 2 or more",
	       "32-bit mode: the 64-bit counter went on past 2^33");
	wr(HPET_TCFG(1), 0);
	rt_ioapic_mask(pin_a);
}

static void check_level(void)
{
	irqs[VEC_LEVEL] = 0;
	wr(HPET_CONFIG, 0);
	wr(HPET_TCFG(2), HPET_TN_LEVEL | HPET_TN_ROUTE(pin_b));   /* interrupt disabled */
	wr(HPET_TCMP(2) + 4, 0xffffffffu);
	uint64_t cmp = counter64() + ticks_us(100);
	wr(HPET_TCMP(2) + 4, (uint32_t)(cmp >> 32));
	wr(HPET_TCMP(2), (uint32_t)cmp);
	wait_since(counter_start(0), 100 + DUE_SLACK_US, 0, 0);
	tap_eq(rd(HPET_STATUS) & 7, 4, "level: the status bit is set at the match, interrupt disabled");
	wr(HPET_STATUS, 3);
	tap_eq(rd(HPET_STATUS) & 7, 4, "level: writing 0 to a status bit leaves it");
	wr(HPET_STATUS, 4);
	tap_eq(rd(HPET_STATUS) & 7, 0, "level: writing 1 clears it");

	rt_set_handler(VEC_LEVEL, on_level);
	rt_ioapic_route(pin_b, VEC_LEVEL, true);
	wr(HPET_CONFIG, 0);
	wr(HPET_TCFG(2), HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_ROUTE(pin_b));
	cmp = counter64() + ticks_us(100);
	wr(HPET_TCMP(2) + 4, (uint32_t)(cmp >> 32));
	wr(HPET_TCMP(2), (uint32_t)cmp);
	bool came = wait_since(counter_start(0), 100 + DUE_SLACK_US, &irqs[VEC_LEVEL], 1);
	wait_us(5000, 0, 0);
	tap_ok(came, irqs[VEC_LEVEL], "by then",
	       "level: the interrupt has come when the PM timer shows the match's time passed");
	tap_eq(irqs[VEC_LEVEL], 1, "level: one interrupt, the handler clearing the status");
	tap_eq(rd(HPET_STATUS) & 7, 0, "level: the status is clear after");
	wr(HPET_TCFG(2), 0);
	rt_ioapic_mask(pin_b);
}

static void check_legacy(void)
{
	rt_set_handler(VEC_LEGACY, on_edge);
	rt_ioapic_route(2, VEC_LEGACY, false);      /* IRQ0 is pin 2 (the MADT's override) */
	irqs[VEC_LEGACY] = 0;
	/* the PIT at 1 kHz: not heard while the HPET has IRQ0 */
	wr(HPET_CONFIG, HPET_CFG_LEGACY);   /* halted: set up, then started */
	outb(0x43, 0x34);
	outb(0x40, (uint8_t)1193);
	outb(0x40, (uint8_t)(1193 >> 8));
	wr(HPET_TCFG(0), HPET_TN_INT_ENB | HPET_TN_ROUTE(pin_a));  /* the route does not count */
	uint64_t cmp = counter64() + ticks_us(1000);
	wr(HPET_TCMP(0) + 4, (uint32_t)(cmp >> 32));
	wr(HPET_TCMP(0), (uint32_t)cmp);
	uint32_t t0 = counter_start(HPET_CFG_LEGACY);
	bool came = wait_since(t0, 1000 + DUE_SLACK_US, &irqs[VEC_LEGACY], 1);
	wait_since(t0, 20000, 0, 0);   /* 20 of the PIT's periods */
	tap_ok(came, irqs[VEC_LEGACY], "by then",
	       "legacy: the interrupt has come when the PM timer shows the match's time passed");
	tap_eq(irqs[VEC_LEGACY], 1, "legacy: timer 0 on IRQ0 (pin 2), once; the PIT not heard");
	wr(HPET_CONFIG, HPET_CFG_ENABLE);
	irqs[VEC_LEGACY] = 0;
	wait_us(20000, 0, 0);
	tap_ok(irqs[VEC_LEGACY] >= 5, irqs[VEC_LEGACY], "the PIT's ticks (5 or more in 20 ms)",
	       "legacy: off again, the PIT's IRQ0 comes back");
	outb(0x43, 0x30);                       /* mode 0, no count: OUT stays low */
	rt_ioapic_mask(2);
	wr(HPET_TCFG(0), 0);
}

int guest_main(void)
{
	tap_begin(sizeof(void *) == 8 ? "hpet64" : "hpet32");
	rt_set_handler(VEC_EDGE, on_edge);
	rt_map_mmio(RT_IOAPIC);
	rt_map_mmio(LAPIC_MMIO);
	if (check_table()) {
		check_caps();
		check_counter();
		pick_pins();
		check_one_shot();
		check_periodic();
		check_32bit_wrap();
		check_level();
		check_legacy();
		wr(HPET_CONFIG, 0);
	}
	return tap_end();
}
