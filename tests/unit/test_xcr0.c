/* xcr0_valid (core/xstate.h): the XCR0 values XSETBV accepts, by the rules
 * of SDM vol. 1 13.3 and the XSETBV reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/xstate.h"

#define SKYLAKE_X 0xe7ull     /* x87 SSE AVX, AVX-512 (Bochs corei7_skylake_x) */
#define EVERYTHING (0x2ffull | XCR0_AMX)

static void test_accepted(void **state)
{
	(void)state;
	assert_true(xcr0_valid(XCR0_X87, 0x7));
	assert_true(xcr0_valid(XCR0_X87 | XCR0_SSE, 0x7));
	assert_true(xcr0_valid(XCR0_X87 | XCR0_SSE | XCR0_AVX, 0x7));
	assert_true(xcr0_valid(SKYLAKE_X, SKYLAKE_X));
	assert_true(xcr0_valid(XCR0_X87 | XCR0_MPX, EVERYTHING));
	assert_true(xcr0_valid(XCR0_X87 | (1ull << 9), EVERYTHING));          /* PKRU */
	assert_true(xcr0_valid(0x7 | XCR0_AMX, EVERYTHING));
	assert_true(xcr0_valid(EVERYTHING, EVERYTHING));
}

static void test_refused(void **state)
{
	(void)state;
	assert_false(xcr0_valid(0, 0x7));                                     /* x87 off */
	assert_false(xcr0_valid(XCR0_SSE, 0x7));
	assert_false(xcr0_valid(XCR0_X87 | XCR0_AVX, 0x7));                   /* AVX without SSE */
	assert_false(xcr0_valid(0x7, 0x3));                                   /* not offered */
	assert_false(xcr0_valid(XCR0_X87 | (1ull << 63), EVERYTHING));
	assert_false(xcr0_valid(0x7 | XCR0_OPMASK, SKYLAKE_X));               /* part of AVX-512 */
	assert_false(xcr0_valid(0x7 | XCR0_OPMASK | XCR0_ZMM_HI256, SKYLAKE_X));
	assert_false(xcr0_valid(0x3 | XCR0_AVX512, SKYLAKE_X));               /* AVX-512 without AVX */
	assert_false(xcr0_valid(XCR0_X87 | XCR0_AVX512, SKYLAKE_X));
	assert_false(xcr0_valid(XCR0_X87 | XCR0_BNDREGS, EVERYTHING));        /* half of MPX */
	assert_false(xcr0_valid(XCR0_X87 | XCR0_BNDCSR, EVERYTHING));
	assert_false(xcr0_valid(0x7 | XCR0_TILECFG, EVERYTHING));             /* half of AMX */
	assert_false(xcr0_valid(0x7 | XCR0_TILEDATA, EVERYTHING));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepted),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests_name("xcr0", tests, NULL, NULL);
}
