/* The SVM part of a vCPU: its VMCB, first in struct vcpu so that the VMCB's
 * physical address (identity mapped) is also the vcpu pointer. */
#ifndef VMM_SVM_ARCH_VCPU_H
#define VMM_SVM_ARCH_VCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/svm/vmcb.h"

/* Exit codes the light table covers directly: up to the nested page fault
 * (0x400) and the AVIC/VMGEXIT codes after it; others (VMEXIT_INVALID)
 * share its last slot. */
#define VENDOR_EXIT_CODES 0x404

struct vcpu;

struct vcpu_arch {
	struct vmcb vmcb;
	/* the VMSAVE area of the CPU this vCPU is pinned to (its
	 * struct percpu's virt_pa[1]), kept here so that the exit path finds
	 * it as cheaply as a global */
	uint64_t host_vmstate_pa;
	bool vmstate_in_cpu;   /* the guest's VMLOAD state is in the CPU (between
				  VMLOAD and VMSAVE): its syscall MSRs are there */
	/* NMI blocking, kept by lightpath where the CPU has no vNMI: from an
	 * injected NMI until its handler's IRET completes */
	bool nmi_blocked;
	bool nmi_iret_seen;    /* the IRET intercept fired at nmi_iret_rip; the
				  IRET has completed once the guest is elsewhere */
	bool nmi_stepping;     /* single-stepping (RFLAGS.TF, #DB intercepted) to
				  the next instruction boundary where an NMI fits */
	bool nmi_step_iret;    /* that step is over the IRET */
	bool nmi_step_tf;      /* the guest's own RFLAGS.TF when the step began */
	bool nmi_step_db_intercept; /* #DB was intercepted before the step */
	uint64_t nmi_iret_rip;
	uint64_t nmi_step_rip; /* where the step began */
	uint64_t nmi_step_dr6; /* the guest's DR6 when the step began */
	bool host_cr_guard;    /* every exit goes through svm_light_host_cr_guard
				  first (the guest may have EFER.LME=1, CR0.PG=0) */
	unsigned guard_sw;     /* the switch set the guard hands exits on to */
	/* The guest's breakpoints (vmm/svm/debug.c): whether the vCPU runs
	 * the armed light loop, which arms them before VMRUN and disarms them
	 * after #VMEXIT, when the guest has any enabled; the DR7 bits it arms,
	 * and the ones it arms when VMRUN delivers an event (no data
	 * breakpoints) */
	bool armed;
	uint64_t dr7_arm_mask, dr7_inject_mask;
};

#endif
