/* xsetbv64: a hostile guest that tries every XCR0 value XSETBV must refuse
 * (docs/SECURITY.md, case 2), then turns AVX on as an OS would. Each refused try
 * must raise #GP(0) (#UD without CR4.OSXSAVE) and leave XCR0 as it was;
 * the valid one must read back through XGETBV and make a 256-bit VEX
 * instruction work. 64-bit, to try XSETBV at CPL 3 (AMD CPUs, and QEMU from
 * 8.2, check the XSETBV intercept before the privilege level, so there the
 * hypervisor sees that case). Prints TAP; status 0 when all pass.
 *
 * `intercept=1` also checks that the valid XSETBV made one VM exit (an
 * 'other' exit in lightpath's statistics): true on VT-x, where XSETBV always
 * exits, and on SVM CPUs that implement the XSETBV intercept (Bochs; QEMU
 * only from 8.2, so not under Debian 12's QEMU 7.2). */
#include "guests/rt/rt.h"

#define CR4_OSXSAVE      (1u << 18)
#define CPUID1_ECX_XSAVE (1u << 26)
#define CPUID1_ECX_AVX   (1u << 28)
#define VEC_UD 6u
#define VEC_GP 13u

#define XCR0_X87 1ull
#define XCR0_SSE 2ull
#define XCR0_AVX 4ull
#define XCR0_AVX512 0xe0ull
#define XCR0_MPX 0x18ull

/* ---- a ring-3 segment pair and a TSS, for XSETBV at CPL 3 ---- */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x23
#define SEL_UCODE 0x2b
#define SEL_TSS   0x30

extern uint64_t rt_pml4[512], rt_pdpt[512], rt_pd[512];
static uint64_t gdt[8] __attribute__((aligned(16)));
static uint8_t tss[104] __attribute__((aligned(16)));
static uint8_t ring0_stack[4096] __attribute__((aligned(16)));
static uint8_t ring3_stack[4096] __attribute__((aligned(16)));
uint64_t xsetbv64_kernel_rsp;
extern char xsetbv64_back[];
static volatile unsigned ring3_vector, ring3_error;

static inline ureg_t read_cr4(void)
{
	ureg_t v;
	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static inline void write_cr4(ureg_t v)
{
	asm volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static inline uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

/* XSETBV with ECX = xcr; returns the vector it raised (0: none), with the
 * error code in *err. */
static unsigned try_xsetbv(uint32_t xcr, uint64_t v, ureg_t *err)
{
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "xsetbv\n1:"
		     : : "c"(xcr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
	rt_resume = 0;
	*err = rt_trap.error;
	return rt_trap.count ? rt_trap.vector : 0;
}

/* One refused value: #GP(0) (or `vec`), and XCR0 still `before`. */
static void refused(unsigned vec, uint32_t xcr, uint64_t v, const char *what)
{
	uint64_t before = xgetbv0();
	ureg_t err = 0;
	unsigned got = try_xsetbv(xcr, v, &err);
	tap_eq(got, vec, "XSETBV ECX=%u EDX:EAX=0x%llx (%s) raises %s", xcr, (unsigned long long)v,
	       what, vec == VEC_GP ? "#GP" : "#UD");
	if (vec == VEC_GP)
		tap_eq(err, 0, "... with error code 0");
	tap_eq(xgetbv0(), before, "... and XCR0 is unchanged");
}

/* The exception that ends the ring-3 excursion: back to ring 0 after the
 * asm below, on the stack it left. */
static void ring3_trap(struct rt_frame *f)
{
	ring3_vector = (unsigned)f->vector;
	ring3_error = (unsigned)f->error;
	f->ip = (uintptr_t)xsetbv64_back;
	f->cs = SEL_KCODE;
	f->ss = SEL_KDATA;
	f->sp = xsetbv64_kernel_rsp;
}

static void ring3_setup(void)
{
	gdt[0] = 0;
	gdt[1] = 0x00af9a000000ffffull;    /* 0x08 64-bit code, DPL 0 (as the runtime's) */
	gdt[2] = 0x00cf92000000ffffull;    /* 0x10 data, DPL 0 */
	gdt[3] = 0x00cf9a000000ffffull;    /* 0x18 32-bit code (the runtime's boot code) */
	gdt[4] = 0x00cff2000000ffffull;    /* 0x20 data, DPL 3 */
	gdt[5] = 0x00affa000000ffffull;    /* 0x28 64-bit code, DPL 3 */
	uint64_t t = (uintptr_t)tss;
	gdt[6] = (sizeof(tss) - 1) | ((t & 0xffffff) << 16) | (0x89ull << 40) | (((t >> 24) & 0xff) << 56);
	gdt[7] = t >> 32;
	uint64_t rsp0 = (uintptr_t)(ring0_stack + sizeof(ring0_stack));
	memcpy(tss + 4, &rsp0, 8);
	*(uint16_t *)(tss + 102) = sizeof(tss);
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } d = { sizeof(gdt) - 1, (uintptr_t)gdt };
	asm volatile("lgdt %0\n\tltr %w1" : : "m"(d), "r"(SEL_TSS) : "memory");
	/* user access to the identity map the runtime built */
	rt_pml4[0] |= 4;
	rt_pdpt[0] |= 4;
	for (unsigned i = 0; i < 512; i++)
		rt_pd[i] |= 4;
	ureg_t cr3;
	asm volatile("mov %%cr3, %0\n\tmov %0, %%cr3" : "=r"(cr3) : : "memory");
}

/* XSETBV of `v` at CPL 3; returns the vector that brought it back. */
static __attribute__((noinline, noclone)) unsigned xsetbv_at_cpl3(uint64_t v)
{
	ring3_vector = ~0u;
	rt_set_handler(VEC_UD, ring3_trap);
	rt_set_handler(VEC_GP, ring3_trap);
	rt_set_handler(14, ring3_trap);
	asm volatile("mov %%rsp, xsetbv64_kernel_rsp(%%rip)\n\t"
		     "pushq %[ss]\n\t"
		     "pushq %[usp]\n\t"
		     "pushfq\n\t"
		     "pushq %[cs]\n\t"
		     "lea 2f(%%rip), %%r11\n\t"
		     "pushq %%r11\n\t"
		     "iretq\n"
		     "2:\txsetbv\n\t"            /* at CPL 3 */
		     "ud2\n"                     /* not reached: XSETBV must fault */
		     ".globl xsetbv64_back\n"
		     "xsetbv64_back:"
		     : : [ss] "i"(SEL_UDATA), [cs] "i"(SEL_UCODE),
		       [usp] "r"((uintptr_t)(ring3_stack + sizeof(ring3_stack))),
		       "c"(0), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
		     : "r11", "memory");
	rt_set_handler(VEC_UD, 0);
	rt_set_handler(VEC_GP, 0);
	rt_set_handler(14, 0);
	return ring3_vector;
}

/* A 256-bit VEX load and store through YMM1: works only with XCR0.AVX. */
static bool avx_roundtrip(void)
{
	static uint8_t in[32] __attribute__((aligned(32))), out[32] __attribute__((aligned(32)));
	for (unsigned i = 0; i < 32; i++)
		in[i] = (uint8_t)(0x40 + i);
	memset(out, 0, sizeof(out));
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "vmovdqa (%0), %%ymm1\n\tvmovdqa %%ymm1, (%1)\n1:"
		     : : "r"(in), "r"(out) : "memory");
	rt_resume = 0;
	return !rt_trap.count && !memcmp(in, out, sizeof(in));
}

/* The lowest XCR0 bit above x87 that the CPU does not offer. */
static unsigned first_unoffered(uint64_t offered)
{
	for (unsigned i = 1; i < 63; i++)
		if (!((offered >> i) & 1))
			return i;
	return 63;
}

int guest_main(void)
{
	tap_begin("xsetbv64");
	struct cpuid_regs r1 = cpuid(1, 0);
	if (!(r1.ecx & CPUID1_ECX_XSAVE)) {
		tap_ok(false, r1.ecx, "XSAVE", "the CPU offers XSAVE");
		return tap_end();
	}
	struct cpuid_regs d = cpuid(0xd, 0);
	uint64_t offered = ((uint64_t)d.edx << 32) | d.eax;
	rt_printf("xsetbv64: XCR0 components offered 0x%llx\n", (unsigned long long)offered);

	/* CR4.OSXSAVE is 0 at the start: #UD, whatever the value */
	ureg_t err;
	tap_eq(try_xsetbv(0, XCR0_X87 | XCR0_SSE, &err), VEC_UD,
	       "XSETBV with CR4.OSXSAVE clear raises #UD");
	write_cr4(read_cr4() | CR4_OSXSAVE);
	tap_eq(xgetbv0(), XCR0_X87, "XCR0 reads 1 at the start");

	refused(VEC_GP, 0, 0, "x87 off");
	refused(VEC_GP, 0, XCR0_X87 | XCR0_AVX, "AVX without SSE");
	refused(VEC_GP, 1, XCR0_X87, "XCR1");
	refused(VEC_GP, 0x80000000u, XCR0_X87, "XCR 0x80000000");
	unsigned bit = first_unoffered(offered);
	refused(VEC_GP, 0, XCR0_X87 | (1ull << bit), "a component the CPU does not offer");
	refused(VEC_GP, 0, XCR0_X87 | (1ull << 63), "bit 63");
	refused(VEC_GP, 0, offered | (1ull << 8), "every offered component and bit 8, supervisor PT");
	if ((offered & XCR0_AVX512) == XCR0_AVX512) {
		refused(VEC_GP, 0, XCR0_X87 | XCR0_SSE | XCR0_AVX | 0x20, "AVX-512 opmask alone");
		refused(VEC_GP, 0, XCR0_X87 | XCR0_SSE | XCR0_AVX512, "AVX-512 without AVX");
	}
	if ((offered & XCR0_MPX) == XCR0_MPX)
		refused(VEC_GP, 0, XCR0_X87 | (1ull << 3), "half of MPX");

	ring3_setup();
	unsigned v3 = xsetbv_at_cpl3(XCR0_X87 | XCR0_SSE);
	tap_eq(v3, VEC_GP, "XSETBV at CPL 3 raises #GP");
	tap_eq(ring3_error, 0, "... with error code 0");
	tap_eq(xgetbv0(), XCR0_X87, "... and XCR0 is unchanged");

	/* An OS turning AVX on */
	bool avx = (r1.ecx & CPUID1_ECX_AVX) && (offered & XCR0_AVX);
	if (!avx) {
		tap_ok(true, 0, "", "no AVX offered: the valid XSETBV is x87|SSE");
		tap_eq(try_xsetbv(0, XCR0_X87 | XCR0_SSE, &err), 0, "XSETBV x87|SSE works");
		tap_eq(xgetbv0(), XCR0_X87 | XCR0_SSE, "XGETBV reads it back");
		return tap_end();
	}
	tap_ok(!avx_roundtrip(), 0, "#UD", "a VEX instruction faults while XCR0.AVX is clear");
	sreg_t other = lp_hypercall(LP_HC_STATS, LP_EXIT_OTHER, 0, 0, NULL, NULL);
	tap_eq(try_xsetbv(0, XCR0_X87 | XCR0_SSE | XCR0_AVX, &err), 0, "XSETBV 0x7 (x87, SSE, AVX) works");
	/* the CPU must not take a guest's XCR0 without lightpath checking it */
	if (rt_arg_u64("intercept", 0))
		tap_eq((uint64_t)(lp_hypercall(LP_HC_STATS, LP_EXIT_OTHER, 0, 0, NULL, NULL) - other), 1,
		       "lightpath intercepted it (one more 'other' exit)");
	tap_eq(xgetbv0(), XCR0_X87 | XCR0_SSE | XCR0_AVX, "XGETBV reads 0x7 back");
	tap_ok(avx_roundtrip(), 0, "a 256-bit copy", "a 256-bit VEX load and store through YMM1 work");
	refused(VEC_GP, 0, XCR0_X87 | XCR0_AVX, "AVX without SSE, from 0x7");
	tap_ok(avx_roundtrip(), 0, "a 256-bit copy", "AVX still works after the refused XSETBV");
	return tap_end();
}
