/* taskswitch: a 32-bit guest that switches tasks the hardware way, a far
 * JMP to a TSS selector and back (docs/SECURITY.md, "What a guest can
 * execute"). On SVM the CPU switches tasks inside the guest (its own TSSs
 * and GDT, through nested paging): it must work as on a CPU. VT-x exits on
 * every task switch and lightpath does not emulate them: the VM must be
 * stopped with one line that says so, and the next VM run. */
#include "guests/rt/rt.h"

#define SEL_MAIN_TSS 0x28
#define SEL_TASK_TSS 0x30

struct tss32 {
	uint16_t link, rsvd0;
	uint32_t esp0;
	uint16_t ss0, rsvd1;
	uint32_t esp1;
	uint16_t ss1, rsvd2;
	uint32_t esp2;
	uint16_t ss2, rsvd3;
	uint32_t cr3, eip, eflags, eax, ecx, edx, ebx, esp, ebp, esi, edi;
	uint16_t es, rsvd4, cs, rsvd5, ss, rsvd6, ds, rsvd7, fs, rsvd8, gs, rsvd9, ldt, rsvd10;
	uint16_t trap, iomap;
} __attribute__((packed));
_Static_assert(sizeof(struct tss32) == 104, "32-bit TSS");

extern uint64_t rt_gdt[5];   /* guests/rt/entry32.S */

static struct tss32 main_tss, task_tss;
static uint8_t task_stack[4096] __attribute__((aligned(16)));
static uint64_t gdt[7] __attribute__((aligned(8)));
static volatile unsigned task_ran;

/* An available 32-bit TSS descriptor. */
static uint64_t tss_desc(const struct tss32 *t)
{
	uint32_t base = (uint32_t)(uintptr_t)t, limit = sizeof(*t) - 1;
	return (limit & 0xffff) | ((uint64_t)(base & 0xffffff) << 16) | (0x89ull << 40) |
	       ((uint64_t)(limit >> 16) << 48) | ((uint64_t)(base >> 24) << 56);
}

/* The second task: note it ran, switch back (the main task goes on after
 * its JMP; this task is never resumed). */
static __attribute__((noreturn, used)) void task_main(void)
{
	task_ran++;
	asm volatile("ljmp $0x28, $0" ::: "memory");
	for (;;)
		asm volatile("cli; hlt");
}

int guest_main(void)
{
	tap_begin("taskswitch");
	for (unsigned i = 0; i < 5; i++)
		gdt[i] = rt_gdt[i];
	gdt[SEL_MAIN_TSS / 8] = tss_desc(&main_tss);
	gdt[SEL_TASK_TSS / 8] = tss_desc(&task_tss);
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } d = {
		sizeof(gdt) - 1, (uint32_t)(uintptr_t)gdt };
	asm volatile("lgdt %0" : : "m"(d));
	asm volatile("ltr %w0" : : "r"((uint16_t)SEL_MAIN_TSS));
	uint32_t cr3;
	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	main_tss.iomap = task_tss.iomap = sizeof(struct tss32);   /* no I/O bitmap */
	task_tss.cr3 = cr3;
	task_tss.eip = (uint32_t)(uintptr_t)task_main;
	task_tss.esp = (uint32_t)(uintptr_t)(task_stack + sizeof(task_stack));
	task_tss.eflags = 2;
	task_tss.cs = RT_SEL_CODE;
	task_tss.ss = task_tss.ds = task_tss.es = task_tss.fs = task_tss.gs = RT_SEL_DATA;

	rt_printf("taskswitch: switching to the TSS at 0x%x\n", SEL_TASK_TSS);
	asm volatile("ljmp $0x30, $0" ::: "memory");
	tap_eq(task_ran, 1, "the second task ran and switched back");
	uint16_t tr;
	asm volatile("str %0" : "=r"(tr));
	tap_eq(tr, SEL_MAIN_TSS, "TR is the first task's again");
	tap_eq(task_tss.eip > (uint32_t)(uintptr_t)task_main, 1,
	       "the second task's state was saved in its TSS");
	return tap_end();
}
