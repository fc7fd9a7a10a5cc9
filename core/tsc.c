#include "core/tsc.h"

#include <stdbool.h>

#include "core/cpu.h"
#include "dev/tick_math.h"

#define PIT_HZ 1193182u
#define CALIBRATE_MS 10u
#define CALIBRATE_TRIES 10u
#define NO_PIT_SPINS 100000000u

static uint64_t hz;

/* One window: TSC ticks while PIT channel 2 counts down CALIBRATE_MS once
 * (gated by port 0x61; its OUT pin, bit 5 of port 0x61, rises when the count
 * ends); 0 when no PIT answers. *clean tells whether the start and the end
 * were each timed within a few polls: a stall of the host there (an emulator
 * thread descheduled, an SMI) makes the window long, one in the middle does
 * no harm. */
static uint64_t pit_window(bool *clean)
{
	uint16_t count = PIT_HZ * CALIBRATE_MS / 1000;
	outb(0x61, (inb(0x61) & ~0x02) | 0x01);
	outb(0x43, 0xb0);                    /* channel 2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	uint64_t before = rdtsc();
	outb(0x42, count >> 8);              /* the count starts with this write */
	uint64_t start = rdtsc(), t = start, step = 0, fastest = ~0ull;
	uint32_t spins = 0;
	bool out;
	do {
		uint64_t prev = t;
		out = inb(0x61) & 0x20;
		t = rdtsc();
		step = t - prev;
		if (step < fastest)
			fastest = step;
	} while (!out && ++spins < NO_PIT_SPINS);
	if (!out)
		return 0;
	*clean = start - before <= 4 * fastest && step <= 4 * fastest;
	return t - start;
}

/* The first clean window, or the shortest one when none is. Under QEMU TCG
 * about one window in three came out long (by 0.2-66%; with two QEMUs on two
 * host CPUs most did, by up to 190%), and every guest timer runs slow by as
 * much as this frequency is too high. */
void tsc_calibrate(void)
{
	uint64_t best = 0;
	for (unsigned i = 0; i < CALIBRATE_TRIES; i++) {
		bool clean = false;
		uint64_t delta = pit_window(&clean);
		if (!delta) {
			best = 0;
			break;
		}
		if (!best || delta < best || clean)
			best = delta;
		if (clean)
			break;
	}
	hz = best * (1000 / CALIBRATE_MS);
	if (!hz)
		hz = 1000000000;             /* no PIT: assume 1 GHz */
}

uint64_t tsc_hz(void)
{
	return hz;
}

uint64_t tsc_from_ns(uint64_t ns)
{
	return muldiv64(ns, hz, 1000000000ull);
}
