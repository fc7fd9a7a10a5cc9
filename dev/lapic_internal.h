/* What the local APIC model's files share (dev/lapic.h is the model and
 * its API; nothing outside dev/lapic*.c includes this header):
 *   dev/lapic.c        state, the register file (lapic_read/lapic_write), MMIO
 *   dev/lapic_irq.c    acceptance, priority, delivery and EOI (IRR/ISR/TMR)
 *   dev/lapic_ipi.c    interrupt messages: destinations, IPIs, INIT/STARTUP
 *   dev/lapic_timer.c  the APIC timer (one-shot, periodic, TSC deadline)
 *   dev/lapic_msr.c    IA32_APIC_BASE and the x2APIC MSR interface
 *   dev/lapic_apicv.c  what VT-x's APIC virtualization needs of the model */
#ifndef DEV_LAPIC_INTERNAL_H
#define DEV_LAPIC_INTERNAL_H

#include "dev/lapic.h"

#define LAPIC_VERSION_VALUE 0x00050014u /* version 0x14, max LVT entry 5 (6 LVTs) */

/* Writable bits of each LVT entry (delivery status and remote IRR are RO). */
extern const uint32_t lapic_lvt_rw_mask[LVT_COUNT];

/* ---- the copies of the model's registers in the register file ---- */

static inline void lapic_mirror(struct lapic *a, unsigned off, uint32_t v)
{
	a->regs[off >> 2] = v;
}

static inline void lapic_mirror_id(struct lapic *a)
{
	lapic_mirror(a, LAPIC_ID, lapic_x2apic(a) ? a->id : a->id << 24);
}

/* ---- bit arrays ---- */

/* lapic_highest_vec's scan, inline where the injection path or VT-x's TPR
 * threshold needs it without a call: three instructions a word. */
static inline __attribute__((always_inline)) int lapic_scan_highest(const struct lapic *a,
								     unsigned base)
{
	const uint32_t *w = lapic_vec_word(a, base, 0);
#pragma GCC unroll 8
	for (int i = 28; i >= 0; i -= 4)
		if (w[i])
			return i * 8 + 31 - __builtin_clz(w[i]);
	return -1;
}

/* ---- between the files ---- */

/* Power-up and INIT state of everything but the ID and APIC_BASE
 * (dev/lapic.c). */
void lapic_reset_registers(struct lapic *a);

/* A local error (ESR bits): latched, and the error LVT's interrupt
 * (dev/lapic_irq.c). */
void lapic_record_error(struct lapic *a, uint32_t bits);

/* Sends the IPI the ICR now holds (dev/lapic_ipi.c). */
void lapic_send_ipi(struct lapic *a);

/* The timer (dev/lapic_timer.c): its vm_timer callback; the next periodic
 * interrupt that waited for the last one (`taken`: the CPU just took that);
 * and the writes of the LVT timer entry (already masked to its writable
 * bits), the initial count and the divide configuration. */
void lapic_timer_fire(struct vm_timer *t, uint64_t now);
void lapic_timer_send_late(struct lapic *a, bool taken);
void lapic_timer_write_lvt(struct lapic *a, uint32_t v);
void lapic_timer_write_init(struct lapic *a, uint32_t v);
void lapic_timer_write_divide(struct lapic *a, uint32_t div);

#endif
