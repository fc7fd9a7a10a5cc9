/* An application processor's way from its startup IPI to ap_main()
 * (core/smp.c). core/smp.c copies ap_trampoline..ap_trampoline_end to a page
 * below 1 MiB and sends that page's number as the SIPI vector: the AP starts
 * there in real mode with CS = page << 8, IP = 0. The trampoline only loads
 * ap_gdt and jumps to 32-bit code in the image (above 1 MiB), so the page is
 * needed for a few instructions and core/smp.c puts its old contents back
 * once the APs are up.
 *
 * ap_entry32 takes the host's page tables (ap_boot_cr3) into long mode.
 * Before it touches anything shared it compares its local APIC ID with the
 * one the boot CPU is starting (ap_boot_apic_id): an AP that answers late,
 * after the boot CPU gave up on it, halts there instead of taking the next
 * AP's stack. */
#include "boot/long_mode.h"

#define AP_GDT_CODE64 0x08
#define AP_GDT_DATA   0x10
#define AP_GDT_CODE32 0x18
#define LAPIC_ID_REG  0xfee00020

	.section .rodata
	.code16
	.globl ap_trampoline, ap_trampoline_end
ap_trampoline:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	lgdtl ap_gdt_desc - ap_trampoline      /* DS:offset, a 32-bit base */
	mov %cr0, %eax
	or $1, %eax                            /* PE */
	mov %eax, %cr0
	ljmpl $AP_GDT_CODE32, $ap_entry32
	.align 4
ap_gdt_desc:
	.short ap_gdt_end - ap_gdt - 1
	.long ap_gdt
ap_trampoline_end:

	/* The boot GDT's two descriptors (boot/entry.S) and a 32-bit code
	 * segment for the way up. An SVM AP keeps it (it needs no TSS, as the
	 * boot CPU); a VT-x AP loads its own GDT with a TSS (vmm/vmx/cpu.c). */
	.align 16
	.globl ap_gdt
ap_gdt:
	.quad 0
	.quad 0x00AF9B000000FFFF                 /* 0x08: 64-bit code */
	.quad 0x00CF93000000FFFF                 /* 0x10: data */
	.quad 0x00CF9B000000FFFF                 /* 0x18: 32-bit code */
ap_gdt_end:

	.section .text.boot, "ax"
	.code32
ap_entry32:
	mov $AP_GDT_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov LAPIC_ID_REG, %eax                 /* paging is off: the APIC's reset base */
	shr $24, %eax
	cmp ap_boot_apic_id, %eax
	jne ap_park
	ENTER_LONG_MODE ap_boot_cr3
	ljmp $AP_GDT_CODE64, $ap_entry64
ap_park:
	cli
	hlt
	jmp ap_park

	.code64
ap_entry64:
	mov $AP_GDT_DATA, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %eax, %eax
	mov %ax, %fs
	mov %ax, %gs
	mov ap_boot_stack_top(%rip), %rsp      /* struct percpu is at its bottom */
	call ap_main
1:	cli
	hlt
	jmp 1b

	/* Written by the boot CPU before each SIPI (core/smp.c). */
	.section .data
	.align 8
	.globl ap_boot_stack_top, ap_boot_apic_id, ap_boot_cr3
ap_boot_stack_top: .quad 0
ap_boot_apic_id:   .long 0xffffffff
ap_boot_cr3:       .long 0
	.section .note.GNU-stack, "", @progbits
