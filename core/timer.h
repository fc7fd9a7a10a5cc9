/* The host's one-shot timer: the xAPIC timer (MMIO at 0xFEE00000), which is
 * what QEMU's emulated AMD CPUs have (no x2APIC, no TSC-deadline). Deadlines
 * are in TSC ticks; the interrupt handler only acknowledges it: the exit it
 * caused (or the HLT it ended) runs the expired VM timers. */
#ifndef CORE_TIMER_H
#define CORE_TIMER_H

#include <stdbool.h>
#include <stdint.h>

/* Enables the local APIC and calibrates its timer against the TSC. Returns
 * negative (with a message printed) if there is no usable local APIC. */
int timer_init(void);
/* Fires IDT_VECTOR_TIMER at (or soon after) `deadline_tsc`; 0 stops it. */
void timer_program(uint64_t deadline_tsc);
/* Called by the interrupt stub. */
void timer_interrupt(void);
/* Sets the local APIC's task priority back to 0, the host's: a VT-x guest
 * without a TPR shadow writes it with MOV CR8 (vmm/cpu_state.h). */
void lapic_tpr_clear(void);

#endif
