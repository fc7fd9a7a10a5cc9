#include "core/tsc.h"

#include "core/cpu.h"

#define PIT_HZ 1193182u
#define CALIBRATE_MS 10u

static uint64_t hz;

/* PIT channel 2 counts down once, gated by port 0x61; its OUT pin (bit 5
 * of port 0x61) rises when the count ends. */
void tsc_calibrate(void)
{
	uint16_t count = PIT_HZ * CALIBRATE_MS / 1000;
	outb(0x61, (inb(0x61) & ~0x02) | 0x01);
	outb(0x43, 0xb0);                    /* channel 2, lo/hi, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	uint64_t start = rdtsc();
	uint64_t spins = 0;
	while (!(inb(0x61) & 0x20) && ++spins < 100000000)
		;
	uint64_t delta = rdtsc() - start;
	hz = delta * (1000 / CALIBRATE_MS);
	if (!hz || spins >= 100000000)
		hz = 1000000000;             /* no PIT: assume 1 GHz */
}

uint64_t tsc_hz(void)
{
	return hz;
}
