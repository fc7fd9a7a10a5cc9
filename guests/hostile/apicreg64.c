/* apicreg64: a guest that attacks the local APIC's register interfaces and
 * checks every answer against what the Intel SDM vol. 3 ch. 11 (APIC) says
 * the hardware does, with the same expectations on every backend (QEMU's
 * SVM, VT-x with APIC virtualization, VT-x with vmx.apicv=off).
 * docs/SECURITY.md, case 19.
 *
 *  1. xAPIC (MMIO at 0xFEE00000): all-ones written to every read-only
 *     register (version, APR, PPR, RRD, ISR/TMR/IRR, current count), to the
 *     reserved register slots, to the 12 reserved bytes of every slot and
 *     (REP STOSD) to 0x400-0xFFF: every register then reads what it read
 *     before. In TSC-deadline mode a write of the initial count is ignored
 *     (SDM 11.5.4.1). ICR high holds the destination written, and a fixed
 *     IPI goes there (an absent APIC ID: nowhere). Narrow (1 and 2 byte),
 *     unaligned and 8-byte writes to TPR, SVR and LVT error: undefined by
 *     the SDM, so only that the VM goes on and the registers read sane
 *     values. 5000 EOIs with ISR empty, then a self-IPI arrives once and
 *     ISR is empty after its EOI. WRMSR and RDMSR of the x2APIC EOI #GP.
 *  2. x2APIC (through IA32_APIC_BASE): the xAPIC window reads all-ones and
 *     ignores writes; RDMSR of 0x800-0x8FF #GP exactly at the reserved,
 *     write-only and absent registers, bits 63:32 zero but for ICR; ID,
 *     LDR and version; WRMSR #GP for reserved bits (TPR, SVR, LVT, divide,
 *     ICR), EOI 1, SELF IPI 0x100 and every read-only or reserved MSR; a
 *     SELF IPI with vector 5 delivers nothing; ICR reads back 64 bits;
 *     5000 EOIs; the current count of a running one-shot timer counts down.
 *  3. IF=0 holds: every handler counts the deliveries whose interrupted
 *     RFLAGS had IF=0. A self-IPI is made pending with IF=0 in each way a
 *     guest has (xAPIC ICR self shorthand and own APIC ID, x2APIC SELF IPI
 *     and ICR, a TPR write or an EOI that uncovers one), IF cleared by the
 *     guest's own CLI after its last exit, then it busy-waits 15 ms (twice
 *     as long after a wait no host interrupt came in, up to 960 ms) with
 *     IF=0 (RDTSC, no exit) through host interrupts (lightpath polls its
 *     console every 5 ms): it must arrive exactly once, after STI, never
 *     with IF=0. Rounds of each form until 3 waits saw a host interrupt;
 *     the guest counts the host-interrupt and RDTSC exits during the waits
 *     (LP_HC_STATS) and prints them.
 *
 * It ends with the APIC in x2APIC mode, TPR 0xE0, a self-IPI held in IRR by
 * it and a 100 us periodic timer running: resetcheck64 after it must find
 * none of it. */
#include "guests/rt/rt.h"

#define LAPIC_ID        0x020u
#define LAPIC_VERSION   0x030u
#define LAPIC_TPR       0x080u
#define LAPIC_APR       0x090u
#define LAPIC_PPR       0x0a0u
#define LAPIC_EOI       0x0b0u
#define LAPIC_RRD       0x0c0u
#define LAPIC_SVR       0x0f0u
#define LAPIC_ISR       0x100u
#define LAPIC_IRR       0x200u
#define LAPIC_ESR       0x280u
#define LAPIC_ICR_LO    0x300u
#define LAPIC_ICR_HI    0x310u
#define LAPIC_LVT_TIMER 0x320u
#define LAPIC_LVT_ERROR 0x370u
#define LAPIC_TMR_INIT  0x380u
#define LAPIC_TMR_CUR   0x390u
#define LAPIC_TMR_DIV   0x3e0u

#define MSR_X2(off)     (0x800u + ((off) >> 4))
#define MSR_X2APIC_SELF_IPI 0x83fu

#define APIC_BASE_EXTD  (1u << 10)
#define ICR_ASSERT      (1u << 14)
#define ICR_SELF        (1u << 18)
#define LVT_MASKED      (1u << 16)
#define LVT_TSCDEADLINE (2u << 17)
#define LVT_PERIODIC    (1u << 17)

#define VEC             0x61u   /* the self-IPIs (class 6) */
#define VEC_LOW         0x62u   /* form "EOI uncovers": held by VEC_HIGH in service */
#define VEC_HIGH        0x71u
#define VEC_TIMER       0x40u
#define VEC_SPURIOUS    0xffu
#define VEC_ILLEGAL     5u

#define STORM           5000u   /* EOI writes with ISR empty */
#define ROUNDS          3u      /* IF=0 waits per form that saw a host interrupt */
#define WAIT_MS         15u     /* each IF=0 wait: lightpath polls its console every 5 ms */
#define WAIT_MS_MAX     960u    /* ... doubled after a wait no host interrupt came in */

static bool x2apic;
static uint32_t xapic_id, xapic_version;
static uint64_t tsc_per_ms;

/* What arrived: per vector; deliveries into code with IF=0, all and those
 * outside the IF=0 scenarios (part 3). */
static volatile unsigned hits[256], total_hits;
static volatile unsigned if0_total, if0_outside;
static volatile bool in_scenario;
static volatile unsigned bad5;

/* ---- access helpers ---- */

static uint32_t apic_read(unsigned off) { return rt_apic_read(x2apic, off); }
static void apic_write(unsigned off, uint32_t val) { rt_apic_write(x2apic, off, val); }

static void mmio_w(unsigned off, unsigned size, uint64_t v)
{
	uintptr_t a = RT_LAPIC + off;
	switch (size) {
	case 1: asm volatile("movb %b1, (%0)" : : "r"(a), "q"((uint8_t)v) : "memory"); break;
	case 2: asm volatile("movw %w1, (%0)" : : "r"(a), "r"((uint16_t)v) : "memory"); break;
	case 4: asm volatile("movl %k1, (%0)" : : "r"(a), "r"((uint32_t)v) : "memory"); break;
	default: asm volatile("movq %1, (%0)" : : "r"(a), "r"(v) : "memory"); break;
	}
}

static uint64_t mmio_r(unsigned off, unsigned size)
{
	uintptr_t a = RT_LAPIC + off;
	uint64_t v;
	switch (size) {
	case 1: asm volatile("movzbq (%1), %0" : "=r"(v) : "r"(a) : "memory"); break;
	case 2: asm volatile("movzwq (%1), %0" : "=r"(v) : "r"(a) : "memory"); break;
	case 4: { uint32_t w; asm volatile("movl (%1), %0" : "=r"(w) : "r"(a) : "memory"); v = w; break; }
	default: asm volatile("movq (%1), %0" : "=r"(v) : "r"(a) : "memory"); break;
	}
	return v;
}

static void eoi(void)
{
	if (x2apic)
		wrmsr(MSR_X2APIC_EOI, 0);
	else
		mmio_w(LAPIC_EOI, 4, 0);
}

static uint64_t exits(unsigned reason)
{
	return (uint64_t)lp_hypercall(LP_HC_STATS, reason, 0, 0, NULL, NULL);
}

/* ---- interrupts ---- */

static void count_delivery(struct rt_frame *f)
{
	hits[f->vector & 0xff]++;
	total_hits++;
	if (!(f->flags & RT_FLAGS_IF)) {
		if0_total++;
		if (!in_scenario)
			if0_outside++;
	}
}

static void on_irq(struct rt_frame *f)
{
	count_delivery(f);
	if (f->vector != VEC_SPURIOUS)    /* a spurious interrupt takes no EOI */
		eoi();
}

static void on_vector5(struct rt_frame *f)
{
	(void)f;
	bad5++;
}

/* ---- time: the TSC, calibrated once against the PM timer. Reading it
 * makes no exit (lightpath intercepts RDTSC only while a guest polls a
 * clock device, vmm/guest_clock.h; the IF=0 waits count such exits, which
 * must be 0); rt_tsc_per_ms calibrates */

static void spin_ms(unsigned ms)
{
	uint64_t t0 = rdtsc(), d = tsc_per_ms * ms;
	while (rdtsc() - t0 < d)
		asm volatile("pause" : : : "memory");
}

/* Waits (IF as it is) until `want` deliveries of vector v, at most ms. */
static void wait_hits(unsigned v, unsigned want, unsigned ms)
{
	uint64_t t0 = rdtsc(), d = tsc_per_ms * ms;
	while (hits[v] < want && rdtsc() - t0 < d)
		asm volatile("pause" : : : "memory");
}

/* One interrupt window of 2 ms: whatever is deliverable arrives. */
static void window(void)
{
	sti();
	spin_ms(2);
	cli();
}

static unsigned apic_bits(unsigned base) { return rt_apic_bits(x2apic, base); }

/* ---- 1. xAPIC ---- */

/* The register file as MMIO reads it: every dword of 0x000-0x3FC but the
 * current count (it counts). */
#define SNAP_WORDS (0x400u / 4)
static uint32_t snap_before[SNAP_WORDS], snap_after[SNAP_WORDS];

static void snapshot(uint32_t *s)
{
	for (unsigned i = 0; i < SNAP_WORDS; i++)
		s[i] = (i * 4 & ~0xfu) == LAPIC_TMR_CUR ? 0 : (uint32_t)mmio_r(i * 4, 4);
}

/* How many dwords differ from snap_before; prints the first few. */
static unsigned snapshot_diff(const char *after_what)
{
	unsigned bad = 0;
	snapshot(snap_after);
	for (unsigned i = 0; i < SNAP_WORDS; i++) {
		if (snap_after[i] == snap_before[i])
			continue;
		if (bad++ < 4)
			rt_printf("apicreg64: after %s, offset 0x%x reads 0x%x (was 0x%x)\n", after_what,
				  i * 4, snap_after[i], snap_before[i]);
	}
	return bad;
}

static bool is_reserved_slot(unsigned off)
{
	return off < LAPIC_ID || (off >= 0x040 && off < LAPIC_TPR) ||
	       (off >= 0x290 && off <= 0x2f0) ||   /* 0x2F0: CMCI, absent (version) */
	       (off >= 0x3a0 && off <= 0x3d0) || off == 0x3f0;
}

static void xapic_read_only(void)
{
	static const unsigned ro[] = { LAPIC_VERSION, LAPIC_APR, LAPIC_PPR, LAPIC_RRD, LAPIC_TMR_CUR };
	snapshot(snap_before);
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(ro) / sizeof(ro[0]); i++, n++)
		mmio_w(ro[i], 4, ~0ull);
	for (unsigned off = LAPIC_ISR; off < LAPIC_IRR + 0x80; off += 0x10, n++)
		mmio_w(off, 4, ~0ull);      /* ISR, TMR, IRR */
	tap_eq(snapshot_diff("all-ones to the read-only registers"), 0,
	       "xAPIC: all-ones written to the %u read-only registers (version, APR, PPR, RRD, "
	       "ISR/TMR/IRR, current count): every register reads as before", n);

	n = 0;
	for (unsigned off = 0; off < 0x400; off += 0x10)
		if (is_reserved_slot(off)) {
			mmio_w(off, 4, ~0ull);
			n++;
		}
	tap_eq(snapshot_diff("all-ones to the reserved slots"), 0,
	       "xAPIC: all-ones written to the %u reserved register slots (CMCI, absent, among them): "
	       "every register reads as before", n);

	for (unsigned off = 0; off < 0x400; off += 0x10)
		for (unsigned b = 4; b < 16; b += 4)
			mmio_w(off + b, 4, ~0ull);
	tap_eq(snapshot_diff("all-ones to the reserved bytes of each slot"), 0,
	       "xAPIC: all-ones written to the 12 reserved bytes of each of the 64 register slots: "
	       "every register reads as before");

	/* the rest of the page, 0x400-0xFFF, by REP STOSD */
	static uint32_t high_before[0xc00 / 4];
	for (unsigned i = 0; i < 0xc00 / 4; i++)
		high_before[i] = (uint32_t)mmio_r(0x400 + i * 4, 4);
	uint64_t dst = RT_LAPIC + 0x400, cnt = 0xc00 / 4;
	asm volatile("cld\n\trep stosl" : "+D"(dst), "+c"(cnt) : "a"(~0u) : "memory");
	unsigned bad = 0;
	for (unsigned i = 0; i < 0xc00 / 4; i++)
		bad += (uint32_t)mmio_r(0x400 + i * 4, 4) != high_before[i];
	bad += snapshot_diff("REP STOSD over 0x400-0xFFF");
	tap_eq(bad, 0, "xAPIC: REP STOSD of all-ones over 0x400-0xFFF: the page and every register "
	       "read as before");
}

/* SDM 11.5.4.1: in TSC-deadline mode a write of the initial count is
 * ignored, and the current count reads 0. */
static void xapic_deadline_init_count(void)
{
	if (!(cpuid(1, 0).ecx & (1u << 24))) {
		tap_skip("xAPIC: TSC-deadline mode ignores a write of the initial count (no TSC-deadline timer)");
		tap_skip("xAPIC: TSC-deadline mode: the current count reads 0 (no TSC-deadline timer)");
		return;
	}
	apic_write(LAPIC_LVT_TIMER, LVT_MASKED | LVT_TSCDEADLINE | VEC_TIMER);
	uint32_t before = apic_read(LAPIC_TMR_INIT);
	apic_write(LAPIC_TMR_INIT, 0x12345678u);
	tap_eq(apic_read(LAPIC_TMR_INIT), before,
	       "xAPIC: TSC-deadline mode ignores a write of the initial count (it reads as before)");
	tap_eq(apic_read(LAPIC_TMR_CUR), 0, "xAPIC: TSC-deadline mode: the current count reads 0");
	apic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_TIMER);     /* one-shot again */
}

/* ICR high holds the destination, and a fixed IPI goes there. */
static void xapic_icr_high(void)
{
	uint32_t own = xapic_id >> 24, absent = own == 0xfe ? 0x10 : own + 1;
	unsigned h0 = hits[VEC];

	mmio_w(LAPIC_ICR_HI, 4, own << 24);
	sti();
	mmio_w(LAPIC_ICR_LO, 4, ICR_ASSERT | VEC);
	wait_hits(VEC, h0 + 1, 20);
	spin_ms(1);
	cli();
	tap_eq(hits[VEC] - h0, 1, "xAPIC: a fixed IPI to its own APIC ID 0x%x (ICR high) arrives once", own);

	h0 = hits[VEC];
	mmio_w(LAPIC_ICR_HI, 4, absent << 24);
	tap_eq(mmio_r(LAPIC_ICR_HI, 4), absent << 24, "xAPIC: ICR high reads back destination 0x%x", absent);
	mmio_w(LAPIC_ICR_LO, 4, ICR_ASSERT | VEC);
	window();
	tap_eq(hits[VEC] - h0, 0, "xAPIC: a fixed IPI to APIC ID 0x%x (none there) does not arrive here",
	       absent);
	tap_eq(mmio_r(LAPIC_ICR_HI, 4), absent << 24,
	       "xAPIC: ICR high still reads destination 0x%x after the IPI", absent);
	mmio_w(LAPIC_ICR_HI, 4, own << 24);
}

/* Narrow, unaligned and 8-byte writes: the SDM (11.4.1) leaves them
 * undefined; the VM must go on and the registers read sane values. */
static void xapic_odd_sizes(void)
{
	static const unsigned regs[] = { LAPIC_TPR, LAPIC_SVR, LAPIC_LVT_ERROR };
	for (unsigned r = 0; r < 3; r++) {
		unsigned off = regs[r];
		for (unsigned size = 1; size <= 2; size++)
			for (unsigned b = 0; b + size <= 4; b++) {
				mmio_w(off + b, size, ~0ull);
				(void)mmio_r(off + b, size);
				mmio_w(off + b, size, 0);
			}
		for (unsigned b = 1; b < 4; b++) {
			mmio_w(off + b, 4, ~0ull);
			(void)mmio_r(off + b, 4);
		}
		mmio_w(off, 8, ~0ull);
		(void)mmio_r(off, 8);
		mmio_w(off + 1, 1, 0x5a);
	}
	for (unsigned b = 0; b < 4; b++)
		(void)mmio_r(LAPIC_ID + b, 1), (void)mmio_r(LAPIC_VERSION + b, 1);
	/* a 16-bit MOV load (66 8b, which the light path decodes) writes the
	 * register's low 16 bits only, as on a CPU */
	uint64_t reg = 0x12345678dead0000ull;
	asm volatile("movw (%1), %w0" : "+r"(reg) : "r"((uintptr_t)RT_LAPIC + LAPIC_VERSION) : "memory");
	uint32_t version = (uint32_t)mmio_r(LAPIC_VERSION, 4);
	tap_eq(reg, 0x12345678dead0000ull | (version & 0xffff),
	       "xAPIC: a 16-bit MOV load keeps the register's upper 48 bits");
	uint32_t tpr = apic_read(LAPIC_TPR), svr = apic_read(LAPIC_SVR), lvt = apic_read(LAPIC_LVT_ERROR);
	tap_ok(!(tpr & ~0xffu), tpr, "bits 31:8 clear",
	       "xAPIC: after 1-, 2-, unaligned 4- and 8-byte writes the TPR reads a sane value");
	tap_ok(!(svr & ~0x13ffu), svr, "only bits 0-9 and 12",
	       "xAPIC: after the same to SVR it reads a sane value");
	tap_ok(!(lvt & ~0x110ffu), lvt, "only vector, delivery status, mask",
	       "xAPIC: after the same to LVT error it reads a sane value");
	apic_write(LAPIC_TPR, 0);
	apic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);
	apic_write(LAPIC_LVT_ERROR, LVT_MASKED);
	tap_eq(apic_read(LAPIC_ID), xapic_id, "xAPIC: the ID reads as before");
	tap_eq(apic_read(LAPIC_VERSION), xapic_version, "xAPIC: the version reads as before");
	unsigned h0 = hits[VEC];
	sti();
	mmio_w(LAPIC_ICR_LO, 4, ICR_SELF | VEC);
	wait_hits(VEC, h0 + 1, 20);
	spin_ms(1);
	cli();
	tap_eq(hits[VEC] - h0, 1, "xAPIC: after them, with TPR, SVR and LVT error rewritten, a self-IPI "
	       "arrives once");
}

/* STORM EOIs with ISR empty; then one self-IPI arrives once, and ISR is
 * empty after its EOI. */
static void eoi_storm(void)
{
	const char *mode = x2apic ? "x2APIC" : "xAPIC";
	unsigned reason = x2apic ? LP_EXIT_MSR_WRITE : LP_EXIT_NPF;
	uint64_t e0 = exits(reason);
	for (unsigned i = 0; i < STORM; i++)
		eoi();
	uint64_t e1 = exits(reason);
	rt_printf("apicreg64: %s EOI storm: %u EOI writes with ISR empty made %llu %s exits\n", mode,
		  STORM, (unsigned long long)(e1 - e0), x2apic ? "MSR-write" : "MMIO");
	tap_eq(apic_bits(LAPIC_ISR) + apic_bits(LAPIC_IRR), 0, "%s EOI storm: ISR and IRR stay empty", mode);
	tap_eq(apic_read(LAPIC_PPR), 0, "%s EOI storm: PPR reads 0", mode);
	unsigned h0 = hits[VEC], t0 = total_hits;
	sti();
	if (x2apic)
		wrmsr(MSR_X2APIC_SELF_IPI, VEC);
	else
		mmio_w(LAPIC_ICR_LO, 4, ICR_SELF | VEC);
	wait_hits(VEC, h0 + 1, 20);
	spin_ms(1);
	cli();
	tap_eq(hits[VEC] - h0, 1, "%s EOI storm: then a self-IPI arrives exactly once", mode);
	tap_eq(total_hits - t0, 1, "%s EOI storm: and nothing else", mode);
	tap_eq(apic_bits(LAPIC_ISR), 0, "%s EOI storm: ISR is empty after its EOI", mode);
}

/* ---- 3. IF=0 ---- */

enum form {
	XAPIC_ICR_SELF,     /* xAPIC ICR, self shorthand: the CPU virtualizes it on VT-x */
	XAPIC_ICR_OWN_ID,   /* xAPIC ICR to its own APIC ID: exits everywhere */
	XAPIC_TPR_LOWERED,  /* a self-IPI held by TPR 0xF0, the TPR lowered by MMIO */
	X2APIC_SELF_IPI,    /* x2APIC SELF IPI MSR: the CPU virtualizes it on VT-x */
	X2APIC_ICR_SELF,    /* x2APIC ICR, self shorthand: exits everywhere */
	X2APIC_TPR_LOWERED, /* an ICR self-IPI held by TPR 0xF0, the TPR lowered by WRMSR */
	X2APIC_EOI_UNCOVERS,/* in a handler: SELF IPI of a lower class, then EOI, with IF=0 */
};

static const char *const form_name[] = {
	[XAPIC_ICR_SELF] = "xAPIC ICR self shorthand",
	[XAPIC_ICR_OWN_ID] = "xAPIC ICR to its own APIC ID",
	[XAPIC_TPR_LOWERED] = "xAPIC TPR lowered below a held self-IPI",
	[X2APIC_SELF_IPI] = "x2APIC SELF IPI MSR",
	[X2APIC_ICR_SELF] = "x2APIC ICR self shorthand",
	[X2APIC_TPR_LOWERED] = "x2APIC TPR MSR lowered below a held ICR self-IPI",
	[X2APIC_EOI_UNCOVERS] = "x2APIC EOI in a handler uncovering a SELF IPI",
};

static unsigned waits;
static uint64_t wait_host_intrs, wait_rdtsc_exits;
static unsigned tested_waits;        /* waits during which a host interrupt came */
static volatile bool eoi_form;

static void send_self(void)
{
	if (x2apic)
		wrmsr(MSR_X2APIC_ICR, ICR_SELF | VEC);
	else
		mmio_w(LAPIC_ICR_LO, 4, ICR_SELF | VEC);
}

/* The exit counts an IF=0 wait starts from (taken with IF=1, before the
 * guest's CLI) and the wait itself: the host-interrupt exits during it,
 * and the RDTSC exits (none: the wait makes no exit of its own). */
struct wait_start {
	uint64_t intr, rdtsc;
};

static struct wait_start wait_begin(void)
{
	struct wait_start w = { exits(LP_EXIT_RDTSC), 0 };
	w.intr = exits(LP_EXIT_INTR);
	return w;
}

static uint64_t last_wait_intrs;     /* host-interrupt exits in the last wait */
/* The wait: longer after one that no host interrupt came in (a loaded host
 * runs the emulator's timers late), so that the waits are put to the test
 * on any host. */
static unsigned wait_ms = WAIT_MS;

static void if0_wait(struct wait_start w)
{
	spin_ms(wait_ms);
	last_wait_intrs = exits(LP_EXIT_INTR) - w.intr;
	wait_host_intrs += last_wait_intrs;
	wait_rdtsc_exits += exits(LP_EXIT_RDTSC) - w.rdtsc;
	waits++;
	tested_waits += last_wait_intrs != 0;
	if (!last_wait_intrs && wait_ms < WAIT_MS_MAX)
		wait_ms *= 2;
}

/* VEC_HIGH's handler, in form X2APIC_EOI_UNCOVERS: with VEC_HIGH in
 * service (IF=0 since the gate), a SELF IPI of a lower class waits; the
 * EOI uncovers it; no exit from the delivery to the end of the wait. */
static struct wait_start eoi_form_start;

static void on_high(struct rt_frame *f)
{
	count_delivery(f);
	if (!eoi_form) {
		eoi();
		return;
	}
	wrmsr(MSR_X2APIC_SELF_IPI, VEC_LOW);
	eoi();
	if0_wait(eoi_form_start);
}

/* Rounds of one form until ROUNDS of them saw a host interrupt during
 * their wait (at most 4 * ROUNDS: a loaded host may run the emulator
 * seldom). Each makes the self-IPI pending while IF=0 and waits, as a
 * kernel would: IF cleared by the guest's own CLI (or the interrupt gate)
 * after its last exit. (A VM entry with IF=0 would hide what this looks
 * for under Bochs 2.7, which then keeps host interrupts masked in the
 * guest: vmm/vmx/vmx.h, WATCHDOG_MS.) */
static void if0_form(enum form form)
{
	unsigned v = form == X2APIC_EOI_UNCOVERS ? VEC_LOW : VEC;
	unsigned not_once = 0, rounds = 0, tested0 = tested_waits, if0_before = if0_total;
	in_scenario = true;
	for (; tested_waits - tested0 < ROUNDS && rounds < 4 * ROUNDS; rounds++) {
		unsigned h0 = hits[v];
		unsigned h1;
		struct wait_start i0;
		sti();
		switch (form) {
		case XAPIC_ICR_SELF:
		case X2APIC_ICR_SELF:
		case X2APIC_SELF_IPI:
			i0 = wait_begin();
			cli();
			if (form == X2APIC_SELF_IPI)
				wrmsr(MSR_X2APIC_SELF_IPI, VEC);
			else
				send_self();
			if0_wait(i0);
			break;
		case XAPIC_ICR_OWN_ID:
			mmio_w(LAPIC_ICR_HI, 4, xapic_id);
			i0 = wait_begin();
			cli();
			mmio_w(LAPIC_ICR_LO, 4, ICR_ASSERT | VEC);
			if0_wait(i0);
			break;
		case XAPIC_TPR_LOWERED:
		case X2APIC_TPR_LOWERED:
			apic_write(LAPIC_TPR, 0xf0);   /* held: IF=1 does not matter */
			send_self();
			i0 = wait_begin();
			cli();
			apic_write(LAPIC_TPR, 0);
			if0_wait(i0);
			break;
		case X2APIC_EOI_UNCOVERS:
			eoi_form = true;
			eoi_form_start = wait_begin();
			h1 = hits[VEC_HIGH];
			wrmsr(MSR_X2APIC_SELF_IPI, VEC_HIGH);   /* VEC_HIGH's handler does the rest */
			wait_hits(VEC_HIGH, h1 + 1, 50);
			cli();
			eoi_form = false;
			break;
		}
		sti();
		wait_hits(v, h0 + 1, 50);
		spin_ms(1);
		cli();
		not_once += hits[v] - h0 != 1;
	}
	in_scenario = false;
	tap_eq(not_once, 0, "IF=0, %s: each self-IPI arrived exactly once (rounds in which it did not)",
	       form_name[form]);
	tap_eq(if0_total - if0_before, 0, "IF=0 held, %s: deliveries into code with IF=0 during waits of "
	       "%u ms or more with IF=0", form_name[form], WAIT_MS);
}

static void if0_report(const char *mode)
{
	rt_printf("apicreg64: IF=0 waits in %s mode: %u of %u ms or more, %u of them with host "
		  "interrupts (%llu host-interrupt exits), %llu RDTSC exits\n", mode, waits, WAIT_MS,
		  tested_waits,
		  (unsigned long long)wait_host_intrs, (unsigned long long)wait_rdtsc_exits);
	waits = tested_waits = 0;
	wait_ms = WAIT_MS;
	wait_host_intrs = wait_rdtsc_exits = 0;
}

/* ---- 2. x2APIC ---- */

static bool x2_readable(uint32_t msr, bool cmci)
{
	unsigned off = (msr - 0x800u) << 4;
	if (off >= LAPIC_ISR && off < LAPIC_IRR + 0x80)
		return true;                    /* ISR, TMR, IRR */
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return true;
	switch (off) {
	case LAPIC_ID: case LAPIC_VERSION: case LAPIC_TPR: case LAPIC_PPR: case 0x0d0 /* LDR */:
	case LAPIC_SVR: case LAPIC_ESR: case LAPIC_ICR_LO: case LAPIC_TMR_INIT: case LAPIC_TMR_CUR:
	case LAPIC_TMR_DIV:
		return true;
	case 0x2f0:
		return cmci;
	default:   /* APR, EOI, RRD, DFR, ICR high, SELF IPI, reserved */
		return false;
	}
}

static bool x2_writable(uint32_t msr, bool cmci)
{
	unsigned off = (msr - 0x800u) << 4;
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return true;
	switch (off) {
	case LAPIC_TPR: case LAPIC_EOI: case LAPIC_SVR: case LAPIC_ESR: case LAPIC_ICR_LO:
	case LAPIC_TMR_INIT: case LAPIC_TMR_DIV: case 0x3f0 /* SELF IPI */:
		return true;
	case 0x2f0:
		return cmci;
	default:
		return false;
	}
}

static void x2apic_window(void)
{
	static const unsigned offs[] = { LAPIC_ID, LAPIC_VERSION, LAPIC_TPR, LAPIC_SVR, LAPIC_ICR_LO,
					 LAPIC_LVT_TIMER, LAPIC_TMR_INIT };
	unsigned bad = 0;
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		bad += (uint32_t)mmio_r(offs[i], 4) != 0xffffffffu;
	tap_eq(bad, 0, "x2APIC mode: the xAPIC window at 0xFEE00000 reads all-ones (%u registers)",
	       (unsigned)(sizeof(offs) / sizeof(offs[0])));

	static const uint32_t msrs[] = { MSR_X2(LAPIC_TPR), MSR_X2(LAPIC_SVR), MSR_X2(LAPIC_LVT_TIMER),
					 MSR_X2(LAPIC_TMR_INIT), MSR_X2(0x0d0), MSR_X2(LAPIC_ICR_LO) };
	uint64_t before[6];
	for (unsigned i = 0; i < 6; i++)
		before[i] = rdmsr(msrs[i]);
	unsigned t0 = total_hits;
	mmio_w(LAPIC_TPR, 4, 0xf0);
	mmio_w(LAPIC_SVR, 4, 0);
	mmio_w(LAPIC_LVT_TIMER, 4, VEC_TIMER);
	mmio_w(LAPIC_TMR_INIT, 4, 1000);
	mmio_w(LAPIC_ICR_LO, 4, ICR_SELF | VEC);
	mmio_w(LAPIC_EOI, 4, 0);
	window();
	bad = 0;
	for (unsigned i = 0; i < 6; i++)
		bad += rdmsr(msrs[i]) != before[i];
	tap_eq(bad, 0, "x2APIC mode: writes to the xAPIC window change nothing (TPR, SVR, LVT timer, "
	       "initial count, LDR, ICR)");
	tap_eq(total_hits - t0, 0, "x2APIC mode: an ICR self-IPI and a 1 us timer written there deliver "
	       "nothing");
}

static void x2apic_rdmsr(void)
{
	uint32_t version = (uint32_t)rdmsr(MSR_X2(LAPIC_VERSION));
	bool cmci = ((version >> 16) & 0xff) >= 6;
	unsigned bad = 0, high = 0, n_gp = 0, n_read = 0;
	for (uint32_t msr = 0x800; msr <= 0x8ff; msr++) {
		uint64_t v = 0;
		unsigned vec = rdmsr_safe(msr, &v);
		bool readable = x2_readable(msr, cmci);
		n_gp += !readable;
		n_read += readable;
		if (vec != (readable ? 0u : 13u)) {
			if (bad++ < 4)
				rt_printf("apicreg64: RDMSR 0x%x: vector %u\n", msr, vec);
			continue;
		}
		if (readable && msr != MSR_X2APIC_ICR && (v >> 32)) {
			if (high++ < 4)
				rt_printf("apicreg64: RDMSR 0x%x: 0x%llx\n", msr, (unsigned long long)v);
		}
	}
	tap_eq(bad, 0, "x2APIC: RDMSR of 0x800-0x8FF raises #GP exactly at the %u reserved, write-only "
	       "and absent registers, and not at the %u others", n_gp, n_read);
	tap_eq(high, 0, "x2APIC: the %u readable registers but ICR read bits 63:32 as 0", n_read - 1);

	uint64_t id = rdmsr(MSR_X2(LAPIC_ID));
	uint32_t want = cpuid(0, 0).eax >= 0xb ? cpuid(0xb, 0).edx : cpuid(1, 0).ebx >> 24;
	tap_eq(id, want, "x2APIC: ID (MSR 0x802) is the full x2APIC ID (CPUID)");
	tap_eq(id & 0xff, xapic_id >> 24, "x2APIC: its low 8 bits are the xAPIC ID read before");
	uint32_t ldr = (uint32_t)(((id >> 4) << 16) | (1u << (id & 15)));
	tap_eq(rdmsr(MSR_X2(0x0d0)), ldr, "x2APIC: LDR (MSR 0x80D) is (ID >> 4) << 16 | 1 << (ID & 15)");
	tap_eq(version, xapic_version, "x2APIC: version (MSR 0x803) is the xAPIC version read before");
}

static void x2apic_wrmsr(void)
{
	bool cmci = ((rdmsr(MSR_X2(LAPIC_VERSION)) >> 16) & 0xff) >= 6;
	tap_eq(wrmsr_safe(MSR_X2(LAPIC_TPR), 0x100), 13, "x2APIC: WRMSR of TPR with bit 8 set raises #GP");
	tap_eq(rdmsr(MSR_X2(LAPIC_TPR)), 0, "x2APIC: and TPR still reads 0");
	tap_eq(wrmsr_safe(MSR_X2APIC_EOI, 1), 13, "x2APIC: WRMSR of EOI with 1 raises #GP");
	tap_eq(wrmsr_safe(MSR_X2APIC_SELF_IPI, 0x100), 13, "x2APIC: WRMSR of SELF IPI with 0x100 raises #GP");
	uint32_t svr = (uint32_t)rdmsr(MSR_X2(LAPIC_SVR));
	tap_eq(wrmsr_safe(MSR_X2(LAPIC_SVR), svr | (1u << 16)), 13,
	       "x2APIC: WRMSR of SVR with reserved bit 16 set raises #GP");
	uint32_t lvt = (uint32_t)rdmsr(MSR_X2(LAPIC_LVT_TIMER));
	tap_eq(wrmsr_safe(MSR_X2(LAPIC_LVT_TIMER), lvt | (1u << 20)), 13,
	       "x2APIC: WRMSR of LVT timer with reserved bit 20 set raises #GP");
	tap_eq(wrmsr_safe(MSR_X2(LAPIC_TMR_DIV), 0x1b), 13,
	       "x2APIC: WRMSR of the divide configuration with reserved bit 4 set raises #GP");
	tap_eq(wrmsr_safe(MSR_X2APIC_ICR, (2ull << 32) | 0x2000 | VEC), 13,
	       "x2APIC: WRMSR of ICR with reserved bit 13 set raises #GP");
	tap_eq(rdmsr(MSR_X2(LAPIC_SVR)), svr, "x2APIC: SVR reads as before");
	tap_eq(rdmsr(MSR_X2(LAPIC_LVT_TIMER)), lvt, "x2APIC: LVT timer reads as before");

	unsigned bad = 0, n = 0;
	for (uint32_t msr = 0x800; msr <= 0x8ff; msr++) {
		if (x2_writable(msr, cmci))
			continue;
		n++;
		unsigned vec = wrmsr_safe(msr, 0);
		if (vec != 13 && bad++ < 4)
			rt_printf("apicreg64: WRMSR 0x%x, 0: vector %u\n", msr, vec);
	}
	tap_eq(bad, 0, "x2APIC: WRMSR of 0 to each of the %u read-only, reserved and absent registers "
	       "raises #GP", n);
}

static void x2apic_self_ipi_illegal(void)
{
	wrmsr(MSR_X2(LAPIC_ESR), 0);
	wrmsr(MSR_X2(LAPIC_ESR), 0);          /* latched and cleared */
	unsigned t0 = total_hits;
	bad5 = 0;
	sti();
	unsigned vec = wrmsr_safe(MSR_X2APIC_SELF_IPI, VEC_ILLEGAL);
	spin_ms(2);
	cli();
	tap_eq(vec, 0, "x2APIC: SELF IPI with the illegal vector 5 raises no #GP");
	tap_eq(bad5, 0, "x2APIC: it delivers nothing: no handler for vector 5 ran");
	tap_eq(total_hits - t0, 0, "x2APIC: and no other interrupt arrived");
	tap_eq(apic_bits(LAPIC_IRR), 0, "x2APIC: IRR stays empty (no bit for vectors 0-15)");
	wrmsr(MSR_X2(LAPIC_ESR), 0);
	uint32_t esr = (uint32_t)rdmsr(MSR_X2(LAPIC_ESR));
	tap_ok(esr & 0x60, esr, "bit 5 or 6", "x2APIC: ESR reports the illegal vector (send or receive "
	       "illegal vector)");
	wrmsr(MSR_X2(LAPIC_ESR), 0);
}

static void x2apic_icr(void)
{
	uint64_t id = rdmsr(MSR_X2(LAPIC_ID));
	uint64_t dest = id + 1, icr = (dest << 32) | ICR_ASSERT | VEC;
	unsigned h0 = hits[VEC];
	wrmsr(MSR_X2APIC_ICR, icr);
	tap_eq(rdmsr(MSR_X2APIC_ICR), icr, "x2APIC: ICR (MSR 0x830) reads back the 64-bit value written "
	       "(destination 0x%llx in bits 63:32)", (unsigned long long)dest);
	window();
	tap_eq(hits[VEC] - h0, 0, "x2APIC: the fixed IPI to x2APIC ID 0x%llx (none there) does not "
	       "arrive here", (unsigned long long)dest);
}

/* The current count of a running one-shot timer (LVT masked): non-zero,
 * and counting down, read by RDMSR 0x839. */
static void x2apic_current_count(void)
{
	wrmsr(MSR_X2(LAPIC_LVT_TIMER), LVT_MASKED | VEC_TIMER);
	wrmsr(MSR_X2(LAPIC_TMR_DIV), 0xb);               /* divide by 1 */
	wrmsr(MSR_X2(LAPIC_TMR_INIT), 0xffffffffu);
	uint32_t c[3];
	for (unsigned i = 0; i < 3; i++) {
		c[i] = (uint32_t)rdmsr(MSR_X2(LAPIC_TMR_CUR));
		spin_ms(1);
	}
	tap_eq(rdmsr(MSR_X2(LAPIC_TMR_INIT)), 0xffffffffu, "x2APIC: the initial count reads what was written");
	tap_ok(c[0] != 0, c[0], "non-zero", "x2APIC: the current count of a running one-shot timer is not 0");
	tap_ok(c[1] < c[0] && c[2] < c[1], c[2], "below the previous reads",
	       "x2APIC: read three times 1 ms apart it counts down (0x%x, 0x%x, 0x%x)", c[0], c[1], c[2]);
	wrmsr(MSR_X2(LAPIC_TMR_INIT), 0);
	tap_eq(rdmsr(MSR_X2(LAPIC_TMR_CUR)), 0, "x2APIC: an initial count of 0 stops it: the current count "
	       "reads 0");
}

int guest_main(void)
{
	tap_begin("apicreg64");
	rt_map_mmio(RT_LAPIC);
	for (unsigned v = 32; v < 256; v++)
		rt_set_handler(v, on_irq);
	rt_set_handler(VEC_HIGH, on_high);
	rt_set_handler(VEC_ILLEGAL, on_vector5);
	cli();
	tsc_per_ms = rt_tsc_per_ms();

	/* 1. xAPIC */
	mmio_w(LAPIC_SVR, 4, 0x100 | VEC_SPURIOUS);
	xapic_id = (uint32_t)mmio_r(LAPIC_ID, 4);
	xapic_version = (uint32_t)mmio_r(LAPIC_VERSION, 4);
	xapic_read_only();
	xapic_deadline_init_count();
	xapic_icr_high();
	xapic_odd_sizes();
	eoi_storm();
	/* the x2APIC MSRs are absent in xAPIC mode (SDM 11.12.1.2), the EOI's
	 * too, which lightpath dispatches on its own */
	uint64_t eoi_value;
	tap_eq(wrmsr_safe(MSR_X2APIC_EOI, 0), 13, "xAPIC: WRMSR of the x2APIC EOI (0x80B) raises #GP");
	tap_eq(rdmsr_safe(MSR_X2APIC_EOI, &eoi_value), 13,
	       "xAPIC: RDMSR of the x2APIC EOI (0x80B) raises #GP");
	/* the SELF IPI's too (dispatched on its own the same way): and the
	 * vector it named reaches no IRR */
	tap_eq(wrmsr_safe(MSR_X2APIC_SELF_IPI, VEC), 13,
	       "xAPIC: WRMSR of the x2APIC SELF IPI (0x83F) raises #GP");
	tap_eq(apic_bits(LAPIC_IRR), 0, "xAPIC: and IRR stays empty");
	if0_form(XAPIC_ICR_SELF);
	if0_form(XAPIC_ICR_OWN_ID);
	if0_form(XAPIC_TPR_LOWERED);
	if0_report("xAPIC");

	/* 2. x2APIC */
	if (!(cpuid(1, 0).ecx & (1u << 21))) {
		tap_skip("no x2APIC (CPUID.1:ECX[21] clear)");
		return tap_end();
	}
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	x2apic = true;
	tap_ok(rdmsr(MSR_APIC_BASE) & APIC_BASE_EXTD, rdmsr(MSR_APIC_BASE), "EXTD set",
	       "x2APIC mode entered through IA32_APIC_BASE");
	x2apic_window();
	x2apic_rdmsr();
	x2apic_wrmsr();
	x2apic_self_ipi_illegal();
	x2apic_icr();
	eoi_storm();
	if0_form(X2APIC_SELF_IPI);
	if0_form(X2APIC_ICR_SELF);
	if0_form(X2APIC_TPR_LOWERED);
	if0_form(X2APIC_EOI_UNCOVERS);
	if0_report("x2APIC");
	x2apic_current_count();

	tap_eq(if0_outside, 0, "outside the IF=0 scenarios no interrupt was delivered into code with IF=0");
	tap_eq(hits[VEC_SPURIOUS], 0, "no spurious interrupt");

	/* what it leaves: TPR 0xE0 holding a self-IPI in IRR and a 100 us
	 * periodic timer (class 4), IF=0 */
	cli();
	wrmsr(MSR_X2(LAPIC_TPR), 0xe0);
	wrmsr(MSR_X2APIC_SELF_IPI, VEC);
	wrmsr(MSR_X2(LAPIC_LVT_TIMER), LVT_PERIODIC | VEC_TIMER);
	wrmsr(MSR_X2(LAPIC_TMR_INIT), 100000);
	return tap_end();
}
