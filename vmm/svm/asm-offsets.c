/* Offsets the SVM exit stub uses, generated from the C layout. */
#include "core/cpu.h"
#include "vmm/asm_offsets.h"

void asm_offsets(void);

void asm_offsets(void)
{
	VCPU_COMMON_OFFSETS();
	OFFSET(VMCB_EXITCODE, struct vcpu, arch.vmcb.exitcode);
	OFFSET(VMCB_EVENTINJ, struct vcpu, arch.vmcb.eventinj);
	OFFSET(VMCB_INT_CTL, struct vcpu, arch.vmcb.int_ctl);
	OFFSET(VMCB_INTERCEPT_MISC1, struct vcpu, arch.vmcb.intercept_misc1);
	OFFSET(VMCB_DR7, struct vcpu, arch.vmcb.dr7);
	OFFSET(VCPU_DR7_ARM_MASK, struct vcpu, arch.dr7_arm_mask);
	OFFSET(VCPU_DR7_INJECT_MASK, struct vcpu, arch.dr7_inject_mask);
	CONST(SVM_EVTINJ_VALID_BIT, SVM_EVTINJ_VALID);
	CONST(SVM_INT_CTL_V_IRQ_BIT, SVM_INT_CTL_V_IRQ);
	CONST(SVM_INTERCEPT_VINTR_BIT, SVM_INTERCEPT_VINTR);
	CONST(DR7_AT_REST, DR7_INIT);
	CONST(DR7_DATA_TYPES, DR7_PURGE_DATA);
}

/* The stub passes the VMCB address to VMRUN and the C handler as the vcpu:
 * that only works while the VMCB is the first thing in struct vcpu. */
_Static_assert(offsetof(struct vcpu, arch.vmcb) == 0, "VMCB first in struct vcpu");
