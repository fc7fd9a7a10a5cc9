/* The SVM part of a vCPU: its VMCB, first in struct vcpu so that the VMCB's
 * physical address (identity mapped) is also the vcpu pointer. */
#ifndef VMM_SVM_ARCH_VCPU_H
#define VMM_SVM_ARCH_VCPU_H

#include <stdbool.h>

#include "vmm/svm/vmcb.h"

/* Exit codes the light table covers directly: up to the nested page fault
 * (0x400) and the AVIC/VMGEXIT codes after it; others (VMEXIT_INVALID)
 * share its last slot. */
#define VENDOR_EXIT_CODES 0x404

struct vcpu;

struct vcpu_arch {
	struct vmcb vmcb;
	bool vmstate_in_cpu;   /* the guest's VMLOAD state is in the CPU (between
				  VMLOAD and VMSAVE): its syscall MSRs are there */
	/* The guest's breakpoints (vmm/svm/debug.c): the light loop, which
	 * arms them before VMRUN and disarms them after #VMEXIT when the guest
	 * has any enabled; the DR7 bits it arms, and the ones it arms when
	 * VMRUN delivers an event (no data breakpoints) */
	void (*light_loop)(struct vcpu *v);
	uint64_t dr7_arm_mask, dr7_inject_mask;
};

#endif
