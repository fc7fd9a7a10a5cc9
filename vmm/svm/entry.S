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

	/* void svm_light_loop_armed(struct vcpu *v): the same loop for a guest
	 * with breakpoints enabled (vmm/svm/debug.c). QEMU 7.2 arms DR0-3 only
	 * when DR7 is written, never at VMRUN, and keeps them armed after
	 * #VMEXIT: so they are written to DR7 right before VMRUN (on hardware
	 * VMRUN loads the VMCB's DR7 anyway) and disarmed right after #VMEXIT,
	 * before anything else. The guest's breakpoints on this code or on the
	 * rcx slot it touches while they are armed are left out of the mask
	 * (a #DB here would loop), and so are its data breakpoints when VMRUN
	 * delivers an event (QEMU loses an event whose delivery hits one). */
	.globl svm_light_loop_armed, svm_light_loop_armed_end
svm_light_loop_armed:
	LIGHT_LOOP_BEGIN %rdi
	mov %rdi, %rax
.Larmed_resume:
	LOAD_GUEST_SCRATCH %rax
	mov VMCB_DR7(%rax), %rcx
	and VCPU_DR7_ARM_MASK(%rax), %rcx
	testl $SVM_EVTINJ_VALID_BIT, VMCB_EVENTINJ(%rax)
	jz 1f
	and VCPU_DR7_INJECT_MASK(%rax), %rcx
1:	mov %rcx, %dr7
	mov VCPU_RCX(%rax), %rcx
	vmrun
	mov %rcx, VCPU_RCX(%rax)
	/* disarm: removes every breakpoint QEMU holds, whatever its type */
	mov $DR7_DATA_TYPES, %ecx
	mov %rcx, %dr7
	mov $DR7_AT_REST, %ecx
	mov %rcx, %dr7
	mov VCPU_RCX(%rax), %rcx
	STORE_GUEST_SCRATCH %rax
	mov %rdi, VCPU_RDI(%rax)
	mov %rax, %rdi
	mov VMCB_EXITCODE(%rax), %rcx
	cmp $LIGHT_TABLE_LAST, %rcx
	jbe 2f
	mov $LIGHT_TABLE_LAST, %ecx
2:	call *VCPU_LIGHT_TABLE(%rax,%rcx,8)
	test %rax, %rax
	jnz .Larmed_resume
	LIGHT_LOOP_END
svm_light_loop_armed_end:
	.section .note.GNU-stack, "", @progbits
