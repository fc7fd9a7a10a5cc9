/* Starting application processors (flat 32-bit guests): a real-mode
 * trampoline at RT_AP_TRAMP that a STARTUP IPI with vector RT_AP_SIPI_VECTOR
 * enters (guests/rt/rt.h). */
#include "guests/rt/rt.h"

#ifdef __x86_64__
#error "the AP trampoline is for flat 32-bit guests"
#endif

/* Runs at RT_AP_TRAMP (copied there), entered by SIPI in real mode with
 * CS = 0x0800; positions are offsets from rt_ap_tramp. After INIT, CR0.CD
 * and NW are set: cleared here. It loads its own GDT (the runtime's
 * selectors), takes the stack in rt_ap_tr_stack and calls rt_ap_tr_entry. */
extern char rt_ap_tramp[], rt_ap_tramp_end[], rt_ap_tr_stack[], rt_ap_tr_entry[];
asm(
	"	.pushsection .rodata.rt_ap_tramp, \"a\"\n"
	"	.balign 16\n"
	"	.globl rt_ap_tramp, rt_ap_tramp_end, rt_ap_tr_stack, rt_ap_tr_entry\n"
	"	.code16\n"
	"rt_ap_tramp:\n"
	"	cli\n"
	"	cld\n"
	"	mov %cs, %ax\n"
	"	mov %ax, %ds\n"
	"	lgdtl tr_gdt_desc - rt_ap_tramp\n"
	"	mov %cr0, %eax\n"
	"	and $0x9fffffff, %eax\n"
	"	or $1, %eax\n"
	"	mov %eax, %cr0\n"
	"	ljmpl $0x08, $0x8000 + (tr_pm - rt_ap_tramp)\n"
	"	.code32\n"
	"tr_pm:\n"
	"	mov $0x10, %eax\n"
	"	mov %eax, %ds\n"
	"	mov %eax, %es\n"
	"	mov %eax, %ss\n"
	"	mov %eax, %fs\n"
	"	mov %eax, %gs\n"
	"	mov 0x8000 + (rt_ap_tr_stack - rt_ap_tramp), %esp\n"
	"	xor %ebp, %ebp\n"
	"	call *0x8000 + (rt_ap_tr_entry - rt_ap_tramp)\n"
	"1:	cli\n"
	"	hlt\n"
	"	jmp 1b\n"
	"	.balign 8\n"
	"tr_gdt:\n"
	"	.quad 0\n"
	"	.quad 0x00cf9a000000ffff\n"       /* 0x08 flat 32-bit code */
	"	.quad 0x00cf92000000ffff\n"       /* 0x10 flat data */
	"tr_gdt_desc:\n"
	"	.word 23\n"
	"	.long 0x8000 + (tr_gdt - rt_ap_tramp)\n"
	"	.balign 4\n"
	"rt_ap_tr_stack:\n"
	"	.long 0\n"
	"rt_ap_tr_entry:\n"
	"	.long 0\n"
	"rt_ap_tramp_end:\n"
	"	.popsection\n");
_Static_assert(RT_AP_TRAMP == 0x8000, "the trampoline's asm has 0x8000 built in");
_Static_assert(RT_AP_SIPI_VECTOR == RT_AP_TRAMP >> 12, "SIPI vector = page number");

void rt_ap_install(void (*entry)(void))
{
	memcpy((void *)(uintptr_t)RT_AP_TRAMP, rt_ap_tramp, (size_t)(rt_ap_tramp_end - rt_ap_tramp));
	*(volatile uint32_t *)(uintptr_t)(RT_AP_TRAMP + (rt_ap_tr_entry - rt_ap_tramp)) =
		(uint32_t)(uintptr_t)entry;
}

void rt_ap_set_stack(void *top)
{
	*(volatile uint32_t *)(uintptr_t)(RT_AP_TRAMP + (rt_ap_tr_stack - rt_ap_tramp)) =
		(uint32_t)(uintptr_t)top;
}
