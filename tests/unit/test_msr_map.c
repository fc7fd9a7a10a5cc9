/* The MSR lookup (vmm/msr_map.h): any 32-bit number a guest puts in ECX is
 * safe, block edges map where they should, the first registration of an MSR
 * wins, and a range that leaves its block is refused whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/msr_map.h"

static struct msr_map map;

static int setup(void **state)
{
	(void)state;
	memset(&map, 0, sizeof(map));
	return 0;
}

/* The slot of every number at and around the edges of the three blocks. */
static void test_block_edges(void **state)
{
	(void)state;
	static const struct { uint32_t msr, slot; } t[] = {
		{ 0x0, 0 }, { 0x1fff, 0x1fff }, { 0x2000, MSR_MAP_SLOTS },
		{ 0xbfffffff, MSR_MAP_SLOTS }, { 0xc0000000, 0x2000 }, { 0xc0001fff, 0x3fff },
		{ 0xc0002000, MSR_MAP_SLOTS }, { 0xc000ffff, MSR_MAP_SLOTS },
		{ 0xc0010000, 0x4000 }, { 0xc0011fff, 0x5fff }, { 0xc0012000, MSR_MAP_SLOTS },
		{ 0x40000000, MSR_MAP_SLOTS }, { 0x80000000, MSR_MAP_SLOTS },
		{ 0x00010000, MSR_MAP_SLOTS }, { 0x40010000, MSR_MAP_SLOTS },
		{ 0xfffe0000, MSR_MAP_SLOTS }, { 0xffffffff, MSR_MAP_SLOTS },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (msr_map_slot(t[i].msr) != t[i].slot)
			fail_msg("msr 0x%x: slot 0x%x, expected 0x%x", t[i].msr,
				 msr_map_slot(t[i].msr), t[i].slot);
	}
}

static void check_number(uint32_t msr, uint64_t *inside)
{
	uint32_t slot = msr_map_slot(msr);
	uint32_t hi = msr & ~(MSR_MAP_BLOCK - 1);
	int in = hi == 0 || hi == MSR_MAP_HI_C000 || hi == MSR_MAP_HI_C001;
	if (in != (slot < MSR_MAP_SLOTS))
		fail_msg("msr 0x%x: slot 0x%x", msr, slot);
	if (msr_map_get(&map, msr) != (in ? 7u : 0u))
		fail_msg("msr 0x%x: handler %u", msr, msr_map_get(&map, msr));
	*inside += in;
}

/* Numbers in every 64 Ki chunk (the edges of an 8 Ki block at each), and
 * every number of the chunks that hold a block and of their neighbours: a
 * slot inside the table exactly for the blocks' MSRs, "none" for the rest,
 * with the whole table filled (ASan watches the reads). */
static void test_all_chunks(void **state)
{
	(void)state;
	static const uint32_t lows[] = { 0, 1, 0x1000, 0x1ffe, 0x1fff, 0x2000, 0x2001,
					 0x3fff, 0x8000, 0xfffe, 0xffff };
	static const uint32_t full[] = { 0x0000, 0x0001, 0xbfff, 0xc000, 0xc001, 0xc002,
					 0x4000, 0x8000, 0xffff };
	memset(map.handler, 7, sizeof(map.handler));
	uint64_t inside = 0;
	for (uint32_t hi = 0; hi <= 0xffff; hi++)
		for (size_t i = 0; i < sizeof(lows) / sizeof(lows[0]); i++)
			check_number(hi << 16 | lows[i], &inside);
	inside = 0;
	for (size_t i = 0; i < sizeof(full) / sizeof(full[0]); i++)
		for (uint32_t lo = 0; lo <= 0xffff; lo++)
			check_number(full[i] << 16 | lo, &inside);
	assert_int_equal(inside, MSR_MAP_SLOTS);
}

static void test_first_registration_wins(void **state)
{
	(void)state;
	assert_int_equal(msr_map_set(&map, 0x800, 0x100, 1), 0);   /* x2APIC */
	assert_int_equal(msr_map_set(&map, 0x80b, 1, 2), 0);       /* overlaps: keeps 1 */
	assert_int_equal(msr_map_set(&map, 0x6e0, 1, 2), 0);
	assert_int_equal(msr_map_set(&map, 0xc0000080, 5, 3), 0);
	assert_int_equal(msr_map_set(&map, 0xc001001f, 1, 4), 0);
	assert_int_equal(msr_map_get(&map, 0x80b), 1);
	assert_int_equal(msr_map_get(&map, 0x8ff), 1);
	assert_int_equal(msr_map_get(&map, 0x900), 0);
	assert_int_equal(msr_map_get(&map, 0x6e0), 2);
	assert_int_equal(msr_map_get(&map, 0xc0000084), 3);
	assert_int_equal(msr_map_get(&map, 0xc0000085), 0);
	assert_int_equal(msr_map_get(&map, 0xc001001f), 4);
	/* the same numbers in the other blocks are not registered */
	assert_int_equal(msr_map_get(&map, 0xc0000080 - 0xc0000000 + 0xc0010000), 0);
	assert_int_equal(msr_map_get(&map, 0x80), 0);
	assert_int_equal(msr_map_get(&map, 0xc000080b), 0);
}

static void test_bad_ranges_refused(void **state)
{
	(void)state;
	assert_int_equal(msr_map_set(&map, 0x1fff, 2, 1), -1);       /* leaves block 0 */
	assert_int_equal(msr_map_set(&map, 0xc0001fff, 2, 1), -1);
	assert_int_equal(msr_map_set(&map, 0xc0011000, 0x1001, 1), -1);
	assert_int_equal(msr_map_set(&map, 0xc0011000, 0xffffffff, 1), -1);   /* no wrap */
	assert_int_equal(msr_map_set(&map, 0x2000, 1, 1), -1);        /* outside every block */
	assert_int_equal(msr_map_set(&map, 0x40000000, 1, 1), -1);
	assert_int_equal(msr_map_set(&map, 0x10, 0, 1), -1);          /* empty */
	assert_int_equal(msr_map_set(&map, 0x10, 1, 0), -1);          /* 0 is "none" */
	assert_int_equal(msr_map_set(&map, 0x10, 1, 256), -1);        /* not a byte */
	for (uint32_t s = 0; s < MSR_MAP_SLOTS; s++)
		if (map.handler[s])
			fail_msg("slot 0x%x set by a refused range", s);
	assert_int_equal(msr_map_set(&map, 0x1fff, 1, 1), 0);        /* the last of a block */
	assert_int_equal(msr_map_set(&map, 0xc0010000, MSR_MAP_BLOCK, 2), 0);   /* a whole block */
	assert_int_equal(msr_map_get(&map, 0x1fff), 1);
	assert_int_equal(msr_map_get(&map, 0xc0011fff), 2);
	assert_int_equal(msr_map_get(&map, 0xc0012000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_block_edges, setup),
		cmocka_unit_test_setup(test_all_chunks, setup),
		cmocka_unit_test_setup(test_first_registration_wins, setup),
		cmocka_unit_test_setup(test_bad_ranges_refused, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
