/* The CPU's extended state: x87, SSE, AVX and the other XSAVE components,
 * MXCSR and XCR0. lightpath never uses any of it (it is built
 * -mgeneral-regs-only), so whatever the CPU holds there belongs to the guest
 * that runs on it; a vCPU's start puts it in its init configuration
 * (vmm/cpu_state.h). */
#ifndef CORE_XSTATE_H
#define CORE_XSTATE_H

#include <stdbool.h>
#include <stdint.h>

#define CR4_OSFXSR  (1ull << 9)
#define CR4_OSXSAVE (1ull << 18)

/* XCR0 bits: the XSAVE state components (SDM vol. 1, 13.1). */
#define XCR0_X87       (1ull << 0)
#define XCR0_SSE       (1ull << 1)
#define XCR0_AVX       (1ull << 2)
#define XCR0_BNDREGS   (1ull << 3)
#define XCR0_BNDCSR    (1ull << 4)
#define XCR0_OPMASK    (1ull << 5)
#define XCR0_ZMM_HI256 (1ull << 6)
#define XCR0_HI16_ZMM  (1ull << 7)
#define XCR0_TILECFG   (1ull << 17)
#define XCR0_TILEDATA  (1ull << 18)
#define XCR0_MPX       (XCR0_BNDREGS | XCR0_BNDCSR)
#define XCR0_AVX512    (XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM)
#define XCR0_AMX       (XCR0_TILECFG | XCR0_TILEDATA)

/* The XCR0 bits this CPU supports (CPUID.(0DH,0):EDX:EAX), or 0 when it has
 * no XSAVE. Set by xstate_init. */
extern uint64_t xstate_xcr0_supported;

/* At boot: turns on CR4.OSFXSR and, where the CPU has XSAVE, CR4.OSXSAVE
 * (so that lightpath can load the init state and XCR0), and prepares the
 * init image. Returns negative after one line when out of memory. */
int xstate_init(void);

/* Puts every state component the CPU supports in its init configuration
 * (x87 as FNINIT leaves it with ST0-7 zero, MXCSR 0x1f80, every XMM, YMM,
 * ZMM, opmask, PKRU... zero) and XCR0 in its reset value, 1. */
void xstate_reset(void);

static inline uint64_t xgetbv(uint32_t xcr)
{
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(xcr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void xsetbv(uint32_t xcr, uint64_t v)
{
	asm volatile("xsetbv" ::"c"(xcr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

/* Whether XSETBV accepts `xcr0` for XCR0 on a CPU that offers the
 * components `offered` (SDM vol. 1 13.3 and XSETBV; AMD APM vol. 3
 * XSETBV): no bit beyond them, x87 always on, AVX only with SSE, the
 * AVX-512 components all or none and only with AVX, MPX and AMX each as a
 * pair. */
static inline bool xcr0_valid(uint64_t xcr0, uint64_t offered)
{
	if ((xcr0 & ~offered) || !(xcr0 & XCR0_X87))
		return false;
	if ((xcr0 & XCR0_AVX) && !(xcr0 & XCR0_SSE))
		return false;
	if ((xcr0 & XCR0_AVX512) && ((xcr0 & XCR0_AVX512) != XCR0_AVX512 || !(xcr0 & XCR0_AVX)))
		return false;
	if ((xcr0 & XCR0_MPX) && (xcr0 & XCR0_MPX) != XCR0_MPX)
		return false;
	if ((xcr0 & XCR0_AMX) && (xcr0 & XCR0_AMX) != XCR0_AMX)
		return false;
	return true;
}

#endif
