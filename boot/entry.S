/* Multiboot v1 and v2 entry: from 32-bit protected mode (paging off) into
 * 64-bit long mode on an identity map of the first 4 GiB, then kmain(). */
#include "boot/long_mode.h"

#define MB1_MAGIC  0x1BADB002
#define MB1_FLAGS  0x00000003      /* page-aligned modules, memory info */
#define MB2_MAGIC  0xE85250D6
#define STACK_SIZE 16384

	.section .multiboot, "a"
	.align 4
mb1_header:
	.long MB1_MAGIC
	.long MB1_FLAGS
	.long -(MB1_MAGIC + MB1_FLAGS)

	.align 8
mb2_header:
	.long MB2_MAGIC
	.long 0                              /* i386 protected mode */
	.long mb2_header_end - mb2_header
	.long -(MB2_MAGIC + 0 + (mb2_header_end - mb2_header))
	.align 8
	.short 6, 0                          /* module alignment tag */
	.long 8
	.short 0, 0                          /* end tag */
	.long 8
mb2_header_end:

	.section .text.boot, "ax"
	.code32
	.globl boot_entry32
boot_entry32:
	cli
	cld
	mov %eax, %esi                       /* boot loader magic */
	mov %ebx, %edi                       /* boot information */
	mov $(boot_stack + STACK_SIZE), %esp

	/* PML4[0] -> PDPT; PDPT[0..3] -> PD0..3; 2 MiB pages, RW, present. */
	mov $boot_pdpt, %eax
	or $0x3, %eax
	mov %eax, boot_pml4
	mov $boot_pd, %eax
	or $0x3, %eax
	mov $boot_pdpt, %ebx
	mov $4, %ecx
1:	mov %eax, (%ebx)
	add $4096, %eax
	add $8, %ebx
	loop 1b
	mov $boot_pd, %ebx
	xor %eax, %eax
	mov $2048, %ecx
2:	mov %eax, %edx
	or $0x83, %edx                       /* present, RW, 2 MiB */
	mov %edx, (%ebx)
	movl $0, 4(%ebx)
	add $0x200000, %eax
	add $8, %ebx
	loop 2b

	ENTER_LONG_MODE $boot_pml4
	lgdt boot_gdt_desc
	ljmp $0x08, $boot_entry64

	.code64
boot_entry64:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %eax, %eax
	mov %ax, %fs
	mov %ax, %gs
	mov $(boot_stack + STACK_SIZE), %rsp
	/* kmain(magic, info): both fit in 32 bits */
	mov %esi, %eax
	mov %edi, %esi
	mov %eax, %edi
	call kmain
3:	cli
	hlt
	jmp 3b

	.section .rodata
	.align 16
	.globl boot_gdt
boot_gdt:
	.quad 0
	.quad 0x00AF9B000000FFFF                 /* 0x08: 64-bit code */
	.quad 0x00CF93000000FFFF                 /* 0x10: data */
boot_gdt_end:
boot_gdt_desc:
	.short boot_gdt_end - boot_gdt - 1
	.quad boot_gdt

	.section .bss
	.align 4096
boot_pml4:  .skip 4096
boot_pdpt:  .skip 4096
boot_pd:    .skip 4096 * 4
	.globl boot_stack
	.align STACK_SIZE
boot_stack: .skip STACK_SIZE
	.section .note.GNU-stack, "", @progbits
