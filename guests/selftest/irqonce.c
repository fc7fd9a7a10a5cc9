/* irqonce: every interrupt exactly once. Long random
 * sequences of self-IPIs on eight vectors (four priority classes), LAPIC
 * timer one-shots, TPR changes (the APIC's TPR; CR8 in 64-bit mode) and
 * every kind of interrupt window: `sti; nop; cli`, `sti; hlt; cli`, a
 * window opened by lowering the TPR, and IF=0 stretches. The guest keeps
 * the set of vectors it has sent and not yet received: a handler that runs
 * for a vector not in the set is a duplicate, one still in the set after
 * the final window is lost. A fixed IPI to a vector already waiting in IRR
 * merges with it on a CPU, so one is sent only when its vector is idle.
 * The same for the timer: re-armed only after its interrupt came.
 * Every interrupt must find the code it interrupts with IF=1: one taken in
 * IF=0 code breaks the guest's own `outstanding` test before `sti; hlt`
 * and its read-modify-writes of `outstanding` (Bochs 2.7's VT-x did that:
 * docs/TESTING.md, "Bochs 2.7: virtual interrupts into IF=0 code").
 * Runs in xAPIC and then x2APIC mode. Built flat 32-bit (irqonce32.elf) and
 * 64-bit paged (irqonce64.elf). n=OPS per mode (default 40000). */
#include "guests/rt/rt.h"

#ifdef __x86_64__
#define NAME "irqonce64"
#else
#define NAME "irqonce32"
#endif

#define LAPIC_TPR      0x080u
#define LAPIC_EOI      0x0b0u
#define LAPIC_ISR      0x100u
#define LAPIC_IRR      0x200u
#define LAPIC_ICR_LO   0x300u
#define LAPIC_LVT_TMR  0x320u
#define LAPIC_TMR_INIT 0x380u
#define LAPIC_TMR_DIV  0x3e0u
#define APIC_BASE_EXTD (1u << 10)
#define ICR_SELF       (1u << 18)
#define VEC_FIRST      0x50u        /* 0x50..0x57 and 0x60..0x67... see vec_of */
#define NVEC           8u
#define VEC_TIMER      0x48u

static bool x2apic;
static volatile uint32_t outstanding;      /* bit i: vector vec_of(i) sent, not yet received */
static volatile unsigned received, duplicates, timer_armed, timer_hits, timer_dups;
static volatile unsigned in_if0;          /* interrupts whose frame has IF=0 */

/* Eight vectors in four classes: 0x50 0x58 0x60 0x68 0x70 0x78 0x80 0x88. */
static unsigned vec_of(unsigned i) { return VEC_FIRST + 8 * i; }

static void apic_write(unsigned off, uint32_t val) { rt_apic_write(x2apic, off, val); }

static void on_ipi(struct rt_frame *f)
{
	unsigned i = (unsigned)(f->vector - VEC_FIRST) / 8;
	if (!(f->flags & RT_FLAGS_IF))
		in_if0++;
	if (outstanding & (1u << i))
		outstanding &= ~(1u << i);
	else
		duplicates++;
	received++;
	apic_write(LAPIC_EOI, 0);
}

static void on_timer(struct rt_frame *f)
{
	if (!(f->flags & RT_FLAGS_IF))
		in_if0++;
	if (timer_armed)
		timer_armed = 0;
	else
		timer_dups++;
	timer_hits++;
	apic_write(LAPIC_EOI, 0);
}

static void tpr_set(unsigned tpr, bool by_cr8)
{
#ifdef __x86_64__
	if (by_cr8) {
		uint64_t v = tpr >> 4;
		asm volatile("mov %0, %%cr8" : : "r"(v) : "memory");
		return;
	}
#else
	(void)by_cr8;
#endif
	apic_write(LAPIC_TPR, tpr);
}

static unsigned apic_bits(unsigned base) { return rt_apic_bits(x2apic, base); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

static void run(unsigned ops)
{
	const char *mode = x2apic ? "x2APIC" : "xAPIC";
	unsigned sent = 0, timers = 0, r0 = received, t0 = timer_hits, if0 = in_if0;
	cli();
	tpr_set(0, false);
	for (unsigned k = 0; k < ops; k++) {
		unsigned r = rnd();
		switch (r % 8) {
		case 0: case 1: {          /* a self-IPI on an idle vector */
			unsigned i = (r >> 3) % NVEC;
			if (outstanding & (1u << i))
				break;
			outstanding |= 1u << i;
			apic_write(LAPIC_ICR_LO, ICR_SELF | vec_of(i));
			sent++;
			break;
		}
		case 2:                    /* sti; nop: a one-instruction window */
			asm volatile("sti\n\tnop\n\tcli" : : : "memory");
			break;
		case 3:                    /* sti; hlt: only with something to wake it */
			if (outstanding || timer_armed) {
				tpr_set(0, false);
				asm volatile("sti\n\thlt\n\tcli" : : : "memory");
			}
			break;
		case 4:                    /* the TPR, either way, with IF=0 or IF=1 */
			if (r & 0x100)
				sti();
			tpr_set(((r >> 4) % 10) << 4, r & 0x200);
			cli();
			break;
		case 5:                    /* a timer one-shot (a few microseconds) */
			if (!timer_armed) {
				timer_armed = 1;
				apic_write(LAPIC_TMR_INIT, 16 + (r >> 8) % 256);
				timers++;
			}
			break;
		case 6:                    /* a longer window with IF=1 */
			sti();
			for (unsigned d = (r >> 4) % 64; d; d--)
				asm volatile("pause");
			cli();
			break;
		default:                   /* IF=0 for a while */
			for (unsigned d = (r >> 4) % 64; d; d--)
				asm volatile("pause");
			break;
		}
	}
	/* drain: everything deliverable must arrive in the last windows */
	tpr_set(0, false);
	for (unsigned w = 0; w < 1000 && (outstanding || timer_armed); w++)
		asm volatile("sti\n\thlt\n\tcli" : : : "memory");
	rt_printf("%s: %s: %u IPIs sent, %u received; %u timer one-shots, %u interrupts\n", NAME,
		  mode, sent, received - r0, timers, timer_hits - t0);
	tap_eq(in_if0 - if0, 0, "%s: no interrupt taken in IF=0 code", mode);
	tap_eq(duplicates, 0, "%s: no IPI delivered twice", mode);
	tap_eq(outstanding, 0, "%s: no IPI lost (vectors still waiting)", mode);
	tap_eq(received - r0, sent, "%s: as many IPIs received as sent", mode);
	tap_eq(timer_dups, 0, "%s: no timer interrupt delivered twice", mode);
	tap_eq(timer_hits - t0, timers, "%s: one timer interrupt per one-shot", mode);
	tap_eq(apic_bits(LAPIC_IRR), 0, "%s: IRR empty at the end", mode);
	tap_eq(apic_bits(LAPIC_ISR), 0, "%s: ISR empty at the end", mode);
	tap_ge(sent, ops / 16, "%s: the run sent IPIs", mode);
}

int guest_main(void)
{
	unsigned ops = (unsigned)rt_arg_u64("n", 40000);
	tap_begin(NAME);
	rt_map_mmio(RT_LAPIC);
	for (unsigned i = 0; i < NVEC; i++)
		rt_set_handler(vec_of(i), on_ipi);
	rt_set_handler(VEC_TIMER, on_timer);
	apic_write(LAPIC_TMR_DIV, 0xb);               /* divide by 1 */
	apic_write(LAPIC_LVT_TMR, VEC_TIMER);         /* one-shot, unmasked */
	run(ops);

	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	x2apic = true;
	apic_write(LAPIC_TMR_DIV, 0xb);
	apic_write(LAPIC_LVT_TMR, VEC_TIMER);
	run(ops);
	return tap_end();
}
