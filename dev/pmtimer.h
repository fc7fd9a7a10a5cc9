/* ACPI PM timer at port 0x608: a free-running 24-bit counter at 3.579545 MHz,
 * derived from the VM's clock. Guests (Linux among them) read it in loops to
 * calibrate, so a read is kept to a few multiplies and no division. */
#ifndef DEV_PMTIMER_H
#define DEV_PMTIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"
#include "lightpath/abi.h"

#define PMTIMER_PORTS 4u
#define PMTIMER_MASK  0xffffffu /* 24-bit counter (FADT TMR_VAL_EXT = 0) */

struct pmtimer {
	struct guest_clock *clock;
	uint16_t base;
	uint64_t tsc_at_init;     /* the VM's time when the count was 0 */
	uint64_t tsc_hz;  /* TSC frequency used, LP_PMTIMER_HZ..PMTIMER_MAX_TSC_HZ */
	uint64_t mult;    /* floor(LP_PMTIMER_HZ * 2^64 / tsc_hz): 0.64 fixed point */
};

/* Samples the VM's clock (dev_clock) and platform_tsc_hz(). A TSC slower
 * than the PM timer (or an unknown, zero frequency) makes the timer count
 * at TSC rate. */
void pmtimer_init(void *dev, struct dev_host *h);

/* Read: the 24-bit count (the bytes from addr on, `size` of them). Writes
 * are ignored. */
int pmtimer_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

extern const struct dev_desc pmtimer_desc;

/* The fastest TSC the conversion below is exact for (9.2 EHz: no CPU's; a
 * faster platform_tsc_hz() is taken as this one). */
#define PMTIMER_MAX_TSC_HZ ((1ull << 63) - 1)

/* Exact floor((tsc - tsc_at_init) * 3579545 / tsc_hz) modulo 2^24, for any
 * 64-bit TSC distance. The 0.64 multiplier gives the floor or one less
 * (it is rounded down); the remainder check fixes the "one less". The
 * remainder delta * HZ - q * tsc_hz is then below 2 * tsc_hz <= 2^64, so
 * its low 64 bits are all of it: two 64-bit multiplies, not 128-bit ones
 * (pio_in_pmtimer 135 -> 123 with spec=off, make exit-trace). */
static inline uint32_t pmtimer_ticks(const struct pmtimer *dev, uint64_t tsc)
{
	uint64_t delta = tsc - dev->tsc_at_init;
	uint64_t q = (uint64_t)(((unsigned __int128)delta * dev->mult) >> 64);
	uint64_t rem = delta * LP_PMTIMER_HZ - q * dev->tsc_hz;
	q += rem >= dev->tsc_hz;
	return (uint32_t)q & PMTIMER_MASK;
}

#endif
