/* Local APIC: the model's state and its register file, read and written
 * by xAPIC offset (lapic_read/lapic_write: the MMIO page here, the x2APIC
 * MSRs in dev/lapic_msr.c). The files of the model: dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

#include "dev/tick_math.h"
#include "lib/string.h"

const uint32_t lapic_lvt_rw_mask[LVT_COUNT] = {
	[LVT_TIMER] = 0x000700ffu,   /* vector, mask, mode (17-18, 18 = TSC deadline) */
	[LVT_THERMAL] = 0x000107ffu, /* vector, delivery mode, mask */
	[LVT_PERF] = 0x000107ffu,
	[LVT_LINT0] = 0x0001a7ffu,   /* + polarity, trigger */
	[LVT_LINT1] = 0x0001a7ffu,
	[LVT_ERROR] = 0x000100ffu,
};

/* ---- the copies of the model's registers in the register file ---- */

static void mirror_lvts(struct lapic *a)
{
	for (unsigned i = 0; i < LVT_COUNT; i++)
		lapic_mirror(a, LAPIC_LVT_TIMER + 16 * i, a->lvt[i]);
}

static void mirror_all(struct lapic *a)
{
	lapic_mirror_id(a);
	lapic_mirror(a, LAPIC_VERSION, LAPIC_VERSION_VALUE);
	lapic_mirror(a, LAPIC_LDR, a->ldr);
	lapic_mirror(a, LAPIC_DFR, a->dfr);
	lapic_mirror(a, LAPIC_SVR, a->svr);
	lapic_mirror(a, LAPIC_ESR, a->esr);
	lapic_mirror(a, LAPIC_ICR_LO, a->icr_lo);
	lapic_mirror(a, LAPIC_ICR_HI, a->icr_hi);
	mirror_lvts(a);
	lapic_mirror(a, LAPIC_TIMER_INIT, a->timer_init);
	lapic_mirror(a, LAPIC_TIMER_DIV, a->timer_div);
}

/* ---- state ---- */

void lapic_reset_registers(struct lapic *a)
{
	vm_timer_cancel(&a->timer);
	a->svr = 0xff;
	a->ldr = 0;
	a->dfr = 0xffffffffu;
	a->esr = a->esr_pending = 0;
	a->icr_lo = a->icr_hi = 0;
	/* TPR, ISR, TMR, IRR and the rest of the register file */
	memset(a->regs, 0, LAPIC_REG_WORDS * sizeof(uint32_t));
	a->isr_words = 0;
	a->irr_words = 0;
	a->changed = LAPIC_CHANGED_TMR | LAPIC_CHANGED_ISR;
	for (unsigned i = 0; i < LVT_COUNT; i++)
		a->lvt[i] = LAPIC_LVT_MASKED;
	a->timer_init = 0;
	a->timer_div = 0;
	a->timer_running = false;
	a->tsc_deadline = 0;
	a->nmi_pending = false;
	mirror_all(a);
}

void lapic_init(struct lapic *a, struct dev_host *host, uint32_t apic_id, bool bsp)
{
	memset(a, 0, sizeof(*a));
	a->regs = a->regs_own;
	a->id = apic_id;
	a->apic_base = LAPIC_BASE | APIC_BASE_EN | (bsp ? APIC_BASE_BSP : 0);
	a->wait_sipi = !bsp;   /* an AP waits for its STARTUP from power-up */
	a->clock = dev_clock(host);
	a->tsc_hz = platform_tsc_hz();
	if (!a->tsc_hz)
		a->tsc_hz = TICK_DEFAULT_TSC_HZ;
	vm_timer_init(&a->timer, host, lapic_timer_fire, a);
	lapic_reset_registers(a);
}

void lapic_firmware_setup(struct lapic *a)
{
	a->svr |= LAPIC_SVR_ENABLE;
	a->lvt[LVT_LINT0] = (LAPIC_DM_EXTINT << 8) | LAPIC_LVT_LEVEL; /* 0x8700, unmasked */
	a->lvt[LVT_LINT1] = (LAPIC_DM_NMI << 8) | LAPIC_LVT_LEVEL;    /* 0x8400 */
	mirror_all(a);
}

void lapic_set_eoi_hook(struct lapic *a, lapic_eoi_fn fn, void *ctx)
{
	a->eoi_hook = fn;
	a->eoi_ctx = ctx;
}

const struct dev_desc lapic_desc = {
	.name = "lapic", .mmio = true,
	.lock_free = true,   /* the page is each vCPU's own */
	/* no init: each vCPU's is lapic_init'ed with its APIC ID */
	DEV_RANGES({ .base = LAPIC_BASE, .len = LAPIC_SIZE, .fn = lapic_mmio, .light = true }),
};

/* ---- register file ---- */

uint64_t lapic_read(struct lapic *a, unsigned off)
{
	off &= 0xff0;
	if (off >= LAPIC_ISR && off < LAPIC_IRR + 0x80)   /* ISR, TMR, IRR */
		return a->regs[off >> 2];
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return a->lvt[(off - LAPIC_LVT_TIMER) >> 4];

	switch (off) {
	case LAPIC_ID:
		return lapic_x2apic(a) ? a->id : a->id << 24;
	case LAPIC_VERSION:
		return LAPIC_VERSION_VALUE;
	case LAPIC_TPR:
		return lapic_tpr(a);
	case LAPIC_PPR:
		return lapic_ppr(a);
	case LAPIC_LDR:
		return a->ldr;
	case LAPIC_DFR:
		return a->dfr;
	case LAPIC_SVR:
		return a->svr;
	case LAPIC_ESR:
		return a->esr;
	case LAPIC_ICR_LO:
		if (lapic_x2apic(a))
			return ((uint64_t)a->icr_hi << 32) | a->icr_lo;
		return a->icr_lo; /* delivery status: always idle */
	case LAPIC_ICR_HI:
		return a->icr_hi;
	case LAPIC_TIMER_INIT:
		return a->timer_init;
	case LAPIC_TIMER_CUR:
		return lapic_timer_current(a);
	case LAPIC_TIMER_DIV:
		return a->timer_div;
	default: /* APR, EOI, RRD, SELF IPI, reserved */
		return 0;
	}
}

void lapic_write(struct lapic *a, unsigned off, uint64_t value)
{
	uint32_t v = (uint32_t)value;
	off &= 0xff0;

	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR) {
		unsigned i = (off - LAPIC_LVT_TIMER) >> 4;
		v &= lapic_lvt_rw_mask[i];
		if (!(a->svr & LAPIC_SVR_ENABLE))
			v |= LAPIC_LVT_MASKED; /* software-disabled: LVTs stay masked */
		if (i == LVT_TIMER) {
			lapic_timer_write_lvt(a, v);
		} else {
			a->lvt[i] = v | (a->lvt[i] & LAPIC_LVT_REMOTE_IRR);
			lapic_mirror(a, off, a->lvt[i]);
		}
		return;
	}

	switch (off) {
	case LAPIC_ID:
		if (!lapic_x2apic(a))
			a->id = v >> 24;
		lapic_mirror_id(a);
		break;
	case LAPIC_TPR:
		a->regs[LAPIC_TPR >> 2] = v & 0xff;
		break;
	case LAPIC_EOI:
		lapic_eoi(a);
		break;
	case LAPIC_LDR:
		if (!lapic_x2apic(a))
			a->ldr = v & 0xff000000u;
		lapic_mirror(a, LAPIC_LDR, a->ldr);
		break;
	case LAPIC_DFR:
		if (!lapic_x2apic(a))
			a->dfr = v | 0x0fffffffu;
		lapic_mirror(a, LAPIC_DFR, a->dfr);
		break;
	case LAPIC_SVR:
		/* vector, APIC enable, focus check disable; no EOI-broadcast
		 * suppression (version bit 24 is clear) */
		a->svr = v & 0x3ff;
		lapic_mirror(a, LAPIC_SVR, a->svr);
		if (!(a->svr & LAPIC_SVR_ENABLE)) {
			for (unsigned i = 0; i < LVT_COUNT; i++)
				a->lvt[i] |= LAPIC_LVT_MASKED;
			mirror_lvts(a);
		}
		break;
	case LAPIC_ESR:
		a->esr = a->esr_pending;
		a->esr_pending = 0;
		lapic_mirror(a, LAPIC_ESR, a->esr);
		break;
	case LAPIC_ICR_LO:
		if (lapic_x2apic(a)) {
			a->icr_hi = (uint32_t)(value >> 32);
			a->icr_lo = v & 0x000ccfffu;
		} else {
			a->icr_lo = v & 0x000ccfffu;
		}
		lapic_mirror(a, LAPIC_ICR_LO, a->icr_lo);
		lapic_mirror(a, LAPIC_ICR_HI, a->icr_hi);
		lapic_send_ipi(a);
		break;
	case LAPIC_ICR_HI:
		if (!lapic_x2apic(a))
			a->icr_hi = v & 0xff000000u;
		lapic_mirror(a, LAPIC_ICR_HI, a->icr_hi);
		break;
	case LAPIC_TIMER_INIT:
		lapic_timer_write_init(a, v);
		break;
	case LAPIC_TIMER_DIV:
		lapic_timer_write_divide(a, v & 0xb);
		break;
	case LAPIC_SELF_IPI:
		if (lapic_x2apic(a))
			lapic_accept(a, (uint8_t)v, false);
		break;
	default: /* version, PPR, ISR/TMR/IRR, current count, APR, RRD: RO */
		break;
	}
}

/* ---- MMIO (xAPIC) ---- */

int lapic_mmio(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct lapic *a = opaque;
	uint64_t off = addr - LAPIC_BASE;
	bool decoded = lapic_hw_enabled(a) && !lapic_x2apic(a);

	if (is_write) {
		/* Registers are 32 bits wide, at 16-byte strides. */
		if (decoded && (off & 0xf) == 0 && size >= 4 && off < LAPIC_SIZE &&
		    off != LAPIC_SELF_IPI)
			lapic_write(a, (unsigned)off, (uint32_t)*data);
		return IO_OK;
	}
	uint64_t v;
	if (!decoded || off >= LAPIC_SIZE)
		v = ~0ull;
	else if ((off & 0xf) >= 4)
		v = 0;
	else
		v = (lapic_read(a, (unsigned)off) & 0xffffffffu) >> (8 * (off & 3));
	if (size < 8)
		v &= (1ull << (8 * size)) - 1;
	*data = v;
	return IO_OK;
}

