/* Offsets the VMX exit stub uses, generated from the C layout (never typed
 * by hand); the build turns the "@@OFFSET" lines into build/gen/vmx/asm-offsets.h. */
#include <stddef.h>

#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"

#define OFFSET(name, type, member) \
	asm volatile("\n@@OFFSET " #name " %0" ::"i"(offsetof(type, member)))
#define CONST(name, value) asm volatile("\n@@OFFSET " #name " %0" ::"i"(value))

void asm_offsets(void);

void asm_offsets(void)
{
	OFFSET(VCPU_RAX, struct vcpu, regs.rax);
	OFFSET(VCPU_RBX, struct vcpu, regs.rbx);
	OFFSET(VCPU_RCX, struct vcpu, regs.rcx);
	OFFSET(VCPU_RDX, struct vcpu, regs.rdx);
	OFFSET(VCPU_RSI, struct vcpu, regs.rsi);
	OFFSET(VCPU_RDI, struct vcpu, regs.rdi);
	OFFSET(VCPU_RBP, struct vcpu, regs.rbp);
	OFFSET(VCPU_R8, struct vcpu, regs.r8);
	OFFSET(VCPU_R9, struct vcpu, regs.r9);
	OFFSET(VCPU_R10, struct vcpu, regs.r10);
	OFFSET(VCPU_R11, struct vcpu, regs.r11);
	OFFSET(VCPU_R12, struct vcpu, regs.r12);
	OFFSET(VCPU_R13, struct vcpu, regs.r13);
	OFFSET(VCPU_R14, struct vcpu, regs.r14);
	OFFSET(VCPU_R15, struct vcpu, regs.r15);
	OFFSET(VCPU_LIGHT_TABLE, struct vcpu, light_table);
	OFFSET(VCPU_LAUNCHED, struct vcpu, arch.launched);
	OFFSET(VCPU_ENTRY_FAILED, struct vcpu, arch.entry_failed);
	CONST(LIGHT_TABLE_LAST, LIGHT_TABLE_SIZE - 1);
	CONST(VMCS_FIELD_HOST_RSP, VMCS_HOST_RSP);
	CONST(VMCS_FIELD_EXIT_REASON, VMCS_EXIT_REASON);
}

_Static_assert(offsetof(struct vcpu, arch.vmcs) == 0, "VMCS region first in struct vcpu");
