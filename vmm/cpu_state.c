#include "vmm/cpu_state.h"

#include "core/cpu.h"
#include "core/timer.h"
#include "core/xstate.h"
#include "vmm/exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

#define CPUID1_ECX_XSAVE    (1u << 26)
#define CPUID7_ECX_RDPID    (1u << 22)
#define CPUID81_EDX_RDTSCP  (1u << 27)

/* TSC_AUX exists when RDTSCP or RDPID does. */
static bool cpu_has_tsc_aux(void)
{
	uint32_t r[4];
	cpuid(0x80000000u, 0, r);
	if (r[0] >= 0x80000001u) {
		cpuid(0x80000001u, 0, r);
		if (r[3] & CPUID81_EDX_RDTSCP)
			return true;
	}
	cpuid(0, 0, r);
	if (r[0] < 7)
		return false;
	cpuid(7, 0, r);
	return r[2] & CPUID7_ECX_RDPID;
}

void vcpu_cpu_state_reset(struct vcpu *v)
{
	xstate_reset();
	if (cpu_has_tsc_aux())
		wrmsr(MSR_TSC_AUX, 0);
	/* CR2: on VT-x the guest's is the CPU's own; on SVM VMRUN loads the
	 * VMCB's, except under Bochs 2.7, whose VMRUN leaves the CPU's: both */
	asm volatile("mov %0, %%cr2" ::"r"(0ull));
	vendor_set_guest_cr2(v, 0);
	/* the CPU's TPR: on VT-x without a TPR shadow, a guest that reached it
	 * (before CR8 exiting) changed the physical one; the VM's CR8 is its
	 * emulated local APIC's TPR on both backends and starts at 0 with it */
	lapic_tpr_clear();
}

uint64_t vcpu_xcr0_offered(struct vcpu *v)
{
	uint32_t r[4];
	exit_cpuid(v, 1, 0, r);
	if (!(r[2] & CPUID1_ECX_XSAVE))
		return 0;
	exit_cpuid(v, 0xd, 0, r);
	/* never more than lightpath resets between VMs */
	return (((uint64_t)r[3] << 32) | r[0]) & xstate_xcr0_supported;
}
