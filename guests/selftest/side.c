/* side: a guest that keeps working for a while, for VMs side by side on
 * several CPUs (docs/SMP.md, "Static partitioning"). It takes every
 * interrupt vector (32-255) and the NMI, enables interrupts, and prints
 * lines=N long lines (default 20), reading the ACPI PM timer for ms=M
 * milliseconds (default 20) before each: a VM next to it that faults, or
 * sends IPIs and NMIs to every destination, must not reach it. Its own
 * platform raises nothing it has not programmed, so it must see none.
 *
 *   side: line 3 of 20: <62 characters of payload>
 *   side: done: 20 lines, 0 interrupts, 0 NMIs
 *
 * With key=1 it then says "side: waiting for a key" and spins without VM
 * exits, looking at its UART every few milliseconds, until a byte is typed:
 * a test does something to the host meanwhile (a physical NMI) and types
 * once lightpath has said it is done.
 *
 * Ends with status=S (default 0), or 1 if any interrupt or NMI came. */
#include "guests/rt/rt.h"

#define PM_HZ   3579545u
#define PM_MASK 0xffffffu

static volatile unsigned irqs, nmis, last_vector;

static void on_irq(struct rt_frame *f)
{
	irqs++;
	last_vector = (unsigned)f->vector;
}

static void on_nmi(struct rt_frame *f)
{
	(void)f;
	nmis++;
}

static void busy(uint64_t ms)
{
	uint64_t need = (uint64_t)PM_HZ * ms / 1000, elapsed = 0;
	uint32_t last = inl(LP_PMTIMER_PORT) & PM_MASK;
	while (elapsed < need) {
		uint32_t now = inl(LP_PMTIMER_PORT) & PM_MASK;
		elapsed += (now - last) & PM_MASK;
		last = now;
	}
}

#define COM1_RBR 0x3f8
#define COM1_LSR 0x3fd
#define LSR_DATA 0x01

/* Spins (no VM exit) between looks at the UART, so that what happens to
 * the host happens while the guest runs. */
static void wait_for_key(void)
{
	rt_printf("side: waiting for a key\n");
	for (;;) {
		for (volatile unsigned i = 0; i < 200000; i++)
			;
		if (inb(COM1_LSR) & LSR_DATA) {
			(void)inb(COM1_RBR);
			return;
		}
	}
}

int guest_main(void)
{
	unsigned lines = (unsigned)rt_arg_u64("lines", 20);
	uint64_t ms = rt_arg_u64("ms", 20);
	unsigned status = (unsigned)rt_arg_u64("status", 0);
	for (unsigned v = 32; v < 256; v++)
		rt_set_handler(v, on_irq);
	rt_set_handler(2, on_nmi);
	sti();
	for (unsigned i = 1; i <= lines; i++) {
		busy(ms);
		rt_printf("side: line %u of %u: abcdefghijklmnopqrstuvwxyz-0123456789-ABCDEFGHIJKLMNOPQRSTUVWXYZ\n",
			  i, lines);
	}
	if (rt_arg_u64("key", 0))
		wait_for_key();
	cli();
	rt_printf("side: done: %u lines, %u interrupts, %u NMIs", lines, irqs, nmis);
	if (irqs)
		rt_printf(" (the last on vector %u)", last_vector);
	rt_printf("\n");
	return irqs || nmis ? 1 : (int)status;
}
