/* The SVM light loop: VMRUN, store the guest GPRs a C function may clobber
 * (the caller-saved ones) plus rbx (a CPUID/hypercall operand), call the
 * handler for this exit code, and VMRUN again while it returns the vcpu
 * (vmm/light.h). RAX and RSP live in the VMCB. One copy per spec= variant
 * (vmm/spec_ctrl.h): what spec=on adds runs right after VMRUN, before any
 * RET. */
#include "asm-offsets.h"   /* generated: build/gen/svm/ */
#include "vmm/entry_macros.h"

/* void NAME(struct vcpu *v) -- v is also the VMCB address */
.macro SVM_LIGHT_LOOP name, rsb, spec_ctrl
	.globl \name
\name:
	LIGHT_LOOP_BEGIN %rdi
	mov %rdi, %rax
.L\name\()_resume:
	.if \spec_ctrl
	mov %rax, %rdi
	SPEC_CTRL_LOAD %rdi, VCPU_SPEC_CTRL(%rdi)
	mov %rdi, %rax
	.endif
	LOAD_GUEST_SCRATCH %rax
\name\()_vmrun:   /* where QEMU's VMEXIT_INVALID may leave the VMCB's RIP */
	vmrun
	/* #VMEXIT restored the host RAX: the VMCB (= vcpu) address */
	STORE_GUEST_SCRATCH %rax
	mov %rdi, VCPU_RDI(%rax)
	mov %rax, %rdi
	RSB_OVERWRITE \rsb
	.if \spec_ctrl
	SPEC_CTRL_LOAD %rdi, host_spec_ctrl(%rip)
	.endif
	/* one table lookup on the exit code: no C dispatcher on the light path */
	mov VMCB_EXITCODE(%rdi), %rcx
	cmp $LIGHT_TABLE_LAST, %rcx
	jbe 1f
	mov $LIGHT_TABLE_LAST, %ecx
1:	call *VCPU_LIGHT_TABLE(%rdi,%rcx,8)
	test %rax, %rax
	jnz .L\name\()_resume
	LIGHT_LOOP_END
.endm

	.text
	/* the order is vmm/spec_ctrl.h's: rsb * 2 + spec_ctrl */
	SVM_LIGHT_LOOP svm_light_loop, 0, 0
	SVM_LIGHT_LOOP svm_light_loop_spec_ctrl, 0, 1
	SVM_LIGHT_LOOP svm_light_loop_rsb_lite, 1, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_lite_spec_ctrl, 1, 1
	SVM_LIGHT_LOOP svm_light_loop_rsb_full, 2, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_full_spec_ctrl, 2, 1

	.section .rodata
	.balign 8
	.globl svm_vmrun_sites   /* every VMRUN above, for svm_heavy_invalid_state */
svm_vmrun_sites:
	.quad svm_light_loop_vmrun, svm_light_loop_spec_ctrl_vmrun
	.quad svm_light_loop_rsb_lite_vmrun, svm_light_loop_rsb_lite_spec_ctrl_vmrun
	.quad svm_light_loop_rsb_full_vmrun, svm_light_loop_rsb_full_spec_ctrl_vmrun
	.section .note.GNU-stack, "", @progbits
