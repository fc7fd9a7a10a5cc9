#include "core/timer.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/percpu.h"
#include "core/tsc.h"

#define LAPIC_BASE      0xfee00000ull
#define LAPIC_ID        0x020
#define LAPIC_TPR       0x080
#define LAPIC_EOI       0x0b0
#define LAPIC_SVR       0x0f0
#define LAPIC_IRR       0x200   /* 8 registers, 0x10 apart, 32 vectors each */
#define LAPIC_ICR_LO    0x300
#define LAPIC_ICR_HI    0x310
#define ICR_DELIVERY_PENDING (1u << 12)
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT1 0x360
#define LVT_DELIVERY_NMI 0x400
#define LAPIC_TIMER_ICR 0x380
#define LAPIC_TIMER_CCR 0x390
#define LAPIC_TIMER_DCR 0x3e0
#define LVT_MASKED      (1u << 16)

#define LAPIC_CAL_WINDOWS   5u
#define LAPIC_CAL_WINDOW_MS 2u

static uint64_t lapic_per_tsc_q32;   /* LAPIC timer counts per TSC tick, 32.32 fixed point */

static inline volatile uint32_t *lapic_reg(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(LAPIC_BASE + off);
}

/* The timer's current count, bracketed by two TSC reads. */
static uint32_t read_ccr(uint64_t *mid, uint64_t *width)
{
	uint64_t before = rdtsc();
	uint32_t count = *lapic_reg(LAPIC_TIMER_CCR);
	uint64_t after = rdtsc();
	*mid = before + (after - before) / 2;
	*width = after - before;
	return count;
}

/* LAPIC counts per TSC tick from the least jittered of several short
 * windows: under QEMU TCG a host stall between a count read and its TSC
 * read skewed the single 10 ms window this replaced, and with it every
 * host timer; each read is bracketed, so a stall shows as width. */
static int calibrate_lapic_timer(void)
{
	uint64_t window = tsc_hz() / (1000 / LAPIC_CAL_WINDOW_MS), best_width = ~0ull;
	for (unsigned i = 0; i < LAPIC_CAL_WINDOWS; i++) {
		uint64_t t0, t1, w0, w1;
		*lapic_reg(LAPIC_TIMER_ICR) = 0xffffffffu;
		uint32_t c0 = read_ccr(&t0, &w0);
		while (rdtsc() - t0 < window)
			;
		uint32_t c1 = read_ccr(&t1, &w1);
		*lapic_reg(LAPIC_TIMER_ICR) = 0;
		if (c0 == c1 || t1 <= t0)
			return -1;
		if (w0 + w1 >= best_width)
			continue;
		best_width = w0 + w1;
		lapic_per_tsc_q32 = ((uint64_t)(c0 - c1) << 32) / (t1 - t0);
		if (!lapic_per_tsc_q32)
			lapic_per_tsc_q32 = 1;
	}
	return 0;
}

int timer_init(void)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!(r[3] & (1u << 9))) {
		kprintf("lightpath: error: this CPU has no local APIC (CPUID.1:EDX.APIC)\n");
		return -1;
	}
	wrmsr(0x1b, rdmsr(0x1b) | (1u << 11));          /* APIC global enable */
	*lapic_reg(LAPIC_SVR) = 0x100 | IDT_VECTOR_SPURIOUS;
	*lapic_reg(LAPIC_TIMER_DCR) = 0xb;               /* divide by 1 */
	*lapic_reg(LAPIC_LVT_TIMER) = LVT_MASKED | IDT_VECTOR_TIMER;

	if (calibrate_lapic_timer() < 0) {
		kprintf("lightpath: error: the local APIC timer does not count\n");
		return -1;
	}
	*lapic_reg(LAPIC_LVT_TIMER) = IDT_VECTOR_TIMER;  /* one-shot, unmasked */
	return 0;
}

void timer_init_ap(void)
{
	wrmsr(0x1b, rdmsr(0x1b) | (1u << 11));          /* APIC global enable */
	*lapic_reg(LAPIC_SVR) = 0x100 | IDT_VECTOR_SPURIOUS;
	*lapic_reg(LAPIC_TPR) = 0;
	*lapic_reg(LAPIC_TIMER_DCR) = 0xb;               /* divide by 1 */
	*lapic_reg(LAPIC_TIMER_ICR) = 0;
	*lapic_reg(LAPIC_LVT_TIMER) = IDT_VECTOR_TIMER;  /* one-shot, unmasked, stopped */
	/* The machine's NMI line (LINT1), as the firmware leaves it on the boot
	 * CPU: an NMI from the machine reaches every CPU, and each takes it as
	 * the host's (core/idt.c), whether or not a guest runs there. */
	*lapic_reg(LAPIC_LVT_LINT1) = LVT_DELIVERY_NMI;
}

uint32_t host_lapic_id(void)
{
	return *lapic_reg(LAPIC_ID) >> 24;
}

static bool icr_idle(uint64_t timeout_ticks)
{
	uint64_t start = rdtsc();
	while (*lapic_reg(LAPIC_ICR_LO) & ICR_DELIVERY_PENDING)
		if (rdtsc() - start > timeout_ticks)
			return false;
	return true;
}

bool host_lapic_send_ipi(uint32_t dest, uint32_t icr_lo)
{
	uint64_t timeout = tsc_hz() / 10;
	if (!icr_idle(timeout))
		return false;
	*lapic_reg(LAPIC_ICR_HI) = dest << 24;
	*lapic_reg(LAPIC_ICR_LO) = icr_lo;               /* this write sends it */
	return icr_idle(timeout);
}

void timer_program(uint64_t deadline_tsc)
{
	if (!deadline_tsc) {
		*lapic_reg(LAPIC_TIMER_ICR) = 0;
		return;
	}
	uint64_t now = rdtsc();
	uint64_t delta = deadline_tsc > now ? deadline_tsc - now : 1;
	unsigned __int128 counts = ((unsigned __int128)delta * lapic_per_tsc_q32) >> 32;
	if (counts == 0)
		counts = 1;
	if (counts > 0xffffffffu)
		counts = 0xffffffffu;       /* fires early; the caller re-arms */
	*lapic_reg(LAPIC_TIMER_ICR) = (uint32_t)counts;
}

bool timer_counting(void)
{
	return *lapic_reg(LAPIC_TIMER_CCR) != 0;
}

uint64_t timer_ticks_left(void)
{
	uint32_t count = *lapic_reg(LAPIC_TIMER_CCR);
	if (count) {   /* rounded up: never before the interrupt */
		uint64_t n = (uint64_t)count << 32;
		return n / lapic_per_tsc_q32 + (n % lapic_per_tsc_q32 != 0);
	}
	uint32_t irr = *lapic_reg(LAPIC_IRR + 0x10 * (IDT_VECTOR_TIMER / 32));
	return irr & (1u << (IDT_VECTOR_TIMER % 32)) ? 0 : UINT64_MAX;
}

void timer_interrupt(void)
{
	this_cpu()->timer_interrupts++;
	*lapic_reg(LAPIC_EOI) = 0;
}

void host_lapic_eoi(void)
{
	*lapic_reg(LAPIC_EOI) = 0;
}

void lapic_tpr_clear(void)
{
	*lapic_reg(LAPIC_TPR) = 0;
}
