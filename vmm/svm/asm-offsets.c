/* Offsets the SVM exit stub uses, generated from the C layout. */
#include "vmm/asm_offsets.h"

void asm_offsets(void);

void asm_offsets(void)
{
	VCPU_COMMON_OFFSETS();
	OFFSET(VMCB_EXITCODE, struct vcpu, arch.vmcb.exitcode);
}

/* The stub passes the VMCB address to VMRUN and the C handler as the vcpu:
 * that only works while the VMCB is the first thing in struct vcpu. */
_Static_assert(offsetof(struct vcpu, arch.vmcb) == 0, "VMCB first in struct vcpu");
