/* irqstate: the interrupt controllers as a VM finds them (docs/SECURITY.md, case 8).
 * A multiboot guest that never programs them must get the state a PC BIOS
 * hands over: 8259s initialised with bases 0x08/0x70 and every IRQ masked
 * but the cascade, the local APIC with LINT0 ExtINT and LINT1 NMI, every
 * I/O APIC pin masked. Then, with interrupts enabled and the PIT (IRQ0) and
 * the UART (IRQ4) raising their lines, no interrupt may arrive at all, in
 * particular none on an exception vector (power-up 8259s would put IRQ0 on
 * vector 0, #DE, and IRQ4 on vector 4).
 *
 * As a control, the 8259 must have latched both requests, and once the
 * guest reprograms the master to base 0x20 and unmasks IRQ0 and IRQ4 both
 * arrive on 0x20 and 0x24. `deliver=0` leaves out that last part (for a
 * backend that does not deliver the platform's interrupts yet).
 *
 * `leave=1` makes it a hostile guest for the next VM (the same case):
 * after its checks it leaves every controller programmed onto exception
 * vectors and its devices raising interrupts (the 8259s at bases 0x00/0x08
 * with every IRQ unmasked and the PIT at 1 kHz, every I/O APIC pin unmasked
 * on vector = pin, the local APIC timer periodic on vector 3, LINT0 on
 * vector 2, LINT1 masked, the error LVT on vector 1, SVR and TPR changed,
 * the UART's interrupts on with DLAB set), and ends with IF=0. The next VM
 * (guests/hostile/resetcheck.c) must find the handover state again. */
#include "guests/rt/rt.h"

#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_CMD  0xa0
#define PIC2_DATA 0xa1
#define PIT_CH0   0x40
#define PIT_MODE  0x43
#define COM1      0x3f8
#define UART_IER  (COM1 + 1)
#define UART_IIR  (COM1 + 2)
#define UART_IER_THRE 0x02

#define LAPIC_MMIO  0xfee00000u

#define PIT_HZ      1193182u
#define PIT_COUNT   1193u       /* about 1 kHz */
#define PM_HZ       3579545u
#define PM_MASK     0xffffffu
#define WAIT_MS     25u

#define VEC_PIT  0x20u
#define VEC_UART 0x24u

static volatile unsigned exc_hits, exc_first = ~0u;
static volatile unsigned irq_hits[256];

/* Vectors 0-31: what an unprogrammed 8259 would use. No EOI, so a
 * misrouted IRQ fires once and blocks the lower ones; a real fault would
 * repeat, so give up after a while. */
static void on_exception(struct rt_frame *f)
{
	if (exc_first == ~0u)
		exc_first = (unsigned)f->vector;
	if (++exc_hits > 1000) {
		rt_printf("irqstate: exception vector %u keeps firing at ip 0x%llx\n",
			  (unsigned)f->vector, (unsigned long long)f->ip);
		guest_exit(1);
	}
}

static void on_irq(struct rt_frame *f)
{
	unsigned v = (unsigned)f->vector;
	irq_hits[v]++;
	if (v == VEC_UART) {
		(void)inb(UART_IIR);          /* reading IIR clears the THRE interrupt */
		outb(UART_IER, 0);            /* and no more of them */
	}
	if (v == VEC_PIT || v == VEC_UART)
		outb(PIC1_CMD, 0x20);         /* non-specific EOI */
}

static unsigned irqs_delivered(void)
{
	unsigned n = 0;
	for (unsigned v = 32; v < 256; v++)
		n += irq_hits[v];
	return n;
}

static uint32_t pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & PM_MASK;
}

/* Busy-waits by the ACPI PM timer (interrupts may arrive meanwhile). */
static void wait_ms(unsigned ms)
{
	uint64_t need = (uint64_t)PM_HZ * ms / 1000, elapsed = 0;
	uint32_t last = pm_now();
	while (elapsed < need) {
		uint32_t now = pm_now();
		elapsed += (now - last) & PM_MASK;
		last = now;
	}
}

static uint8_t pic_read_irr(uint16_t cmd)
{
	outb(cmd, 0x0a);
	return inb(cmd);
}

static uint8_t pic_read_isr(uint16_t cmd)
{
	outb(cmd, 0x0b);
	return inb(cmd);
}

static uint32_t lapic_read(unsigned off)
{
	return *(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + off);
}

static uint32_t ioapic_read(uint8_t index)
{
	*(volatile uint32_t *)(uintptr_t)RT_IOAPIC = index;
	return *(volatile uint32_t *)(uintptr_t)(RT_IOAPIC + 0x10);
}

static void check_handover_state(void)
{
	tap_eq(inb(PIC1_DATA), 0xfb, "8259 master IMR is 0xfb (all masked but the cascade)");
	tap_eq(inb(PIC2_DATA), 0xff, "8259 slave IMR is 0xff (all masked)");
	tap_eq(pic_read_irr(PIC1_CMD), 0, "8259 master IRR is empty");
	tap_eq(pic_read_isr(PIC1_CMD), 0, "8259 master ISR is empty");
	tap_eq(pic_read_isr(PIC2_CMD), 0, "8259 slave ISR is empty");
	/* initialised: the data port takes a mask (OCW1), not an ICW; put
	 * back what was there, whatever it was */
	uint8_t imr = inb(PIC1_DATA);
	outb(PIC1_DATA, imr ^ 0x01);
	tap_eq(inb(PIC1_DATA), imr ^ 0x01u, "8259 master is initialised (a mask written to 0x21 reads back)");
	outb(PIC1_DATA, imr);

	tap_eq(lapic_read(0xf0), 0x1ff, "local APIC SVR is 0x1ff (software enabled)");
	tap_eq(lapic_read(0x350), 0x8700, "local APIC LINT0 is 0x8700 (ExtINT, unmasked)");
	tap_eq(lapic_read(0x360), 0x8400, "local APIC LINT1 is 0x8400 (NMI)");
	tap_eq(lapic_read(0x320), 0x10000, "local APIC timer LVT is masked");
	tap_eq(lapic_read(0x370), 0x10000, "local APIC error LVT is masked");
	tap_eq(lapic_read(0x80), 0, "local APIC TPR is 0");

	unsigned unmasked = 0, first = ~0u;
	for (unsigned pin = 0; pin < 24; pin++) {
		if (!(ioapic_read((uint8_t)(0x10 + 2 * pin)) & (1u << 16))) {
			unmasked++;
			if (first == ~0u)
				first = pin;
		}
	}
	tap_eq(unmasked, 0, "every I/O APIC pin is masked (first unmasked: %d)", (int)first);
}

static void pit_start(void)
{
	outb(PIT_MODE, 0x34);              /* channel 0, lo/hi byte, mode 2 */
	outb(PIT_CH0, PIT_COUNT & 0xff);
	outb(PIT_CH0, PIT_COUNT >> 8);
}

static void pit_stop(void)
{
	outb(PIT_MODE, 0x30);              /* mode 0: one count, then quiet */
	outb(PIT_CH0, 0xff);
	outb(PIT_CH0, 0xff);
}

/* The master as Linux programs it, but only IRQ0 and IRQ4 unmasked. */
static void pic_master_base_0x20(void)
{
	outb(PIC1_CMD, 0x11);
	outb(PIC1_DATA, 0x20);
	outb(PIC1_DATA, 0x04);
	outb(PIC1_DATA, 0x01);
	outb(PIC1_DATA, (uint8_t)~((1u << 0) | (1u << 2) | (1u << 4)));
}

static void lapic_write(unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)(LAPIC_MMIO + off) = v;
}

/* leave=1: everything programmed for the worst, with IF=0, for the next VM. */
static void leave_programmed(void)
{
	cli();
	outb(PIC1_CMD, 0x11);              /* master: base 0x00, #DE and up */
	outb(PIC1_DATA, 0x00);
	outb(PIC1_DATA, 0x04);
	outb(PIC1_DATA, 0x01);
	outb(PIC1_DATA, 0x00);             /* every IRQ unmasked */
	outb(PIC2_CMD, 0x11);              /* slave: base 0x08, #DF and up */
	outb(PIC2_DATA, 0x08);
	outb(PIC2_DATA, 0x02);
	outb(PIC2_DATA, 0x01);
	outb(PIC2_DATA, 0x00);
	pit_start();
	for (unsigned pin = 0; pin < 24; pin++) {
		rt_ioapic_write((uint8_t)(0x11 + 2 * pin), 0);
		rt_ioapic_write((uint8_t)(0x10 + 2 * pin), pin);   /* fixed, edge, unmasked */
	}
	lapic_write(0x80, 0x10);           /* TPR */
	lapic_write(0xf0, 0x1ef);          /* SVR: spurious vector 0xef */
	lapic_write(0x350, 0x0002);        /* LINT0: fixed, vector 2 */
	lapic_write(0x360, 0x10400);       /* LINT1: NMI, masked */
	lapic_write(0x370, 0x0001);        /* error LVT: vector 1 */
	lapic_write(0x3e0, 0x0b);          /* timer: divide by 1 */
	lapic_write(0x320, 0x20003);       /* timer: periodic, vector 3 */
	lapic_write(0x380, 0x1000);
	outb(COM1 + 7, 0x5a);              /* scratch */
	outb(COM1 + 4, 0x1f);              /* MCR: DTR, RTS, OUT1, OUT2, loopback */
	outb(UART_IER, 0x0f);              /* every UART interrupt */
	outb(COM1 + 3, 0x9b);              /* LCR: DLAB, 8 bits, even parity */
}

int guest_main(void)
{
	tap_begin("irqstate");
	bool deliver = rt_arg_u64("deliver", 1) != 0;
	bool leave = rt_arg_u64("leave", 0) != 0;
	if (leave)
		rt_printf("irqstate: leave=1: the controllers stay programmed onto exception vectors\n");
	for (unsigned v = 0; v < 32; v++)
		rt_set_handler(v, on_exception);
	for (unsigned v = 32; v < 256; v++)
		rt_set_handler(v, on_irq);

	cli();
	check_handover_state();

	/* The devices raise their lines; the guest enables interrupts and
	 * programs no interrupt controller. */
	pit_start();
	outb(UART_IER, UART_IER_THRE);     /* THR is empty: IRQ4 goes high at once */
	sti();
	wait_ms(WAIT_MS);
	cli();
	outb(UART_IER, 0);
	tap_eq(exc_hits, 0, "no interrupt on an exception vector with IF=1 for %u ms (first: %d)",
	       WAIT_MS, (int)exc_first);
	tap_eq(irqs_delivered(), 0, "no device interrupt delivered at all (every IRQ masked)");
	tap_eq(pic_read_irr(PIC1_CMD) & 0x11, 0x11,
	       "the 8259 latched IRQ0 (PIT) and IRQ4 (UART): the devices did raise them");

	if (!deliver) {
		pit_stop();
		rt_printf("irqstate: delivery checks skipped (deliver=0)\n");
		int status = tap_end();
		if (leave)
			leave_programmed();
		return status;
	}

	/* Control: the same devices reach the guest once it programs the 8259. */
	pic_master_base_0x20();
	outb(UART_IER, UART_IER_THRE);     /* a new rising edge on IRQ4 */
	sti();
	wait_ms(WAIT_MS);
	cli();
	outb(PIC1_DATA, 0xff);
	pit_stop();
	tap_ge(irq_hits[VEC_PIT], 2, "after reprogramming, the PIT arrives on vector 0x20");
	tap_eq(irq_hits[VEC_UART], 1, "after reprogramming, the UART arrives once on vector 0x24");
	tap_eq(irqs_delivered(), irq_hits[VEC_PIT] + irq_hits[VEC_UART],
	       "nothing else was delivered");
	tap_eq(exc_hits, 0, "still nothing on an exception vector (first: %d)", (int)exc_first);
	int status = tap_end();
	if (leave)
		leave_programmed();
	return status;
}
