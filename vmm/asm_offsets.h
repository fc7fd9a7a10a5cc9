/* What the exit stubs need from the C layout, generated (never typed by
 * hand): each backend's asm-offsets.c emits these plus its own, and the
 * build turns the "@@OFFSET" lines of its assembly into asm-offsets.h. */
#ifndef VMM_ASM_OFFSETS_H
#define VMM_ASM_OFFSETS_H

#include <stddef.h>

#include "vmm/spec_ctrl.h"
#include "vmm/vm.h"

#define OFFSET(name, type, member) \
	asm volatile("\n@@OFFSET " #name " %0" ::"i"(offsetof(type, member)))
#define CONST(name, value) asm volatile("\n@@OFFSET " #name " %0" ::"i"(value))

/* The guest GPRs in struct vcpu, the light table and its last slot. */
#define VCPU_COMMON_OFFSETS()                                   \
	do {                                                    \
		OFFSET(VCPU_RAX, struct vcpu, regs.rax);        \
		OFFSET(VCPU_RBX, struct vcpu, regs.rbx);        \
		OFFSET(VCPU_RCX, struct vcpu, regs.rcx);        \
		OFFSET(VCPU_RDX, struct vcpu, regs.rdx);        \
		OFFSET(VCPU_RSI, struct vcpu, regs.rsi);        \
		OFFSET(VCPU_RDI, struct vcpu, regs.rdi);        \
		OFFSET(VCPU_RBP, struct vcpu, regs.rbp);        \
		OFFSET(VCPU_R8, struct vcpu, regs.r8);          \
		OFFSET(VCPU_R9, struct vcpu, regs.r9);          \
		OFFSET(VCPU_R10, struct vcpu, regs.r10);        \
		OFFSET(VCPU_R11, struct vcpu, regs.r11);        \
		OFFSET(VCPU_R12, struct vcpu, regs.r12);        \
		OFFSET(VCPU_R13, struct vcpu, regs.r13);        \
		OFFSET(VCPU_R14, struct vcpu, regs.r14);        \
		OFFSET(VCPU_R15, struct vcpu, regs.r15);        \
		OFFSET(VCPU_LIGHT_TABLE, struct vcpu, light_table); \
		OFFSET(VCPU_HEAVY_ACTION, struct vcpu, heavy_action); \
		OFFSET(VCPU_SPEC_CTRL, struct vcpu, spec_ctrl);   \
		CONST(MSR_SPEC_CTRL, MSR_IA32_SPEC_CTRL);       \
		CONST(LIGHT_TABLE_LAST, VENDOR_EXIT_CODES - 1); \
		CONST(HEAVY_ACTION_EXIT, HEAVY_EXIT);           \
	} while (0)

#endif
