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
 * TSC deadlines a little ahead (the host timer interrupt's exit injects);
 * then self-IPIs whose delivery writes a watched stack slot. */
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
#define DR7_WATCH_DR0 0x90001ull  /* L0, writes (RW0 01), 8 bytes (LEN0 10) */

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

static volatile unsigned db_traps;

static void on_db(struct rt_frame *f)
{
	(void)f;
	db_traps++;   /* a trap: the frame's RIP is past the write */
}

/* Self-IPIs with a data breakpoint on the slot where the interrupt's
 * delivery pushes SS (RSP aligned down to 16, less 8: no IST), which only
 * the delivery writes. QEMU 7.2 drops an event whose delivery hits a data
 * breakpoint, and a later one aborts it; lightpath keeps the guest's data
 * breakpoints out of an entry that delivers one of its events (docs/
 * SECURITY.md, cases 3 and 24). A CPU may raise #DB after the delivery:
 * counted, not checked. */
static void rounds_watched(void)
{
	got = got_if0 = nested = db_traps = 0;
	rt_set_handler(1, on_db);
	sti();
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned before = got;
		uint64_t rsp;
		asm volatile("mov %%rsp, %0" : "=r"(rsp));
		asm volatile("mov %0, %%dr0" ::"r"((rsp & ~15ull) - 8));
		asm volatile("mov %0, %%dr7" ::"r"(DR7_WATCH_DR0));
		asm volatile("wrmsr" ::"c"(X2APIC_SELF_IPI), "a"(VEC_IPI), "d"(0) : "memory");
		for (unsigned long i = 0; got == before && i < WAIT_MAX; i++)
			asm volatile("pause");
	}
	asm volatile("mov %0, %%dr7" ::"r"(0ull));
	cli();
	const char *what = "self-IPI, its frame's first slot watched";
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
	rounds_watched();
	wrmsr(MSR_X2APIC_LVTT, LVT_MASKED);
	return tap_end();
}
