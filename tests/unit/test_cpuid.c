/* The CPUID a VM sees (vmm/cpuid_policy.c, docs/CPUID.md): the host's words
 * of the CPU models the guests meet (QEMU's EPYC, Bochs' corei7_skylake_x
 * and ryzen, as lightpath's probe read them) and of CPUs no emulator here
 * offers, through the policy; and the bits that follow guest state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/cpuid.h"

#define B(n) (1u << (n))

static const struct cpuid_host amd = {
	.intel = false, .max_basic = 0xd, .max_ext = 0x8000001f, .xcr0 = 0x7, .xsave_size = 0x340,
};
static const struct cpuid_host intel = {
	.intel = true, .max_basic = 0x16, .max_ext = 0x80000008, .xcr0 = 0xe7, .xsave_size = 0xa80,
};

static void apply(const struct cpuid_host *h, uint32_t leaf, uint32_t sub, uint32_t a,
		  uint32_t b, uint32_t c, uint32_t d, uint32_t out[4])
{
	out[0] = a;
	out[1] = b;
	out[2] = c;
	out[3] = d;
	cpuid_policy_apply(h, leaf, sub, out);
}

/* QEMU EPYC, leaf 1: what lightpath always did (MONITOR, VMX, MCE, MCA
 * hidden, its own APIC features shown, APIC ID 0) and OSXSAVE 0 */
static void test_epyc_leaf1(void **state)
{
	(void)state;
	uint32_t r[4];
	apply(&amd, 1, 0, 0x00800f12, 0x05000800, 0xf6d83203 | CPUID1_ECX_MONITOR |
	      CPUID1_ECX_OSXSAVE, 0x078bbb7d | CPUID1_EDX_MCE | CPUID1_EDX_MCA, r);
	assert_int_equal(r[0], 0x00800f12);
	assert_int_equal(r[1], 0x00000800);
	assert_int_equal(r[2], 0xf7f83203);   /* the view the guests had */
	assert_int_equal(r[3], 0x078bbb7d);
	cpuid_guest_state(1, 0, r, 1ull << 18);   /* CR4.OSXSAVE */
	assert_int_equal(r[2], 0xf7f83203 | CPUID1_ECX_OSXSAVE);
}

/* Bochs corei7_skylake_x, leaf 1: the Intel monitoring and power features
 * whose MSRs lightpath does not emulate go */
static void test_skylake_leaf1(void **state)
{
	(void)state;
	uint32_t r[4];
	apply(&intel, 1, 0, 0x00050654, 0x00010800, 0xf7faf397 | CPUID1_ECX_VMX,
	      0xbfebbb7f | CPUID1_EDX_MCE | CPUID1_EDX_MCA, r);
	/* DTES64, DS-CPL, VMX, EST, TM2, xTPR, PDCM go */
	assert_int_equal(r[2], 0xf7faf397 & ~(B(2) | B(4) | B(7) | B(8) | B(14) | B(15)));
	/* DS, ACPI, TM, PBE, MCE, MCA go */
	assert_int_equal(r[3], 0xbfebbb7f & ~(B(21) | B(22) | B(29) | B(31)));
	/* without XSAVE there is no OSXSAVE to mirror */
	r[2] &= ~CPUID1_ECX_XSAVE;
	cpuid_guest_state(1, 0, r, ~0ull);
	assert_int_equal(r[2] & CPUID1_ECX_OSXSAVE, 0);
}

static void test_leaf6_and_7(void **state)
{
	(void)state;
	uint32_t r[4];
	apply(&intel, 6, 0, 0x75, 2, 9, 0, r);   /* DTS, PLN, ECMD, PTM, APERF/MPERF, EPB */
	assert_int_equal(r[0], B(2));           /* ARAT */
	assert_int_equal(r[1] | r[2] | r[3], 0);
	apply(&amd, 6, 0, 4, 0, 1, 0, r);        /* ryzen: EffFreq (APERF/MPERF) */
	assert_int_equal(r[2], 0);
	/* skylake_x leaf 7 shows nothing lightpath hides, TSC_ADJUST included */
	apply(&intel, 7, 0, 0, 0xd19f27eb, 0, 0, r);
	assert_int_equal(r[1], 0xd19f27eb);
	/* SGX, RDT, MPX, PT; WAITPKG, CET, LA57, PKS; the Intel MSR bits */
	apply(&intel, 7, 0, 5, B(2) | B(12) | B(14) | B(15) | B(25) | B(3),
	      B(5) | B(7) | B(16) | B(31) | B(3) | B(4) | B(22),
	      B(20) | B(24) | B(26) | B(27) | B(28) | B(29) | B(30) | B(31) | B(4), r);
	assert_int_equal(r[0], 2);               /* subleaves 0-2 */
	assert_int_equal(r[1], B(3));
	assert_int_equal(r[2], B(3) | B(22));    /* PKU, RDPID; OSPKE follows CR4 */
	assert_int_equal(r[3], B(4));            /* FSRM; no speculation MSRs given */
	cpuid_guest_state(7, 0, r, 1ull << 22);  /* CR4.PKE */
	assert_int_equal(r[2], B(3) | B(4) | B(22));
	/* SPEC_CTRL and PRED_CMD given: their bits, never ARCH_CAPABILITIES */
	struct cpuid_host h = intel;
	h.spec_leaf7_edx = B(26) | B(27);
	apply(&h, 7, 0, 0, 0, 0, B(26) | B(27) | B(28) | B(29) | B(31), r);
	assert_int_equal(r[3], B(26) | B(27));
	apply(&intel, 7, 3, 1, 2, 3, 4, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
}

static void test_leaf_d(void **state)
{
	(void)state;
	uint32_t r[4];
	/* the CPU's EBX (its size for the guest's XCR0) stays; ECX is the size
	 * for the offered components */
	struct cpuid_host h = intel;
	h.xcr0 = 0x207;
	h.xsave_size = 0xa88;
	apply(&h, 0xd, 0, 0x602e7, 0x340, 0x2b00, 0, r);   /* AMX, AVX-512, PKRU on the host */
	assert_int_equal(r[0], 0x207);
	assert_int_equal(r[1], 0x340);
	assert_int_equal(r[2], 0xa88);
	apply(&h, 0xd, 1, 0x1f, 0x988, 0x1900, 0, r);   /* XSAVES, XFD; supervisor states */
	assert_int_equal(r[0], 0x7);
	assert_int_equal(r[2] | r[3], 0);
	apply(&h, 0xd, 9, 8, 0xa80, 0, 0, r);           /* PKRU offered */
	assert_int_equal(r[0], 8);
	apply(&h, 0xd, 5, 0x40, 0x440, 0, 0, r);        /* AVX-512 not offered here */
	assert_int_equal(r[0] | r[1], 0);
	apply(&h, 0xd, 17, 0x40, 0xac0, 0, 0, r);       /* AMX never */
	assert_int_equal(r[0] | r[1], 0);
	apply(&h, 0xd, 64, 1, 1, 1, 1, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);

	/* sizes from the components' offsets and sizes (Bochs skylake_x) */
	uint32_t off[64] = { 0 }, size[64] = { 0 };
	off[2] = 0x240; size[2] = 0x100;
	off[5] = 0x440; size[5] = 0x40;
	off[6] = 0x480; size[6] = 0x200;
	off[7] = 0x680; size[7] = 0x400;
	assert_int_equal(cpuid_xsave_size(0xe7, off, size), 0xa80);
	assert_int_equal(cpuid_xsave_size(0x7, off, size), 0x340);
	assert_int_equal(cpuid_xsave_size(0x3, off, size), 576);
	/* the compacted form (CPUID.(0DH,1):EBX; Bochs 2.7 reports 0xa80 there) */
	assert_int_equal(cpuid_xsave_compacted_size(0xe7, size, 0), 0x980);
	assert_int_equal(cpuid_xsave_compacted_size(0x7, size, 0), 0x340);
	assert_int_equal(cpuid_xsave_compacted_size(0x3, size, 0), 576);
	uint32_t odd[64] = { 0 };
	odd[2] = 8; odd[5] = 0x40;
	assert_int_equal(cpuid_xsave_compacted_size(0x27, odd, 1ull << 5), 704);   /* 584 -> 640 */
	assert_int_equal(cpuid_xsave_compacted_size(0x27, odd, 0), 648);
}

/* Bochs ryzen's extended leaves */
static void test_ryzen_extended(void **state)
{
	(void)state;
	uint32_t r[4];
	apply(&amd, 0x80000001, 0, 0x00800f11, 0x20000000, 0x15c223fb | CPUID81_ECX_SVM,
	      0x2fd3fbff, r);
	/* CmpLegacy, AltMovCr8, ABM, SSE4A, MisAlignSse, 3DNowPrefetch, TopoExt
	 * stay; SVM, ExtApicSpace, OSVW, WDT, TCE, PerfCtrExt*, DataBkptExt go */
	assert_int_equal(r[2], B(0) | B(1) | B(4) | B(5) | B(6) | B(7) | B(8) | B(22));
	assert_int_equal(r[3], 0x2fd3fbff & ~(CPUID1_EDX_MCE | CPUID1_EDX_MCA));
	assert_true(r[3] & CPUID81_EDX_FFXSR);
	apply(&amd, 0x80000007, 0, 0, 0x1b, 0, 0x6599, r);   /* RAS, P-states, RAPL... */
	assert_int_equal(r[0] | r[1] | r[2], 0);
	assert_int_equal(r[3], B(8));                         /* invariant TSC */
	apply(&amd, 0x80000008, 0, 0x3028, B(0) | B(1) | B(4) | B(23), 0x3007, 0x10007, r);
	assert_int_equal(r[0], 0x3028);
	assert_int_equal(r[1], B(0) | CPUID88_EBX_LMSLE_UNSUPPORTED);   /* CLZERO */
	assert_int_equal(r[2], 0x3007);
	assert_int_equal(r[3], 0);
	apply(&intel, 0x80000008, 0, 0x3027, B(9), 0, 0, r);
	assert_int_equal(r[1], B(9));                         /* WBNOINVD; no LMSLE bit */
	apply(&amd, 0x8000001f, 0, 7, 0x16f, 0xf, 0, r);      /* SME/SEV */
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	apply(&amd, 0x8000000a, 0, 1, 0x40, 0, 0x1ebfbff, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	apply(&amd, 0x8000001e, 0, 3, 0x0101, 0x0300, 0, r);
	assert_int_equal(r[0], 0);
	assert_int_equal(r[1], 0x0100);
	assert_int_equal(r[2], 0x0300);
	/* AMD's speculation controls, given or not */
	struct cpuid_host h = amd;
	apply(&h, 0x80000008, 0, 0, B(12) | B(14) | B(15) | B(16) | B(24) | B(25) | B(30), 0, 0, r);
	assert_int_equal(r[1], CPUID88_EBX_LMSLE_UNSUPPORTED);
	h.spec_ext8_ebx = B(12) | B(14);
	apply(&h, 0x80000008, 0, 0, B(12) | B(14) | B(15) | B(16) | B(24) | B(25) | B(30), 0, 0, r);
	assert_int_equal(r[1], B(12) | B(14) | B(16) | B(30) | CPUID88_EBX_LMSLE_UNSUPPORTED);
}

static void test_hidden_leaves(void **state)
{
	(void)state;
	uint32_t r[4];
	static const uint32_t zeroed[] = { 3, 5, 8, 9, 0xa, 0xc, 0xf, 0x10, 0x12, 0x14, 0x17, 0x19,
					   0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x20, 0x23, 0x24 };
	struct cpuid_host h = intel;
	h.max_basic = 0x24;
	for (unsigned i = 0; i < sizeof(zeroed) / sizeof(zeroed[0]); i++) {
		apply(&h, zeroed[i], 0, 0x07300404, 1, 2, 3, r);
		assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	}
	/* beyond the host's maximum: 0, as AMD CPUs answer */
	apply(&intel, 0x17, 0, 1, 2, 3, 4, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	apply(&amd, 0x80000020, 0, 1, 2, 3, 4, r);
	assert_int_equal(r[0] | r[1] | r[2] | r[3], 0);
	/* informational leaves pass; the topology's x2APIC ID is the vCPU's 0 */
	apply(&intel, 4, 1, 0x1c004122, 0x01c0003f, 0x3f, 0, r);
	assert_int_equal(r[0], 0x1c004122);
	apply(&intel, 0xb, 0, 1, 1, 0x100, 6, r);
	assert_int_equal(r[2], 0x100);
	assert_int_equal(r[3], 0);
	apply(&amd, 0x80000002, 0, 0x20444d41, 0x43595045, 0x6f725020, 0x73736563, r);
	assert_int_equal(r[1], 0x43595045);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epyc_leaf1),
		cmocka_unit_test(test_skylake_leaf1),
		cmocka_unit_test(test_leaf6_and_7),
		cmocka_unit_test(test_leaf_d),
		cmocka_unit_test(test_ryzen_extended),
		cmocka_unit_test(test_hidden_leaves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
