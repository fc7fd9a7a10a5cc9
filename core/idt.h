/* The host IDT: CPU exceptions in the hypervisor end in one panic line,
 * but for a #DB from a guest's breakpoint, which is disarmed and counted,
 * and a physical NMI, which is counted and said (host_nmis_report);
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
/* One line per physical NMI this CPU took since the last call
 * ("lightpath: cpuN: NMI (host)"), for the first HOST_NMI_LINES of them.
 * The NMI handler only counts (it may have interrupted a CPU that holds
 * the console lock); this prints, from the places that see NMIs: the
 * backends' NMI exits and the idle loops. */
#define HOST_NMI_LINES 8
void host_nmis_report(void);
/* Called from the assembly stubs. */
void idt_dispatch(struct idt_frame *f);

#endif
