/* The timer lead (vmm/timer_lead.h): it adapts to the path it hides, it
 * never grows past its bound nor makes a wait longer than that, whatever
 * the arrivals, and off it lets no timer fire early. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/timer_lead.h"

#define MAX    10000u
#define MARGIN 30u

static struct timer_lead fresh(uint64_t lead)
{
	return (struct timer_lead){ .on = true, .lead = lead, .max = MAX, .margin = MARGIN };
}

/* One expiry: the host timer fires `lead` before the deadline, the path
 * takes `path` ticks to the wait; returns the ticks waited, and what the
 * guest's handler would see as latency past the deadline in *late. */
static uint64_t expiry(struct timer_lead *l, uint64_t deadline, uint64_t path, uint64_t *late)
{
	uint64_t fired = deadline - l->lead;
	l->programmed = l->lead;
	timer_lead_fired_early(l, deadline);
	uint64_t now = fired + path;
	uint64_t wait = timer_lead_arrived(l, now);
	assert_int_equal(l->release, 0);
	*late = now + wait - deadline;
	return wait;
}

/* A constant path: the lead settles where the wait is at most twice the
 * margin and the guest sees no latency from the path. */
static void test_settles_on_the_path(void **state)
{
	(void)state;
	for (uint64_t start = 0; start <= MAX; start += 2500) {
		struct timer_lead l = fresh(start);
		uint64_t late = 0, wait = 0;
		for (int i = 0; i < 200; i++)
			wait = expiry(&l, 1000000 + 100000 * (uint64_t)i, 550, &late);
		assert_int_equal(late, 0);
		assert_true(wait <= 2 * MARGIN);
		assert_true(l.lead >= 550 && l.lead <= 550 + 2 * MARGIN);
	}
}

/* A path longer than the bound: the lead stops at the bound, the wait
 * never exceeds it, and the rest is latency. Lateness beyond the bound
 * changes nothing. */
static void test_bounded(void **state)
{
	(void)state;
	struct timer_lead l = fresh(1000);
	uint64_t late = 0;
	for (int i = 0; i < 100; i++) {
		uint64_t wait = expiry(&l, 1000000 + 100000 * (uint64_t)i, MAX + 500, &late);
		assert_true(wait <= MAX);
		assert_true(l.lead <= MAX);
	}
	assert_int_equal(l.lead, MAX);
	assert_int_equal(late, 500);
	l = fresh(1000);
	for (int i = 0; i < 10; i++)
		expiry(&l, 1000000 + 100000 * (uint64_t)i, 1000 + MAX + 1, &late);
	assert_int_equal(l.lead, 1000);   /* late by more than the bound: not the path */
	assert_int_equal(l.late, 10);
}

/* A path that varies: a late arrival lengthens the lead by at least what
 * it was late, an early one shortens it by no more than a quarter. */
static void test_adapts_both_ways(void **state)
{
	(void)state;
	struct timer_lead l = fresh(500);
	timer_lead_fired_early(&l, 10000);
	assert_int_equal(timer_lead_arrived(&l, 10200), 0);
	assert_int_equal(l.late, 1);
	assert_true(l.lead >= 700);
	uint64_t before = l.lead;
	timer_lead_fired_early(&l, 20000);
	assert_int_equal(timer_lead_arrived(&l, 19000), 1000);
	assert_int_equal(l.waits, 1);
	assert_int_equal(l.waited, 1000);
	assert_true(l.lead < before && before - l.lead <= 1000 / 4);
}

/* A timer that fired past its deadline (the host timer later than the
 * lead) lengthens the lead by that, up to the bound; by more than the
 * bound it changes nothing. */
static void test_fired_late(void **state)
{
	(void)state;
	struct timer_lead l = fresh(500);
	timer_lead_fired_late(&l, 2000);
	assert_int_equal(l.missed, 1);
	assert_int_equal(l.lead, 500 + 2000 + MARGIN);
	timer_lead_fired_late(&l, UINT64_MAX);   /* beyond the bound: not the path */
	assert_int_equal(l.lead, 500 + 2000 + MARGIN);
	assert_int_equal(l.missed, 2);
	timer_lead_fired_late(&l, MAX);
	assert_int_equal(l.lead, MAX);
	l.lead = MAX - 1;
	timer_lead_fired_late(&l, 0);
	assert_int_equal(l.lead, MAX);
	assert_int_equal(l.release, 0);   /* nothing to wait for */
}

/* Several timers fired early in one run: the wait is for the latest. */
static void test_waits_for_the_latest(void **state)
{
	(void)state;
	struct timer_lead l = fresh(1000);
	timer_lead_fired_early(&l, 5300);
	timer_lead_fired_early(&l, 5900);
	timer_lead_fired_early(&l, 5100);
	assert_int_equal(l.early, 3);
	assert_int_equal(timer_lead_arrived(&l, 5000), 900);
}

/* Off: the window is 0, whatever lead a previous setting left. */
static void test_off(void **state)
{
	(void)state;
	struct timer_lead l = fresh(MAX);
	l.programmed = MAX;
	l.on = false;
	assert_int_equal(timer_lead_window(&l), 0);
	l.on = true;
	l.lead = 10;
	assert_int_equal(timer_lead_window(&l), MAX);   /* the host timer was programmed with it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_settles_on_the_path),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_adapts_both_ways),
		cmocka_unit_test(test_fired_late),
		cmocka_unit_test(test_waits_for_the_latest),
		cmocka_unit_test(test_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
