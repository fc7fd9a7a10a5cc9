/* dbloop64: a hostile guest whose #DB delivery raises #DB again, forever
 * (the class of bug behind CVE-2015-8104). The #DB gate gets an IST stack,
 * so every delivery pushes its frame to the same slots, and a data
 * breakpoint (DR0, write, 8 bytes) watches one of them. A write to that slot
 * raises the first #DB; its delivery writes the slot again, which raises the
 * next one, and so on: a CPU that delivers #DB itself never gets out (on
 * hardware no VM exit comes). Under lightpath each #DB is a VM exit, so the
 * VM's time limit ends it.
 *
 * Should a delivery ever complete (QEMU 7.2 does not stop on a watchpoint
 * hit during a delivery: lightpath delivers the #DB it reflects with the
 * guest's data breakpoints off there, docs/SECURITY.md), the handler
 * returns and the guest tries again, also with a single step (TF), which
 * makes a #DB delivery that hits the breakpoint when the last one did not.
 * Interrupts stay enabled, so that an emulator that does not give the host
 * an exit for a guest with IF=0 (Bochs 2.7) still lets the time limit in.
 * It prints one line, then never ends by itself. */
#include "guests/rt/rt.h"

#define DR7_L0        (1u << 0)
#define DR7_RW0_WRITE (1u << 16)
#define DR7_LEN0_8    (2u << 18)
#define DR6_INIT      0xffff0ff0u
#define TSS_SEL       0x20
#define GDT_ENTRIES   6          /* rt's four, then the 16-byte TSS descriptor */
#define RT_FLAGS_TF   (1u << 8)

struct tss64 {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3, iomap_base;
} __attribute__((packed));

struct idt_gate64 {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));

extern uint64_t rt_gdt[];
static uint64_t gdt[GDT_ENTRIES] __attribute__((aligned(16)));
static struct tss64 tss __attribute__((aligned(16)));
/* the IST stack on a page of its own: nothing else the guest touches is there */
static uint8_t db_stack[4096] __attribute__((aligned(4096)));

/* A #DB that was delivered after all: carry on (RF so that an instruction
 * breakpoint could not stop the return; no single step after it). */
static void on_db(struct rt_frame *f)
{
	asm volatile("mov %0, %%dr6" ::"r"((uint64_t)DR6_INIT));
	f->flags = (f->flags | RT_FLAGS_RF) & ~(uint64_t)RT_FLAGS_TF;
}

int guest_main(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } gdtr, idtr;

	/* rt's GDT plus a TSS whose IST1 is db_stack */
	for (unsigned i = 0; i < 4; i++)
		gdt[i] = rt_gdt[i];
	uint64_t base = (uint64_t)(uintptr_t)&tss, limit = sizeof(tss) - 1;
	tss.ist[0] = (uint64_t)(uintptr_t)(db_stack + sizeof(db_stack));
	tss.iomap_base = sizeof(tss);
	gdt[4] = (limit & 0xffff) | (base & 0xffffff) << 16 | 0x89ull << 40 |
		 ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56;
	gdt[5] = base >> 32;
	gdtr.limit = sizeof(gdt) - 1;
	gdtr.base = (uint64_t)(uintptr_t)gdt;
	asm volatile("lgdt %0" ::"m"(gdtr));
	asm volatile("ltr %w0" ::"r"((uint16_t)TSS_SEL));

	/* #DB through IST1: every delivery writes the same frame slots */
	asm volatile("sidt %0" : "=m"(idtr));
	((struct idt_gate64 *)(uintptr_t)idtr.base)[1].ist = 1;
	rt_set_handler(1, on_db);

	/* the slot of the saved RIP, the last push of a delivery */
	volatile uint64_t *slot = (volatile uint64_t *)(db_stack + sizeof(db_stack) - 40);
	rt_printf("dbloop64: a data breakpoint on the #DB stack, then writes to it; never ends\n");
	asm volatile("mov %0, %%dr0" ::"r"((uint64_t)(uintptr_t)slot));
	asm volatile("mov %0, %%dr7" ::"r"((uint64_t)(DR7_L0 | DR7_RW0_WRITE | DR7_LEN0_8)));
	asm volatile("sti");
	for (;;) {
		*slot = 0;   /* a #DB whose delivery writes the slot again */
		asm volatile("pushf; orq %0, (%%rsp); popf; nop" ::"i"(RT_FLAGS_TF) : "memory", "cc");
	}
}
