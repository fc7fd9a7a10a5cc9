/* The HPET as the test guests see it (IA-PC HPET 1.0a): register offsets
 * and bits, written from the specification, not from lightpath's model,
 * and the 64-bit counter read through 32-bit halves. */
#ifndef GUESTS_RT_HPET_H
#define GUESTS_RT_HPET_H

#include <stdint.h>

#define HPET_CAP      0x000
#define HPET_CONFIG   0x010
#define HPET_STATUS   0x020
#define HPET_COUNTER  0x0f0
#define HPET_TCFG(n)  (0x100 + 0x20 * (n))
#define HPET_TCMP(n)  (0x108 + 0x20 * (n))
#define HPET_TFSB(n)  (0x110 + 0x20 * (n))

#define HPET_CFG_ENABLE   1u
#define HPET_CFG_LEGACY   2u
#define HPET_TN_LEVEL     (1u << 1)
#define HPET_TN_INT_ENB   (1u << 2)
#define HPET_TN_PERIODIC  (1u << 3)
#define HPET_TN_PER_CAP   (1u << 4)
#define HPET_TN_SIZE_CAP  (1u << 5)
#define HPET_TN_VAL_SET   (1u << 6)
#define HPET_TN_32MODE    (1u << 8)
#define HPET_TN_ROUTE(p)  ((uint32_t)(p) << 9)
#define HPET_TN_FSB_CAP   (1u << 15)

static inline uint32_t rt_hpet_read(uintptr_t base, unsigned off)
{
	return *(volatile uint32_t *)(base + off);
}

static inline void rt_hpet_write(uintptr_t base, unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(base + off) = v;
}

/* The 64-bit counter from 32-bit reads: high, low, high again. */
static inline uint64_t rt_hpet_counter(uintptr_t base)
{
	for (;;) {
		uint32_t hi = rt_hpet_read(base, HPET_COUNTER + 4);
		uint32_t lo = rt_hpet_read(base, HPET_COUNTER);
		if (rt_hpet_read(base, HPET_COUNTER + 4) == hi)
			return (uint64_t)hi << 32 | lo;
	}
}

#endif
