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
/* TSC ticks until this CPU's timer fires (rounded up); 0: it has fired
 * and its interrupt waits in the local APIC (IRR); UINT64_MAX: it is
 * stopped, or its interrupt was taken. From the timer's own count, so it
 * costs no bookkeeping in timer_program (VT-x's Bochs twins read it before
 * every entry: vmm/vmx/bochs.c). */
uint64_t timer_ticks_left(void);
/* This CPU's timer still counts down: its interrupt is yet to come. */
bool timer_counting(void);
/* An AP's local APIC as timer_init() left the boot CPU's: enabled, the
 * timer one-shot on IDT_VECTOR_TIMER and stopped, TPR 0. The calibration is
 * the boot CPU's: every local APIC timer counts the same clock. */
void timer_init_ap(void);
/* This CPU's local APIC ID (xAPIC: bits 31:24 of the ID register). */
uint32_t host_lapic_id(void);
/* Sends an IPI: `icr_lo` (vector, delivery mode, level) to the xAPIC ID
 * `dest`, once the previous one has left (at most ~100 ms). Returns false
 * if the local APIC stays busy. */
bool host_lapic_send_ipi(uint32_t dest, uint32_t icr_lo);
#define LAPIC_ICR_FIXED      0x00000000u
#define LAPIC_ICR_INIT       0x00000500u
#define LAPIC_ICR_STARTUP    0x00000600u
#define LAPIC_ICR_ASSERT     0x00004000u
/* Called by the interrupt stub. */
void timer_interrupt(void);
/* End of interrupt, for the other host vectors (IDT_VECTOR_WAKE). */
void host_lapic_eoi(void);
/* Sets the local APIC's task priority back to 0, the host's: a VT-x guest
 * without a TPR shadow writes it with MOV CR8 (vmm/cpu_state.h). */
void lapic_tpr_clear(void);

#endif
