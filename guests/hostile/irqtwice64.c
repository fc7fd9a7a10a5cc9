/* irqtwice64: every interrupt lightpath injects arrives once, and only where
 * the guest's RFLAGS.IF is 1 (docs/SECURITY.md, case 24). QEMU's TCG
 * delivers an interrupt injected through the VMCB's EVENTINJ inside VMRUN
 * but keeps its vector as the CPU's pending exception, and delivers it
 * again, IF or not, when its loop is left (an icount deadline) before the
 * guest's next exit or exception: a Linux guest spun forever in its UART
 * handler on the lock the first run held. lightpath injects virtual
 * interrupts (V_IRQ) instead.
 *
 * The handlers here make that window wide: each spins for a while with
 * interrupts off before its EOI (the exit that ends the window), while the
 * host's timers (lightpath's console poll) fall due. Each counts itself and
 * checks the IF the interrupted code had (in the frame): a second delivery
 * shows as a count above the interrupts sent and as a frame with IF=0.
 * Interrupts of two origins: self-IPIs (the write's own exit injects) and
 * TSC deadlines a little ahead (the host timer interrupt's exit injects). */
#include "guests/rt/rt.h"

#define VEC_IPI       0x45u
#define VEC_DEADLINE  0x46u
#define APIC_EXTD     (1ull << 10)
#define X2APIC_SELF_IPI 0x83fu
#define LVT_MASKED    (1u << 16)
#define LVT_TSCDL     (2u << 17)
#define RFLAGS_IF     (1u << 9)
#define ROUNDS        300u
#define SPIN          50000u    /* loop turns in each handler, no exit in them */
#define WAIT_MAX      100000000ul
#define DEADLINE_AHEAD 20000u   /* TSC ticks (20 us under QEMU -icount) */

static volatile unsigned got, got_if0, nested;
static volatile bool in_handler;

static void spin(void)
{
	for (unsigned i = 0; i < SPIN; i++)
		asm volatile("" ::: "memory");
}

static void on_interrupt(struct rt_frame *f)
{
	nested += in_handler;
	in_handler = true;
	got++;
	got_if0 += !(f->flags & RFLAGS_IF);
	spin();
	in_handler = false;
	wrmsr(MSR_X2APIC_EOI, 0);
}

/* Sends ROUNDS interrupts with `send`, each after the last one's handler
 * ended; says how many handlers ran, how many interrupted IF=0 code, how
 * many ran inside another. */
static void rounds(const char *what, void (*send)(void))
{
	got = got_if0 = nested = 0;
	sti();
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned before = got;
		send();
		for (unsigned long i = 0; got == before && i < WAIT_MAX; i++)
			asm volatile("pause");
	}
	cli();
	tap_eq(got, ROUNDS, "%s: %u sent, each handler ran once", what, ROUNDS);
	tap_eq(got_if0, 0, "%s: no handler interrupted code with RFLAGS.IF=0", what);
	tap_eq(nested, 0, "%s: no handler ran inside another", what);
}

static void send_ipi(void)
{
	wrmsr(X2APIC_SELF_IPI, VEC_IPI);
}

static void send_deadline(void)
{
	/* ahead, so that the host timer's exit injects it (the TSC's rate is
	 * not measured: that polls a clock, thousands of exits) */
	wrmsr(MSR_TSC_DEADLINE, rdtsc() + DEADLINE_AHEAD);
}

int guest_main(void)
{
	cli();
	tap_begin("irqtwice64");
	rt_set_handler(VEC_IPI, on_interrupt);
	rt_set_handler(VEC_DEADLINE, on_interrupt);
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	wrmsr(MSR_X2APIC_LVTT, VEC_DEADLINE | LVT_TSCDL);
	rounds("self-IPI", send_ipi);
	rounds("TSC deadline 20000 ticks ahead", send_deadline);
	wrmsr(MSR_X2APIC_LVTT, LVT_MASKED);
	return tap_end();
}
