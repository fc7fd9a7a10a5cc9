/* The host IDT: CPU exceptions in the hypervisor end in one panic line,
 * but for a #DB from a guest's breakpoint, which is disarmed and counted;
 * IDT_VECTOR_TIMER is the host's own LAPIC timer. No gate uses an IST, so
 * nothing depends on the TSS that a guest's VMLOAD state may have loaded. */
#ifndef CORE_IDT_H
#define CORE_IDT_H

#include <stdint.h>

#define IDT_VECTOR_TIMER    0x20
#define IDT_VECTOR_WAKE     0xf0   /* an IPI that wakes an idle AP (core/smp.h) */
#define IDT_VECTOR_SPURIOUS 0xff

struct idt_frame {
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

void idt_init(void);
/* Loads the IDT idt_init() built on this CPU (an AP: one IDT for all). */
void idt_load(void);
/* Called from the assembly stubs. */
void idt_dispatch(struct idt_frame *f);

#endif
