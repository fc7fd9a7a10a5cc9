/* Local APIC: one register file, two access paths (MMIO and x2APIC MSRs). */
#include "dev/lapic.h"

#include "dev/tick_math.h"
#include "lib/string.h"

#define LAPIC_VERSION_VALUE 0x00050014u /* version 0x14, max LVT entry 5 (6 LVTs) */

/* Writable bits of each LVT entry (delivery status and remote IRR are RO). */
static const uint32_t lvt_rw_mask[LVT_COUNT] = {
	[LVT_TIMER] = 0x000700ffu,   /* vector, mask, mode (17-18, 18 = TSC deadline) */
	[LVT_THERMAL] = 0x000107ffu, /* vector, delivery mode, mask */
	[LVT_PERF] = 0x000107ffu,
	[LVT_LINT0] = 0x0001a7ffu,   /* + polarity, trigger */
	[LVT_LINT1] = 0x0001a7ffu,
	[LVT_ERROR] = 0x000100ffu,
};

static void timer_fire(struct vm_timer *t, uint64_t now);

/* ---- bit arrays (ISR/TMR/IRR: 256 bits as eight 32-bit registers, 16
 * bytes apart in the register file) ---- */

/* IRR: another CPU (an IPI from a vCPU there) may set a bit while this
 * vCPU's CPU clears one (virtual-interrupt delivery): a locked OR, and one
 * for irr_words. The model clears IRR bits only in ack(), on the vCPU's own
 * injection path (with the VM lock in a VM of several vCPUs, as every set
 * there), which clears the word's irr_words bit with its last bit. */
static inline void set_irr_bit(struct lapic *a, uint32_t *irr, uint32_t bit, unsigned word)
{
	__atomic_or_fetch(irr, bit, __ATOMIC_RELAXED);
	__atomic_or_fetch(&a->irr_words, 1u << word, __ATOMIC_RELAXED);
}

static inline void set_irr(struct lapic *a, unsigned v)
{
	set_irr_bit(a, lapic_vec_word_of(a, LAPIC_IRR, v), 1u << (v & 31), v >> 5);
}
static inline void clr_vec(struct lapic *a, unsigned base, unsigned v)
{
	*lapic_vec_word_of(a, base, v) &= ~(1u << (v & 31));
}

int lapic_highest_vec(const struct lapic *a, unsigned base)
{
	/* unrolled: three instructions a word (the scan is on the injection
	 * path) */
	const uint32_t *w = lapic_vec_word(a, base, 0);
#pragma GCC unroll 8
	for (int i = 28; i >= 0; i -= 4)
		if (w[i])
			return i * 8 + 31 - __builtin_clz(w[i]);
	return -1;
}

/* The highest set bit of x, not 0 (31 ^ clz: one BSR, where 31 - clz
 * compiles to three instructions). */
static inline unsigned high_bit(uint32_t x)
{
	return 31u ^ (unsigned)__builtin_clz(x);
}

/* The highest vector in IRR or ISR (`base`), whose summary (irr_words or
 * isr_words: a bit per word that is not 0) names the word; a scan where the
 * CPU changes IRR and ISR itself. */
static inline __attribute__((always_inline)) int highest_in(const struct lapic *a, unsigned base,
							     const uint32_t *words)
{
	if (__builtin_expect(a->cpu_delivers, 0))
		return lapic_highest_vec(a, base);
	if (!*words)
		return -1;
	unsigned w = high_bit(*words);
	return (int)(w * 32 + high_bit(*lapic_vec_word(a, base, w)));
}

static inline __attribute__((always_inline)) int highest_irr(const struct lapic *a)
{
	return highest_in(a, LAPIC_IRR, &a->irr_words);
}

static inline __attribute__((always_inline)) int highest_isr(const struct lapic *a)
{
	return highest_in(a, LAPIC_ISR, &a->isr_words);
}

/* ---- the copies of the model's registers in the register file ---- */

static inline void mirror(struct lapic *a, unsigned off, uint32_t v)
{
	a->regs[off >> 2] = v;
}

static void mirror_id(struct lapic *a)
{
	mirror(a, LAPIC_ID, lapic_x2apic(a) ? a->id : a->id << 24);
}

static void mirror_lvts(struct lapic *a)
{
	for (unsigned i = 0; i < LVT_COUNT; i++)
		mirror(a, LAPIC_LVT_TIMER + 16 * i, a->lvt[i]);
}

static void mirror_all(struct lapic *a)
{
	mirror_id(a);
	mirror(a, LAPIC_VERSION, LAPIC_VERSION_VALUE);
	mirror(a, LAPIC_LDR, a->ldr);
	mirror(a, LAPIC_DFR, a->dfr);
	mirror(a, LAPIC_SVR, a->svr);
	mirror(a, LAPIC_ESR, a->esr);
	mirror(a, LAPIC_ICR_LO, a->icr_lo);
	mirror(a, LAPIC_ICR_HI, a->icr_hi);
	mirror_lvts(a);
	mirror(a, LAPIC_TIMER_INIT, a->timer_init);
	mirror(a, LAPIC_TIMER_DIV, a->timer_div);
}

/* ---- state ---- */

static void reset_registers(struct lapic *a)
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
	vm_timer_init(&a->timer, host, timer_fire, a);
	reset_registers(a);
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
	DEV_RANGES({ .base = LAPIC_BASE, .len = LAPIC_SIZE, .fn = lapic_mmio, .light = true }),
};

static uint32_t x2apic_ldr(uint32_t id)
{
	return ((id >> 4) << 16) | (1u << (id & 0xf));
}

/* ---- priority and delivery ---- */

/* (inline: the injection path's highest_pending needs it without a call) */
static inline __attribute__((always_inline)) uint32_t ppr(const struct lapic *a)
{
	int isrv = highest_isr(a);
	uint32_t isr_class = isrv < 0 ? 0 : ((uint32_t)isrv & 0xf0);
	uint32_t tpr = lapic_tpr(a);
	if ((tpr & 0xf0) >= isr_class)
		return tpr & 0xff;
	return isr_class;
}

uint32_t lapic_ppr(const struct lapic *a)
{
	return ppr(a);
}

void lapic_regs_move(struct lapic *a, uint32_t *page)
{
	if (page != a->regs)
		memcpy(page, a->regs, LAPIC_REG_WORDS * sizeof(uint32_t));
	a->regs = page;
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

static void timer_send_late(struct lapic *a, bool taken);

void lapic_eoi_done(struct lapic *a, uint8_t vector)
{
	if (lapic_vec_test(a, LAPIC_TMR, vector) && a->eoi_hook)
		a->eoi_hook(a->eoi_ctx, vector);
	if (a->timer_late && vector == (uint8_t)a->lvt[LVT_TIMER])
		timer_send_late(a, true);   /* lapic_ack's job, which nobody calls */
}

int lapic_eoi_exit_vector(const struct lapic *a)
{
	return a->timer_late ? (uint8_t)a->lvt[LVT_TIMER] : -1;
}

unsigned lapic_tpr_blocked_class(const struct lapic *a)
{
	int v = lapic_highest_vec(a, LAPIC_IRR);
	if (v < 0 || ((uint32_t)v & 0xf0) > (lapic_tpr(a) & 0xf0))
		return 0;
	return (unsigned)v >> 4;
}

static void record_error(struct lapic *a, uint32_t bits)
{
	a->esr_pending |= bits;
	uint32_t lvt = a->lvt[LVT_ERROR];
	uint8_t v = (uint8_t)lvt;
	if (!(lvt & LAPIC_LVT_MASKED) && v >= 16 && lapic_sw_enabled(a)) {
		clr_vec(a, LAPIC_TMR, v);
		a->changed |= LAPIC_CHANGED_TMR;
		set_irr(a, v);
	}
}

void lapic_accept(struct lapic *a, uint8_t vector, bool level)
{
	if (!lapic_hw_enabled(a))
		return;
	if (vector < 16) {
		record_error(a, LAPIC_ESR_RECV_ILLEGAL);
		return;
	}
	if (!lapic_sw_enabled(a))
		return; /* a software-disabled APIC takes no fixed interrupts */
	/* TMR before IRR: a vector in IRR always has its trigger mode (one
	 * address for both words: this is the light path's self-IPI) */
	uint32_t *tmr = lapic_vec_word_of(a, LAPIC_TMR, vector), bit = 1u << (vector & 31);
	if (__builtin_expect(((*tmr & bit) != 0) != level, 0)) {   /* the trigger mode changed */
		*tmr ^= bit;
		a->changed |= LAPIC_CHANGED_TMR;
	}
	set_irr_bit(a, tmr + (LAPIC_IRR - LAPIC_TMR) / 4, bit, vector >> 5u);
}

/* (inline: lapic_take_highest pairs them on the injection path) */
static inline __attribute__((always_inline)) int highest_pending(struct lapic *a)
{
	if (!lapic_hw_enabled(a))
		return -1;
	int v = highest_irr(a);
	if (v < 0)
		return -1;
	if (((uint32_t)v & 0xf0) <= (ppr(a) & 0xf0))
		return -1;
	return v;
}

static inline __attribute__((always_inline)) void ack(struct lapic *a, uint8_t vector)
{
	uint32_t *isr = lapic_vec_word_of(a, LAPIC_ISR, vector), bit = 1u << (vector & 31);
	if (!(isr[(LAPIC_IRR - LAPIC_ISR) / 4] &= ~bit))
		a->irr_words &= ~(1u << (vector >> 5));
	*isr |= bit;
	a->isr_words |= 1u << (vector >> 5);
	if (a->timer_late && vector == (uint8_t)a->lvt[LVT_TIMER])
		timer_send_late(a, true);   /* the next late period can wait in IRR now */
}

int lapic_highest_pending(struct lapic *a)
{
	return highest_pending(a);
}

void lapic_ack(struct lapic *a, uint8_t vector)
{
	ack(a, vector);
}

int lapic_take_highest(struct lapic *a)
{
	int v = highest_pending(a);
	if (v >= 0)
		ack(a, (uint8_t)v);
	return v;
}

/* A level-triggered vector's EOI reaches its source (the I/O APIC). Out of
 * line and reached by a tail call, so that lapic_eoi keeps nothing across a
 * call and needs no callee-saved register on the edge-triggered path. */
static __attribute__((noinline)) int eoi_level(struct lapic *a, int v)
{
	if (a->eoi_hook)
		a->eoi_hook(a->eoi_ctx, (uint8_t)v);
	return v;
}

int lapic_eoi(struct lapic *a)
{
	int v = highest_isr(a);
	if (v < 0)
		return -1;
	clr_vec(a, LAPIC_ISR, (unsigned)v);
	if (!*lapic_vec_word(a, LAPIC_ISR, (unsigned)v >> 5))
		a->isr_words &= ~(1u << (v >> 5));
	if (lapic_vec_test(a, LAPIC_TMR, (unsigned)v))
		return eoi_level(a, v);
	return v;
}

bool lapic_eoi_edge(struct lapic *a)
{
	int v = highest_isr(a);
	if (v >= 0 && lapic_vec_test(a, LAPIC_TMR, (unsigned)v))
		return false;
	lapic_eoi(a);
	return true;
}

bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical)
{
	if (lapic_x2apic(a)) {
		if (dest == 0xffffffffu)
			return true;
		if (!logical)
			return dest == a->id;
		return (dest >> 16) == (a->ldr >> 16) && (dest & a->ldr & 0xffff);
	}
	uint8_t d = (uint8_t)dest;
	if (d == 0xff)
		return true;
	if (!logical)
		return d == (uint8_t)a->id;
	uint8_t ldr = (uint8_t)(a->ldr >> 24);
	if ((a->dfr >> 28) == 0xf)      /* flat model */
		return d & ldr;
	/* cluster model: high nibble cluster, low nibble member mask */
	return (d >> 4) == (ldr >> 4) && (d & ldr & 0xf);
}

bool lapic_pic_intr_allowed(const struct lapic *a)
{
	if (!lapic_hw_enabled(a))
		return true;
	uint32_t lint0 = a->lvt[LVT_LINT0];
	return !(lint0 & LAPIC_LVT_MASKED) && LAPIC_LVT_DM(lint0) == LAPIC_DM_EXTINT;
}

/* ---- IPIs: the message goes on the VM's APIC bus ---- */

void lapic_set_send_hook(struct lapic *a, lapic_send_fn fn, void *ctx)
{
	a->send_hook = fn;
	a->send_ctx = ctx;
}

bool lapic_msg_targets(const struct lapic *a, const struct lapic *from, const struct apic_msg *m)
{
	switch (m->shorthand) {
	case LAPIC_SH_SELF:
		return a == from;
	case LAPIC_SH_ALL:
		return true;
	case LAPIC_SH_OTHERS:
		return a != from;
	default:
		return lapic_match_dest(a, m->dest, m->logical);
	}
}

void lapic_msg_receive(struct lapic *a, const struct apic_msg *m)
{
	switch (m->delivery_mode) {
	case LAPIC_DM_FIXED:
	case LAPIC_DM_LOWEST:
		lapic_accept(a, m->vector, m->level);
		break;
	case LAPIC_DM_NMI:
		a->nmi_pending = true;
		break;
	case LAPIC_DM_INIT:
		if (a->apic_base & APIC_BASE_BSP)
			break;   /* see lapic.h: no firmware to restart */
		reset_registers(a);
		a->init_pending = a->wait_sipi = true;
		a->sipi_pending = false;
		break;
	case LAPIC_DM_SIPI:
		if (a->wait_sipi) {
			a->wait_sipi = false;
			a->sipi_pending = true;
			a->sipi_vector = m->vector;
		}
		break;
	default: /* SMI, ExtINT: see lapic.h */
		break;
	}
}

int64_t lapic_fixed_unicast_dest(const struct lapic *a, uint64_t icr)
{
	uint32_t lo = (uint32_t)icr;
	/* delivery mode, destination mode, trigger mode and shorthand all 0, a
	 * legal vector; in x2APIC mode no reserved bit (lapic_msr's #GP) */
	uint32_t must_be_0 = lapic_x2apic(a) ? 0xfff3bf00u : 0x000cbf00u;
	if (!lapic_hw_enabled(a) || (lo & must_be_0) || (uint8_t)lo < 16)
		return -1;
	if (lapic_x2apic(a))
		return (int64_t)(icr >> 32);
	uint8_t dest = (uint8_t)(a->icr_hi >> 24);
	return dest == 0xff ? -1 : dest;   /* 0xFF: the broadcast */
}

void lapic_icr_record(struct lapic *a, uint64_t icr)
{
	if (lapic_x2apic(a)) {
		a->icr_hi = (uint32_t)(icr >> 32);
		mirror(a, LAPIC_ICR_HI, a->icr_hi);
	}
	a->icr_lo = (uint32_t)icr & 0x000ccfffu;
	mirror(a, LAPIC_ICR_LO, a->icr_lo);
}

static void send_ipi(struct lapic *a)
{
	uint32_t lo = a->icr_lo;
	struct apic_msg m = {
		.dest = lapic_x2apic(a) ? a->icr_hi : a->icr_hi >> 24,
		.vector = (uint8_t)lo,
		.delivery_mode = (uint8_t)((lo >> 8) & 7),
		.shorthand = (uint8_t)((lo >> 18) & 3),
		.logical = lo & (1u << 11),
		.level = false,   /* an IPI is never routed back to the I/O APIC */
	};
	/* INIT level de-assert (level-triggered, level 0): ignored by every
	 * CPU since the Pentium 4 (SDM vol. 3 11.6.1) */
	if (m.delivery_mode == LAPIC_DM_INIT && (lo & (1u << 15)) && !(lo & (1u << 14)))
		return;
	if ((m.delivery_mode == LAPIC_DM_FIXED || m.delivery_mode == LAPIC_DM_LOWEST) &&
	    m.vector < 16) {
		record_error(a, LAPIC_ESR_SEND_ILLEGAL);
		return;
	}
	if (a->send_hook)
		a->send_hook(a->send_ctx, a, &m);
	else if (lapic_msg_targets(a, a, &m))
		lapic_msg_receive(a, &m);
}

/* ---- timer ---- */

static unsigned divide_shift(uint32_t div)
{
	unsigned v = (div & 3) | ((div & 8) >> 1);
	return (v + 1) & 7; /* 0b111 -> divide by 1 */
}

static uint64_t bus_ticks(const struct lapic *a, uint64_t tsc_delta)
{
	return muldiv64(tsc_delta, LAPIC_BUS_HZ, a->tsc_hz);
}

static uint64_t tsc_for_ticks(const struct lapic *a, uint64_t ticks)
{
	return muldiv64_ceil(ticks, a->tsc_hz, LAPIC_BUS_HZ);
}

static uint64_t timer_period(const struct lapic *a)
{
	return (uint64_t)a->timer_init << divide_shift(a->timer_div);
}

static void timer_deliver(struct lapic *a)
{
	uint32_t lvt = a->lvt[LVT_TIMER];
	a->timer_fires++;
	if (!(lvt & LAPIC_LVT_MASKED))
		lapic_accept(a, (uint8_t)lvt, false);
}

/* Accepts the next periodic interrupt due unless the last one still waits
 * in IRR (it would merge with it); `taken`: the CPU just took one. A masked
 * LVT drops them: the count goes on, no interrupt is sent. */
static void timer_send_late(struct lapic *a, bool taken)
{
	uint32_t lvt = a->lvt[LVT_TIMER];
	if (lvt & LAPIC_LVT_MASKED) {
		a->timer_late = 0;
		return;
	}
	if (!a->timer_late || lapic_vec_test(a, LAPIC_IRR, (uint8_t)lvt))
		return;
	if (taken || a->timer_late > 1)   /* not the period that just ended */
		a->timer_fires_late++;
	a->timer_late--;
	timer_deliver(a);
}

/* A (re)start moves an armed timer with vm_timer_arm alone: a cancel first
 * would program the host timer once more for nothing. */
static void timer_start(struct lapic *a, uint64_t now)
{
	a->timer_running = a->timer_init != 0;
	a->timer_periods = 0;
	a->timer_late = 0;
	if (!a->timer_running) {
		vm_timer_cancel(&a->timer);
		return;
	}
	a->timer_start = now;
	vm_timer_arm(&a->timer, now + tsc_for_ticks(a, timer_period(a)));
}

static void deadline_arm(struct lapic *a, uint64_t now)
{
	if (!a->tsc_deadline) {
		vm_timer_cancel(&a->timer);
		return;
	}
	/* Due once the guest's TSC has reached it: an unsigned compare in guest
	 * TSC, as the CPU makes it (around a wrap of the guest's TSC, which its
	 * IA32_TSC writes can bring near, not of the VM's time). Armed in the
	 * VM's time (the clock without those writes), in which the timer
	 * service counts; one beyond its range never fires. */
	uint64_t guest_now = now + (uint64_t)a->tsc_offset;
	if (a->tsc_deadline <= guest_now) {
		if (a->timer.armed)   /* not when it fired: vm_timers_run disarmed it */
			vm_timer_cancel(&a->timer);
		a->tsc_deadline = 0;
		timer_deliver(a);
		return;
	}
	uint64_t ahead = a->tsc_deadline - guest_now;
	vm_timer_arm(&a->timer, ahead > UINT64_MAX - now ? UINT64_MAX : now + ahead);
}

/* A one-shot or periodic count's expiry (out of line: the deadline's path
 * in timer_fire then saves no register). */
static __attribute__((noinline)) void timer_fire_count(struct vm_timer *t, struct lapic *a,
							unsigned mode, uint64_t now)
{
	if (!a->timer_running)
		return;
	uint64_t period = timer_period(a);
	uint64_t elapsed = bus_ticks(a, now - a->timer_start);
	if (elapsed < period) { /* early: wait for the rest */
		vm_timer_arm(t, a->timer_start + tsc_for_ticks(a, period));
		return;
	}
	if (mode != LAPIC_TIMER_PERIODIC) {
		a->timer_running = false;
		timer_deliver(a);
		return;
	}
	/* Every period that ended is one interrupt: those the guest could not
	 * take yet (the last still in IRR) are sent as it takes them. */
	uint64_t k = elapsed / period, late = a->timer_late + (k - a->timer_periods);
	a->timer_periods = k;
	a->timer_late = late > LAPIC_MAX_LATE ? LAPIC_MAX_LATE : (uint32_t)late;
	timer_send_late(a, false);
	vm_timer_arm(t, a->timer_start + tsc_for_ticks(a, (k + 1) * period));
}

static void timer_fire(struct vm_timer *t, uint64_t now)
{
	struct lapic *a = t->opaque;
	unsigned mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);

	if (mode == LAPIC_TIMER_TSCDEADLINE) {
		if (a->tsc_deadline)
			deadline_arm(a, now); /* delivers if due, re-arms if early */
		return;
	}
	timer_fire_count(t, a, mode, now);
}

static uint32_t timer_current_at(const struct lapic *a, uint64_t now)
{
	unsigned mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);
	if (!a->timer_running || mode == LAPIC_TIMER_TSCDEADLINE)
		return 0;
	uint64_t counts = bus_ticks(a, now - a->timer_start) >> divide_shift(a->timer_div);
	if (mode == LAPIC_TIMER_PERIODIC)
		return a->timer_init - (uint32_t)(counts % a->timer_init);
	return counts >= a->timer_init ? 0 : a->timer_init - (uint32_t)counts;
}

uint32_t lapic_timer_current(struct lapic *a)
{
	return timer_current_at(a, clock_access(a->clock, true));
}

static void write_lvt_timer(struct lapic *a, uint32_t v)
{
	unsigned old_mode = LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]);
	unsigned new_mode = LAPIC_TIMER_MODE(v);
	a->lvt[LVT_TIMER] = v;
	mirror(a, LAPIC_LVT_TIMER, v);
	/* Switching into or out of TSC-deadline mode disarms the timer and
	 * clears both the initial count and the deadline. One-shot <-> periodic
	 * keeps counting; the mode applies at the next expiry. */
	if ((old_mode == LAPIC_TIMER_TSCDEADLINE) != (new_mode == LAPIC_TIMER_TSCDEADLINE)) {
		vm_timer_cancel(&a->timer);
		a->timer_running = false;
		a->timer_init = 0;
		mirror(a, LAPIC_TIMER_INIT, 0);
		a->tsc_deadline = 0;
	}
}

/* A new divisor applies from now on: the current count keeps its value and
 * goes on counting at the new rate (the period end moves accordingly). */
static void write_divide(struct lapic *a, uint32_t div)
{
	if (!a->timer_running || LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE) {
		a->timer_div = div;
		mirror(a, LAPIC_TIMER_DIV, div);
		return;
	}
	uint64_t now = clock_access(a->clock, false);
	uint32_t cur = timer_current_at(a, now);
	a->timer_div = div;
	mirror(a, LAPIC_TIMER_DIV, div);
	if (!cur) {
		a->timer_running = false;
		vm_timer_cancel(&a->timer);
		return;
	}
	/* Pretend the count was loaded when, at the new rate, it would have
	 * reached `cur` now. */
	uint64_t done = (uint64_t)(a->timer_init - cur) << divide_shift(div);
	a->timer_start = now - tsc_for_ticks(a, done);
	a->timer_periods = 0;   /* within the first period of the new start */
	vm_timer_arm(&a->timer, a->timer_start + tsc_for_ticks(a, timer_period(a)));
}

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
		v &= lvt_rw_mask[i];
		if (!(a->svr & LAPIC_SVR_ENABLE))
			v |= LAPIC_LVT_MASKED; /* software-disabled: LVTs stay masked */
		if (i == LVT_TIMER) {
			write_lvt_timer(a, v);
		} else {
			a->lvt[i] = v | (a->lvt[i] & LAPIC_LVT_REMOTE_IRR);
			mirror(a, off, a->lvt[i]);
		}
		return;
	}

	switch (off) {
	case LAPIC_ID:
		if (!lapic_x2apic(a))
			a->id = v >> 24;
		mirror_id(a);
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
		mirror(a, LAPIC_LDR, a->ldr);
		break;
	case LAPIC_DFR:
		if (!lapic_x2apic(a))
			a->dfr = v | 0x0fffffffu;
		mirror(a, LAPIC_DFR, a->dfr);
		break;
	case LAPIC_SVR:
		/* vector, APIC enable, focus check disable; no EOI-broadcast
		 * suppression (version bit 24 is clear) */
		a->svr = v & 0x3ff;
		mirror(a, LAPIC_SVR, a->svr);
		if (!(a->svr & LAPIC_SVR_ENABLE)) {
			for (unsigned i = 0; i < LVT_COUNT; i++)
				a->lvt[i] |= LAPIC_LVT_MASKED;
			mirror_lvts(a);
		}
		break;
	case LAPIC_ESR:
		a->esr = a->esr_pending;
		a->esr_pending = 0;
		mirror(a, LAPIC_ESR, a->esr);
		break;
	case LAPIC_ICR_LO:
		if (lapic_x2apic(a)) {
			a->icr_hi = (uint32_t)(value >> 32);
			a->icr_lo = v & 0x000ccfffu;
		} else {
			a->icr_lo = v & 0x000ccfffu;
		}
		mirror(a, LAPIC_ICR_LO, a->icr_lo);
		mirror(a, LAPIC_ICR_HI, a->icr_hi);
		send_ipi(a);
		break;
	case LAPIC_ICR_HI:
		if (!lapic_x2apic(a))
			a->icr_hi = v & 0xff000000u;
		mirror(a, LAPIC_ICR_HI, a->icr_hi);
		break;
	case LAPIC_TIMER_INIT:
		if (LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE)
			break; /* ignored in TSC-deadline mode */
		a->timer_init = v;
		mirror(a, LAPIC_TIMER_INIT, v);
		timer_start(a, clock_access(a->clock, false));
		break;
	case LAPIC_TIMER_DIV:
		write_divide(a, v & 0xb);
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

int lapic_mmio(struct vcpu *vcpu, uint64_t addr, uint64_t *data, unsigned size,
	       bool is_write, void *opaque)
{
	struct lapic *a = opaque;
	(void)vcpu;
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

/* ---- MSRs (x2APIC) ---- */

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
		return lvt_rw_mask[(off - LAPIC_LVT_TIMER) >> 4] | LAPIC_LVT_DELIVS |
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
		reset_registers(a);
	if (extd && !was_x2)
		a->ldr = x2apic_ldr(a->id);
	mirror(a, LAPIC_LDR, a->ldr);
	mirror_id(a);
	return 0;
}

void lapic_tsc_deadline_write(struct lapic *a, uint64_t value)
{
	/* Outside TSC-deadline mode (or with the APIC disabled) the write is
	 * ignored. */
	if (lapic_hw_enabled(a) && LAPIC_TIMER_MODE(a->lvt[LVT_TIMER]) == LAPIC_TIMER_TSCDEADLINE) {
		a->tsc_deadline = value;
		deadline_arm(a, clock_access(a->clock, false));
	}
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
