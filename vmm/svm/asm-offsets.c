/* Offsets the exit stub uses, generated from the C layout (never typed by
 * hand). The build turns the "@@OFFSET" lines of this file's assembly into
 * build/gen/asm-offsets.h. */
#include <stddef.h>

#include "vmm/vm.h"

#define OFFSET(name, type, member) \
	asm volatile("\n@@OFFSET " #name " %0" ::"i"(offsetof(type, member)))

void asm_offsets(void);

void asm_offsets(void)
{
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
	OFFSET(VMCB_EXITCODE, struct vcpu, arch.vmcb.exitcode);
	asm volatile("\n@@OFFSET LIGHT_TABLE_LAST %0" ::"i"(LIGHT_TABLE_SIZE - 1));
}

/* The stub passes the VMCB address to VMRUN and the C handler as the vcpu:
 * that only works while the VMCB is the first thing in struct vcpu. */
_Static_assert(offsetof(struct vcpu, arch.vmcb) == 0, "VMCB first in struct vcpu");
