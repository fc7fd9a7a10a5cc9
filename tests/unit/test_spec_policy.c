/* What spec=on does on CPUs this machine cannot emulate (vmm/spec_policy.c):
 * the decision is a pure function of the CPUID words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vmm/spec_ctrl.h"

#define ARCH_CAP_IBRS_ALL (1ull << 1)
#define ARCH_CAP_PBRSB_NO (1ull << 24)

/* QEMU's EPYC and Bochs' ryzen: no speculation controls at all */
static void test_amd_without_controls(void **state)
{
	(void)state;
	struct spec_cpu c = { .intel = false };
	struct spec_plan p = spec_plan(&c, true);
	assert_int_equal(p.caps.rsb, SPEC_RSB_FULL);
	assert_false(p.caps.ibpb);
	assert_false(p.caps.spec_ctrl);
	assert_false(p.enable_auto_ibrs);
	assert_int_equal(p.host_spec_ctrl, 0);
}

/* Zen 2/3: IBPB, IBRS, STIBP, SSBD, no Automatic IBRS */
static void test_amd_zen2(void **state)
{
	(void)state;
	struct spec_cpu c = { .intel = false, .ext8_ebx = SPEC_EXT8_IBPB | SPEC_EXT8_IBRS |
							  SPEC_EXT8_STIBP | SPEC_EXT8_SSBD };
	struct spec_plan p = spec_plan(&c, true);
	assert_int_equal(p.caps.rsb, SPEC_RSB_FULL);
	assert_true(p.caps.ibpb);
	assert_true(p.caps.spec_ctrl);
	assert_int_equal(p.caps.spec_ctrl_valid, SPEC_CTRL_IBRS | SPEC_CTRL_STIBP | SPEC_CTRL_SSBD);
	assert_int_equal(p.host_spec_ctrl, 0);
}

/* Zen 4: Automatic IBRS clears the RSB at #VMEXIT; only with spec=on is it enabled */
static void test_amd_auto_ibrs(void **state)
{
	(void)state;
	struct spec_cpu c = { .intel = false, .ext8_ebx = SPEC_EXT8_IBPB | SPEC_EXT8_SSBD,
			      .ext21_eax = SPEC_EXT21_AUTO_IBRS };
	struct spec_plan p = spec_plan(&c, true);
	assert_int_equal(p.caps.rsb, SPEC_RSB_NONE);
	assert_true(p.enable_auto_ibrs);
	assert_int_equal(p.caps.spec_ctrl_valid, SPEC_CTRL_SSBD);
	p = spec_plan(&c, false);
	assert_false(p.enable_auto_ibrs);
}

/* Bochs' Skylake-X and older Intel: no enhanced IBRS */
static void test_intel_without_eibrs(void **state)
{
	(void)state;
	struct spec_cpu c = { .intel = true };
	assert_int_equal(spec_plan(&c, true).caps.rsb, SPEC_RSB_FULL);
	c.leaf7_edx = SPEC_LEAF7_IBRS_IBPB | SPEC_LEAF7_STIBP;
	struct spec_plan p = spec_plan(&c, true);
	assert_int_equal(p.caps.rsb, SPEC_RSB_FULL);
	assert_true(p.caps.ibpb);
	assert_int_equal(p.caps.spec_ctrl_valid, SPEC_CTRL_IBRS | SPEC_CTRL_STIBP);
	assert_int_equal(p.host_spec_ctrl, 0);
}

/* enhanced IBRS: left on in the host; the one-CALL sequence unless PBRSB_NO */
static void test_intel_eibrs(void **state)
{
	(void)state;
	struct spec_cpu c = { .intel = true,
			      .leaf7_edx = SPEC_LEAF7_IBRS_IBPB | SPEC_LEAF7_ARCH_CAP | SPEC_LEAF7_SSBD,
			      .arch_capabilities = ARCH_CAP_IBRS_ALL };
	struct spec_plan p = spec_plan(&c, true);
	assert_int_equal(p.caps.rsb, SPEC_RSB_LITE);
	assert_int_equal(p.host_spec_ctrl, SPEC_CTRL_IBRS);
	c.arch_capabilities |= ARCH_CAP_PBRSB_NO;
	assert_int_equal(spec_plan(&c, true).caps.rsb, SPEC_RSB_NONE);
	assert_int_equal(spec_plan(&c, false).host_spec_ctrl, 0);
	/* IBRS_ALL means nothing without the MSR that says so */
	c.leaf7_edx &= ~SPEC_LEAF7_ARCH_CAP;
	assert_int_equal(spec_plan(&c, true).caps.rsb, SPEC_RSB_FULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amd_without_controls),
		cmocka_unit_test(test_amd_zen2),
		cmocka_unit_test(test_amd_auto_ibrs),
		cmocka_unit_test(test_intel_without_eibrs),
		cmocka_unit_test(test_intel_eibrs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
