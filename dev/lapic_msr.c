/* Local APIC: IA32_APIC_BASE and its mode transitions, and the x2APIC MSR
 * interface (0x800-0x8FF) with its access rules. The files of the model:
 * dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

static uint32_t x2apic_ldr(uint32_t id)
{
	return ((id >> 4) << 16) | (1u << (id & 0xf));
}

enum { R = 1, W = 2 };

static unsigned x2apic_access(unsigned off)
{
	if (off >= LAPIC_ISR && off < LAPIC_IRR + 0x80)
		return R;                       /* ISR, TMR, IRR */
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return R | W;
	switch (off) {
	case LAPIC_ID: case LAPIC_VERSION: case LAPIC_PPR: case LAPIC_LDR: case LAPIC_TIMER_CUR:
		return R;
	case LAPIC_TPR: case LAPIC_SVR: case LAPIC_ESR: case LAPIC_ICR_LO:
	case LAPIC_TIMER_INIT: case LAPIC_TIMER_DIV:
		return R | W;
	case LAPIC_EOI: case LAPIC_SELF_IPI:
		return W;
	default: /* APR, RRD, DFR, CMCI, ICR high, reserved */
		return 0;
	}
}

/* x2APIC: the bits a WRMSR may set (SDM vol. 3 11.12.1.3: a non-zero
 * reserved bit is #GP). The LVTs' read-only delivery status and remote IRR
 * are not reserved: a read-modify-write carries them, the write ignores
 * them. ICR, EOI, ESR and SELF IPI are checked by lapic_msr itself. */
static uint32_t x2apic_writable(unsigned off)
{
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return lapic_lvt_rw_mask[(off - LAPIC_LVT_TIMER) >> 4] | LAPIC_LVT_DELIVS |
		       LAPIC_LVT_REMOTE_IRR;
	switch (off) {
	case LAPIC_TPR:
		return 0xff;
	case LAPIC_SVR:
		return 0x3ff;   /* no EOI-broadcast suppression (version bit 24) */
	case LAPIC_TIMER_DIV:
		return 0xb;
	default:
		return 0xffffffffu;
	}
}

int lapic_set_base(struct lapic *a, uint64_t value)
{
	/* Reserved: bits 0-7, 9, and above the 52-bit physical address. */
	if (value & (0xffull | (1ull << 9) | 0xfff0000000000000ull))
		return LAPIC_GP;
	bool en = value & APIC_BASE_EN, extd = value & APIC_BASE_EXTD;
	bool was_en = lapic_hw_enabled(a), was_x2 = lapic_x2apic(a);

	if (extd && !en)
		return LAPIC_GP;                /* invalid state */
	if (was_x2 && en && !extd)
		return LAPIC_GP;                /* x2APIC -> xAPIC must go through disabled */
	if (!was_en && extd)
		return LAPIC_GP;                /* disabled -> x2APIC must go through xAPIC */

	a->apic_base = (value & ~APIC_BASE_BSP) | (a->apic_base & APIC_BASE_BSP);
	if (!en && was_en)
		lapic_reset_registers(a);
	if (extd && !was_x2)
		a->ldr = x2apic_ldr(a->id);
	lapic_mirror(a, LAPIC_LDR, a->ldr);
	lapic_mirror_id(a);
	return 0;
}

int lapic_msr(struct lapic *a, uint32_t msr, uint64_t *value, bool is_write)
{
	/* the EOI first: the most frequent write in x2APIC mode */
	if (msr == MSR_X2APIC_FIRST + (LAPIC_EOI >> 4) && is_write && lapic_x2apic(a)) {
		if (*value)
			return LAPIC_GP;
		lapic_eoi(a);
		return 0;
	}
	if (msr == MSR_APIC_BASE) {
		if (is_write)
			return lapic_set_base(a, *value);
		*value = a->apic_base;
		return 0;
	}
	if (msr == MSR_TSC_DEADLINE) {
		if (is_write)
			lapic_tsc_deadline_write(a, *value);
		else
			*value = a->tsc_deadline;
		return 0;
	}
	if (msr < MSR_X2APIC_FIRST || msr > MSR_X2APIC_LAST || !lapic_x2apic(a))
		return LAPIC_GP;

	unsigned off = (msr - MSR_X2APIC_FIRST) << 4;
	unsigned access = x2apic_access(off);
	if (!is_write) {
		if (!(access & R))
			return LAPIC_GP;
		*value = lapic_read(a, off);
		return 0;
	}
	if (!(access & W))
		return LAPIC_GP;
	uint64_t v = *value;
	if (off == LAPIC_ICR_LO) {
		/* reserved: 12-13 (no delivery status in x2APIC), 16-17, 20-31 */
		if (v & 0xfff33000ull)
			return LAPIC_GP;
	} else if ((v >> 32) || (v & ~(uint64_t)x2apic_writable(off))) {
		return LAPIC_GP;
	}
	if ((off == LAPIC_EOI || off == LAPIC_ESR) && v)
		return LAPIC_GP;
	if (off == LAPIC_SELF_IPI && (v & ~0xffull))
		return LAPIC_GP;
	lapic_write(a, off, v);
	return 0;
}
