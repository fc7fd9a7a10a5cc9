/* Local APIC: what VT-x's APIC virtualization needs of the model (the
 * declarations are in dev/lapic.h, "APIC virtualization"): the register
 * file in the virtual-APIC page, the CPU's own delivery and EOIs, the
 * writes the CPU stored there, and what VM entry's TPR threshold and
 * EOI-exit bitmap follow. The files of the model: dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

#include "lib/string.h"

void lapic_regs_move(struct lapic *a, uint32_t *page)
{
	if (page != a->regs)
		memcpy(page, a->regs, LAPIC_REG_WORDS * sizeof(uint32_t));
	a->regs = page;
}

void lapic_regs_move_back(struct lapic *a)
{
	lapic_regs_move(a, a->regs_own);
}

void lapic_set_cpu_delivers(struct lapic *a, bool on)
{
	a->cpu_delivers = on;
	a->changed = LAPIC_CHANGED_TMR | LAPIC_CHANGED_ISR;
	a->isr_words = a->irr_words = 0;
	for (unsigned i = 0; i < 8; i++) {
		if (*lapic_vec_word(a, LAPIC_ISR, i))
			a->isr_words |= 1u << i;
		if (*lapic_vec_word(a, LAPIC_IRR, i))
			a->irr_words |= 1u << i;
	}
}

void lapic_eoi_done(struct lapic *a, uint8_t vector)
{
	if (lapic_vec_test(a, LAPIC_TMR, vector) && a->eoi_hook)
		a->eoi_hook(a->eoi_ctx, vector);
	if (a->timer_late && vector == (uint8_t)a->lvt[LVT_TIMER])
		lapic_timer_send_late(a, true);   /* lapic_ack's job, which nobody calls */
}

void lapic_apicv_write(struct lapic *a, unsigned off)
{
	uint32_t value = a->regs[off >> 2];
	if (off == LAPIC_ICR_LO)
		lapic_write(a, LAPIC_ICR_HI, a->regs[LAPIC_ICR_HI >> 2]);
	lapic_write(a, off, value);
	a->regs[off >> 2] = off == LAPIC_SELF_IPI ? 0 : (uint32_t)lapic_read(a, off);
}

int lapic_eoi_exit_vector(const struct lapic *a)
{
	return a->timer_late ? (uint8_t)a->lvt[LVT_TIMER] : -1;
}

unsigned lapic_tpr_blocked_class(const struct lapic *a)
{
	int v = lapic_scan_highest(a, LAPIC_IRR);
	if (v < 0 || ((uint32_t)v & 0xf0) > (lapic_tpr(a) & 0xf0))
		return 0;
	return (unsigned)v >> 4;
}
