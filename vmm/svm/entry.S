/* The SVM light loop: VMRUN, store the guest GPRs a C function may clobber
 * (the caller-saved ones) plus rbx (a CPUID/hypercall operand), call the
 * handler for this exit code, and VMRUN again while it returns the vcpu
 * (vmm/light.h). RAX and RSP live in the VMCB. */
#include "asm-offsets.h"   /* generated: build/gen/svm/ */
#include "vmm/entry_macros.h"

/* The loop, made twice from one body so that the two never drift apart:
 * armed=0 is svm_light_loop; armed=1 is svm_light_loop_armed, for a guest
 * with breakpoints enabled (vmm/svm/debug.h). QEMU 7.2 arms DR0-3 only when
 * DR7 is written, never at VMRUN, and keeps them armed after #VMEXIT: so
 * the armed loop writes them to DR7 right before VMRUN (on hardware VMRUN
 * loads the VMCB's DR7 anyway) and removes them right after #VMEXIT, before
 * anything else. Breakpoints on the armed loop or on the rcx slot it
 * touches while they are armed are left out of the mask (a #DB here could
 * loop), and so are data breakpoints when VMRUN delivers an event (QEMU
 * loses an event whose delivery hits one). */
.macro SVM_LIGHT_LOOP armed
	LIGHT_LOOP_BEGIN %rdi
	mov %rdi, %rax
.Lresume\armed:
	LOAD_GUEST_SCRATCH %rax
	.if \armed
	mov VMCB_DR7(%rax), %rcx
	and VCPU_DR7_ARM_MASK(%rax), %rcx
	testl $SVM_EVTINJ_VALID_BIT, VMCB_EVENTINJ(%rax)
	jz 2f
	and VCPU_DR7_INJECT_MASK(%rax), %rcx
2:	mov %rcx, %dr7
	mov VCPU_RCX(%rax), %rcx
	.endif
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
	/* one table lookup on the exit code: no C dispatcher on the light path */
	mov VMCB_EXITCODE(%rax), %rcx
	cmp $LIGHT_TABLE_LAST, %rcx
	jbe 1f
	mov $LIGHT_TABLE_LAST, %ecx
1:	call *VCPU_LIGHT_TABLE(%rax,%rcx,8)
	test %rax, %rax
	jnz .Lresume\armed
	LIGHT_LOOP_END
.endm

	.text
	.globl svm_light_loop
	/* void svm_light_loop(struct vcpu *v) -- v is also the VMCB address */
svm_light_loop:
	SVM_LIGHT_LOOP 0

	.globl svm_light_loop_armed, svm_light_loop_armed_end
	/* void svm_light_loop_armed(struct vcpu *v), ends at svm_light_loop_armed_end */
svm_light_loop_armed:
	SVM_LIGHT_LOOP 1
svm_light_loop_armed_end:
	.section .note.GNU-stack, "", @progbits
