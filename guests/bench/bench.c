/* bench: the exit benchmark (in the spirit of kvm-unit-tests' vmexit test).
 * For each exit type, n iterations (cmdline n=, default 1000) of
 *     rdtsc; mov %eax,%reg; [input setup]; <exiting insn>; rdtsc
 * keeping the raw low-32-bit TSC delta (nothing subtracted). The only
 * instructions besides the exiting one are the save of the first TSC and,
 * where the instruction takes EAX/EDX inputs that RDTSC clobbers, the moves
 * that load them (see guests/README.md). Built as bench32.elf (flat 32-bit,
 * paging off) and bench64.elf (long mode, paging on) from this one file. */
#include "guests/rt/msr.h"
#include "guests/rt/rt.h"

#ifdef __x86_64__
#define MODE "paged64"
#else
#define MODE "flat32"
#endif

#define MTRR_TEST_VALUE 0x806u	/* E=1, default type WB: a valid value */

/* The local APIC rows (xapic_eoi, x2apic_eoi, wrmsr_tsc_deadline): MSRs
 * registered after the 0x2ff of the wrmsr row, and the light MMIO path. */
#define LAPIC_EOI_OFF      0x0b0u
#define LAPIC_SVR_OFF      0x0f0u
#define APIC_BASE_EXTD     (1u << 10)
#define CPUID1_ECX_X2APIC  (1u << 21)
#define CPUID1_ECX_TSCDL   (1u << 24)
#define LVTT_MASKED_TSCDL  ((1u << 16) | (2u << 17) | 0xeeu)	/* masked: never delivers */

/* host=kvm (tools/compare/kvmrun): the same measurements, with the checks
 * that are right under KVM. KVM's CPUID 0x40000000 signature is
 * "KVMKVMKVM\0\0\0" and it answers the null hypercall (RAX=0) with
 * -KVM_ENOSYS. LP_HC_NULL_HEAVY and LP_HC_CONFIG are lightpath's own. */
#define KVM_SIG_EBX     0x4b4d564bu	/* "KVMK" */
#define KVM_SIG_ECX     0x564b4d56u	/* "VMKV" */
#define KVM_SIG_EDX     0x0000004du	/* "M\0\0\0" */
#define KVM_ENOSYS      1000

enum exit_type {
	EX_NONE,
	EX_HYPERCALL,
	EX_HYPERCALL_HEAVY,
	EX_CPUID,
	EX_PIO_IN_PMTIMER,
	EX_PIO_OUT,
	EX_RDMSR,
	EX_WRMSR,
	EX_MMIO_READ,
	EX_MMIO_WRITE,
	EX_PIO_REP_OUTSB,
	EX_XAPIC_EOI,
	EX_X2APIC_EOI,
	EX_WRMSR_TSC_DEADLINE,
	EX_COUNT
};

static const char *const names[EX_COUNT] = {
	[EX_NONE] = "none",
	[EX_HYPERCALL] = "hypercall",
	[EX_HYPERCALL_HEAVY] = "hypercall_heavy",
	[EX_CPUID] = "cpuid",
	[EX_PIO_IN_PMTIMER] = "pio_in_pmtimer",
	[EX_PIO_OUT] = "pio_out",
	[EX_RDMSR] = "rdmsr",
	[EX_WRMSR] = "wrmsr",
	[EX_MMIO_READ] = "mmio_read",
	[EX_MMIO_WRITE] = "mmio_write",
	[EX_PIO_REP_OUTSB] = "pio_rep_outsb",
	[EX_XAPIC_EOI] = "xapic_eoi",
	[EX_X2APIC_EOI] = "x2apic_eoi",
	[EX_WRMSR_TSC_DEADLINE] = "wrmsr_tsc_deadline",
};

/* The emulator's rows: a 4-byte read and write of the MMIO test device's
 * scratch area, and `rep outsb` of REP_OUTSB_LEN bytes to the port 0x80 sink. */
#define MMIO_SCRATCH (LP_MMIO_TEST_BASE + 0x10u)
#define REP_OUTSB_LEN 64u
static uint8_t outsb_buf[REP_OUTSB_LEN];

/* The deadline wrmsr_tsc_deadline writes again and again: far enough ahead
 * that it never fires (and its LVT entry is masked besides). */
static uint64_t far_deadline;

struct result {
	bool done;
	uint32_t min;
	uint64_t sum;
};

static struct result results[EX_COUNT];
static bool failed;

static void check(bool ok, const char *what)
{
	if (!ok) {
		rt_printf("bench: check FAILED: %s\n", what);
		failed = true;
	}
}

/* One measured bracket; returns the raw TSC delta. */
static inline uint32_t measure(enum exit_type t)
{
	uint32_t t0, t1, hi;
	ureg_t b, c;

	switch (t) {
	case EX_NONE:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi));
		break;
	case EX_HYPERCALL:
		if (rt_intel)	/* VMCALL on Intel (VMX), VMMCALL on AMD (SVM) */
			asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL) : "memory");
		else
			asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL) : "memory");
		break;
	case EX_HYPERCALL_HEAVY:
		if (rt_intel)	/* VMCALL on Intel (VMX), VMMCALL on AMD (SVM) */
			asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL_HEAVY) : "memory");
		else
			asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL_HEAVY) : "memory");
		break;
	case EX_CPUID:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "xor %%eax, %%eax\n\tcpuid\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
			     : "4"(0) : "memory");
		break;
	case EX_PIO_IN_PMTIMER:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov %3, %%edx\n\tinl (%%dx), %%eax\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "i"(LP_PMTIMER_PORT) : "memory");
		break;
	case EX_PIO_OUT:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "outb %%al, %3\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "i"(LP_BENCH_PORT_OUT) : "memory");
		break;
	case EX_RDMSR:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "rdmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(LP_BENCH_MSR) : "memory");
		break;
	case EX_WRMSR:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov %4, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(LP_BENCH_MSR), "i"(MTRR_TEST_VALUE) : "memory");
		break;
	case EX_MMIO_READ:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov (%4), %%ecx\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "=&c"(c)
			     : "D"((ureg_t)MMIO_SCRATCH) : "memory");
		break;
	case EX_MMIO_WRITE:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "movl $0x5a5a5a5a, (%3)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "D"((ureg_t)MMIO_SCRATCH) : "memory");
		break;
	case EX_PIO_REP_OUTSB:
		b = (ureg_t)outsb_buf;
		c = REP_OUTSB_LEN;
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov %5, %%edx\n\trep outsb\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "+S"(b), "+c"(c)
			     : "i"(LP_BENCH_PORT_OUT) : "memory");
		break;
	case EX_XAPIC_EOI:	/* MOV r32 to memory: the light MMIO decode's form */
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov %%esi, (%3)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "D"((ureg_t)(RT_LAPIC + LAPIC_EOI_OFF)), "S"(0u) : "memory");
		break;
	case EX_X2APIC_EOI:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "xor %%eax, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_X2APIC_EOI) : "memory");
		break;
	case EX_WRMSR_TSC_DEADLINE:
		asm volatile("rdtsc\n\tmov %%eax, %0\n\t"
			     "mov %4, %%eax\n\tmov %5, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_TSC_DEADLINE), "S"((uint32_t)far_deadline),
			       "D"((uint32_t)(far_deadline >> 32)) : "memory");
		break;
	default:
		return 0;
	}
	(void)hi;
	(void)b;
	(void)c;
	return t1 - t0;
}

static void run(enum exit_type t, uint32_t n)
{
	struct result *r = &results[t];
	measure(t);	/* warm-up, not counted */
	r->min = ~0u;
	r->sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t d = measure(t);
		if (d < r->min)
			r->min = d;
		r->sum += d;
	}
	r->done = true;
}

/* mean * 100, rounded, in integers (no FPU in these guests). */
static uint64_t mean_x100(const struct result *r, uint32_t n)
{
	return (r->sum * 100 + n / 2) / n;
}

static void run_checked_hypercall(ureg_t nr, sreg_t expect, const char *what)
{
	sreg_t ret = lp_hypercall(nr, 0, 0, 0, NULL, NULL);
	if (ret != expect) {
		char msg[96];
		snprintf(msg, sizeof(msg), "%s returned %lld, expected %lld", what, (long long)ret,
			 (long long)expect);
		check(false, msg);
	}
}

/* What the host under test should look like (cmdline host=). Kept out of
 * guest_main's registers so that the measured brackets compile exactly as
 * they do without this option. */
static struct {
	bool kvm;
	uint32_t sb, sc, sd;	/* CPUID 0x40000000 signature */
	sreg_t null_ret;	/* what LP_HC_NULL returns */
} host;

static __attribute__((noinline)) void host_init(void)
{
	char name[16] = "lightpath";
	rt_arg("host", name, sizeof(name));
	host.kvm = !strcmp(name, "kvm");
	if (!host.kvm && strcmp(name, "lightpath"))
		check(false, "host= must be lightpath or kvm");
	host.sb = host.kvm ? KVM_SIG_EBX : LP_CPUID_SIG_EBX;
	host.sc = host.kvm ? KVM_SIG_ECX : LP_CPUID_SIG_ECX;
	host.sd = host.kvm ? KVM_SIG_EDX : LP_CPUID_SIG_EDX;
	host.null_ret = host.kvm ? -KVM_ENOSYS : 0;
}

/* bp=1: an instruction breakpoint (DR0, DR7.L0) on this function, which
 * never runs: the exits are then those of a guest with a breakpoint enabled
 * (on SVM lightpath's armed light loop, docs/SECURITY.md case 4). */
static __attribute__((noinline)) void never_called(void)
{
	asm volatile("" ::: "memory");
}

static void enable_breakpoint(void)
{
	asm volatile("mov %0, %%dr0" ::"r"((ureg_t)(uintptr_t)never_called));
	asm volatile("mov %0, %%dr7" ::"r"((ureg_t)1));
}

/* The local APIC rows, lightpath only (CPUID.1 shows x2APIC and the
 * TSC-deadline timer there). xapic_eoi first: x2APIC mode, once on, stays
 * (leaving it goes through a disabled APIC). EOI with nothing in service
 * changes nothing. */
static __attribute__((noinline)) void apic_rows(uint32_t n)
{
	uint32_t ecx = cpuid(1, 0).ecx;
	rt_map_mmio(RT_LAPIC);
	rt_apic_write(false, LAPIC_SVR_OFF, 0x1ff);	/* software-enabled */
	run(EX_XAPIC_EOI, n);
	if (!(ecx & CPUID1_ECX_X2APIC) || !(ecx & CPUID1_ECX_TSCDL)) {
		check(false, "CPUID.1:ECX shows no x2APIC or no TSC-deadline timer");
		return;
	}
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	run(EX_X2APIC_EOI, n);
	wrmsr(MSR_X2APIC_LVTT, LVTT_MASKED_TSCDL);
	far_deadline = rdtsc() + (1ull << 52);
	run(EX_WRMSR_TSC_DEADLINE, n);
	check(rdmsr(MSR_TSC_DEADLINE) == far_deadline,
	      "IA32_TSC_DEADLINE did not keep the deadline the loop wrote");
	wrmsr(MSR_TSC_DEADLINE, 0);	/* disarmed */
}

static __attribute__((noinline)) bool sig_ok(void)
{
	struct cpuid_regs sig = cpuid(LP_CPUID_BASE, 0);
	return sig.ebx == host.sb && sig.ecx == host.sc && sig.edx == host.sd;
}

int guest_main(void)
{
	uint32_t n = (uint32_t)rt_arg_u64("n", 1000);
	if (n == 0)
		n = 1;
	host_init();
	if (rt_arg_u64("bp", 0))
		enable_breakpoint();
	bool kvm = host.kvm;
	sreg_t null_ret = host.null_ret;

	bool ours = sig_ok();
	check(ours, kvm ? "cpuid 0x40000000 signature is not \"KVMKVMKVM\""
			: "cpuid 0x40000000 signature is not \"lightpath\"");
	bool lp = ours && !kvm;

	/* Without a hypervisor VMMCALL would #UD: skip those rows then. */
	if (kvm) {
		rt_printf("bench: mode=" MODE " host=kvm\n");
	} else {
		ureg_t config = 0;
		if (lp) {
			sreg_t c = lp_hypercall(LP_HC_CONFIG, 0, 0, 0, NULL, NULL);
			check(c >= 0, "LP_HC_CONFIG failed");
			config = (ureg_t)c;
		}
		rt_printf("bench: mode=" MODE " config=0x%llx\n", (unsigned long long)config);
	}

	run(EX_NONE, n);

	if (ours) {
		run_checked_hypercall(LP_HC_NULL, null_ret, "LP_HC_NULL");
		run(EX_HYPERCALL, n);
		run_checked_hypercall(LP_HC_NULL, null_ret, "LP_HC_NULL");
	}
	if (lp) {
		run_checked_hypercall(LP_HC_NULL_HEAVY, 0, "LP_HC_NULL_HEAVY");
		run(EX_HYPERCALL_HEAVY, n);
		run_checked_hypercall(LP_HC_NULL_HEAVY, 0, "LP_HC_NULL_HEAVY");
	}

	run(EX_CPUID, n);
	if (ours)
		check(sig_ok(), "cpuid 0x40000000 signature changed after the cpuid loop");

	uint32_t pm0 = inl(LP_PMTIMER_PORT);
	run(EX_PIO_IN_PMTIMER, n);
	uint32_t pm1 = inl(LP_PMTIMER_PORT);
	check(((pm1 - pm0) & 0xffffff) != 0, "PM timer did not advance across the loop");
	check((pm0 | pm1) >> 24 == 0, "PM timer upper 8 bits not zero");

	run(EX_PIO_OUT, n);

	wrmsr(LP_BENCH_MSR, MTRR_TEST_VALUE);
	check(rdmsr(LP_BENCH_MSR) == MTRR_TEST_VALUE, "rdmsr 0x2ff did not return what wrmsr wrote");
	run(EX_RDMSR, n);
	run(EX_WRMSR, n);
	check(rdmsr(LP_BENCH_MSR) == MTRR_TEST_VALUE,
	      "rdmsr 0x2ff did not return what wrmsr wrote (after the loops)");

	if (lp) {	/* lightpath's MMIO test device and its emulator */
		rt_map_mmio_test();
		run(EX_MMIO_WRITE, n);
		check(*(volatile uint32_t *)(uintptr_t)MMIO_SCRATCH == 0x5a5a5a5au,
		      "MMIO scratch did not read back what was written");
		run(EX_MMIO_READ, n);
		for (unsigned i = 0; i < REP_OUTSB_LEN; i++)
			outsb_buf[i] = (uint8_t)i;
		run(EX_PIO_REP_OUTSB, n);
		check(inb(LP_BENCH_PORT_OUT) == REP_OUTSB_LEN - 1,
		      "port 0x80 did not hold the last byte of the rep outsb");
		apic_rows(n);
	}

	for (int t = 0; t < EX_COUNT; t++) {
		const struct result *r = &results[t];
		if (!r->done)
			continue;
		uint64_t m = mean_x100(r, n);
		rt_printf("bench: mode=" MODE " exit=%s n=%u min=%u mean=%llu.%02llu\n",
			  names[t], n, r->min, (unsigned long long)(m / 100),
			  (unsigned long long)(m % 100));
	}

	rt_printf("\n  %-16s %10s %12s   (" MODE ", TSC ticks per round trip, n=%u)\n",
		  "exit", "min", "mean", n);
	for (int t = 0; t < EX_COUNT; t++) {
		const struct result *r = &results[t];
		if (!r->done)
			continue;
		uint64_t m = mean_x100(r, n);
		rt_printf("  %-16s %10u %9llu.%02llu\n", names[t], r->min,
			  (unsigned long long)(m / 100), (unsigned long long)(m % 100));
	}
	rt_printf("\n");

	rt_printf("bench: mode=" MODE " done\n");
	return failed ? 1 : 0;
}
