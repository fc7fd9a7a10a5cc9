#include "core/tsc.h"

#include <stdbool.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/madt.h"
#include "dev/tick_math.h"
#include "lib/printf.h"

#define PIT_HZ 1193182u
#define PM_HZ 3579545u
#define PM_MASK 0xffffffu             /* a 24-bit PM timer; a 32-bit one reads the same low bits */
#define PIT_MASK 0xffffu
#define PM_WINDOWS 8u
#define PM_WINDOW_MS 10u
#define PIT_WINDOWS 8u
#define PIT_WINDOW_MS 10u             /* well below the 54.9 ms after which the count wraps */
#define MAX_TRIES 3u                  /* windows tried per window kept */
#define EDGE_SPINS 200000u            /* reads without a change: no such timer */
/* The two sources may differ by this much beyond their windows' own jitter
 * before the boot line says they disagree. */
#define AGREE_PPM 1000u
#define IDENTITY_LIMIT (4ull << 30)

static uint64_t hz;
static uint16_t pm_port;

/* A reference counter: the ACPI PM timer (counts up) or PIT channel 2 (counts down). */
struct reference {
	const char *name;
	uint32_t hz, mask;
	bool counts_down;
	uint32_t (*read)(void);
};

/* Where a reference's count changed to `count`: between TSC `lo` (the start
 * of the last read that still saw the old count) and `hi` (the end of the
 * read that saw the new one). A host stall anywhere in there widens it. */
struct edge {
	uint64_t lo, hi;
	uint32_t count;
};

/* One window's result: TSC ticks per reference second and the uncertainty
 * of its two edges, in ppm of the window. */
struct window {
	uint64_t hz;
	uint64_t jitter_ppm;
};

static uint32_t pm_read(void)
{
	uint32_t v;
	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(pm_port));
	return v & PM_MASK;
}

static uint32_t pit_read(void)
{
	outb(0x43, 0x80);                    /* latch channel 2's count */
	uint32_t lo = inb(0x42);
	return lo | (uint32_t)inb(0x42) << 8;
}

static void pit_start(void)
{
	outb(0x61, (inb(0x61) & ~0x02) | 0x01);  /* gate channel 2 on, speaker off */
	outb(0x43, 0xb4);                    /* channel 2, lo/hi, mode 2 (rate generator) */
	outb(0x42, 0);
	outb(0x42, 0);                       /* 65536: counts down and reloads, forever */
}

static const struct reference PM_TIMER = { "PM timer", PM_HZ, PM_MASK, false, pm_read };
static const struct reference PIT = { "PIT", PIT_HZ, PIT_MASK, true, pit_read };

/* `last` is the TSC of the caller's last read; the longest time between two
 * reads, this one's included, goes into *gap. */
static bool wait_edge(const struct reference *r, struct edge *e, uint64_t last, uint64_t *gap)
{
	uint64_t prev = rdtsc();
	if (prev - last > *gap)
		*gap = prev - last;
	uint32_t first = r->read();
	for (uint32_t i = 0; i < EDGE_SPINS; i++) {
		uint64_t before = rdtsc();
		uint32_t v = r->read();
		uint64_t after = rdtsc();
		if (after - prev > *gap)   /* the previous read's start to this one's end */
			*gap = after - prev;
		if (v != first) {
			e->lo = prev;
			e->hi = after;
			e->count = v;
			return true;
		}
		prev = before;
	}
	return false;
}

static uint32_t elapsed(const struct reference *r, uint32_t from, uint32_t to)
{
	return (r->counts_down ? from - to : to - from) & r->mask;
}

enum window_result { WINDOW_OK, WINDOW_STALLED, WINDOW_NO_TIMER };

/* One bracketed window of about `ms` reference milliseconds. A stall
 * between two reads inside it does no harm unless the counter wrapped in it
 * (the PIT's 16 bits wrap every 54.9 ms): a window with a gap between two
 * reads, the end edge's included, of half the counter's range is dropped. */
static enum window_result measure_window(const struct reference *r, uint32_t ms,
					 uint64_t tsc_hint, struct window *w)
{
	struct edge start, end;
	uint32_t need = (uint32_t)((uint64_t)r->hz * ms / 1000);
	uint64_t gap = 0;
	if (!wait_edge(r, &start, rdtsc(), &gap))
		return WINDOW_NO_TIMER;
	uint64_t prev = start.hi;
	gap = 0;   /* what counts is from the start edge on */
	while (elapsed(r, start.count, r->read()) < need) {
		uint64_t now = rdtsc();
		if (now - prev > gap)
			gap = now - prev;
		prev = now;
	}
	/* the end edge's reads count too: a stall between the loop's last read
	 * and the edge let the PIT wrap unseen (5745 MHz for a 2695 MHz TSC
	 * under two test suites at once) */
	if (!wait_edge(r, &end, prev, &gap))
		return WINDOW_NO_TIMER;
	uint32_t counts = elapsed(r, start.count, end.count);
	/* the TSC between the two edges' midpoints; each edge is off by at most
	 * half its width */
	uint64_t ticks = (end.lo + end.hi) / 2 - (start.lo + start.hi) / 2;
	uint64_t width = ((start.hi - start.lo) + (end.hi - end.lo)) / 2;
	if (!counts || !ticks)
		return WINDOW_STALLED;
	w->hz = muldiv64(ticks, r->hz, counts);
	/* A stall between two reads costs no accuracy (the edges bracket the
	 * window), unless the counter wrapped in it: the longest gap, in counts
	 * (by the other source's rate when there is one: a wrapped window's own
	 * rate is wrong), must stay below half the counter's range. */
	uint64_t per_s = tsc_hint ? tsc_hint : w->hz;
	if (muldiv64(gap, r->hz, per_s) >= (r->mask / 2))
		return WINDOW_STALLED;
	w->jitter_ppm = muldiv64(width, 1000000, ticks);
	return WINDOW_OK;
}

/* The least jittered of up to `n` windows (out of at most MAX_TRIES * n
 * tried): the one a host stall touched least. Returns how many were kept. */
static unsigned best_window(const struct reference *r, unsigned n, uint32_t ms,
			    uint64_t tsc_hint, struct window *best)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < MAX_TRIES * n && kept < n; i++) {
		struct window w;
		enum window_result res = measure_window(r, ms, tsc_hint, &w);
		if (res == WINDOW_NO_TIMER)
			break;
		if (res == WINDOW_STALLED)
			continue;
		if (!kept || w.jitter_ppm < best->jitter_ppm)
			*best = w;
		kept++;
	}
	return kept;
}

static const void *phys_identity(uint64_t pa, uint64_t len, void *ctx)
{
	(void)ctx;
	if (pa == 0 || len > IDENTITY_LIMIT || pa > IDENTITY_LIMIT - len)
		return 0;
	return (const void *)(uintptr_t)pa;
}

static uint64_t ppm_apart(uint64_t a, uint64_t b)
{
	return muldiv64(a > b ? a - b : b - a, 1000000, b);
}

static void print_mhz(char *buf, size_t n, uint64_t f)
{
	snprintf(buf, n, "%lu.%03lu MHz", (unsigned long)(f / 1000000),
		 (unsigned long)(f / 1000 % 1000));
}

/* Under QEMU TCG the emulator's thread can be descheduled at any point: a
 * window whose start or end it hit used to come out long (2.44-4.0 GHz
 * measured for a 2.1 GHz TSC), and every guest timer ran slow by as much.
 * Several short windows, each edge bracketed by two TSC reads, keep the one
 * no stall touched; a second source checks it. */
void tsc_calibrate(void)
{
	struct window pm = { 0, 0 }, pit = { 0, 0 };
	pm_port = acpi_pm_timer_port(phys_identity, 0);
	unsigned pm_kept = pm_port ? best_window(&PM_TIMER, PM_WINDOWS, PM_WINDOW_MS, 0, &pm) : 0;
	pit_start();
	unsigned pit_kept = best_window(&PIT, PIT_WINDOWS, PIT_WINDOW_MS, pm_kept ? pm.hz : 0, &pit);
	bool have_pm = pm_kept > 0, have_pit = pit_kept > 0;
	if (!have_pm)
		pm_port = 0;

	char mhz[32], other[32];
	if (have_pm) {
		hz = pm.hz;
		print_mhz(mhz, sizeof(mhz), hz);
		if (!have_pit) {
			kprintf("lightpath: TSC %s (PM timer, best of %u windows, jitter %lu ppm; "
				"no PIT to check it against)\n", mhz, pm_kept,
				(unsigned long)pm.jitter_ppm);
			return;
		}
		uint64_t apart = ppm_apart(pit.hz, pm.hz);
		kprintf("lightpath: TSC %s (PM timer, best of %u windows, jitter %lu ppm; "
			"PIT %s within %lu ppm)\n", mhz, pm_kept, (unsigned long)pm.jitter_ppm,
			apart <= AGREE_PPM + pm.jitter_ppm + pit.jitter_ppm ? "agrees" : "DISAGREES, not",
			(unsigned long)apart);
		if (apart > AGREE_PPM + pm.jitter_ppm + pit.jitter_ppm) {
			print_mhz(other, sizeof(other), pit.hz);
			kprintf("lightpath: warning: TSC calibration: the PM timer gives %s, the PIT "
				"%s (%lu ppm apart, more than the %lu allowed): one of them is wrong, "
				"and timers may run off by as much\n", mhz,
				other, (unsigned long)apart,
				(unsigned long)(AGREE_PPM + pm.jitter_ppm + pit.jitter_ppm));
		}
		return;
	}
	if (have_pit) {
		hz = pit.hz;
		print_mhz(mhz, sizeof(mhz), hz);
		kprintf("lightpath: TSC %s (PIT, best of %u windows, jitter %lu ppm; no ACPI PM "
			"timer to check it against)\n", mhz, pit_kept, (unsigned long)pit.jitter_ppm);
		return;
	}
	hz = 1000000000;
	kprintf("lightpath: warning: TSC: neither an ACPI PM timer nor a PIT counts; assuming "
		"1000.000 MHz\n");
}

void tsc_check(unsigned seconds)
{
	if (!seconds)
		return;
	if (!pm_port) {
		kprintf("lightpath: TSC check: no ACPI PM timer to check against\n");
		return;
	}
	/* Counts every PM tick for `seconds` (reads far more often than the
	 * 4.69 s after which 24 bits wrap), bracketed at both ends. */
	struct edge start, end;
	uint64_t gap = 0;   /* (not used: the count is followed read by read) */
	if (!wait_edge(&PM_TIMER, &start, rdtsc(), &gap))
		return;
	uint64_t need = (uint64_t)PM_HZ * seconds, ticks = 0;
	uint32_t last = start.count;
	while (ticks < need) {
		uint32_t now = pm_read();
		ticks += elapsed(&PM_TIMER, last, now);
		last = now;
	}
	if (!wait_edge(&PM_TIMER, &end, rdtsc(), &gap))
		return;
	ticks += elapsed(&PM_TIMER, last, end.count);
	uint64_t tsc = (end.lo + end.hi) / 2 - (start.lo + start.hi) / 2;
	uint64_t pm_ms = muldiv64(ticks, 1000, PM_HZ), tsc_ms = muldiv64(tsc, 1000, hz);
	uint64_t tsc_ns = muldiv64(tsc, 1000000000ull, hz), pm_ns = muldiv64(ticks, 1000000000ull, PM_HZ);
	kprintf("lightpath: TSC check: %lu.%03lu s by the PM timer, %lu.%03lu s by the TSC "
		"(%c%lu ppm)\n", (unsigned long)(pm_ms / 1000), (unsigned long)(pm_ms % 1000),
		(unsigned long)(tsc_ms / 1000), (unsigned long)(tsc_ms % 1000),
		tsc_ns >= pm_ns ? '+' : '-', (unsigned long)ppm_apart(tsc_ns, pm_ns));
}

uint64_t tsc_hz(void)
{
	return hz;
}

uint64_t tsc_from_ns(uint64_t ns)
{
	return muldiv64(ns, hz, 1000000000ull);
}
