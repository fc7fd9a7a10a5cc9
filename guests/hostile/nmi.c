/* nmi: NMIs reach the guest (docs/SECURITY.md, case 7), as the CPU delivers them
 * (Intel SDM vol. 3 6.7.1, AMD APM vol. 2 8.2.5): whatever IF says, once per
 * NMI, and never while the handler of the last one runs: an NMI that arrives
 * there waits until the handler's IRET has completed and is delivered right
 * after it, before the next instruction; NMIs that arrive while one waits
 * are one NMI. Sources: an ICR write with delivery mode NMI, through the
 * xAPIC page and the x2APIC MSR 0x830, to itself by shorthand and by APIC
 * ID; an I/O APIC pin in NMI mode (the UART's IRQ 4); and the PIT on the
 * I/O APIC's pin 2 in NMI mode waking `cli; hlt`.
 *
 * Hostile variants (mode=):
 *   storm   every NMI handler sends the next NMI before its IRET, the main
 *           loop sends them too, n= NMIs (default 1000); then a check that
 *           none nested and the count, and the guest ends itself
 *   noiret  the handler never returns: IF=1, NMIs sent in a tight loop for
 *           ever (the VM's time limit ends it)
 *   fault   the NMI gate points outside guest RAM, and an NMI is sent
 *           (lightpath stops the VM) */
#include "guests/rt/rt.h"

#define LAPIC          0xfee00000u
#define LAPIC_ICR_LO   0x300u
#define LAPIC_ICR_HI   0x310u
#define IOAPIC         0xfec00000u
#define APIC_BASE_EXTD (1u << 10)
#define ICR_NMI        (4u << 8)    /* delivery mode NMI (the vector is ignored) */
#define ICR_SELF       (1u << 18)   /* destination shorthand: self */
#define RTE_NMI        (4u << 8)
#define RTE_MASKED     (1u << 16)
#define COM1           0x3f8
#define UART_IER       (COM1 + 1)
#define UART_IER_THRI  0x02
#define PIT_CH0        0x40
#define PIT_MODE       0x43
#define GSI_PIT        2u           /* IRQ0, through the MADT's override */
#define GSI_UART       4u
#define NMI_OUTSIDE_RAM 0xfff00000u

static bool x2apic;
static volatile unsigned nmis, depth, max_depth;
static volatile ureg_t nmi_ip[4];          /* where the first NMIs of a test arrived */
static volatile unsigned sends_in_handler; /* NMIs the next handler sends itself */
static volatile unsigned nested_seen;      /* NMIs counted while a handler ran */

/* An NMI to itself: by shorthand, or by its APIC ID (0, physical). Returns
 * the address of the instruction after the ICR write, where the NMI must
 * arrive. */
static ureg_t send_nmi(bool by_id)
{
	uint32_t lo = ICR_NMI | (by_id ? 0 : ICR_SELF);
	ureg_t after;
	if (x2apic) {
		asm volatile("mov $1f, %0\n\t"
			     "wrmsr\n"
			     "1:"
			     : "=&r"(after) : "c"(MSR_X2APIC_ICR), "a"(lo), "d"(0) : "memory");
	} else {
		*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_ICR_HI) = 0;
		asm volatile("mov $1f, %0\n\t"
			     "movl %1, (%2)\n"
			     "1:"
			     : "=&r"(after) : "r"(lo), "r"((uintptr_t)(LAPIC + LAPIC_ICR_LO)) : "memory");
	}
	return after;
}

static void on_nmi(struct rt_frame *f)
{
	unsigned k = nmis++;
	if (++depth > max_depth)
		max_depth = depth;
	if (k < 4)
		nmi_ip[k] = f->ip;
	unsigned n = sends_in_handler;
	sends_in_handler = 0;
	for (unsigned i = 0; i < n; i++)
		send_nmi(false);
	/* an exit (the PM timer) and a moment for anything that would nest */
	for (unsigned i = 0; i < 4; i++)
		(void)inl(LP_PMTIMER_PORT);
	if (nmis != k + 1)
		nested_seen++;
	depth--;
}

static void reset(void)
{
	nmis = max_depth = nested_seen = 0;
	for (unsigned i = 0; i < 4; i++)
		nmi_ip[i] = 0;
}

static void ioapic_rte(unsigned pin, uint32_t lo)
{
	volatile uint32_t *sel = (volatile uint32_t *)(uintptr_t)IOAPIC;
	volatile uint32_t *win = (volatile uint32_t *)(uintptr_t)(IOAPIC + 0x10);
	*sel = 0x11 + 2 * pin;
	*win = 0;                      /* destination APIC ID 0 */
	*sel = 0x10 + 2 * pin;
	*win = lo;
}

static void test_icr(const char *how)
{
	cli();
	reset();
	ureg_t at = send_nmi(false);
	tap_eq(nmis, 1, "%s, to itself by shorthand, with IF=0: the handler ran once", how);
	tap_eq(nmi_ip[0], at, "%s: it arrived right after the ICR write", how);

	reset();
	send_nmi(true);
	tap_eq(nmis, 1, "%s, to its own APIC ID: the handler ran once", how);

	/* one NMI sent inside the handler: blocked until its IRET, then at once */
	reset();
	sends_in_handler = 1;
	at = send_nmi(false);
	unsigned after = nmis;
	tap_eq(after, 2, "%s: an NMI sent inside the handler arrives too", how);
	tap_eq(max_depth, 1, "%s: ... but not inside the handler (no nesting)", how);
	tap_eq(nested_seen, 0, "%s: ... nor while the handler ran", how);
	tap_eq(nmi_ip[1], at, "%s: ... it arrived right after the IRET, before the next instruction", how);

	/* three sent inside the handler are one waiting NMI */
	reset();
	sends_in_handler = 3;
	send_nmi(false);
	tap_eq(nmis, 2, "%s: three NMIs sent inside the handler arrive as one", how);
}

static void test_ioapic_pin(void)
{
	cli();
	reset();
	ioapic_rte(GSI_UART, RTE_NMI);               /* edge, active high, NMI, unmasked */
	outb(UART_IER, UART_IER_THRI);               /* the transmitter is empty: IRQ 4 rises */
	unsigned first = nmis;
	outb(UART_IER, 0);                           /* ... falls */
	outb(UART_IER, UART_IER_THRI);               /* ... rises again */
	unsigned second = nmis;
	outb(UART_IER, 0);
	ioapic_rte(GSI_UART, RTE_MASKED);
	tap_eq(first, 1, "I/O APIC pin 4 in NMI mode: the UART's IRQ raised one NMI, with IF=0");
	tap_eq(second, 2, "... and its next rising edge another");
}

static void test_hlt_woken(void)
{
	cli();
	reset();
	ioapic_rte(GSI_PIT, RTE_NMI);
	outb(PIT_MODE, 0x34);                        /* channel 0, lo/hi byte, mode 2 */
	outb(PIT_CH0, 0xa9);
	outb(PIT_CH0, 0x04);                         /* 1193: about 1 kHz */
	asm volatile("hlt" : : : "memory");
	unsigned woke = nmis;
	ioapic_rte(GSI_PIT, RTE_MASKED);
	outb(PIT_MODE, 0x30);                        /* mode 0: one count, then quiet */
	outb(PIT_CH0, 0xff);
	outb(PIT_CH0, 0xff);
	tap_ok(woke >= 1, woke, ">= 1", "the PIT on I/O APIC pin 2 in NMI mode woke `cli; hlt`");
}

static void storm(unsigned n)
{
	rt_printf("nmi: storm of %u NMIs, each handler sending the next\n", n);
	cli();
	reset();
	for (unsigned i = 0; nmis < n && i < n; i++) {
		sends_in_handler = 1;
		send_nmi(i & 1);
		if (i & 2)
			asm volatile("sti; nop; cli" : : : "memory");
	}
	if (nmis < n) {
		rt_printf("nmi: storm: only %u of %u NMIs arrived\n", nmis, n);
		guest_exit(1);
	}
	rt_printf("nmi: storm done: %s\n", max_depth == 1 && !nested_seen ? "no NMI nested" : "NESTED");
	guest_exit(max_depth == 1 && !nested_seen ? 0 : 1);
}

static void on_nmi_noiret(struct rt_frame *f)
{
	(void)f;
	rt_printf("nmi: in the NMI handler, sending NMIs for ever\n");
	sti();
	for (;;)
		send_nmi(false);
}

/* The NMI gate's handler address: outside the guest's RAM. */
static void nmi_gate_outside_ram(void)
{
	struct __attribute__((packed)) { uint16_t limit; uintptr_t base; } idtr;
	asm volatile("sidt %0" : "=m"(idtr));
	uint16_t *gate = (uint16_t *)(idtr.base + 2 * 2 * sizeof(ureg_t));
	gate[0] = (uint16_t)NMI_OUTSIDE_RAM;
	gate[3] = (uint16_t)(NMI_OUTSIDE_RAM >> 16);
}

int guest_main(void)
{
	char mode[16] = "";
	rt_arg("mode", mode, sizeof(mode));
	rt_set_handler(2, on_nmi);
	if (!strcmp(mode, "storm"))
		storm((unsigned)rt_arg_u64("n", 1000));
	if (!strcmp(mode, "noiret")) {
		rt_set_handler(2, on_nmi_noiret);
		send_nmi(false);
		rt_printf("nmi: the NMI handler returned\n");
		return 1;
	}
	if (!strcmp(mode, "fault")) {
		rt_printf("nmi: NMI gate at 0x%x, outside RAM; sending an NMI\n", NMI_OUTSIDE_RAM);
		nmi_gate_outside_ram();
		send_nmi(false);
		rt_printf("nmi: the NMI went nowhere\n");
		return 1;
	}

	tap_begin("nmi");
	test_icr("xAPIC ICR");
	test_ioapic_pin();
	test_hlt_woken();
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	x2apic = true;
	test_icr("x2APIC ICR");
	return tap_end();
}
