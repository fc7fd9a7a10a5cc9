/* dev/pmtimer.c against an exact 128-bit reference computed on the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pmtimer.h"
#include "tests/unit/stubs.h"

#define HZ 3579545u

static struct pmtimer pm;

static void start(uint64_t tsc_hz, uint64_t tsc0)
{
	stubs_reset();
	stub_tsc_hz = tsc_hz;
	stub_tsc = tsc0;
	pmtimer_init(&pm, FAKE_HOST);
}

/* floor(delta * HZ / hz) mod 2^24, the definition. */
static uint32_t reference(uint64_t delta, uint64_t hz)
{
	return (uint32_t)(((unsigned __int128)delta * HZ / hz) & 0xffffff);
}

static uint64_t read_at(uint64_t tsc, uint16_t port, unsigned size)
{
	uint64_t v = 0xdeadbeefcafef00dull;
	stub_tsc = tsc;
	assert_int_equal(pmtimer_io(&pm, port, &v, size, false), IO_OK);
	return v;
}

static void test_range(void **state)
{
	(void)state;
	start(3000000000ull, 0);
	assert_int_equal(pmtimer_desc.nr_ranges, 1);
	assert_true(stub_desc_range_is(&pmtimer_desc, 0, 0x608, 4, pmtimer_io, true));
	assert_int_equal(pm.base, 0x608);
	assert_true(pmtimer_desc.lock_free);   /* light with several vCPUs too */
	assert_string_equal(pmtimer_desc.name, "acpi-pm-timer");
	assert_ptr_equal(pm.clock, &stub_clock);
}

static void test_exact_values(void **state)
{
	(void)state;
	/* A TSC at exactly 1000x the PM timer rate. */
	start(HZ * 1000ull, 5000);
	assert_int_equal(read_at(5000, 0x608, 4), 0);
	assert_int_equal(read_at(5999, 0x608, 4), 0);
	assert_int_equal(read_at(6000, 0x608, 4), 1);
	assert_int_equal(read_at(5000 + 1000ull * 123456, 0x608, 4), 123456);
	assert_int_equal(read_at(5000 + 1000ull * 123456 - 1, 0x608, 4), 123455);

	/* 2 GHz: one second is exactly 3579545 ticks; gcd(HZ, 2e9) = 5 so
	 * every 400000000 cycles the true value is an integer, the case a
	 * rounded-down multiplier gets wrong without the remainder check. */
	start(2000000000ull, 0);
	assert_int_equal(read_at(2000000000ull, 0x608, 4), 3579545);
	assert_int_equal(read_at(1999999999ull, 0x608, 4), 3579544);
	assert_int_equal(read_at(400000000ull, 0x608, 4), 715909);
	assert_int_equal(read_at(399999999ull, 0x608, 4), 715908);
	assert_int_equal(read_at(559ull, 0x608, 4), 1);  /* 558.7 cycles/tick */
	assert_int_equal(read_at(558ull, 0x608, 4), 0);

	/* 3 GHz: 1 s -> 3579545; 10 ms -> 35795 (35795.45). */
	start(3000000000ull, 1ull << 40);
	assert_int_equal(read_at((1ull << 40) + 3000000000ull, 0x608, 4), 3579545);
	assert_int_equal(read_at((1ull << 40) + 30000000ull, 0x608, 4), 35795);

	/* An odd frequency, 2.494 GHz, checked against the definition. */
	start(2494000000ull, 77);
	for (uint64_t d = 0; d < 2000000; d += 997)
		assert_int_equal(read_at(77 + d, 0x608, 4), reference(d, 2494000000ull));
}

static void test_24bit_wrap(void **state)
{
	(void)state;
	start(HZ * 1000ull, 0);
	assert_int_equal(read_at(1000ull * 0xffffff, 0x608, 4), 0xffffff);
	assert_int_equal(read_at(1000ull * 0x1000000, 0x608, 4), 0);
	assert_int_equal(read_at(1000ull * 0x1000005, 0x608, 4), 5);
	/* 3 GHz: the counter wraps after 2^24 / HZ = 4.687 s. */
	start(3000000000ull, 0);
	uint64_t five_s = 15000000000ull;  /* 17897725 ticks */
	assert_int_equal(read_at(five_s, 0x608, 4), 17897725 - 0x1000000);
}

static void test_long_uptime(void **state)
{
	(void)state;
	/* A week at 3 GHz: exact ticks = HZ * 604800 (fits in 64 bits). */
	start(3000000000ull, 0);
	uint64_t week = 3000000000ull * 604800;
	assert_int_equal(read_at(week, 0x608, 4), (HZ * 604800ull) & 0xffffff);
	assert_int_equal(read_at(week + 3000000000ull / 2, 0x608, 4),
			 (HZ * 604800ull + HZ / 2) & 0xffffff);
	/* Ten years at 5 GHz and the full 64-bit range against the reference. */
	start(5000000000ull, 0);
	uint64_t decade = 5000000000ull * 86400 * 3652;
	assert_int_equal(read_at(decade, 0x608, 4), reference(decade, 5000000000ull));
	assert_int_equal(read_at(~0ull, 0x608, 4), reference(~0ull, 5000000000ull));
	/* The TSC itself wrapping past 2^64 after init. */
	start(3000000000ull, ~0ull - 999);
	assert_int_equal(read_at(2999999000ull, 0x608, 4), 3579545);
}

static void test_random_against_reference(void **state)
{
	(void)state;
	static const uint64_t freqs[] = { 3579546ull, 10000000ull, 1000000007ull,
					  2100000000ull, 3700000000ull, 4999999999ull,
					  1ull << 40, PMTIMER_MAX_TSC_HZ };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t f = 0; f < sizeof(freqs) / sizeof(freqs[0]); f++) {
		start(freqs[f], 0);
		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Mix full-range and small distances. */
			uint64_t d = (i & 1) ? x : x >> (x & 63);
			stub_tsc = d;
			assert_int_equal(pmtimer_ticks(&pm, d), reference(d, freqs[f]));
		}
	}
}

/* A TSC above PMTIMER_MAX_TSC_HZ (none exists) is taken as that one: the
 * 64-bit remainder is exact only while 2 * tsc_hz <= 2^64 (the remainder
 * lies below 2 * tsc_hz). */
static void test_absurd_tsc_clamped(void **state)
{
	(void)state;
	start(~0ull, 0);
	assert_int_equal(pm.tsc_hz, PMTIMER_MAX_TSC_HZ);
	for (uint64_t k = 1; k < 200000; k += 7) {
		uint64_t d = (uint64_t)(((unsigned __int128)k * PMTIMER_MAX_TSC_HZ + HZ - 1) / HZ);
		assert_int_equal(pmtimer_ticks(&pm, d), reference(d, PMTIMER_MAX_TSC_HZ));
		assert_int_equal(pmtimer_ticks(&pm, d - 1), reference(d - 1, PMTIMER_MAX_TSC_HZ));
	}
}

static void test_monotonic(void **state)
{
	(void)state;
	start(2900000000ull, 0);
	uint32_t prev = 0;
	for (uint64_t t = 0; t < 10000000; t += 131) {
		uint32_t now = (uint32_t)read_at(t, 0x608, 4);
		assert_true(now >= prev);
		assert_true(now - prev <= 1);
		prev = now;
	}
}

static void test_slow_or_unknown_tsc(void **state)
{
	(void)state;
	/* No frequency known: count at TSC rate rather than divide by 0. */
	start(0, 100);
	assert_int_equal(read_at(100, 0x608, 4), 0);
	assert_int_equal(read_at(100 + 12345, 0x608, 4), 12345);
	assert_int_equal(read_at(100 + 0x1000001, 0x608, 4), 1);
	/* Exactly the PM timer rate: identity. */
	start(HZ, 0);
	assert_int_equal(read_at(HZ, 0x608, 4), HZ);
	assert_int_equal(read_at(~0ull, 0x608, 4), 0xffffff);
}

static void test_sizes_and_offsets(void **state)
{
	(void)state;
	start(HZ * 1000ull, 0);
	uint64_t t = 1000ull * 0xabcdef;
	assert_int_equal(read_at(t, 0x608, 4), 0xabcdef);
	assert_int_equal(read_at(t, 0x608, 2), 0xcdef);
	assert_int_equal(read_at(t, 0x608, 1), 0xef);
	assert_int_equal(read_at(t, 0x609, 1), 0xcd);
	assert_int_equal(read_at(t, 0x60a, 1), 0xab);
	assert_int_equal(read_at(t, 0x60b, 1), 0x00);
	assert_int_equal(read_at(t, 0x60a, 2), 0x00ab);
}

static void test_writes_ignored(void **state)
{
	(void)state;
	start(HZ * 1000ull, 0);
	uint64_t v = 0x123456;
	stub_tsc = 1000ull * 42;
	assert_int_equal(pmtimer_io(&pm, 0x608, &v, 4, true), IO_OK);
	assert_int_equal(v, 0x123456);
	assert_int_equal(read_at(1000ull * 42, 0x608, 4), 42);
	assert_int_equal(read_at(1000ull * 43, 0x608, 4), 43);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_exact_values),
		cmocka_unit_test(test_24bit_wrap),
		cmocka_unit_test(test_long_uptime),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_absurd_tsc_clamped),
		cmocka_unit_test(test_monotonic),
		cmocka_unit_test(test_slow_or_unknown_tsc),
		cmocka_unit_test(test_sizes_and_offsets),
		cmocka_unit_test(test_writes_ignored),
	};
	return cmocka_run_group_tests_name("pmtimer", tests, NULL, NULL);
}
