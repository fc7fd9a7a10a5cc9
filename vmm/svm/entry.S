/* The SVM light loop: VMRUN, store the guest GPRs a C function may clobber
 * (rcx-r9; rbx, r10 and r11 no hypervisor C code uses), call the
 * handler for this exit code, and VMRUN again while it returns the vcpu
 * (vmm/light.h). RAX and RSP live in the VMCB.
 *
 * One body, made once per spec= variant (vmm/spec_ctrl.h: what spec=on adds
 * runs right after VMRUN, before any RET) and per breakpoint state, so that
 * the copies never drift apart. armed=1 is for a guest with breakpoints
 * enabled (vmm/svm/debug.h): QEMU 7.2 arms DR0-3 only when DR7 is written,
 * never at VMRUN, and keeps them armed after #VMEXIT, so the armed loop
 * writes them to DR7 right before VMRUN (on hardware VMRUN loads the VMCB's
 * DR7 anyway) and removes them right after #VMEXIT, before anything else.
 * Breakpoints on the armed loops or on the rcx slot they touch while armed
 * are left out of the mask (a #DB there could loop), and so are data
 * breakpoints when VMRUN delivers an event, or the guest a virtual
 * interrupt lightpath injected (QEMU loses an event whose delivery hits
 * one). */
#include "asm-offsets.h"   /* generated: build/gen/svm/ */
#include "vmm/entry_macros.h"

/* void NAME(struct vcpu *v) -- v is also the VMCB address */
.macro SVM_LIGHT_LOOP name, rsb, spec_ctrl, armed
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
	.if \armed
	mov VMCB_DR7(%rax), %rcx
	and VCPU_DR7_ARM_MASK(%rax), %rcx
	testl $SVM_EVTINJ_VALID_BIT, VMCB_EVENTINJ(%rax)
	jnz 3f
	/* or a virtual interrupt in flight (V_IRQ, no VINTR intercept: QEMU's TCG) */
	testl $SVM_INT_CTL_V_IRQ_BIT, VMCB_INT_CTL(%rax)
	jz 2f
	testl $SVM_INTERCEPT_VINTR_BIT, VMCB_INTERCEPT_MISC1(%rax)
	jnz 2f
3:	and VCPU_DR7_INJECT_MASK(%rax), %rcx
2:	mov %rcx, %dr7
	mov VCPU_RCX(%rax), %rcx
	.endif
\name\()_vmrun:   /* where QEMU's VMEXIT_INVALID may leave the VMCB's RIP */
	vmrun
	/* #VMEXIT restored the host RAX: the VMCB (= vcpu) address */
	.if \armed
	/* disarm: DR7 typed "data" with nothing enabled, then at rest, which
	 * makes QEMU drop every breakpoint it holds, whatever its type */
	mov %rcx, VCPU_RCX(%rax)
	mov $DR7_DATA_TYPES, %ecx
	mov %rcx, %dr7
	mov $DR7_AT_REST, %ecx
	mov %rcx, %dr7
	mov VCPU_RCX(%rax), %rcx
	.endif
	STORE_GUEST_SCRATCH %rax
	mov %rdi, VCPU_RDI(%rax)
	mov %rax, %rdi
	RSB_OVERWRITE \rsb
	.if \spec_ctrl
	SPEC_CTRL_LOAD %rdi, host_spec_ctrl(%rip)
	.endif
	mov VMCB_EXITCODE(%rdi), %rcx
	LIGHT_TABLE_CALL %rcx, .L\name\()_resume
	LIGHT_LOOP_END
.endm

	.text
	/* the order is vmm/spec_ctrl.h's: rsb * 2 + spec_ctrl */
	SVM_LIGHT_LOOP svm_light_loop, 0, 0, 0
	SVM_LIGHT_LOOP svm_light_loop_spec_ctrl, 0, 1, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_lite, 1, 0, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_lite_spec_ctrl, 1, 1, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_full, 2, 0, 0
	SVM_LIGHT_LOOP svm_light_loop_rsb_full_spec_ctrl, 2, 1, 0

	/* the armed loops, together from svm_light_loops_armed to
	 * svm_light_loops_armed_end (debug.c keeps breakpoints off them) */
	.globl svm_light_loops_armed, svm_light_loops_armed_end
svm_light_loops_armed:
	SVM_LIGHT_LOOP svm_light_loop_armed, 0, 0, 1
	SVM_LIGHT_LOOP svm_light_loop_armed_spec_ctrl, 0, 1, 1
	SVM_LIGHT_LOOP svm_light_loop_armed_rsb_lite, 1, 0, 1
	SVM_LIGHT_LOOP svm_light_loop_armed_rsb_lite_spec_ctrl, 1, 1, 1
	SVM_LIGHT_LOOP svm_light_loop_armed_rsb_full, 2, 0, 1
	SVM_LIGHT_LOOP svm_light_loop_armed_rsb_full_spec_ctrl, 2, 1, 1
svm_light_loops_armed_end:

	.section .rodata
	.balign 8
	/* [armed][variant], for vendor_enter_guest */
	.globl svm_light_loops
svm_light_loops:
	.quad svm_light_loop, svm_light_loop_spec_ctrl
	.quad svm_light_loop_rsb_lite, svm_light_loop_rsb_lite_spec_ctrl
	.quad svm_light_loop_rsb_full, svm_light_loop_rsb_full_spec_ctrl
	.quad svm_light_loop_armed, svm_light_loop_armed_spec_ctrl
	.quad svm_light_loop_armed_rsb_lite, svm_light_loop_armed_rsb_lite_spec_ctrl
	.quad svm_light_loop_armed_rsb_full, svm_light_loop_armed_rsb_full_spec_ctrl
	/* every VMRUN above, for svm_heavy_invalid_state, in the same order */
	.globl svm_vmrun_sites
svm_vmrun_sites:
	.quad svm_light_loop_vmrun, svm_light_loop_spec_ctrl_vmrun
	.quad svm_light_loop_rsb_lite_vmrun, svm_light_loop_rsb_lite_spec_ctrl_vmrun
	.quad svm_light_loop_rsb_full_vmrun, svm_light_loop_rsb_full_spec_ctrl_vmrun
	.quad svm_light_loop_armed_vmrun, svm_light_loop_armed_spec_ctrl_vmrun
	.quad svm_light_loop_armed_rsb_lite_vmrun, svm_light_loop_armed_rsb_lite_spec_ctrl_vmrun
	.quad svm_light_loop_armed_rsb_full_vmrun, svm_light_loop_armed_rsb_full_spec_ctrl_vmrun
	.section .note.GNU-stack, "", @progbits
