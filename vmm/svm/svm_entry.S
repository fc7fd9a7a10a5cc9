/* The SVM light loop: VMRUN, save the guest GPRs a C function may clobber
 * (the caller-saved ones) plus rbx (a CPUID/hypercall operand), call the
 * handler for this exit code, and VMRUN again while it returns the VMCB
 * address. rbp and r12-r15 are preserved by C, so they stay in the CPU and
 * are stored only when the loop is left for the heavy path. RAX and RSP live
 * in the VMCB. */
#include "asm-offsets.h"   /* generated: build/gen/svm/ */

	.text
	.globl svm_light_loop
	/* void svm_light_loop(struct vcpu *v) -- v is also the VMCB address */
svm_light_loop:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rdi
	mov %rdi, %rax
	mov VCPU_RBP(%rax), %rbp
	mov VCPU_R12(%rax), %r12
	mov VCPU_R13(%rax), %r13
	mov VCPU_R14(%rax), %r14
	mov VCPU_R15(%rax), %r15
.Lresume:
	mov VCPU_RBX(%rax), %rbx
	mov VCPU_RCX(%rax), %rcx
	mov VCPU_RDX(%rax), %rdx
	mov VCPU_RSI(%rax), %rsi
	mov VCPU_RDI(%rax), %rdi
	mov VCPU_R8(%rax), %r8
	mov VCPU_R9(%rax), %r9
	mov VCPU_R10(%rax), %r10
	mov VCPU_R11(%rax), %r11
	vmrun
	/* #VMEXIT restored the host RAX: the VMCB (= vcpu) address */
	mov %rbx, VCPU_RBX(%rax)
	mov %rcx, VCPU_RCX(%rax)
	mov %rdx, VCPU_RDX(%rax)
	mov %rsi, VCPU_RSI(%rax)
	mov %rdi, VCPU_RDI(%rax)
	mov %r8, VCPU_R8(%rax)
	mov %r9, VCPU_R9(%rax)
	mov %r10, VCPU_R10(%rax)
	mov %r11, VCPU_R11(%rax)
	mov %rax, %rdi
	/* one table lookup on the exit code: no C dispatcher on the light path */
	mov VMCB_EXITCODE(%rax), %rcx
	cmp $LIGHT_TABLE_LAST, %rcx
	jbe 1f
	mov $LIGHT_TABLE_LAST, %ecx
1:	call *VCPU_LIGHT_TABLE(%rax,%rcx,8)
	test %rax, %rax
	jnz .Lresume
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
