/* The VMX light loop: load the guest GPRs, VMRESUME; on a VM exit the CPU
 * comes to vmx_exit_stub (HOST_RIP) with RSP = HOST_RSP, where the vcpu
 * pointer sits. Save the GPRs a C function may clobber (plus rax and rbx,
 * hypercall/CPUID operands), call the handler for the exit reason, and
 * VMRESUME again while it returns the vcpu. rbp and r12-r15 are preserved
 * by C, so they stay in the CPU and are stored only on the way to the heavy
 * path. RSP and RIP live in the VMCS. */
#include "asm-offsets.h"   /* generated: build/gen/vmx/ */

/* Guest GPRs from the vcpu at %rax into the CPU, rax last. */
.macro LOAD_GUEST
	mov VCPU_RBX(%rax), %rbx
	mov VCPU_RCX(%rax), %rcx
	mov VCPU_RDX(%rax), %rdx
	mov VCPU_RSI(%rax), %rsi
	mov VCPU_RDI(%rax), %rdi
	mov VCPU_R8(%rax), %r8
	mov VCPU_R9(%rax), %r9
	mov VCPU_R10(%rax), %r10
	mov VCPU_R11(%rax), %r11
	mov VCPU_RAX(%rax), %rax
.endm

	.text
	.globl vmx_light_loop
	/* void vmx_light_loop(struct vcpu *v): the VMCS of v is current */
vmx_light_loop:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rdi                        /* (HOST_RSP) = vcpu */
	mov $VMCS_FIELD_HOST_RSP, %eax
	vmwrite %rsp, %rax
	mov %rdi, %rax
	mov VCPU_RBP(%rax), %rbp
	mov VCPU_R12(%rax), %r12
	mov VCPU_R13(%rax), %r13
	mov VCPU_R14(%rax), %r14
	mov VCPU_R15(%rax), %r15
	cmpb $0, VCPU_LAUNCHED(%rax)
	je .Llaunch
.Lresume:
	LOAD_GUEST
	vmresume
	jmp .Lfailed
.Llaunch:
	movb $1, VCPU_LAUNCHED(%rax)
	LOAD_GUEST
	vmlaunch
.Lfailed:
	/* VMfailValid/VMfailInvalid: C reads the VM-instruction error */
	mov (%rsp), %rax
	movb $1, VCPU_ENTRY_FAILED(%rax)
	movb $0, VCPU_LAUNCHED(%rax)
	jmp .Lheavy

	.globl vmx_exit_stub
vmx_exit_stub:
	push %rdi
	mov 8(%rsp), %rdi                /* the vcpu */
	mov %rax, VCPU_RAX(%rdi)
	mov %rbx, VCPU_RBX(%rdi)
	mov %rcx, VCPU_RCX(%rdi)
	mov %rdx, VCPU_RDX(%rdi)
	mov %rsi, VCPU_RSI(%rdi)
	mov %r8, VCPU_R8(%rdi)
	mov %r9, VCPU_R9(%rdi)
	mov %r10, VCPU_R10(%rdi)
	mov %r11, VCPU_R11(%rdi)
	popq VCPU_RDI(%rdi)
	/* one table lookup on the basic exit reason; entry failures (bit 31)
	 * have basic reasons the table sends to the heavy path */
	mov $VMCS_FIELD_EXIT_REASON, %ecx
	vmread %rcx, %rcx
	movzwl %cx, %ecx
	cmp $LIGHT_TABLE_LAST, %ecx
	jbe 1f
	mov $LIGHT_TABLE_LAST, %ecx
1:	call *VCPU_LIGHT_TABLE(%rdi,%rcx,8)
	test %rax, %rax
	jnz .Lresume
.Lheavy:
	/* heavy path: hand the rest of the guest GPRs to C */
	mov (%rsp), %rax
	mov %rbp, VCPU_RBP(%rax)
	mov %r12, VCPU_R12(%rax)
	mov %r13, VCPU_R13(%rax)
	mov %r14, VCPU_R14(%rax)
	mov %r15, VCPU_R15(%rax)
	pop %rdi
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret
	.section .note.GNU-stack, "", @progbits
