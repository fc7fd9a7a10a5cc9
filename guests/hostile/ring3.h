/* ring3.h: user mode (CPL 3) for the 32-bit hostile guests (flat protected
 * mode, paging off), which need it for alignment checks: #AC is raised
 * only at CPL 3. A GDT with rt's entries plus user code/data and a TSS (its
 * ESP0 is where an exception from CPL 3 is delivered), and r3_enter, which
 * runs user code until it executes `int $R3_RETURN_VECTOR`. */
#ifndef GUESTS_HOSTILE_RING3_H
#define GUESTS_HOSTILE_RING3_H

#include "guests/rt/rt.h"

#define R3_CODE_SEL       0x2b      /* GDT index 5, RPL 3 */
#define R3_DATA_SEL       0x33      /* GDT index 6, RPL 3 */
#define R3_TSS_SEL        0x38      /* GDT index 7 */
#define R3_RETURN_VECTOR  0x81      /* user code ends with int $0x81 */
#define R3_FLAGS_AC       (1u << 18)
#define R3_CR0_AM         (1u << 18)
#define R3_GATE_INTR      0x8e      /* present, DPL 0, 32-bit interrupt gate */
#define R3_GATE_DPL3      0x60

struct r3_tss {
	uint32_t link, esp0, ss0, esp1, ss1, esp2, ss2, cr3, eip, eflags;
	uint32_t gpr[8], seg[6], ldt;
	uint16_t trap, iomap_base;
} __attribute__((packed));

struct r3_gate {
	uint16_t off_lo, sel;
	uint8_t zero, type;
	uint16_t off_hi;
} __attribute__((packed));

extern uint64_t rt_gdt[];
static uint64_t r3_gdt[8] __attribute__((aligned(16)));
static struct r3_tss r3_tss __attribute__((aligned(16)));
static uint8_t r3_kstack[4096] __attribute__((aligned(16)));
uint32_t r3_saved_esp;

/* r3_enter(eip, esp, eflags, eax): IRET to CPL 3 at eip with that stack,
 * EFLAGS and EAX (data segments user's); returns when the user code
 * executes int $R3_RETURN_VECTOR. r3_back is that vector's handler. */
void r3_enter(uint32_t eip, uint32_t esp, uint32_t eflags, uint32_t eax);
void r3_back(void);
asm(".text\n"
    ".globl r3_enter\n"
    "r3_enter:\n\t"
    "push %ebp\n\tpush %ebx\n\tpush %esi\n\tpush %edi\n\t"
    "mov %esp, r3_saved_esp\n\t"
    "mov 20(%esp), %ecx\n\tmov 24(%esp), %edx\n\tmov 28(%esp), %ebx\n\tmov 32(%esp), %eax\n\t"
    "push $0x33\n\tpush %edx\n\tpush %ebx\n\tpush $0x2b\n\tpush %ecx\n\t"
    "mov $0x33, %dx\n\tmov %dx, %ds\n\tmov %dx, %es\n\tmov %dx, %fs\n\tmov %dx, %gs\n\t"
    "iret\n"
    ".globl r3_back\n"
    "r3_back:\n\t"
    "mov $0x10, %dx\n\tmov %dx, %ds\n\tmov %dx, %es\n\tmov %dx, %fs\n\tmov %dx, %gs\n\t"
    "mov r3_saved_esp, %esp\n\t"
    "pop %edi\n\tpop %esi\n\tpop %ebx\n\tpop %ebp\n\t"
    "ret\n");

static inline void r3_set_gate(unsigned vector, uint16_t sel, void *handler, uint8_t type)
{
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } idtr;
	asm volatile("sidt %0" : "=m"(idtr));
	struct r3_gate *g = (struct r3_gate *)(uintptr_t)idtr.base + vector;
	uint32_t a = (uint32_t)(uintptr_t)handler;
	g->off_lo = (uint16_t)a;
	g->off_hi = (uint16_t)(a >> 16);
	g->sel = sel;
	g->zero = 0;
	g->type = type;
}

/* The GDT and TSS for user mode, and the gate back from it. */
static inline void r3_init(void)
{
	for (unsigned i = 0; i < 5; i++)
		r3_gdt[i] = rt_gdt[i];
	r3_gdt[5] = 0x00cffa000000ffffull;   /* flat 32-bit code, DPL 3 */
	r3_gdt[6] = 0x00cff2000000ffffull;   /* flat data, DPL 3 */
	uint64_t base = (uint32_t)(uintptr_t)&r3_tss, limit = sizeof(r3_tss) - 1;
	r3_gdt[7] = (limit & 0xffff) | (base & 0xffffff) << 16 | 0x89ull << 40 |
		    ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56;
	r3_tss.ss0 = RT_SEL_DATA;
	r3_tss.esp0 = (uint32_t)(uintptr_t)(r3_kstack + sizeof(r3_kstack));
	r3_tss.iomap_base = sizeof(r3_tss);
	struct __attribute__((packed)) { uint16_t limit; uint32_t base; } gdtr = {
		sizeof(r3_gdt) - 1, (uint32_t)(uintptr_t)r3_gdt
	};
	asm volatile("lgdt %0" ::"m"(gdtr));
	asm volatile("ltr %w0" ::"r"((uint16_t)R3_TSS_SEL));
	r3_set_gate(R3_RETURN_VECTOR, RT_SEL_CODE, r3_back, R3_GATE_INTR | R3_GATE_DPL3);
}

static inline void r3_set_cr0_am(bool on)
{
	uint32_t cr0;
	asm volatile("mov %%cr0, %0" : "=r"(cr0));
	cr0 = on ? cr0 | R3_CR0_AM : cr0 & ~R3_CR0_AM;
	asm volatile("mov %0, %%cr0" ::"r"(cr0));
}

#endif
