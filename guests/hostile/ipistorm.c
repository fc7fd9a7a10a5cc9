/* ipistorm: a VM that sends IPIs and NMIs to every destination it can
 * name (a VM must not reach another CPU's VM; docs/SMP.md). Through its local
 * APIC, in xAPIC mode (the MMIO page) and then in x2APIC mode (MSR 0x830),
 * rounds=N times (default 3):
 *   - physical destinations 0..255 (x2APIC: and 0xffffffff, the broadcast),
 *   - logical destinations, every bit pattern of the xAPIC's 8 bits,
 *   - the shorthands self, all including self, all excluding self,
 * each as a fixed interrupt (vector 0x41), an NMI, an INIT and a STARTUP
 * (vector 0x10). Its own are delivered to it; nothing may leave the VM.
 * Prints what it sent and got, and ends with status 0. In a VM of several
 * vCPUs its own INITs and STARTUPs start the other vCPUs in real mode at
 * 0x10000: they find a halt loop there (and an NMI handler), so the storm
 * runs to its end instead of stopping at whatever the APs would execute. */
#include "guests/rt/rt.h"

#define LAPIC          0xfee00000u
#define LAPIC_EOI      0x0b0u
#define LAPIC_SVR      0x0f0u
#define LAPIC_ICR_LO   0x300u
#define LAPIC_ICR_HI   0x310u
#define APIC_EN        (1u << 11)
#define APIC_EXTD      (1u << 10)

#define VEC            0x41u
static const uint32_t modes[] = { VEC, 4u << 8, 5u << 8 | 1u << 14, 6u << 8 | 0x10 };

static volatile unsigned got_fixed, got_nmi;
static bool x2;
static unsigned sent;

static void eoi(void)
{
	if (x2)
		wrmsr(MSR_X2APIC_EOI, 0);
	else
		*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_EOI) = 0;
}

static void on_fixed(struct rt_frame *f)
{
	(void)f;
	got_fixed++;
	eoi();
}

static void on_nmi(struct rt_frame *f)
{
	(void)f;
	got_nmi++;
}

static void send(uint32_t lo, uint32_t dest)
{
	if (x2) {
		wrmsr(MSR_X2APIC_ICR, (uint64_t)dest << 32 | lo);
	} else {
		*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_ICR_HI) = dest << 24;
		*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_ICR_LO) = lo;
	}
	sent++;
}

static void storm(void)
{
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (uint32_t d = 0; d < 256; d++) {
			send(modes[m], d);                /* physical */
			send(modes[m] | 1u << 11, d);     /* logical */
		}
		if (x2)
			send(modes[m], 0xffffffffu);      /* the x2APIC broadcast */
		for (uint32_t sh = 1; sh <= 3; sh++)
			send(modes[m] | sh << 18, 0);
		/* the fixed ones to itself wait in the IRR behind IF=0 */
		sti();
		asm volatile("nop");
		cli();
	}
}

/* Real mode at the STARTUP vector: cli; hlt; jmp back to the hlt; and an
 * IRET at 0x10004 for the NMIs it is sent (IVT entry 2 = 1000:0004). */
#define PARK_GPA 0x10000u
static const uint8_t park_code[] = { 0xfa, 0xf4, 0xeb, 0xfd, 0xcf };

static void park_aps(void)
{
	volatile uint8_t *code = (volatile uint8_t *)(uintptr_t)PARK_GPA;
	for (unsigned i = 0; i < sizeof(park_code); i++)
		code[i] = park_code[i];
	uintptr_t ivt = 2 * 4;
	asm("" : "+r"(ivt));   /* a real address, not a null pointer's offset */
	volatile uint16_t *ivt_nmi = (volatile uint16_t *)ivt;
	ivt_nmi[0] = 4;
	ivt_nmi[1] = PARK_GPA >> 4;
}

int guest_main(void)
{
	unsigned rounds = (unsigned)rt_arg_u64("rounds", 3);
	rt_set_handler(VEC, on_fixed);
	rt_set_handler(2, on_nmi);
	park_aps();
	*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_SVR) = 0x1ff;   /* enabled */
	for (unsigned r = 0; r < rounds; r++)
		storm();
	unsigned xapic_sent = sent;
	wrmsr(MSR_APIC_BASE, LAPIC | APIC_EN | APIC_EXTD);
	x2 = true;
	for (unsigned r = 0; r < rounds; r++)
		storm();
	rt_printf("ipistorm: sent %u IPIs in xAPIC mode and %u in x2APIC mode; got %u fixed, "
		  "%u NMIs\n", xapic_sent, sent - xapic_sent, got_fixed, got_nmi);
	return 0;
}
