/* The VMX light loop: load the guest GPRs, VMRESUME; on a VM exit the CPU
 * comes to vmx_exit_stub (HOST_RIP) with RSP = HOST_RSP, where the vcpu
 * pointer sits. Store the GPRs a C function may clobber (plus rax and rbx,
 * hypercall/CPUID operands), call the handler for the exit reason, and
 * VMRESUME again while it returns the vcpu (vmm/light.h). RSP and RIP live
 * in the VMCS. */
#include "asm-offsets.h"   /* generated: build/gen/vmx/ */
#include "vmm/entry_macros.h"

	.text
	.globl vmx_light_loop
	/* void vmx_light_loop(struct vcpu *v): the VMCS of v is current */
vmx_light_loop:
	LIGHT_LOOP_BEGIN %rdi            /* (HOST_RSP) = vcpu */
	mov $VMCS_FIELD_HOST_RSP, %eax
	vmwrite %rsp, %rax
	mov %rdi, %rax
	cmpb $0, VCPU_LAUNCHED(%rax)
	je .Llaunch
.Lresume:
	LOAD_GUEST_SCRATCH %rax
	mov VCPU_RAX(%rax), %rax
	vmresume
	jmp .Lfailed
.Llaunch:
	movb $1, VCPU_LAUNCHED(%rax)
	LOAD_GUEST_SCRATCH %rax
	mov VCPU_RAX(%rax), %rax
	vmlaunch
.Lfailed:
	/* VMfailValid/VMfailInvalid: C reads the VM-instruction error */
	mov (%rsp), %rax
	movb $1, VCPU_ENTRY_FAILED(%rax)
	movb $0, VCPU_LAUNCHED(%rax)
	movl $HEAVY_ACTION_EXIT, VCPU_HEAVY_ACTION(%rax)
	jmp .Lheavy

	.globl vmx_exit_stub
vmx_exit_stub:
	push %rdi
	mov 8(%rsp), %rdi                /* the vcpu */
	mov %rax, VCPU_RAX(%rdi)
	STORE_GUEST_SCRATCH %rdi
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
	LIGHT_LOOP_END
	.section .note.GNU-stack, "", @progbits
