/* The VMX light loop: load the guest GPRs, VMRESUME; on a VM exit the CPU
 * comes to the exit stub (HOST_RIP) with RSP = HOST_RSP, where the vcpu
 * pointer sits. Store the GPRs a C function may clobber (plus rax, a
 * hypercall/CPUID operand), call the handler for the exit reason, and
 * VMRESUME again while it returns the vcpu (vmm/light.h). RSP and RIP live
 * in the VMCS. One pair of loop and stub per spec= variant
 * (vmm/spec_ctrl.h): what spec=on adds runs right after the exit, before
 * any RET. */
#include "asm-offsets.h"   /* generated: build/gen/vmx/ */
#include "vmm/entry_macros.h"

/* Guest GPRs from the vcpu at %rax into the CPU, rax last. */
.macro LOAD_GUEST
	LOAD_GUEST_SCRATCH %rax
	mov VCPU_RAX(%rax), %rax
.endm

/* void LOOP(struct vcpu *v): the VMCS of v is current, HOST_RIP is STUB. */
.macro VMX_LIGHT_LOOP loop, stub, rsb, spec_ctrl
	.globl \loop
\loop:
	LIGHT_LOOP_BEGIN %rdi            /* (HOST_RSP) = vcpu */
	mov $VMCS_FIELD_HOST_RSP, %eax
	vmwrite %rsp, %rax
	mov %rdi, %rax
	cmpb $0, VCPU_LAUNCHED(%rax)
	je .L\loop\()_launch
.L\loop\()_resume:
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
	.if \spec_ctrl
	mov %rax, %rdi
	SPEC_CTRL_LOAD %rdi, VCPU_SPEC_CTRL(%rdi)
	mov %rdi, %rax
	.endif
	LOAD_GUEST
	vmlaunch
.L\loop\()_failed:
	/* VMfailValid/VMfailInvalid: C reads the VM-instruction error */
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
	jnz .L\loop\()_resume
.L\loop\()_heavy:
	LIGHT_LOOP_END
.endm

	.text
	/* the order is vmm/spec_ctrl.h's: rsb * 2 + spec_ctrl */
	VMX_LIGHT_LOOP vmx_light_loop, vmx_exit_stub, 0, 0
	VMX_LIGHT_LOOP vmx_light_loop_spec_ctrl, vmx_exit_stub_spec_ctrl, 0, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite, vmx_exit_stub_rsb_lite, 1, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_lite_spec_ctrl, vmx_exit_stub_rsb_lite_spec_ctrl, 1, 1
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full, vmx_exit_stub_rsb_full, 2, 0
	VMX_LIGHT_LOOP vmx_light_loop_rsb_full_spec_ctrl, vmx_exit_stub_rsb_full_spec_ctrl, 2, 1
	.section .note.GNU-stack, "", @progbits
