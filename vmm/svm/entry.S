/* The SVM light loop: VMRUN, store the guest GPRs a C function may clobber
 * (the caller-saved ones) plus rbx (a CPUID/hypercall operand), call the
 * handler for this exit code, and VMRUN again while it returns the vcpu
 * (vmm/light.h). RAX and RSP live in the VMCB. */
#include "asm-offsets.h"   /* generated: build/gen/svm/ */
#include "vmm/entry_macros.h"

	.text
	.globl svm_light_loop
	/* void svm_light_loop(struct vcpu *v) -- v is also the VMCB address */
svm_light_loop:
	LIGHT_LOOP_BEGIN %rdi
	mov %rdi, %rax
.Lresume:
	LOAD_GUEST_SCRATCH %rax
	.globl svm_vmrun_insn   /* where QEMU's VMEXIT_INVALID leaves the VMCB's RIP */
svm_vmrun_insn:
	vmrun
	/* #VMEXIT restored the host RAX: the VMCB (= vcpu) address */
	STORE_GUEST_SCRATCH %rax
	mov %rdi, VCPU_RDI(%rax)
	mov %rax, %rdi
	/* one table lookup on the exit code: no C dispatcher on the light path */
	mov VMCB_EXITCODE(%rax), %rcx
	cmp $LIGHT_TABLE_LAST, %rcx
	jbe 1f
	mov $LIGHT_TABLE_LAST, %ecx
1:	call *VCPU_LIGHT_TABLE(%rax,%rcx,8)
	test %rax, %rax
	jnz .Lresume
	LIGHT_LOOP_END
	.section .note.GNU-stack, "", @progbits
