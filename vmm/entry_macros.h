/* Pieces both exit stubs share (vmm/svm/entry.S, vmm/vmx/entry.S), as
 * assembler macros. The light loop keeps the guest's rbx, rbp and r10-r15 in
 * the CPU (C preserves rbp and r12-r15; rbx, r10 and r11 no hypervisor C code
 * uses: -ffixed-rbx -ffixed-r10 -ffixed-r11 in the Makefile) and stores them
 * only on the way to the heavy path; the other GPRs go through struct vcpu on
 * every exit. The vcpu pointer is at (%rsp) inside the loop. */
#ifndef VMM_ENTRY_MACROS_H
#define VMM_ENTRY_MACROS_H

/* Entering the loop: save the host's callee-saved registers, keep the vcpu
 * (in \vcpu) at (%rsp), load the guest's callee-saved ones. */
.macro LIGHT_LOOP_BEGIN vcpu
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push \vcpu
	mov VCPU_RBX(\vcpu), %rbx
	mov VCPU_RBP(\vcpu), %rbp
	mov VCPU_R10(\vcpu), %r10
	mov VCPU_R11(\vcpu), %r11
	mov VCPU_R12(\vcpu), %r12
	mov VCPU_R13(\vcpu), %r13
	mov VCPU_R14(\vcpu), %r14
	mov VCPU_R15(\vcpu), %r15
.endm

/* The guest's GPRs C may clobber (but rax), from and to the vcpu at \vcpu. */
.macro LOAD_GUEST_SCRATCH vcpu
	mov VCPU_RCX(\vcpu), %rcx
	mov VCPU_RDX(\vcpu), %rdx
	mov VCPU_RSI(\vcpu), %rsi
	mov VCPU_RDI(\vcpu), %rdi
	mov VCPU_R8(\vcpu), %r8
	mov VCPU_R9(\vcpu), %r9
.endm

.macro STORE_GUEST_SCRATCH vcpu
	mov %rcx, VCPU_RCX(\vcpu)
	mov %rdx, VCPU_RDX(\vcpu)
	mov %rsi, VCPU_RSI(\vcpu)
	mov %r8, VCPU_R8(\vcpu)
	mov %r9, VCPU_R9(\vcpu)
.endm

/* spec=on: overwrite the return stack buffer right after a VM exit, before
 * the hypervisor's first RET can use a prediction the guest left there
 * (vmm/spec_ctrl.h). kind 2: all 32 entries, each CALL's speculative return
 * caught by an INT3; kind 1: the one CALL enhanced IBRS still needs. */
.macro RSB_OVERWRITE kind
	.if \kind == 2
	.rept 16
	call 773f
	int3
773:	call 774f
	int3
774:
	.endr
	add $(32 * 8), %rsp
	.elseif \kind == 1
	call 775f
	int3
775:	add $8, %rsp
	lfence
	.endif
.endm

/* spec=on on a CPU with IA32_SPEC_CTRL: load \value (the guest's or the
 * host's) when the guest's differs from the host's. \vcpu must not be rax,
 * rcx or rdx, which WRMSR uses; rdx is clobbered either way. */
.macro SPEC_CTRL_LOAD vcpu, value
	mov VCPU_SPEC_CTRL(\vcpu), %rdx
	cmp host_spec_ctrl(%rip), %rdx
	je 776f
	mov \value, %rax
	mov %rax, %rdx
	shr $32, %rdx
	mov $MSR_SPEC_CTRL, %ecx
	wrmsr
776:
.endm

/* One table lookup on the exit code in \code (the vcpu in %rdi): no C
 * dispatcher on the light path. Codes past the table share its last slot;
 * a handler that returns the vcpu (nonzero rax) sends the loop to \resume.
 * \code is %rcx or %ecx, as the stub has the code (the width is the
 * stub's: the same instructions as before this macro). */
.macro LIGHT_TABLE_CALL code, resume
	cmp $LIGHT_TABLE_LAST, \code
	jbe 777f
	mov $LIGHT_TABLE_LAST, %ecx
777:	call *VCPU_LIGHT_TABLE(%rdi,%rcx,8)
	test %rax, %rax
	jnz \resume
.endm

/* Leaving for the heavy path: hand the rest of the guest GPRs to C, restore
 * the host's, return from the loop. */
.macro LIGHT_LOOP_END
	mov (%rsp), %rax
	mov %rbx, VCPU_RBX(%rax)
	mov %rbp, VCPU_RBP(%rax)
	mov %r10, VCPU_R10(%rax)
	mov %r11, VCPU_R11(%rax)
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
.endm

#endif
