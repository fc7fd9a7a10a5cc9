/* mmio_bad: one MMIO access the emulator does not support (CMPXCHG on the
 * MMIO test device). lightpath must stop this VM with one clear line
 * ("cannot emulate the MMIO access at rip ...") and keep the others running. */
#include "guests/rt/rt.h"

int guest_main(void)
{
	uint32_t eax = 0, ecx = 1;
	rt_printf("mmio_bad: about to use an unsupported MMIO instruction\n");
	asm volatile("cmpxchgl %[n], (%[p])"
		     : "+a"(eax) : [n] "r"(ecx), [p] "r"((uintptr_t)LP_MMIO_TEST_BASE)
		     : "memory", "cc");
	rt_printf("mmio_bad: still running after the unsupported instruction (eax 0x%x)\n", eax);
	return 1;
}
