/* Offsets the VMX exit stub uses, generated from the C layout. */
#include "vmm/asm_offsets.h"
#include "vmm/vmx/vmcs.h"

void asm_offsets(void);

void asm_offsets(void)
{
	VCPU_COMMON_OFFSETS();
	OFFSET(VCPU_LAUNCHED, struct vcpu, arch.launched);
	OFFSET(VCPU_ENTRY_FAILED, struct vcpu, arch.entry_failed);
	CONST(VMCS_FIELD_HOST_RSP, VMCS_HOST_RSP);
	CONST(VMCS_FIELD_EXIT_REASON, VMCS_EXIT_REASON);
}

_Static_assert(offsetof(struct vcpu, arch.vmcs) == 0, "VMCS region first in struct vcpu");
