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

struct vcpu_arch {
	struct vmcb vmcb;
	bool vmstate_in_cpu;   /* the guest's VMLOAD state is in the CPU (between
				  VMLOAD and VMSAVE): its syscall MSRs are there */
	bool host_cr_guard;    /* every exit goes through svm_light_host_cr_guard
				  first (the guest may have EFER.LME=1, CR0.PG=0) */
	unsigned guard_sw;     /* the switch set the guard hands exits on to */
};

#endif
