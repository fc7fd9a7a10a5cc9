/* Converting between TSC cycles and a device's own clock (PIT, APIC timer,
 * RTC) without floating point and without a 128-bit divide (which would need
 * libgcc): one MUL and one DIV instruction, exact. Header-only. */
#ifndef DEV_TICK_MATH_H
#define DEV_TICK_MATH_H

#include <stdint.h>

/* floor(a * b / c) for c != 0. Saturates to UINT64_MAX when the quotient
 * does not fit in 64 bits (a deadline that far away is "never"). */
static inline uint64_t muldiv64(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t lo, hi, q, r;
	asm("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
	if (hi >= c)
		return UINT64_MAX;
	asm("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c) : "cc");
	(void)r;
	return q;
}

/* ceil(a * b / c), same rules. */
static inline uint64_t muldiv64_ceil(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t lo, hi, q, r;
	asm("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
	if (hi >= c)
		return UINT64_MAX;
	asm("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c) : "cc");
	return q + (r != 0 && q != UINT64_MAX);
}

/* The TSC frequency devices count with: platform_tsc_hz(), or 1 GHz when
 * it is unknown (0), so that no device ever divides by zero. */
#define TICK_DEFAULT_TSC_HZ 1000000000ull

#endif
