/* The step from 32-bit protected mode (paging off) into long mode, shared by
 * the boot CPU (boot/entry.S) and the application processors
 * (boot/ap_entry.S): PAE, the PML4 whose address is `cr3` (an operand
 * movl accepts), EFER.LME, then PG and PE. The caller's far jump to 64-bit
 * code follows. Clobbers eax, ecx, edx. */
#ifndef BOOT_LONG_MODE_H
#define BOOT_LONG_MODE_H

.macro ENTER_LONG_MODE cr3
	mov %cr4, %eax
	or $0x20, %eax                       /* PAE */
	mov %eax, %cr4
	mov \cr3, %eax
	mov %eax, %cr3
	mov $0xC0000080, %ecx                /* EFER.LME */
	rdmsr
	or $0x100, %eax
	wrmsr
	mov %cr0, %eax
	or $0x80000001, %eax                 /* PG, PE */
	mov %eax, %cr0
.endm

#endif
