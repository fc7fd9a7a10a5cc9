/* 32-bit guest entry: multiboot v1 header, own GDT, stack, BSS clear,
 * then C (rt_start). Runs flat protected mode, paging off, IF=0. */

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003	/* page-align modules, want memory info */

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
	/* Keep EAX/EBX in .data: BSS is cleared below. */
	mov %eax, rt_mb_magic
	mov %ebx, rt_mb_info
	/* The loader gives no GDT we may rely on: load ours and reload all
	 * segment registers from it. */
	lgdt gdt_desc
	ljmp $0x08, $1f
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
	xor %ebp, %ebp
	call rt_start
2:	cli
	hlt
	jmp 2b
	/* a size, so that exit sites at the entry map to a function (stats=all) */
	.size _start, . - _start

	.section .text
	.globl rt_isr_common
rt_isr_common:
	pusha
	cld
	push %esp		/* struct rt_frame * */
	call rt_trap_entry
	add $4, %esp
	popa
	add $8, %esp		/* vector, error code */
	iret

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
	.quad 0x00cf9a000000ffff	/* 0x08 flat 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10 flat data */
	.quad 0x00cf9a000000ffff	/* 0x18 flat 32-bit code (SYSCALL CS) */
	.quad 0x00cf92000000ffff	/* 0x20 flat data (SYSCALL SS) */
rt_gdt_end:
	.balign 4
	.word 0
gdt_desc:
	.word rt_gdt_end - rt_gdt - 1
	.long rt_gdt

	.section .bss
	.balign 16
	.skip 16384
	.globl rt_stack_top
rt_stack_top:

	.section .note.GNU-stack, "", @progbits
