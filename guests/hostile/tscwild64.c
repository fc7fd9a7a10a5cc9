/* tscwild64: a hostile guest of the CPU state docs/CPUID.md gives VMs
 * (docs/SECURITY.md, case 16): its TSC (IA32_TSC, IA32_TSC_ADJUST, the
 * offset the CPU adds to RDTSC), the counters that never count, RDPMC, and
 * CPUID bits that follow CR4 and IA32_APIC_BASE.
 *
 * (default) a storm: IA32_TSC written with absurd values (0, 1, ~0, 2^63,
 *   2^63 - 1, random) with a TSC-deadline armed at absurd places around
 *   them, each time RDTSC and IA32_TSC agree; IA32_TSC_ADJUST likewise
 *   where CPUID shows it; every counter MSR written with random values and
 *   RDPMC with random ECX (0 or #GP, nothing else); CR4.OSXSAVE and the
 *   APIC enable flipped with CPUID after each flip; then lightpath's own
 *   timer (LP_HC_TIMER) still fires on time, and the guest leaves its TSC
 *   at 2^62 with a deadline armed, OSXSAVE set and the APIC disabled.
 * mode=check: the next VM: its TSC is the host's (below 2^61, not the 2^62
 *   left behind), IA32_TSC_ADJUST reads 0 where shown, CPUID.1 shows
 *   OSXSAVE clear and the APIC enabled, no timer interrupt arrives.
 * mode=spin: absurd TSC and deadline, then a spin with interrupts on: only
 *   the VM's time limit (vm.timeout=) ends it, which the TSC cannot move. */
#include "guests/rt/rt.h"

#define VEC_GP       13u
#define VEC_DEADLINE 0x42u
#define VEC_WAIT     0x43u
#define APIC_EN          (1ull << 11)
#define APIC_EXTD        (1ull << 10)
#define CR4_OSXSAVE      (1ul << 18)
#define SLACK            (1ull << 34)
#define STORM            2000u

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static volatile unsigned deadline_fired, wait_fired;

static uint64_t next_rand(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void on_deadline(struct rt_frame *f)
{
	(void)f;
	deadline_fired++;
	wrmsr(MSR_X2APIC_EOI, 0);
}

static void on_wait(struct rt_frame *f)
{
	(void)f;
	wait_fired++;
}

static ureg_t read_cr4(void)
{
	ureg_t v;
	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static void write_cr4(ureg_t v)
{
	asm volatile("mov %0, %%cr4" ::"r"(v) : "memory");
}

static bool has_tsc_adjust(void)
{
	return cpuid(0, 0).eax >= 7 && (cpuid(7, 0).ebx & 2);
}

/* Waits with interrupts on until LP_HC_TIMER(us) fires, or about 10^9 spins. */
static bool wait_us(unsigned us)
{
	wait_fired = 0;
	lp_hypercall(LP_HC_TIMER, us, VEC_WAIT, 0, NULL, NULL);
	sti();
	for (unsigned long i = 0; !wait_fired && i < 1000000000ul; i++)
		asm volatile("pause");
	cli();
	return wait_fired;
}

static void x2apic_deadline_mode(void)
{
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	wrmsr(MSR_X2APIC_LVTT, VEC_DEADLINE | (2u << 17));
}

static void storm(void)
{
	static const uint64_t special[] = { 0, 1, ~0ull, 1ull << 63, (1ull << 63) - 1, ~0ull - 1000,
					    1ull << 62 };
	unsigned bad_tsc = 0, bad_adj = 0, bad_pmu = 0, bad_cpuid = 0;
	rt_set_handler(VEC_DEADLINE, on_deadline);
	rt_set_handler(VEC_WAIT, on_wait);
	x2apic_deadline_mode();
	bool adjust = has_tsc_adjust();
	for (unsigned i = 0; i < STORM; i++) {
		uint64_t v = i < sizeof(special) / sizeof(special[0]) ? special[i] : next_rand();
		/* a deadline somewhere near, far, before or after the TSC to come */
		uint64_t d = next_rand();
		wrmsr(MSR_TSC_DEADLINE, (d & 1) ? v + (d >> 40) : (d & 2) ? v - (d >> 40) : d);
		if (wrmsr_safe(MSR_TSC, v)) {
			bad_tsc++;
			continue;
		}
		uint64_t r = rdtsc(), m = 0;
		bad_tsc += r - v >= SLACK;                 /* modulo 2^64: ~0 wraps to small */
		bad_tsc += rdmsr_safe(MSR_TSC, &m) || m - r >= SLACK;
		if (adjust) {
			uint64_t a = next_rand();
			bad_adj += wrmsr_safe(MSR_TSC_ADJUST, a) != 0;
			uint64_t got = 0;
			bad_adj += rdmsr_safe(MSR_TSC_ADJUST, &got) || got != a;
		}
		sti();                                     /* deadlines that are due come in */
		asm volatile("nop");
		cli();
	}
	wrmsr(MSR_TSC_DEADLINE, 0);
	tap_eq(bad_tsc, 0, "%u absurd IA32_TSC writes around absurd TSC deadlines: RDTSC and "
	       "IA32_TSC follow each", STORM);
	tap_eq(bad_adj, 0, "IA32_TSC_ADJUST takes absurd values where CPUID shows it");

	uint32_t sel0 = rt_intel ? 0x186 : 0xc0010000u, ctr0 = rt_intel ? 0xc1 : 0xc0010004u;
	unsigned n = rt_intel ? 2 : 4;
	for (unsigned i = 0; i < STORM; i++) {
		uint64_t v = 0;
		bad_pmu += wrmsr_safe(sel0 + i % n, next_rand()) || wrmsr_safe(ctr0 + i % n, next_rand());
		bad_pmu += rdmsr_safe(ctr0 + i % n, &v) || v;
		uint32_t ecx = (uint32_t)next_rand();
		if (i & 1)
			ecx %= 8;
		ureg_t a = 1, c = ecx, dx = 1;
		rt_trap_clear();
		asm volatile(RT_ARM_RESUME "rdpmc\n1:" : "+a"(a), "+c"(c), "+d"(dx) : : "memory");
		rt_resume = 0;
		bool ok = ecx < n ? !rt_trap.count && !a && !dx
				  : rt_trap.count == 1 && rt_trap.vector == VEC_GP && !rt_trap.error;
		bad_pmu += !ok;
	}
	tap_eq(bad_pmu, 0, "%u random counter writes and RDPMCs: counters read 0, RDPMC 0 or #GP(0)",
	       STORM);

	ureg_t cr4 = read_cr4();
	uint64_t base = rdmsr(MSR_APIC_BASE) & ~APIC_EXTD;
	wrmsr(MSR_APIC_BASE, base & ~APIC_EN);   /* x2APIC -> disabled -> xAPIC */
	wrmsr(MSR_APIC_BASE, base);
	bool xsave = cpuid(1, 0).ecx & (1u << 26);
	for (unsigned i = 0; i < STORM; i++) {
		bool os = next_rand() & 1, en = next_rand() & 1;
		write_cr4(os ? cr4 | CR4_OSXSAVE : cr4 & ~CR4_OSXSAVE);
		wrmsr(MSR_APIC_BASE, en ? base : base & ~APIC_EN);
		struct cpuid_regs r = cpuid(1, 0);
		bad_cpuid += (r.ecx >> 27 & 1) != (os && xsave) || (r.edx >> 9 & 1) != en;
	}
	tap_eq(bad_cpuid, 0, "%u random flips of CR4.OSXSAVE and the APIC enable: CPUID.1 follows "
	       "each", STORM);
	wrmsr(MSR_APIC_BASE, base);

	/* lightpath's own timers do not go by the guest's TSC */
	x2apic_deadline_mode();
	wrmsr(MSR_TSC, ~0ull - 5000);
	wrmsr(MSR_TSC_DEADLINE, 3);          /* "due" only after the TSC wraps */
	tap_eq(wait_us(20000), 1, "with the TSC at 2^64 - 5000, LP_HC_TIMER(20 ms) still fires");

	/* left behind for the next VM */
	wrmsr(MSR_TSC, 1ull << 62);
	wrmsr(MSR_TSC_DEADLINE, (1ull << 62) + (1ull << 50));
	if (adjust)
		wrmsr(MSR_TSC_ADJUST, 0x123456789abcdefull);
	if (xsave)
		write_cr4(cr4 | CR4_OSXSAVE);
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) & ~(APIC_EN | APIC_EXTD));
	rt_printf("tscwild64: leaving TSC 2^62, a deadline armed, OSXSAVE on, the APIC off\n");
}

static void check(void)
{
	uint64_t r = rdtsc(), a = 0;
	tap_ok(r < (1ull << 61), r, "below 2^61", "the TSC is the host's, not the 2^62 the last VM left");
	bool adj_ok = has_tsc_adjust() ? !rdmsr_safe(MSR_TSC_ADJUST, &a) && a == 0
				       : rdmsr_safe(MSR_TSC_ADJUST, &a) == VEC_GP;
	tap_eq(adj_ok, 1, "IA32_TSC_ADJUST is 0 (or #GP where CPUID hides it)");
	struct cpuid_regs c = cpuid(1, 0);
	tap_eq(c.ecx >> 27 & 1, 0, "CPUID.1:ECX.OSXSAVE is clear (CR4 as at reset)");
	tap_eq(c.edx >> 9 & 1, 1, "CPUID.1:EDX.APIC is set (the APIC enabled, as at reset)");
	rt_set_handler(VEC_DEADLINE, on_deadline);
	rt_set_handler(VEC_WAIT, on_wait);
	deadline_fired = 0;
	tap_eq(wait_us(20000), 1, "LP_HC_TIMER(20 ms) fires");
	tap_eq(deadline_fired, 0, "and no deadline interrupt of the last VM's comes");
}

int guest_main(void)
{
	char mode[16] = "storm";
	rt_arg("mode", mode, sizeof(mode));
	cli();
	if (!strcmp(mode, "spin")) {
		rt_printf("tscwild64: TSC ~0 and a deadline past the wrap, spinning with interrupts on\n");
		rt_set_handler(VEC_DEADLINE, on_deadline);
		x2apic_deadline_mode();
		wrmsr(MSR_TSC, ~0ull - 100);
		wrmsr(MSR_TSC_DEADLINE, ~0ull);
		sti();
		for (;;)
			wrmsr(MSR_TSC, next_rand());
	}
	tap_begin("tscwild64");
	if (!strcmp(mode, "check"))
		check();
	else
		storm();
	return tap_end();
}
