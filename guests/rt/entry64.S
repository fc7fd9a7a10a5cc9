/* 64-bit guest entry. The multiboot loader starts us in 32-bit protected
 * mode with paging off, so this part is .code32: load a GDT, clear BSS,
 * identity-map the first GiB with 2 MiB pages, enable PAE, EFER.LME and
 * paging, then far-jump to 64-bit code and call rt_start. */

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003	/* page-align modules, want memory info */

#define MSR_EFER   0xc0000080
#define EFER_LME   0x100
#define CR4_PAE    0x20
#define CR0_PG_PE  0x80000001
#define PDE_2M     0x83		/* present, writable, 2 MiB page */
#define PTE_TABLE  0x03		/* present, writable */

	.section .multiboot, "a"
	.balign 4
	.long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

	.section .text.entry, "ax"
	.code32
	.globl _start
	.type _start, @function
_start:
	cli
	cld
	mov %eax, rt_mb_magic
	mov %ebx, rt_mb_info
	lgdt gdt_desc
	ljmp $0x18, $1f
1:	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb
	mov $rt_stack_top, %esp

	/* PML4[0] -> PDPT, PDPT[0] -> PD, PD[i] = i * 2 MiB. */
	mov $rt_pdpt + PTE_TABLE, %eax
	mov %eax, rt_pml4
	mov $rt_pd + PTE_TABLE, %eax
	mov %eax, rt_pdpt
	xor %ecx, %ecx
2:	mov %ecx, %eax
	shl $21, %eax
	or $PDE_2M, %eax
	mov %eax, rt_pd(, %ecx, 8)
	inc %ecx
	cmp $512, %ecx
	jb 2b

	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $rt_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $CR0_PG_PE, %eax
	mov %eax, %cr0
	ljmp $0x08, $long_entry

	.code64
long_entry:
	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	mov $rt_stack_top, %rsp
	xor %ebp, %ebp
	call rt_start
3:	cli
	hlt
	jmp 3b
	/* a size, so that exit sites at the entry map to a function (stats=all) */
	.size _start, . - _start

	.section .text
	.globl rt_isr_common
rt_isr_common:
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	cld
	mov %rsp, %rdi		/* struct rt_frame *; RSP is 16-byte aligned */
	call rt_trap_entry
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	add $16, %rsp		/* vector, error code */
	iretq

#include "isr_stubs.inc"

	.section .data
	.globl rt_mb_magic, rt_mb_info
	.balign 4
rt_mb_magic:	.long 0
rt_mb_info:	.long 0

	.balign 8
	.globl rt_gdt
rt_gdt:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10 flat data */
	.quad 0x00cf9a000000ffff	/* 0x18 flat 32-bit code (boot only) */
rt_gdt_end:
	.balign 4
	.word 0
gdt_desc:
	.word rt_gdt_end - rt_gdt - 1
	.long rt_gdt

	.section .bss
	.balign 4096
	.globl rt_pml4, rt_pdpt, rt_pd
rt_pml4:	.skip 4096
rt_pdpt:	.skip 4096
rt_pd:		.skip 4096
	.balign 16
	.skip 16384
	.globl rt_stack_top
rt_stack_top:

	.section .note.GNU-stack, "", @progbits
