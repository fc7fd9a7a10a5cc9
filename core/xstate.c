#include "core/xstate.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/pmem.h"

#define CPUID1_ECX_XSAVE   (1u << 26)
#define XSAVE_LEGACY_FCW   0
#define XSAVE_LEGACY_MXCSR 24
#define FCW_INIT   0x037fu   /* FNINIT's control word: every exception masked */
#define MXCSR_INIT 0x1f80u   /* every SIMD exception masked, round to nearest */

uint64_t xstate_xcr0_supported;

/* An XSAVE area in standard form whose XSTATE_BV is 0: XRSTOR puts every
 * requested component in its init configuration and takes only MXCSR from
 * the legacy area. Without XSAVE, FXRSTOR takes the legacy area as it is:
 * FCW 0x37f, every tag empty, MXCSR 0x1f80, the rest 0. */
static uint8_t *init_image;

int xstate_init(void)
{
	uint32_t r[4];
	uint64_t size = 512;              /* FXSAVE's area */
	cpuid(1, 0, r);
	uint64_t cr4 = read_cr4() | CR4_OSFXSR;
	if (r[2] & CPUID1_ECX_XSAVE) {
		cr4 |= CR4_OSXSAVE;
		cpuid(0xd, 0, r);
		xstate_xcr0_supported = ((uint64_t)r[3] << 32) | r[0];
		size = r[2];                      /* every supported component */
	}
	asm volatile("mov %0, %%cr4" ::"r"(cr4));
	init_image = (uint8_t *)(uintptr_t)pmem_alloc(size, 4096);   /* zeroed */
	if (!init_image) {
		kprintf("lightpath: error: out of memory for the XSAVE init image\n");
		return -1;
	}
	*(uint16_t *)(init_image + XSAVE_LEGACY_FCW) = FCW_INIT;
	*(uint32_t *)(init_image + XSAVE_LEGACY_MXCSR) = MXCSR_INIT;
	return 0;
}

void xstate_reset(void)
{
	if (!xstate_xcr0_supported) {
		/* long mode implies FXSR and SSE2 */
		asm volatile("fxrstor %0" ::"m"(*(const uint8_t(*)[512])init_image));
		return;
	}
	/* XRSTOR initializes only components enabled in XCR0 */
	xsetbv(0, xstate_xcr0_supported);
	asm volatile("xrstor %0" ::"m"(*(const uint8_t(*)[576])init_image), "a"(~0u), "d"(~0u)
		     : "memory");
	xsetbv(0, XCR0_X87);
}
