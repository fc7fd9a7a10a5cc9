/* ACPI PM timer derived from the VM's clock. */
#include "dev/pmtimer.h"

/* floor(num * 2^64 / den) for num < den, by binary long division: no 128-bit
 * divide (that would need libgcc) and it runs once per VM. */
static uint64_t frac64(uint64_t num, uint64_t den)
{
	uint64_t r = num, q = 0;
	for (int i = 0; i < 64; i++) {
		bool carry = r >> 63;
		r <<= 1;
		q <<= 1;
		if (carry || r >= den) {
			r -= den;
			q |= 1;
		}
	}
	return q;
}

void pmtimer_init(void *opaque, struct dev_host *h)
{
	struct pmtimer *dev = opaque;
	uint64_t hz = platform_tsc_hz();

	dev->base = LP_PMTIMER_PORT;
	if (hz <= LP_PMTIMER_HZ) {
		/* Ratio 1: the multiplier is just under 1 and the remainder
		 * check makes the result exactly the TSC distance. */
		dev->tsc_hz = LP_PMTIMER_HZ;
		dev->mult = ~0ull;
	} else {
		dev->tsc_hz = hz > PMTIMER_MAX_TSC_HZ ? PMTIMER_MAX_TSC_HZ : hz;
		dev->mult = frac64(LP_PMTIMER_HZ, dev->tsc_hz);
	}
	dev->clock = dev_clock(h);
	dev->tsc_at_init = clock_now(dev->clock);
}

const struct dev_desc pmtimer_desc = {
	.name = "acpi-pm-timer",
	.lock_free = true,   /* it only reads the VM's time */
	DEV_RANGES({ .base = LP_PMTIMER_PORT, .len = PMTIMER_PORTS,
		   .fn = pmtimer_io, .light = true }),
	.init = pmtimer_init,
};

static inline int pmtimer_put(struct pmtimer *dev, uint64_t addr, uint64_t *data,
			      unsigned size, uint64_t now)
{
	uint64_t v = pmtimer_ticks(dev, now);
	unsigned off = (unsigned)(addr - dev->base);
	if (off)
		v >>= 8 * (off & 3);
	if (size < 4)
		v &= (1u << (8 * size)) - 1;
	*data = v;
	return IO_OK;
}

/* A read that polling starts or serves (vmm/guest_clock.h). */
static __attribute__((noinline)) int pmtimer_read_slow(struct pmtimer *dev, uint64_t addr,
							uint64_t *data, unsigned size,
							uint64_t host)
{
	return pmtimer_put(dev, addr, data, size, clock_read_slow(dev->clock, host));
}

int pmtimer_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pmtimer *dev = opaque;

	if (is_write)
		return IO_OK;
	uint64_t now;
	if (!clock_read_fast(dev->clock, &now))
		return pmtimer_read_slow(dev, addr, data, size, now);
	return pmtimer_put(dev, addr, data, size, now);
}
