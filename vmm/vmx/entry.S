/* The VMX light loop: load the guest GPRs, VMRESUME; on a VM exit the CPU
 * comes to the exit stub (HOST_RIP) with RSP = HOST_RSP, where the vcpu
 * pointer sits. Store the GPRs a C function may clobber (plus rax, a
 * hypercall/CPUID operand), call the handler for the exit reason, and
 * VMRESUME again while it returns the vcpu (vmm/light.h). RSP and RIP live
 * in the VMCS. One pair of loop and stub per spec= variant
 * (vmm/spec_ctrl.h): what spec=on adds runs right after the exit, before
 * any RET. Each pair has a twin for Bochs 2.7 (vmm/vmx/bochs.c): the host's
 * CR8 raised before every entry and lowered right after every exit, so
 * that a CPU without the defect runs none of it (the backend picks the
 * variant once, at VMCS set-up: HOST_RIP). */
#include "asm-offsets.h"   /* generated: build/gen/vmx/ */
#include "vmm/entry_macros.h"

/* Guest GPRs from the vcpu at %rax into the CPU, rax last. */
.macro LOAD_GUEST
	LOAD_GUEST_SCRATCH %rax
	mov VCPU_RAX(%rax), %rax
.endm

/* Bochs twins only: before an entry, the host timer's interrupt held off
 * and the VMX-preemption timer at its deadline (vmx_bochs_guest_entry, C:
 * it clobbers what C may; the vcpu is at (%rsp), as at the exit stub's
 * call, so the stack is aligned alike); the spec_ctrl load comes after it,
 * right before the entry. */
.macro BOCHS_GUEST_ENTRY bochs
	.if \bochs
	call vmx_bochs_guest_entry
	mov (%rsp), %rax
	.endif
.endm

/* Bochs twins only: the host's CR8 back to 0 (a guest's GPRs are saved or
 * still in the vcpu: rcx is free). */
.macro BOCHS_HOST_CR8 bochs
	.if \bochs
	xor %ecx, %ecx
	mov %rcx, %cr8
	.endif
.endm

/* void LOOP(struct vcpu *v): the VMCS of v is current, HOST_RIP is STUB. */
.macro VMX_LIGHT_LOOP loop, stub, rsb, spec_ctrl, bochs
	.globl \loop
\loop:
	LIGHT_LOOP_BEGIN %rdi            /* (HOST_RSP) = vcpu */
	mov $VMCS_FIELD_HOST_RSP, %eax
	vmwrite %rsp, %rax
	mov %rdi, %rax
	cmpb $0, VCPU_LAUNCHED(%rax)
	je .L\loop\()_launch
.L\loop\()_resume:
	BOCHS_GUEST_ENTRY \bochs
	.if \spec_ctrl
	mov %rax, %rdi
	SPEC_CTRL_LOAD %rdi, VCPU_SPEC_CTRL(%rdi)
	mov %rdi, %rax
	.endif
	LOAD_GUEST
	vmresume
	jmp .L\loop\()_failed
.L\loop\()_launch:
	movb $1, VCPU_LAUNCHED(%rax)
	BOCHS_GUEST_ENTRY \bochs
	.if \spec_ctrl
	mov %rax, %rdi
	SPEC_CTRL_LOAD %rdi, VCPU_SPEC_CTRL(%rdi)
	mov %rdi, %rax
	.endif
	LOAD_GUEST
	vmlaunch
.L\loop\()_failed:
	/* VMfailValid/VMfailInvalid: C reads the VM-instruction error */
	BOCHS_HOST_CR8 \bochs
	mov (%rsp), %rax
	movb $1, VCPU_ENTRY_FAILED(%rax)
	movb $0, VCPU_LAUNCHED(%rax)
	movl $HEAVY_ACTION_EXIT, VCPU_HEAVY_ACTION(%rax)
	.if \spec_ctrl
	mov %rax, %rdi
	SPEC_CTRL_LOAD %rdi, host_spec_ctrl(%rip)
	.endif
	jmp .L\loop\()_heavy

	.globl \stub
\stub:
	push %rdi
	mov 8(%rsp), %rdi                /* the vcpu */
	mov %rax, VCPU_RAX(%rdi)
	STORE_GUEST_SCRATCH %rdi
	popq VCPU_RDI(%rdi)
	RSB_OVERWRITE \rsb
	.if \spec_ctrl
	SPEC_CTRL_LOAD %rdi, host_spec_ctrl(%rip)
	.endif
	BOCHS_HOST_CR8 \bochs
	/* one table lookup on the basic exit reason; entry failures (bit 31)
	 * have basic reasons the table sends to the heavy path */
	mov $VMCS_FIELD_EXIT_REASON, %ecx
	vmread %rcx, %rcx
	movzwl %cx, %ecx
	LIGHT_TABLE_CALL %ecx, .L\loop\()_resume
.L\loop\()_heavy:
	LIGHT_LOOP_END
.endm

	.text
	/* the order is vmm/spec_ctrl.h's: rsb * 2 + spec_ctrl; then the same six
	 * as Bochs twins (VMX_ENTRY_VARIANTS, vmm/vmx/vmx.h) */
	VMX_LIGHT_LOOP vmx_light_loop, vmx_exit_stub, 0, 0, 0
	VMX_LIGHT_LOOP vmx_light_loop_spec_ctrl, vmx_exit_stub_spec_ctrl, 0, 1, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite, vmx_exit_stub_rsb_lite, 1, 0, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite_spec_ctrl, vmx_exit_stub_rsb_lite_spec_ctrl, 1, 1, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full, vmx_exit_stub_rsb_full, 2, 0, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full_spec_ctrl, vmx_exit_stub_rsb_full_spec_ctrl, 2, 1, 0
	VMX_LIGHT_LOOP vmx_light_loop_bochs, vmx_exit_stub_bochs, 0, 0, 1
	VMX_LIGHT_LOOP vmx_light_loop_spec_ctrl_bochs, vmx_exit_stub_spec_ctrl_bochs, 0, 1, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite_bochs, vmx_exit_stub_rsb_lite_bochs, 1, 0, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite_spec_ctrl_bochs, vmx_exit_stub_rsb_lite_spec_ctrl_bochs, 1, 1, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full_bochs, vmx_exit_stub_rsb_full_bochs, 2, 0, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full_spec_ctrl_bochs, vmx_exit_stub_rsb_full_spec_ctrl_bochs, 2, 1, 1
	.section .note.GNU-stack, "", @progbits
