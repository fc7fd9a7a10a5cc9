/* smp: a multiprocessor guest, the way an OS brings up and uses its CPUs
 * (Intel SDM vol. 3 ch. 10 "APIC" and 8.4 "MP initialization"; ACPI's MADT),
 * written for lightpath's SMP guests (docs/SMP.md, "Several vCPUs per
 * VM") and proven on plain QEMU first. Flat 32-bit only.
 *
 *  - The CPUs: the MADT's enabled local APIC entries (type 0; type 9, the
 *    x2APIC entry, too), the boot CPU found among them by its APIC ID;
 *    `cpus=N` is the number expected.
 *  - Start-up: each AP in turn gets INIT, 10 ms, SIPI, 200 us, SIPI at a
 *    real-mode trampoline copied to 0x8000 (below 1 MiB, page-aligned; the
 *    image itself is linked at 1 MiB; guests/rt/ap32.c). The trampoline
 *    enters protected mode with its own GDT (same selectors as the
 *    runtime's), takes the stack the boot CPU left for it and calls
 *    ap_main(), which loads the shared IDT,
 *    enables its local APIC (SVR), records its APIC ID and reports in with
 *    an atomic counter. Every wait is timed by the ACPI PM timer.
 *  - IPIs: fixed, physical destination, boot CPU -> each CPU and each AP ->
 *    boot CPU; NMI to each AP; the shorthands all-excluding-self (from the
 *    boot CPU and from an AP), all-including-self and self (on every CPU);
 *    logical flat destination to two CPUs, and lowest priority to the same
 *    two (exactly one of them); the I/O APIC's PIT pin (IRQ 0 through the
 *    MADT's override) routed to each CPU in turn; in x2APIC mode (where
 *    CPUID offers it, every CPU switched) fixed IPIs through the ICR MSR and
 *    the self-IPI MSR.
 *  - Every check counts what arrived per CPU per vector (atomic counters in
 *    handlers shared by all CPUs, the CPU found by its initial APIC ID) and
 *    wants the interrupt exactly once at the intended CPUs and nothing else
 *    anywhere: it waits for the expected number, then SETTLE_MS more.
 *
 * APs idle in `sti; hlt` and take commands from a mailbox: the boot CPU
 * writes the command, then wakes the AP with an IPI on VEC_WAKE (counted
 * apart). Only the boot CPU prints. */
#include "guests/rt/rt.h"

#ifdef __x86_64__
#error "smp is a flat 32-bit guest"
#endif

#define MAX_CPUS     16u         /* per-CPU counts are hex digits of a u64 */
#define AP_STACK     8192u

#define LAPIC_ID     0x020u
#define LAPIC_TPR    0x080u
#define LAPIC_EOI    0x0b0u
#define LAPIC_LDR    0x0d0u
#define LAPIC_DFR    0x0e0u
#define LAPIC_SVR    0x0f0u
#define LAPIC_ICR_LO 0x300u
#define LAPIC_ICR_HI 0x310u
#define MSR_X2APIC_ID   0x802u
#define MSR_X2APIC_SELF 0x83fu
#define APIC_BASE_BSP   (1u << 8)
#define APIC_BASE_EXTD  (1u << 10)
#define APIC_BASE_EN    (1u << 11)

/* ICR fields */
#define DM_FIXED     (0u << 8)
#define DM_LOWEST    (1u << 8)
#define DM_NMI       (4u << 8)
#define DM_INIT      (5u << 8)
#define DM_SIPI      (6u << 8)
#define ICR_LOGICAL  (1u << 11)
#define ICR_BUSY     (1u << 12)
#define ICR_ASSERT   (1u << 14)   /* the SDM: 1 for every mode but INIT de-assert */
#define SH_SELF      (1u << 18)
#define SH_ALL       (2u << 18)
#define SH_OTHERS    (3u << 18)

#define IOAPIC_RTE   0x10u
#define RTE_LOW      (1u << 13)
#define RTE_LEVEL    (1u << 15)
#define RTE_MASKED   (1u << 16)

#define PIT_CH0      0x40
#define PIT_CMD      0x43
#define PIT_ONESHOT  1193u       /* mode 0, about 1 ms */

#define PM_MASK      0xffffffu
#define US(us)       ((uint32_t)((uint64_t)(us) * LP_PMTIMER_HZ / 1000000))
#define ARRIVE_MS    500u        /* the longest an expected interrupt may take */
#define SETTLE_MS    10u         /* then this long for any that should not come */
#define AP_START_MS  1000u
#define CMD_MS       1000u

/* Vectors: 0x40 + test (each test its own), 0x30 the mailbox wake-up,
 * 0xff the spurious vector. */
#define VEC_BASE     0x40u
#define NVEC         16u
#define VEC_WAKE     0x30u
#define VEC_SPURIOUS 0xffu
#define V_NMI        NVEC        /* pseudo-vector: the NMI counts */
enum {
	V_FIXED = 0x41, V_TO_BSP, V_OTHERS, V_OTHERS_AP, V_ALL, V_SELF, V_LOGICAL,
	V_LOWEST, V_IOAPIC, V_X2_FIXED, V_X2_TO_BSP, V_X2_SELF,
};

/* What an AP is asked to do (mailbox commands). */
enum { CMD_NONE, CMD_ICR, CMD_X2_SELF, CMD_LOGICAL, CMD_X2APIC };

struct cpu {
	uint32_t apic_id;               /* the MADT's */
	volatile uint32_t up;           /* reported in */
	volatile uint32_t seen_id;      /* its local APIC's ID register */
	volatile uint32_t cpuid_id;     /* CPUID.1:EBX[31:24] */
	volatile uint32_t apic_base;    /* IA32_APIC_BASE, low half */
	volatile bool x2apic;
	volatile uint32_t cmd, arg0, arg1, result, done;
};

static struct cpu cpus[MAX_CPUS];
static unsigned ncpus;                  /* cpus[0] is the boot CPU */
static uint32_t live;                   /* CPUs that run (bit per index) */
static uint8_t id2cpu[256];             /* initial APIC ID -> index; 0xff: none */
static volatile unsigned booting;       /* the AP being started */
static volatile uint32_t aps_up;        /* APs that reported in */
static uint16_t pm_port = LP_PMTIMER_PORT;

/* Counts, a row per CPU; row MAX_CPUS is "a CPU not in the MADT". */
static volatile uint32_t hits[MAX_CPUS + 1][NVEC + 1];
static volatile uint32_t spurious[MAX_CPUS + 1];

static uint8_t ap_stacks[MAX_CPUS][AP_STACK] __attribute__((aligned(16)));

/* I/O APIC and the PIT's pin (the MADT's interrupt source override). */
static uint32_t ioapic_base, ioapic_gsi_base;
static uint32_t pit_gsi, pit_flags;

/* ------------------------------------------------------------ clock */

static uint32_t pm_now(void)
{
	return inl(pm_port) & PM_MASK;
}

/* PM ticks since t0; spans under 4.6 s (the 24-bit wrap). Any CPU may call it. */
static uint32_t pm_since(uint32_t t0)
{
	return (pm_now() - t0) & PM_MASK;
}

static void pm_wait_us(uint32_t us)
{
	uint32_t t0 = pm_now();
	while (pm_since(t0) < US(us))
		asm volatile("pause");
}

/* ------------------------------------------------------------ local APIC */

static volatile uint32_t *lapic_reg(unsigned off)
{
	return (volatile uint32_t *)(uintptr_t)(RT_LAPIC + off);
}

/* The calling CPU's index, by its initial APIC ID (the same in both APIC
 * modes, unlike the way to read the ID register). */
static unsigned self(void)
{
	uint8_t i = id2cpu[cpuid(1, 0).ebx >> 24];
	return i < MAX_CPUS ? i : MAX_CPUS;
}

static bool mode_x2(unsigned c)
{
	return c < MAX_CPUS && cpus[c].x2apic;
}

/* Waits (10 ms at most) for the xAPIC ICR's delivery status to clear. */
static bool icr_idle(void)
{
	uint32_t t0 = pm_now();
	while (*lapic_reg(LAPIC_ICR_LO) & ICR_BUSY)
		if (pm_since(t0) > US(10000))
			return false;
	return true;
}

/* An IPI from the calling CPU c: `dest` is an APIC ID (x2APIC: 32 bits) or
 * a logical mask, `lo` the ICR's low half. */
static void ipi(unsigned c, uint32_t dest, uint32_t lo)
{
	if (mode_x2(c)) {
		wrmsr(MSR_X2APIC_ICR, (uint64_t)dest << 32 | lo);
		return;
	}
	icr_idle();
	*lapic_reg(LAPIC_ICR_HI) = dest << 24;
	*lapic_reg(LAPIC_ICR_LO) = lo;
	icr_idle();
}

static void eoi(unsigned c)
{
	rt_apic_write(mode_x2(c), LAPIC_EOI, 0);
}

/* ------------------------------------------------------------ handlers */

/* Shared by every CPU: each counts in its own row, atomically anyway. */
static void on_test_vector(struct rt_frame *f)
{
	unsigned c = self();
	__atomic_fetch_add(&hits[c][f->vector - VEC_BASE], 1, __ATOMIC_RELAXED);
	eoi(c);
}

static void on_nmi(struct rt_frame *f)
{
	(void)f;
	__atomic_fetch_add(&hits[self()][V_NMI], 1, __ATOMIC_RELAXED);
}

static void on_wake(struct rt_frame *f)
{
	(void)f;
	eoi(self());
}

static void on_spurious(struct rt_frame *f)
{
	(void)f;       /* no EOI for the spurious vector */
	__atomic_fetch_add(&spurious[self()], 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ APs */

static void ap_command(unsigned i, struct cpu *c, uint32_t cmd)
{
	switch (cmd) {
	case CMD_ICR:
		ipi(i, c->arg0, c->arg1);
		break;
	case CMD_X2_SELF:
		wrmsr(MSR_X2APIC_SELF, c->arg1);
		break;
	case CMD_LOGICAL:
		*lapic_reg(LAPIC_DFR) = 0xffffffffu;           /* flat model */
		*lapic_reg(LAPIC_LDR) = c->arg0;
		c->result = *lapic_reg(LAPIC_LDR);
		break;
	case CMD_X2APIC:
		wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
		c->x2apic = true;
		c->result = (uint32_t)rdmsr(MSR_X2APIC_ID);
		break;
	}
}

/* The AP's idle loop: commands with IF=0, interrupts in `sti; hlt` (STI's
 * shadow keeps a wake-up from slipping in between the two). */
__attribute__((noreturn)) static void ap_loop(unsigned i)
{
	struct cpu *c = &cpus[i];
	for (;;) {
		cli();
		uint32_t cmd = __atomic_load_n(&c->cmd, __ATOMIC_ACQUIRE);
		if (cmd != CMD_NONE) {
			ap_command(i, c, cmd);
			c->cmd = CMD_NONE;
			__atomic_fetch_add(&c->done, 1, __ATOMIC_RELEASE);
			continue;
		}
		asm volatile("sti\n\thlt" : : : "memory");
	}
}

/* The trampoline's C half. */
__attribute__((noreturn)) static void ap_main(void)
{
	unsigned i = booting;
	struct cpu *c = &cpus[i];
	rt_idt_load();
	*lapic_reg(LAPIC_TPR) = 0;
	*lapic_reg(LAPIC_SVR) = 0x100 | VEC_SPURIOUS;         /* APIC software-enabled */
	c->seen_id = *lapic_reg(LAPIC_ID) >> 24;
	c->cpuid_id = cpuid(1, 0).ebx >> 24;
	c->apic_base = (uint32_t)rdmsr(MSR_APIC_BASE);
	c->up = 1;
	__atomic_fetch_add(&aps_up, 1, __ATOMIC_RELEASE);
	ap_loop(i);
}

/* Runs a command on AP i and waits (CMD_MS at most) until it is done. */
static bool ap_do(unsigned i, uint32_t cmd, uint32_t a0, uint32_t a1)
{
	struct cpu *c = &cpus[i];
	uint32_t done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	c->arg0 = a0;
	c->arg1 = a1;
	__atomic_store_n(&c->cmd, cmd, __ATOMIC_RELEASE);
	ipi(0, c->apic_id, ICR_ASSERT | DM_FIXED | VEC_WAKE);
	uint32_t t0 = pm_now();
	bool ok = true;
	sti();
	/* PAUSE, as in every wait here: under QEMU 7.2 -icount a CPU that spins
	 * without it starves the others (core/smp.c, smp_wait_done) */
	while (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) == done) {
		if (pm_since(t0) > US(CMD_MS * 1000)) {
			ok = false;
			break;
		}
		asm volatile("pause");
	}
	cli();
	if (!ok) {
		rt_printf("smp: CPU %u (APIC id %u) did not answer command %u within %u ms; "
			  "left out from now on\n", i, c->apic_id, cmd, CMD_MS);
		live &= ~(1u << i);
	}
	return ok;
}

/* ------------------------------------------------------------ counting */

static void counts_clear(void)
{
	for (unsigned c = 0; c <= MAX_CPUS; c++) {
		for (unsigned v = 0; v <= NVEC; v++)
			hits[c][v] = 0;
		spurious[c] = 0;
	}
}

/* The counts of one vector (V_NMI: NMIs) as a hex digit per CPU, CPU 0 the
 * lowest; 15 stands for 15 or more. */
static uint64_t digits(unsigned v)
{
	uint64_t d = 0;
	for (unsigned c = 0; c < ncpus; c++) {
		uint32_t n = hits[c][v];
		d |= (uint64_t)(n > 15 ? 15 : n) << (4 * c);
	}
	return d;
}

static unsigned digit_sum(uint64_t d)
{
	unsigned s = 0;
	for (; d; d >>= 4)
		s += d & 15;
	return s;
}

/* Everything counted but vector v on the intended CPUs: other vectors, NMIs,
 * spurious interrupts, CPUs not in the MADT. */
static unsigned strays(unsigned v)
{
	unsigned n = 0;
	for (unsigned c = 0; c <= MAX_CPUS; c++) {
		for (unsigned w = 0; w <= NVEC; w++)
			if (w != v || c >= ncpus)
				n += hits[c][w];
		n += spurious[c];
	}
	return n;
}

static void dump(void)
{
	for (unsigned c = 0; c <= MAX_CPUS; c++) {
		if (c < MAX_CPUS && c >= ncpus && !spurious[c])
			continue;
		char line[256];
		int n = snprintf(line, sizeof(line), "smp:   CPU %u:", c);
		bool any = false;
		for (unsigned v = 0; v <= NVEC; v++)
			if (hits[c][v]) {
				any = true;
				if (v == V_NMI)
					n += snprintf(line + n, sizeof(line) - n, " NMI x%u", hits[c][v]);
				else
					n += snprintf(line + n, sizeof(line) - n, " 0x%x x%u",
						      v + VEC_BASE, hits[c][v]);
			}
		if (spurious[c])
			n += snprintf(line + n, sizeof(line) - n, " spurious x%u", spurious[c]);
		if (c == MAX_CPUS && !any && !spurious[c])
			continue;
		rt_printf("%s%s\n", line, any || spurious[c] ? "" : " nothing");
	}
}

/* The check: vector v (a V_ value, or V_NMI) must arrive `want` times per
 * CPU (hex digits) and nothing else anywhere. Waits with IF=1 until as many
 * have arrived (ARRIVE_MS at most), then SETTLE_MS for any extra. */
static bool expect(unsigned v, uint64_t want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool expect(unsigned v, uint64_t want, const char *fmt, ...)
{
	unsigned idx = v == V_NMI ? V_NMI : v - VEC_BASE;
	unsigned total = digit_sum(want);
	uint32_t t0 = pm_now();
	sti();
	while (digit_sum(digits(idx)) < total && pm_since(t0) < US(ARRIVE_MS * 1000))
		asm volatile("pause");
	pm_wait_us(SETTLE_MS * 1000);
	cli();
	char desc[200], exp[120];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	uint64_t got = digits(idx);
	unsigned stray = strays(idx);
	snprintf(exp, sizeof(exp), "0x%llx (a hex digit per CPU, CPU 0 last) and nothing else; "
		 "%u elsewhere", (unsigned long long)want, stray);
	bool ok = tap_ok(got == want && !stray, got, exp, "%s", desc);
	if (!ok) {
		rt_printf("smp:   %u interrupts elsewhere; counts:\n", stray);
		dump();
	}
	counts_clear();
	return ok;
}

static uint64_t one(unsigned c)
{
	return 1ull << (4 * c);
}

/* One at each CPU of the mask. */
static uint64_t ones(uint32_t mask)
{
	uint64_t d = 0;
	for (unsigned c = 0; c < ncpus; c++)
		if (mask & (1u << c))
			d |= one(c);
	return d;
}

static bool is_live(unsigned c)
{
	return live & (1u << c);
}

/* ------------------------------------------------------------ ACPI */

static const volatile uint8_t *phys(uint32_t a)
{
	uintptr_t p = a;
	asm("" : "+r"(p));
	return (const volatile uint8_t *)p;
}
static uint8_t rd8(uint32_t a) { return *phys(a); }
static uint32_t rd32(uint32_t a) { return *(const volatile uint32_t *)phys(a); }

/* The MADT: CPUs (the boot CPU first), the first I/O APIC, the override of
 * ISA IRQ 0. Returns false if the boot CPU is not among them. */
static bool parse_madt(uint32_t madt, uint32_t bsp_id, unsigned *listed)
{
	uint32_t end = madt + rd32(madt + 4);
	bool bsp = false;
	unsigned n = 1, all = 0;
	pit_gsi = 0;            /* no override: IRQ 0 is GSI 0 */
	pit_flags = 0;
	for (uint32_t p = madt + 44; p + 2 <= end;) {
		uint8_t type = rd8(p), len = rd8(p + 1);
		if (len < 2 || p + len > end)
			break;
		uint32_t id = ~0u;
		if (type == 0 && len >= 8 && (rd32(p + 4) & 1))
			id = rd8(p + 3);
		else if (type == 9 && len >= 16 && (rd32(p + 8) & 1))
			id = rd32(p + 4);
		if (id != ~0u) {
			all++;
			if (id == bsp_id && !bsp) {
				bsp = true;
				cpus[0].apic_id = id;
			} else if (n < MAX_CPUS) {
				cpus[n++].apic_id = id;
			}
		} else if (type == 1 && len >= 12 && !ioapic_base) {
			ioapic_base = rd32(p + 4);
			ioapic_gsi_base = rd32(p + 8);
		} else if (type == 2 && len >= 10 && rd8(p + 2) == 0 && rd8(p + 3) == 0) {
			pit_gsi = rd32(p + 4);
			pit_flags = rd8(p + 8) | (uint32_t)rd8(p + 9) << 8;
		}
		p += len;
	}
	ncpus = bsp ? n : 0;
	*listed = all;
	for (unsigned i = 0; i < 256; i++)
		id2cpu[i] = 0xff;
	for (unsigned i = 0; i < ncpus; i++)
		if (cpus[i].apic_id < 256)
			id2cpu[cpus[i].apic_id] = (uint8_t)i;
	return bsp;
}

/* ------------------------------------------------------------ start-up */

static void start_aps(void)
{
	unsigned aps = ncpus - 1;
	if (!aps) {
		tap_skip("no application processors to start (one CPU)");
		return;
	}
	rt_ap_install(ap_main);
	for (unsigned i = 1; i < ncpus; i++) {
		struct cpu *c = &cpus[i];
		if (c->apic_id > 0xfe) {
			tap_ok(false, c->apic_id, "an xAPIC ID", "CPU %u: APIC id %u can be started "
			       "by xAPIC IPIs", i, c->apic_id);
			continue;
		}
		/* One AP at a time: the stack slot and `booting` are its alone. */
		booting = i;
		rt_ap_set_stack(ap_stacks[i] + AP_STACK);
		uint32_t before = __atomic_load_n(&aps_up, __ATOMIC_ACQUIRE);
		ipi(0, c->apic_id, ICR_ASSERT | DM_INIT);
		pm_wait_us(10000);
		ipi(0, c->apic_id, ICR_ASSERT | DM_SIPI | RT_AP_SIPI_VECTOR);
		pm_wait_us(200);
		ipi(0, c->apic_id, ICR_ASSERT | DM_SIPI | RT_AP_SIPI_VECTOR);
		pm_wait_us(200);
		uint32_t t0 = pm_now();
		while (__atomic_load_n(&aps_up, __ATOMIC_ACQUIRE) == before &&
		       pm_since(t0) < US(AP_START_MS * 1000))
			asm volatile("pause");
		uint32_t us = (uint32_t)((uint64_t)pm_since(t0) * 1000000 / LP_PMTIMER_HZ) + 400;
		if (!c->up) {
			tap_ok(false, 0, "a report", "CPU %u (APIC id %u) started within %u ms of its "
			       "SIPIs", i, c->apic_id, AP_START_MS);
			/* back to wait-for-SIPI: a late start would share the next AP's stack */
			ipi(0, c->apic_id, ICR_ASSERT | DM_INIT);
			continue;
		}
		rt_printf("smp: CPU %u (APIC id %u) reported in within %u us of its first SIPI\n", i,
			  c->apic_id, us);
		bool ok = c->seen_id == c->apic_id && c->cpuid_id == c->apic_id &&
			  (c->apic_base & (APIC_BASE_EN | APIC_BASE_BSP)) == APIC_BASE_EN &&
			  (c->apic_base & 0xfffff000u) == RT_LAPIC;
		tap_ok(ok, c->seen_id, "the MADT's ID, also in CPUID, and IA32_APIC_BASE "
		       "0xfee00800", "CPU %u (APIC id %u) started; its local APIC ID %u, CPUID "
		       "id %u, IA32_APIC_BASE 0x%x", i, c->apic_id, c->seen_id, c->cpuid_id,
		       c->apic_base);
		if (ok)
			live |= 1u << i;
	}
	tap_eq(__atomic_load_n(&aps_up, __ATOMIC_ACQUIRE), aps, "every AP reported in (%u)", aps);
}

/* ------------------------------------------------------------ checks */

static void check_fixed(void)
{
	ipi(0, cpus[0].apic_id, ICR_ASSERT | DM_FIXED | V_FIXED);
	expect(V_FIXED, one(0), "fixed IPI, physical destination: boot CPU -> itself (APIC id %u)",
	       cpus[0].apic_id);
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ipi(0, cpus[i].apic_id, ICR_ASSERT | DM_FIXED | V_FIXED);
		expect(V_FIXED, one(i), "fixed IPI, physical destination: boot CPU -> CPU %u "
		       "(APIC id %u)", i, cpus[i].apic_id);
	}
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ap_do(i, CMD_ICR, cpus[0].apic_id, ICR_ASSERT | DM_FIXED | V_TO_BSP);
		expect(V_TO_BSP, one(0), "fixed IPI, physical destination: CPU %u -> boot CPU",
		       i);
	}
	if (ncpus == 1)
		tap_skip("no AP for the AP -> boot CPU IPIs");
}

static void check_nmi(void)
{
	bool any = false;
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		any = true;
		ipi(0, cpus[i].apic_id, ICR_ASSERT | DM_NMI);
		expect(V_NMI, one(i), "NMI IPI: boot CPU -> CPU %u (APIC id %u)", i,
		       cpus[i].apic_id);
	}
	if (!any)
		tap_skip("no AP to send NMIs to");
}

static void check_shorthands(void)
{
	ipi(0, 0, ICR_ASSERT | DM_FIXED | SH_OTHERS | V_OTHERS);
	expect(V_OTHERS, ones(live & ~1u), "shorthand all-excluding-self from the boot CPU: "
	       "each AP once, the boot CPU never");
	ipi(0, 0, ICR_ASSERT | DM_FIXED | SH_ALL | V_ALL);
	expect(V_ALL, ones(live), "shorthand all-including-self from the boot CPU: every "
	       "CPU once");
	unsigned last = 0;
	for (unsigned i = 1; i < ncpus; i++)
		if (is_live(i))
			last = i;
	if (last) {
		ap_do(last, CMD_ICR, 0, ICR_ASSERT | DM_FIXED | SH_OTHERS | V_OTHERS_AP);
		expect(V_OTHERS_AP, ones(live & ~(1u << last)), "shorthand all-excluding-self "
		       "from CPU %u: every other CPU once", last);
	} else {
		tap_skip("no AP to send all-excluding-self from");
	}
	ipi(0, 0, ICR_ASSERT | DM_FIXED | SH_SELF | V_SELF);
	expect(V_SELF, one(0), "shorthand self on the boot CPU");
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ap_do(i, CMD_ICR, 0, ICR_ASSERT | DM_FIXED | SH_SELF | V_SELF);
		expect(V_SELF, one(i), "shorthand self on CPU %u", i);
	}
}

/* Flat logical mode: CPU i (i < 8) gets LDR bit i. */
static void check_logical(void)
{
	unsigned set[2], n = 0;
	for (unsigned i = ncpus; i-- > 0 && n < 2;)
		if (is_live(i) && i < 8)
			set[n++] = i;
	if (n < 2) {
		tap_skip("logical destination: needs two CPUs");
		tap_skip("lowest priority: needs two CPUs");
		return;
	}
	bool ldr_ok = true;
	*lapic_reg(LAPIC_DFR) = 0xffffffffu;
	*lapic_reg(LAPIC_LDR) = 1u << 24;
	ldr_ok &= *lapic_reg(LAPIC_LDR) == 1u << 24 && (*lapic_reg(LAPIC_DFR) >> 28) == 0xf;
	for (unsigned i = 1; i < ncpus && i < 8; i++)
		if (is_live(i) && ap_do(i, CMD_LOGICAL, 1u << (24 + i), 0))
			ldr_ok &= cpus[i].result == 1u << (24 + i);
	tap_ok(ldr_ok, 0, "each LDR reads back", "flat model (DFR 0xffffffff), CPU i's LDR "
	       "has bit i only");
	uint32_t mask = 1u << set[0] | 1u << set[1];
	ipi(0, mask, ICR_ASSERT | DM_FIXED | ICR_LOGICAL | V_LOGICAL);
	expect(V_LOGICAL, ones(mask), "fixed IPI, logical destination 0x%02x: CPUs %u and %u "
	       "once each, no other CPU", mask, set[1], set[0]);

	/* lowest priority: any one of the set, never two, never another */
	ipi(0, mask, ICR_ASSERT | DM_LOWEST | ICR_LOGICAL | V_LOWEST);
	uint32_t t0 = pm_now();
	sti();
	while (hits[set[0]][V_LOWEST - VEC_BASE] + hits[set[1]][V_LOWEST - VEC_BASE] == 0 &&
	       pm_since(t0) < US(ARRIVE_MS * 1000))
		asm volatile("pause");
	pm_wait_us(SETTLE_MS * 1000);
	cli();
	uint64_t got = digits(V_LOWEST - VEC_BASE);
	bool ok = (got == one(set[0]) || got == one(set[1])) && !strays(V_LOWEST - VEC_BASE);
	tap_ok(ok, got, "exactly one of the two, nothing else", "lowest priority IPI to logical "
	       "0x%02x: exactly one of CPUs %u and %u", mask, set[1], set[0]);
	if (!ok)
		dump();
	counts_clear();
}

static uint32_t io_read(uint32_t reg)
{
	volatile uint32_t *io = (volatile uint32_t *)(uintptr_t)ioapic_base;
	io[0] = reg;
	return io[4];
}

static void io_write(uint32_t reg, uint32_t v)
{
	volatile uint32_t *io = (volatile uint32_t *)(uintptr_t)ioapic_base;
	io[0] = reg;
	io[4] = v;
}

static void pit_oneshot(uint16_t count)
{
	outb(PIT_CH0, (uint8_t)count);
	outb(PIT_CH0, (uint8_t)(count >> 8));
}

/* The PIT in mode 0 (one-shot): writing the count drops OUT, terminal count
 * raises it once: one edge on IRQ 0 -> the override's GSI. */
static void check_ioapic(void)
{
	if (!ioapic_base) {
		tap_ok(false, 0, "an I/O APIC entry", "MADT: an I/O APIC");
		return;
	}
	uint32_t pins = ((io_read(1) >> 16) & 0xff) + 1;
	uint32_t pin = pit_gsi - ioapic_gsi_base;
	if (!tap_ok(pit_gsi >= ioapic_gsi_base && pin < pins, pit_gsi, "a pin of the I/O APIC",
		    "IRQ 0 is GSI %u (%s), pin %u of the I/O APIC at 0x%x", pit_gsi,
		    pit_gsi ? "the MADT's override" : "no override", pin, ioapic_base))
		return;
	uint32_t lo = V_IOAPIC;
	if ((pit_flags & 3) == 3)
		lo |= RTE_LOW;
	if (((pit_flags >> 2) & 3) == 3)
		lo |= RTE_LEVEL;
	/* A known start: the pin masked, the PIT in mode 0 run out (OUT high). */
	io_write(IOAPIC_RTE + 2 * pin, RTE_MASKED | lo);
	outb(PIT_CMD, 0x30);              /* channel 0, low then high byte, mode 0 */
	pit_oneshot(2);
	pm_wait_us(1000);
	for (unsigned i = 0; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		outb(PIT_CMD, 0x30);
		io_write(IOAPIC_RTE + 2 * pin + 1, cpus[i].apic_id << 24);
		io_write(IOAPIC_RTE + 2 * pin, lo);         /* fixed, physical, unmasked */
		pit_oneshot(PIT_ONESHOT);
		expect(V_IOAPIC, one(i), "I/O APIC pin %u (the PIT, one-shot) routed to CPU %u "
		       "(APIC id %u)", pin, i, cpus[i].apic_id);
		io_write(IOAPIC_RTE + 2 * pin, RTE_MASKED | lo);
	}
}

static void check_x2apic(void)
{
	if (!(cpuid(1, 0).ecx & (1u << 21))) {
		tap_skip("no x2APIC (CPUID.1:ECX[21] clear)");
		return;
	}
	uint64_t base = rdmsr(MSR_APIC_BASE);
	if (!tap_eq(wrmsr_safe(MSR_APIC_BASE, base | APIC_BASE_EXTD), 0,
		    "boot CPU: IA32_APIC_BASE.EXTD set (x2APIC mode)"))
		return;
	cpus[0].x2apic = true;
	uint32_t id = (uint32_t)rdmsr(MSR_X2APIC_ID);
	tap_eq(id, cpus[0].apic_id, "boot CPU: x2APIC ID is the MADT's APIC id");
	for (unsigned i = 1; i < ncpus; i++)
		if (is_live(i) && ap_do(i, CMD_X2APIC, 0, 0))
			tap_eq(cpus[i].result, cpus[i].apic_id, "CPU %u in x2APIC mode: its x2APIC "
			       "ID is the MADT's APIC id", i);
	for (unsigned i = 0; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ipi(0, cpus[i].apic_id, ICR_ASSERT | DM_FIXED | V_X2_FIXED);
		expect(V_X2_FIXED, one(i), "x2APIC: fixed IPI by WRMSR 0x830, boot CPU -> CPU %u "
		       "(x2APIC id %u)", i, cpus[i].apic_id);
	}
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ap_do(i, CMD_ICR, cpus[0].apic_id, ICR_ASSERT | DM_FIXED | V_X2_TO_BSP);
		expect(V_X2_TO_BSP, one(0), "x2APIC: fixed IPI by WRMSR 0x830, CPU %u -> boot CPU",
		       i);
	}
	wrmsr(MSR_X2APIC_SELF, V_X2_SELF);
	expect(V_X2_SELF, one(0), "x2APIC: self IPI by WRMSR 0x83f on the boot CPU");
	for (unsigned i = 1; i < ncpus; i++) {
		if (!is_live(i))
			continue;
		ap_do(i, CMD_X2_SELF, 0, V_X2_SELF);
		expect(V_X2_SELF, one(i), "x2APIC: self IPI by WRMSR 0x83f on CPU %u", i);
	}
}

/* ------------------------------------------------------------ main */

int guest_main(void)
{
	tap_begin("smp");
	cli();
	outb(0x21, 0xff);                 /* the 8259s out of the way: IRQ 0 goes */
	outb(0xa1, 0xff);                 /* to the I/O APIC only */
	uint32_t want = (uint32_t)rt_arg_u64("cpus", 0);

	uint32_t madt = (uint32_t)rt_acpi_table("APIC");
	uint32_t fadt = (uint32_t)rt_acpi_table("FACP");
	if (fadt && rd32(fadt + 4) >= 80 && rd32(fadt + 76) && rd32(fadt + 76) < 0x10000)
		pm_port = (uint16_t)rd32(fadt + 76);
	uint32_t t0 = pm_now(), n = 0;
	while (pm_now() == t0 && n < 10000000)
		n++;
	if (!tap_ok(pm_now() != t0, pm_port, "a counting PM timer", "the PM timer (port 0x%x, "
		    "from the %s) counts: it times every wait", pm_port, fadt ? "FADT" : "default"))
		return tap_end();
	if (!tap_ok(madt, 0, "a MADT", "ACPI: a MADT (RSDP at 0x%llx)",
		    (unsigned long long)rt_acpi_rsdp()))
		return tap_end();

	uint32_t bsp_id = *lapic_reg(LAPIC_ID) >> 24;
	unsigned listed;
	if (!tap_ok(parse_madt(madt, bsp_id, &listed), bsp_id, "a MADT entry", "MADT: the boot "
		    "CPU (APIC id %u) is an enabled local APIC", bsp_id))
		return tap_end();
	char ids[160];
	int k = 0;
	for (unsigned i = 0; i < ncpus; i++)
		k += snprintf(ids + k, sizeof(ids) - k, "%s%u", i ? " " : "", cpus[i].apic_id);
	rt_printf("smp: %u CPU%s in the MADT (APIC ids %s; the boot CPU's is %u)\n", listed,
		  listed == 1 ? "" : "s", ids, bsp_id);
	if (want)
		tap_eq(listed, want, "MADT: %u enabled CPUs, as cpus= says", want);
	if (listed > MAX_CPUS)
		rt_printf("smp: only the first %u are tested\n", MAX_CPUS);
	tap_eq(cpuid(1, 0).ebx >> 24, bsp_id, "boot CPU: CPUID's initial APIC id is its local "
	       "APIC ID");
	tap_ok(rdmsr(MSR_APIC_BASE) & APIC_BASE_BSP, rdmsr(MSR_APIC_BASE), "BSP bit set",
	       "boot CPU: IA32_APIC_BASE.BSP set");

	for (unsigned v = VEC_BASE; v < VEC_BASE + NVEC; v++)
		rt_set_handler(v, on_test_vector);
	rt_set_handler(2, on_nmi);
	rt_set_handler(VEC_WAKE, on_wake);
	rt_set_handler(VEC_SPURIOUS, on_spurious);
	*lapic_reg(LAPIC_TPR) = 0;
	*lapic_reg(LAPIC_SVR) = 0x100 | VEC_SPURIOUS;
	live = 1;

	start_aps();
	unsigned started = 0;
	for (unsigned i = 1; i < ncpus; i++)
		started += cpus[i].up;
	rt_printf("smp: %u CPU%s found (ACPI MADT), %u AP%s started\n", listed,
		  listed == 1 ? "" : "s", started, started == 1 ? "" : "s");

	counts_clear();
	check_fixed();
	check_nmi();
	check_shorthands();
	check_logical();
	check_ioapic();
	check_x2apic();
	return tap_end();
}
