/* tpr64: a guest that sends itself IPIs while raising and lowering its task
 * priority around `sti; nop` (docs/SECURITY.md, case 15), through all three ways a
 * 64-bit guest has: the xAPIC TPR at 0xFEE00080, CR8, and the x2APIC TPR
 * MSR 0x808. Under QEMU 7.2 (TCG, SVM) a MOV to CR8 while the hypervisor
 * waits for an interrupt window (V_IRQ set in the VMCB) aborted QEMU, taking
 * every VM with it (docs/SECURITY.md, case 15).
 *
 * It is also a self-test of what the TPR means (Intel SDM vol. 3 10.8.3 and
 * 10.8.6, AMD APM vol. 2 16.6): CR8 is TPR[7:4], through either way; an
 * interrupt whose priority class is not above the TPR's stays in IRR, and
 * arrives as soon as the TPR is lowered. Then a storm of random TPR writes,
 * self-IPIs and interrupt windows (storm=N operations per APIC mode,
 * default 3000) must leave nothing undelivered.
 *
 * `mode=cr8-spin` instead sets CR8 to 15 and spins with IF=1 forever: on
 * VT-x without CR8 exiting that was the CPU's own TPR, which then blocked
 * the host timer's vector (0x20), and with it the VM's time limit. */
#include "guests/rt/rt.h"

#define LAPIC_TPR      0x080u
#define LAPIC_EOI      0x0b0u
#define LAPIC_IRR      0x200u
#define LAPIC_ICR_LO   0x300u
#define APIC_BASE_EXTD (1u << 10)
#define ICR_SELF       (1u << 18)   /* destination shorthand: self */
#define VEC            0x50u        /* priority class 5 */

static bool x2apic;                 /* the APIC is in x2APIC mode */
static volatile unsigned hits;

static uint32_t apic_read(unsigned off) { return rt_apic_read(x2apic, off); }
static void apic_write(unsigned off, uint32_t val) { rt_apic_write(x2apic, off, val); }

static void on_ipi(struct rt_frame *f)
{
	(void)f;
	hits++;
	apic_write(LAPIC_EOI, 0);
}

static void cr8_write(uint64_t v)
{
	asm volatile("mov %0, %%cr8" : : "r"(v) : "memory");
}

static uint64_t cr8_read(void)
{
	uint64_t v;
	asm volatile("mov %%cr8, %0" : "=r"(v) : : "memory");
	return v;
}

/* The TPR through the APIC (MMIO or MSR) or through CR8. */
static void tpr_set(bool by_cr8, unsigned tpr)
{
	if (by_cr8)
		cr8_write(tpr >> 4);
	else
		apic_write(LAPIC_TPR, tpr);
}

static void ipi_self(void)
{
	apic_write(LAPIC_ICR_LO, ICR_SELF | VEC);
}

/* One interrupt window: whatever is deliverable arrives between NOP and CLI. */
static void window(void)
{
	asm volatile("sti\n\tnop\n\tcli" : : : "memory");
}

static bool vec_in_irr(void)
{
	return apic_read(LAPIC_IRR + (VEC / 32) * 0x10) & (1u << (VEC % 32));
}

static void check_tpr(bool by_cr8)
{
	const char *how = by_cr8 ? "CR8" : x2apic ? "the x2APIC TPR MSR" : "the xAPIC TPR";
	unsigned h0 = hits;

	cli();
	tpr_set(by_cr8, 0x65);
	tap_eq(apic_read(LAPIC_TPR), by_cr8 ? 0x60 : 0x65, "%s: TPR written, the APIC's TPR reads it", how);
	tap_eq(cr8_read(), 6, "%s: CR8 reads TPR[7:4]", how);
	ipi_self();
	window();
	tap_eq(hits, h0, "%s: a self-IPI of class 5 waits while the TPR is 0x6x", how);
	tap_ok(vec_in_irr(), 0, "IRR bit set", "%s: the IPI waits in IRR", how);

	/* lower the TPR with IF=0: the IPI is deliverable but the guest cannot
	 * take it, so the hypervisor waits for an interrupt window; then write
	 * CR8 again (the MOV that aborted QEMU) */
	tpr_set(by_cr8, 0x50);
	window();
	tap_eq(hits, h0, "%s: still waiting at TPR 0x50 (same class)", how);
	tpr_set(by_cr8, 0);
	cr8_write(0);
	tap_eq(hits, h0, "%s: nothing arrives with IF=0", how);
	window();
	tap_eq(hits, h0 + 1, "%s: the IPI arrives once the TPR is 0 and IF=1", how);
	tap_ok(!vec_in_irr(), 1, "IRR clear", "%s: IRR is clear after delivery", how);
}

/* Random TPR writes (both ways), self-IPIs, CR8 rewrites and windows. */
static void storm(unsigned n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned sent = 0, h0 = hits;
	cli();
	for (unsigned i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (x % 5) {
		case 0: tpr_set(false, (unsigned)(x >> 8) & 0xf0); break;
		case 1: tpr_set(true, (unsigned)(x >> 8) & 0xf0); break;
		case 2: ipi_self(); sent++; break;
		case 3: cr8_write(cr8_read()); break;
		default: window(); break;
		}
	}
	tpr_set(x & 1, 0);
	window();
	tap_ok(!vec_in_irr(), 1, "IRR clear", "%s storm of %u operations: nothing left in IRR",
	       x2apic ? "x2APIC" : "xAPIC", n);
	tap_ok(hits - h0 >= 1 && hits - h0 <= sent, hits - h0, "1..IPIs sent",
	       "%s storm: %u IPIs sent, each delivered at most once", x2apic ? "x2APIC" : "xAPIC", sent);
}

/* AMD's other way to CR8 (AltMovCr8, CPUID 0x80000001 ECX bit 4): LOCK MOV
 * CR0, the form legacy-mode code uses; lightpath decodes it at RIP. */
static void check_lock_mov_cr0(void)
{
	if (!(cpuid(0x80000001, 0).ecx & (1u << 4)))
		return;
	uint64_t v = 9, back;
	cli();
	asm volatile(".byte 0xf0\n\tmov %0, %%cr0" : : "r"(v) : "memory");
	tap_eq(apic_read(LAPIC_TPR), 0x90, "LOCK MOV to CR0 (AltMovCr8) sets TPR[7:4]");
	asm volatile(".byte 0xf0\n\tmov %%cr0, %0" : "=r"(back) : : "memory");
	tap_eq(back, 9, "LOCK MOV from CR0 reads CR8");
	tpr_set(false, 0);
}

int guest_main(void)
{
	unsigned n = (unsigned)rt_arg_u64("storm", 3000);
	char mode[16];
	if (rt_arg("mode", mode, sizeof(mode)) && !strcmp(mode, "cr8-spin")) {
		rt_printf("tpr64: CR8 = 15, spinning with interrupts enabled\n");
		cr8_write(15);
		for (;;)
			asm volatile("sti; pause" : : : "memory");
	}
	tap_begin("tpr64");
	rt_map_mmio(RT_LAPIC);
	rt_set_handler(VEC, on_ipi);
	check_tpr(false);
	check_tpr(true);
	check_lock_mov_cr0();
	storm(n);

	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	x2apic = true;
	check_tpr(false);
	check_tpr(true);
	storm(n);
	return tap_end();
}
