/* Host interrupt and exception stubs: push a vector (and a zero error code
 * where the CPU pushes none), save the caller-saved GPRs, call idt_dispatch. */
	.text
.macro stub vec, has_err
	.globl idt_stub_\vec
idt_stub_\vec:
	.if \has_err == 0
	push $0
	.endif
	push $\vec
	jmp idt_common
.endm

	stub 0, 0

	/* #DB: disarm every breakpoint first (core/idt.c says why): DR7 typed
	 * "data" with nothing enabled, then at rest, which makes QEMU 7.2 drop
	 * the breakpoints it still holds, whatever their type. Values as
	 * DR7_PURGE_DATA and DR7_INIT (core/cpu.h). */
	.globl idt_stub_1
idt_stub_1:
	push %rax
	mov $0x11110400, %eax
	mov %rax, %dr7
	mov $0x400, %eax
	mov %rax, %dr7
	pop %rax
	push $0
	push $1
	jmp idt_common

	stub 2, 0
	stub 3, 0
	stub 4, 0
	stub 5, 0
	stub 6, 0
	stub 7, 0
	stub 8, 1
	stub 10, 1
	stub 11, 1
	stub 12, 1
	stub 13, 1
	stub 14, 1
	stub 16, 0
	stub 17, 1
	stub 18, 0
	stub 19, 0
	stub 32, 0
	stub 240, 0
	stub 255, 0

/* The registers C may clobber; not r10 and r11, which no hypervisor code
 * uses (-ffixed-r10 -ffixed-r11, Makefile): in the light loop they hold the
 * guest's values, and so they still do after an interrupt. */
idt_common:
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %r8
	push %r9
	lea 56(%rsp), %rdi          /* struct idt_frame: vector, error, then the CPU's frame */
	call idt_dispatch
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	add $16, %rsp               /* vector and error code */
	iretq
	.section .note.GNU-stack, "", @progbits
