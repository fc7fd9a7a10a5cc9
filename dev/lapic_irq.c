/* Local APIC: interrupt acceptance (IRR, TMR), priority (TPR, PPR),
 * delivery to the CPU (IRR -> ISR) and EOI. The files of the model:
 * dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

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
	return lapic_scan_highest(a, base);
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
		return lapic_scan_highest(a, base);
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

void lapic_record_error(struct lapic *a, uint32_t bits)
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
		lapic_record_error(a, LAPIC_ESR_RECV_ILLEGAL);
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
		lapic_timer_send_late(a, true);   /* the next late period can wait in IRR now */
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

bool lapic_pic_intr_allowed(const struct lapic *a)
{
	if (!lapic_hw_enabled(a))
		return true;
	uint32_t lint0 = a->lvt[LVT_LINT0];
	return !(lint0 & LAPIC_LVT_MASKED) && LAPIC_LVT_DM(lint0) == LAPIC_DM_EXTINT;
}

