/* bench: the exit benchmark (in the spirit of kvm-unit-tests' vmexit test).
 * For each exit type, n iterations (cmdline n=, default 1000) of
 *     rdtsc; mov %eax,%reg; [input setup]; <exiting insn>; rdtsc
 * keeping the raw low-32-bit TSC delta (nothing subtracted). The only
 * instructions besides the exiting one are the save of the first TSC and,
 * where the instruction takes EAX/EDX inputs that RDTSC clobbers, the moves
 * that load them (see guests/README.md). Built as bench32.elf (flat 32-bit,
 * paging off) and bench64.elf (long mode, paging on) from this one file.
 *
 * Two rows are not one exit but an interrupt's whole way, and say so:
 * self_ipi (WRMSR to the x2APIC SELF IPI register with IF=1: the bracket
 * ends after the interrupt was delivered and its handler, through the
 * runtime's interrupt stub, did its x2APIC EOI and returned), and, with
 * ipi=1 in a VM of two vCPUs (bench32 only, mode=flat32-smp2),
 * ipi_roundtrip: vCPU 0 sends a fixed x2APIC IPI to vCPU 1, whose handler
 * sends one back; the bracket ends when vCPU 0's handler has seen it (see
 * ipi_rows for what that counts).
 *
 * timer_irq is no bracket around an exit but a latency: from the
 * TSC-deadline expiry the guest armed to its handler's first instruction
 * (timer_rows, at the end of this file). It runs last, on lightpath, and
 * under KVM with timer=1 (make compare's second run per guest, under
 * kvmrun --irqchip: KVM's in-kernel local APIC, which the first does without).
 *
 * wrmsr_kernel_gs_base is not an exit where lightpath passes the MSR
 * through (its default: docs/SECURITY.md, case 18): then it
 * measures the WRMSR instruction itself, as on bare metal or under KVM. */
#include "guests/bench/bench_site.h"
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
#define LVTT_TSCDL         (2u << 17)	/* TSC-deadline mode, unmasked */
#define MSR_X2APIC_SELF    0x83fu

/* The IPI rows' code goes behind the rest of the image's code: placed
 * before it, it would move the other rows' brackets and data, and their
 * figures with them (a VMMCALL on another code page than its warm-up's
 * misses lightpath's one-page code cache, vmm/code_cache.c, once; a buffer
 * that now crosses a page costs the emulator more). The round trip is as
 * sensitive: where vCPU 0's bracket and its handler lie on different code
 * pages, its ICR and EOI exits each miss that cache (docs/BENCHMARKS.md). */
#define IPI_TEXT __attribute__((section(".text.bench_ipi"), noinline))

/* The IPI rows' vectors. */
#define VEC_SELF_IPI       0x50u
#define VEC_PING           0x51u	/* vCPU 0 -> vCPU 1 */
#define VEC_ECHO           0x52u	/* vCPU 1 -> vCPU 0 */
#define VEC_TIMER          0x53u	/* timer_irq: the TSC-deadline timer's */
#define ECHO_APIC_ID       1u	/* lightpath gives vCPU i APIC ID i */

/* timer_irq arms the deadline this far past the RDTSC before its WRMSR:
 * beyond the WRMSR exit's return (at most ~800 in every configuration,
 * docs/BENCHMARKS.md), so that the timer expires while the guest spins. */
#define TIMER_DELTA        4000u

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
	EX_SELF_IPI,
	EX_IPI_ROUNDTRIP,
	EX_WRMSR_KGS,
	EX_TIMER_IRQ,	/* last: the other rows' results[] keep their addresses */
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
	[EX_SELF_IPI] = "self_ipi",
	[EX_IPI_ROUNDTRIP] = "ipi_roundtrip",
	[EX_WRMSR_KGS] = "wrmsr_kernel_gs_base",
	[EX_TIMER_IRQ] = "timer_irq",
};

/* The emulator's rows: a 4-byte read and write of the MMIO test device's
 * scratch area, and `rep outsb` of REP_OUTSB_LEN bytes to the port 0x80 sink. */
#define MMIO_SCRATCH (LP_MMIO_TEST_BASE + 0x10u)
#define REP_OUTSB_LEN 64u
/* aligned: inside one page, so the row is one run of elements whatever the
 * layout (a buffer across a page boundary cost 350 more in one build) */
static uint8_t outsb_buf[REP_OUTSB_LEN] __attribute__((aligned(REP_OUTSB_LEN)));

/* What wrmsr_kernel_gs_base writes: canonical at both widths, and not the
 * reset value 0, so that the read-back after the loop means something. */
#define KGS_TEST_VALUE 0x12345000u

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

/* Counted by the IPI rows' handlers; echo_seen is what vCPU 0 waits for. */
static volatile uint32_t self_ipis, pings, echoes, echo_seen;

static void check(bool ok, const char *what)
{
	if (!ok) {
		rt_printf("bench: check FAILED: %s\n", what);
		failed = true;
	}
}

/* A handler that must run once per event ran `runs` times for `events`.
 * Fewer fails the bench (an interrupt was lost). More is reported, not
 * failed: QEMU 7.2 (TCG) delivers an event that VMRUN injected through
 * EVENTINJ a second time when it leaves its execution loop before the
 * guest's next exit (docs/BENCHMARKS.md, "QEMU delivers an injected
 * interrupt twice"): lightpath no longer meets it, KVM in make compare
 * still can. The bracket it lands in is longer, the minimum is not. */
static void check_runs(uint32_t runs, uint32_t events, const char *what)
{
	if (runs < events) {
		char msg[112];
		snprintf(msg, sizeof(msg), "%s ran %u times for %u events", what, (unsigned)runs,
			 (unsigned)events);
		check(false, msg);
	} else if (runs > events) {
		rt_printf("bench: note: %s ran %u times for %u events (an interrupt delivered "
			  "more than once)\n", what, (unsigned)runs, (unsigned)events);
	}
}

/* One measured bracket; returns the raw TSC delta. */
static inline uint32_t measure(enum exit_type t)
{
	uint32_t t0, t1, hi;
	ureg_t b, c;

	switch (t) {
	case EX_NONE:
		asm volatile("rdtsc\n\t" BENCH_SITE("none") "mov %%eax, %0\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi));
		break;
	case EX_HYPERCALL:
		if (rt_intel)	/* VMCALL on Intel (VMX), VMMCALL on AMD (SVM) */
			asm volatile("rdtsc\n\t" BENCH_SITE("hypercall") "mov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL) : "memory");
		else
			asm volatile("rdtsc\n\t" BENCH_SITE("hypercall") "mov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL) : "memory");
		break;
	case EX_HYPERCALL_HEAVY:
		if (rt_intel)	/* VMCALL on Intel (VMX), VMMCALL on AMD (SVM) */
			asm volatile("rdtsc\n\t" BENCH_SITE("hypercall_heavy") "mov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL_HEAVY) : "memory");
		else
			asm volatile("rdtsc\n\t" BENCH_SITE("hypercall_heavy") "mov %%eax, %0\n\t"
				     "mov %5, %%eax\n\tvmmcall\n\trdtsc"
				     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
				     : "i"(LP_HC_NULL_HEAVY) : "memory");
		break;
	case EX_CPUID:
		asm volatile("rdtsc\n\t" BENCH_SITE("cpuid") "mov %%eax, %0\n\t"
			     "xor %%eax, %%eax\n\tcpuid\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "=b"(b), "=c"(c)
			     : "4"(0) : "memory");
		break;
	case EX_PIO_IN_PMTIMER:
		asm volatile("rdtsc\n\t" BENCH_SITE("pio_in_pmtimer") "mov %%eax, %0\n\t"
			     "mov %3, %%edx\n\tinl (%%dx), %%eax\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "i"(LP_PMTIMER_PORT) : "memory");
		break;
	case EX_PIO_OUT:
		asm volatile("rdtsc\n\t" BENCH_SITE("pio_out") "mov %%eax, %0\n\t"
			     "outb %%al, %3\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "i"(LP_BENCH_PORT_OUT) : "memory");
		break;
	case EX_RDMSR:
		asm volatile("rdtsc\n\t" BENCH_SITE("rdmsr") "mov %%eax, %0\n\t"
			     "rdmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(LP_BENCH_MSR) : "memory");
		break;
	case EX_WRMSR:
		asm volatile("rdtsc\n\t" BENCH_SITE("wrmsr") "mov %%eax, %0\n\t"
			     "mov %4, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(LP_BENCH_MSR), "i"(MTRR_TEST_VALUE) : "memory");
		break;
	case EX_MMIO_READ:
		asm volatile("rdtsc\n\t" BENCH_SITE("mmio_read") "mov %%eax, %0\n\t"
			     "mov (%4), %%ecx\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "=&c"(c)
			     : "D"((ureg_t)MMIO_SCRATCH) : "memory");
		break;
	case EX_MMIO_WRITE:
		asm volatile("rdtsc\n\t" BENCH_SITE("mmio_write") "mov %%eax, %0\n\t"
			     "movl $0x5a5a5a5a, (%3)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "D"((ureg_t)MMIO_SCRATCH) : "memory");
		break;
	case EX_PIO_REP_OUTSB:
		b = (ureg_t)outsb_buf;
		c = REP_OUTSB_LEN;
		asm volatile("rdtsc\n\t" BENCH_SITE("pio_rep_outsb") "mov %%eax, %0\n\t"
			     "mov %5, %%edx\n\trep outsb\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi), "+S"(b), "+c"(c)
			     : "i"(LP_BENCH_PORT_OUT) : "memory");
		break;
	case EX_XAPIC_EOI:	/* MOV r32 to memory: the light MMIO decode's form */
		asm volatile("rdtsc\n\t" BENCH_SITE("xapic_eoi") "mov %%eax, %0\n\t"
			     "mov %%esi, (%3)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "D"((ureg_t)(RT_LAPIC + LAPIC_EOI_OFF)), "S"(0u) : "memory");
		break;
	case EX_X2APIC_EOI:
		asm volatile("rdtsc\n\t" BENCH_SITE("x2apic_eoi") "mov %%eax, %0\n\t"
			     "xor %%eax, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_X2APIC_EOI) : "memory");
		break;
	case EX_WRMSR_TSC_DEADLINE:
		asm volatile("rdtsc\n\t" BENCH_SITE("wrmsr_tsc_deadline") "mov %%eax, %0\n\t"
			     "mov %4, %%eax\n\tmov %5, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_TSC_DEADLINE), "S"((uint32_t)far_deadline),
			       "D"((uint32_t)(far_deadline >> 32)) : "memory");
		break;
	case EX_SELF_IPI:	/* IF=1: the handler runs before the second RDTSC */
		asm volatile("rdtsc\n\t" BENCH_SITE("self_ipi") "mov %%eax, %0\n\t"
			     "mov %4, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_X2APIC_SELF), "i"(VEC_SELF_IPI) : "memory");
		break;
	case EX_IPI_ROUNDTRIP:	/* IF=1: wait (PAUSE, see ipi_rows) for the echo */
		echo_seen = 0;
		asm volatile("rdtsc\n\t" BENCH_SITE("ipi_roundtrip") "mov %%eax, %0\n\t"
			     "mov %4, %%eax\n\tmov %5, %%edx\n\twrmsr\n"
			     "1:\tpause\n\tcmpl $0, %6\n\tje 1b\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_X2APIC_ICR), "i"(VEC_PING), "i"(ECHO_APIC_ID), "m"(echo_seen)
			     : "memory");
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

IPI_TEXT static void on_self_ipi(struct rt_frame *f)
{
	(void)f;
	self_ipis++;
	wrmsr(MSR_X2APIC_EOI, 0);
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

	rt_set_handler(VEC_SELF_IPI, on_self_ipi);
	sti();
	run(EX_SELF_IPI, n);
	cli();
	check_runs(self_ipis, n + 1, "the self-IPI handler");
}

/* A guest-owned MSR's write (see the top of this file), on every host.
 * Its code goes behind the rest, like the IPI rows', with a loop of its own
 * like run()'s: a second caller of run() would take measure() out of line
 * and move every other row's bracket. */
IPI_TEXT static void guest_msr_rows(uint32_t n)
{
	struct result *r = &results[EX_WRMSR_KGS];
	uint64_t kgs = rdmsr(MSR_KERNEL_GS_BASE);
	r->min = ~0u;
	r->sum = 0;
	for (uint32_t i = 0; i <= n; i++) {	/* i = 0: the warm-up, not counted */
		uint32_t t0, t1, hi;
		asm volatile("rdtsc\n\t" BENCH_SITE("wrmsr_kernel_gs_base") "mov %%eax, %0\n\t"
			     "mov %4, %%eax\n\txor %%edx, %%edx\n\twrmsr\n\trdtsc"
			     : "=&r"(t0), "=a"(t1), "=d"(hi)
			     : "c"(MSR_KERNEL_GS_BASE), "i"(KGS_TEST_VALUE) : "memory");
		(void)hi;
		uint32_t d = t1 - t0;
		if (!i)
			continue;
		if (d < r->min)
			r->min = d;
		r->sum += d;
	}
	r->done = true;
	check(rdmsr(MSR_KERNEL_GS_BASE) == KGS_TEST_VALUE,
	      "KERNEL_GS_BASE did not keep the value the loop wrote");
	wrmsr(MSR_KERNEL_GS_BASE, kgs);
}

static void timer_rows(uint32_t n);	/* at the end of the file */

static __attribute__((noinline)) bool sig_ok(void)
{
	struct cpuid_regs sig = cpuid(LP_CPUID_BASE, 0);
	return sig.ebx == host.sb && sig.ecx == host.sc && sig.edx == host.sd;
}

/* The results, as lines for tools/bench.py and as a table, then "done". */
IPI_TEXT static void print_results(const char *mode, uint32_t n)
{
	for (int t = 0; t < EX_COUNT; t++) {
		const struct result *r = &results[t];
		if (!r->done)
			continue;
		uint64_t m = mean_x100(r, n);
		rt_printf("bench: mode=%s exit=%s n=%u min=%u mean=%llu.%02llu\n", mode,
			  names[t], n, r->min, (unsigned long long)(m / 100),
			  (unsigned long long)(m % 100));
	}

	rt_printf("\n  %-16s %10s %12s   (%s, TSC ticks per round trip, n=%u)\n",
		  "exit", "min", "mean", mode, n);
	for (int t = 0; t < EX_COUNT; t++) {
		const struct result *r = &results[t];
		if (!r->done)
			continue;
		uint64_t m = mean_x100(r, n);
		rt_printf("  %-16s %10u %9llu.%02llu\n", names[t], r->min,
			  (unsigned long long)(m / 100), (unsigned long long)(m % 100));
	}
	rt_printf("\n");

	rt_printf("bench: mode=%s done\n", mode);
}

#ifndef __x86_64__
/* ---- ipi=1: the IPI round trip, in a VM of two vCPUs (bench32 only) ----
 *
 * vCPU 0 (this one) starts vCPU 1 with INIT and STARTUP IPIs at the
 * runtime's trampoline (guests/rt/ap32.c); both switch to x2APIC mode and
 * keep IF=1. vCPU 1 spins on PAUSE with IF=1 and answers each VEC_PING with
 * a fixed IPI VEC_ECHO to vCPU 0, then its x2APIC EOI. The bracket: RDTSC;
 * WRMSR to the ICR (fixed, physical, to APIC ID 1); PAUSE until vCPU 0's
 * VEC_ECHO handler (x2APIC EOI) has set echo_seen; RDTSC.
 *
 * What it counts (tools/bench.py runs it under QEMU -icount -smp 2): QEMU's
 * TSC is one clock for all CPUs, counting the instructions that all of them
 * execute, and it runs one CPU at a time. A CPU's turn ends at a PAUSE
 * (QEMU's x86 TCG: "let another CPU run") or HLT. So the delta is, with
 * nothing running in parallel: vCPU 0's ICR exit on CPU 0 (the IPI posted
 * to vCPU 1 and CPU 1 kicked with a host IPI); vCPU 0's first PAUSE; on
 * CPU 1, the exit the kick forces, lightpath moving the posted vector to
 * vCPU 1's IRR and injecting it, vCPU 1's handler (runtime stub, ICR exit
 * back to vCPU 0 with its kick of CPU 0, EOI exit), its IRET and PAUSE; on
 * CPU 0 the same for VEC_ECHO; then the loop's test. On hardware the two
 * CPUs run at once: this is the instructions of both, not a latency. */
#define AP_STACK 8192u
static uint8_t ap_stack[AP_STACK] __attribute__((aligned(16)));
static volatile uint32_t ap_up;

IPI_TEXT static void on_ping(struct rt_frame *f)	/* on vCPU 1 */
{
	(void)f;
	pings++;
	wrmsr(MSR_X2APIC_ICR, VEC_ECHO);	/* fixed, physical, to APIC ID 0 */
	wrmsr(MSR_X2APIC_EOI, 0);
}

IPI_TEXT static void on_echo(struct rt_frame *f)	/* on vCPU 0 */
{
	(void)f;
	echoes++;
	echo_seen = 1;
	wrmsr(MSR_X2APIC_EOI, 0);
}

IPI_TEXT static __attribute__((noreturn)) void ap_main(void)
{
	rt_idt_load();
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	__atomic_store_n(&ap_up, 1, __ATOMIC_RELEASE);
	sti();
	for (;;)
		asm volatile("pause" ::: "memory");
}

IPI_TEXT static uint32_t pm_since(uint32_t t0)
{
	return (inl(LP_PMTIMER_PORT) - t0) & 0xffffff;
}

/* Waits with PAUSE (under QEMU -icount a CPU spinning without it starves
 * the other: core/smp.c, smp_wait_done) until *flag != 0 or `us` passed. */
IPI_TEXT static bool wait_flag(volatile uint32_t *flag, uint32_t us)
{
	uint32_t t0 = inl(LP_PMTIMER_PORT);
	uint32_t ticks = (uint32_t)((uint64_t)us * LP_PMTIMER_HZ / 1000000);
	while (!*flag) {
		if (pm_since(t0) > ticks)
			return false;
		asm volatile("pause" ::: "memory");
	}
	return true;
}

IPI_TEXT static void xapic_icr(uint32_t dest, uint32_t lo)
{
	*(volatile uint32_t *)(uintptr_t)(RT_LAPIC + 0x310) = dest << 24;
	*(volatile uint32_t *)(uintptr_t)(RT_LAPIC + 0x300) = lo;
}

IPI_TEXT static int ipi_main(uint32_t n)
{
	static const char mode[] = MODE "-smp2";
	sreg_t config = rt_on_lightpath() ? lp_hypercall(LP_HC_CONFIG, 0, 0, 0, NULL, NULL) : -1;
	if (config < 0) {
		check(false, "ipi=1 needs lightpath (LP_HC_CONFIG)");
		return 1;
	}
	rt_printf("bench: mode=%s config=0x%llx\n", mode, (unsigned long long)config);
	uint32_t ecx = cpuid(1, 0).ecx;
	if (!(ecx & CPUID1_ECX_X2APIC)) {
		check(false, "CPUID.1:ECX shows no x2APIC");
		return 1;
	}
	rt_set_handler(VEC_PING, on_ping);
	rt_set_handler(VEC_ECHO, on_echo);
	rt_apic_write(false, LAPIC_SVR_OFF, 0x1ff);

	/* INIT, 10 ms, STARTUP, 200 us, STARTUP (the SDM's sequence), in
	 * xAPIC mode */
	rt_ap_install(ap_main);
	rt_ap_set_stack(ap_stack + AP_STACK);
	static volatile uint32_t never;
	xapic_icr(ECHO_APIC_ID, (5u << 8) | (1u << 14));
	wait_flag(&never, 10000);
	for (int i = 0; i < 2; i++) {
		xapic_icr(ECHO_APIC_ID, (6u << 8) | (1u << 14) | RT_AP_SIPI_VECTOR);
		wait_flag(&never, 200);
	}
	if (!wait_flag(&ap_up, 1000000)) {
		check(false, "vCPU 1 (APIC ID 1) did not start within 1 s of its STARTUP IPIs "
			     "(a VM of two vCPUs: cpus = 2)");
		return 1;
	}
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);

	/* one checked round trip with a time limit; the measured ones wait
	 * without one (the boot's timeout is the limit) */
	sti();
	echo_seen = 0;
	wrmsr(MSR_X2APIC_ICR, (uint64_t)ECHO_APIC_ID << 32 | VEC_PING);
	if (!wait_flag(&echo_seen, 1000000)) {
		cli();
		check(false, "no echo from vCPU 1 within 1 s");
		return 1;
	}
	run(EX_IPI_ROUNDTRIP, n);
	cli();
	check_runs(pings, n + 2, "vCPU 1's ping handler");
	check_runs(echoes, n + 2, "vCPU 0's echo handler");
	print_results(mode, n);
	return failed ? 1 : 0;
}
#endif

int guest_main(void)
{
	uint32_t n = (uint32_t)rt_arg_u64("n", 1000);
	if (n == 0)
		n = 1;
	host_init();
#ifndef __x86_64__
	if (rt_arg_u64("ipi", 0))
		return ipi_main(n);
#endif
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
	guest_msr_rows(n);
	timer_rows(n);	/* it decides: a test here would move the code behind */

	print_results(MODE, n);
	return failed ? 1 : 0;
}

/* ---- timer_irq: TSC-deadline expiry to the first instruction of the handler ----
 *
 * With the timer LVT in TSC-deadline mode (x2APIC, as the other APIC rows)
 * and IF=1: RDTSC; IA32_TSC_DEADLINE = that + TIMER_DELTA (WRMSR); PAUSE
 * until the handler has run. The handler's first instruction is RDTSC, and
 * the row is that TSC minus the deadline: no bracket around an exit but
 * what passes between the expiry and the handler, in TSC ticks.
 *
 * The runtime's vectors go through its stub (push, push, jmp, register
 * saves, C dispatch) before a C handler runs; this row points the IDT gate
 * of VEC_TIMER at timer_entry instead, so that the RDTSC is the first
 * instruction at the vector's entry: nothing of the guest's lies between
 * the interrupt's delivery and the RDTSC. timer_entry clobbers EAX and EDX:
 * it can only interrupt the spin loop below, which declares both clobbered
 * (IF=1 nowhere else while the gate points there). It leaves the EOI to the
 * loop, after the measurement. Own section, at the end of the image's code:
 * placed among the other rows' code it would move their brackets. */
#define TIMER_TEXT __attribute__((section(".text.bench_timer"), noinline))

static volatile uint32_t timer_t_lo __attribute__((used));
static volatile uint32_t timer_t_hi __attribute__((used));
static volatile uint32_t timer_irqs __attribute__((used));

#ifdef __x86_64__
#define RIPREL "(%rip)"
#define IRET "iretq"
#else
#define RIPREL ""
#define IRET "iret"
#endif
/* The vector's entry (naked: no prologue before the RDTSC). */
TIMER_TEXT __attribute__((naked)) static void timer_entry(void)
{
	asm("rdtsc\n\t"
	    "mov %eax, timer_t_lo" RIPREL "\n\t"
	    "mov %edx, timer_t_hi" RIPREL "\n\t"
	    "incl timer_irqs" RIPREL "\n\t"
	    IRET);
}

struct idtr {
	uint16_t limit;
	ureg_t base;
} __attribute__((packed));

/* A gate's handler offset: the same bits in both widths' gates (the 64-bit
 * one has bits 63:32 in its third dword). */
TIMER_TEXT static void gate_set(uint8_t *g, uintptr_t a)
{
	g[0] = (uint8_t)a;
	g[1] = (uint8_t)(a >> 8);
	g[6] = (uint8_t)(a >> 16);
	g[7] = (uint8_t)(a >> 24);
#ifdef __x86_64__
	for (int i = 0; i < 4; i++)
		g[8 + i] = (uint8_t)(a >> (32 + 8 * i));
#endif
}

/* One arming: returns the handler's TSC, and the deadline in *deadline. */
TIMER_TEXT static uint64_t timer_once(uint64_t *deadline)
{
	uint32_t lo, hi, a, d;
	uint32_t before = timer_irqs;
	asm volatile("rdtsc\n\t" BENCH_SITE("timer_irq")
		     "add %[delta], %%eax\n\t"
		     "adc $0, %%edx\n\t"
		     "mov %%eax, %[lo]\n\t"
		     "mov %%edx, %[hi]\n\t"
		     "wrmsr\n\t"
		     "sti\n"
		     "1:\tpause\n\t"
		     "cmpl %[before], %[irqs]\n\t"
		     "je 1b\n\t"
		     "cli"
		     : [lo] "=&r"(lo), [hi] "=&r"(hi), "=&a"(a), "=&d"(d)
		     : "c"(MSR_TSC_DEADLINE), [delta] "i"(TIMER_DELTA), [before] "r"(before),
		       [irqs] "m"(timer_irqs)
		     : "memory", "cc");
	(void)a;
	(void)d;
	*deadline = (uint64_t)hi << 32 | lo;
	return (uint64_t)timer_t_hi << 32 | timer_t_lo;
}

TIMER_TEXT static void timer_rows(uint32_t n)
{
	struct result *r = &results[EX_TIMER_IRQ];
	/* On lightpath; under KVM only with timer=1: make compare's second run
	 * per guest, under kvmrun --irqchip (without it there is no local APIC) */
	if (!sig_ok() || (host.kvm && !rt_arg_u64("timer", 0)))
		return;
	uint32_t ecx = cpuid(1, 0).ecx;
	if (!(ecx & CPUID1_ECX_X2APIC) || !(ecx & CPUID1_ECX_TSCDL)) {
		check(false, "timer_irq: CPUID.1:ECX shows no x2APIC or no TSC-deadline timer");
		return;
	}
	/* x2APIC on and software-enabled: apic_rows did it on lightpath, not
	 * under KVM */
	wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | APIC_BASE_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	struct idtr idtr;
	asm volatile("sidt %0" : "=m"(idtr));
	uint8_t *gate = (uint8_t *)(uintptr_t)idtr.base + VEC_TIMER * 2 * sizeof(ureg_t);
	uint8_t saved[2 * sizeof(ureg_t)];
	memcpy(saved, gate, sizeof(saved));
	gate_set(gate, (uintptr_t)timer_entry);
	wrmsr(MSR_X2APIC_LVTT, LVTT_TSCDL | VEC_TIMER);

	uint32_t early = 0;
	r->min = ~0u;
	r->sum = 0;
	for (uint32_t i = 0; i <= n; i++) {	/* i = 0: the warm-up, not counted */
		uint64_t deadline, t = timer_once(&deadline);
		wrmsr(MSR_X2APIC_EOI, 0);
		if (t < deadline) {
			early++;
			continue;
		}
		uint64_t lat = t - deadline;
		uint32_t d = lat > ~0u ? ~0u : (uint32_t)lat;
		if (!i)
			continue;
		if (d < r->min)
			r->min = d;
		r->sum += d;
	}
	r->done = true;
	/* a last look for a late second interrupt of the last arming */
	sti();
	for (int i = 0; i < 2 * (int)TIMER_DELTA; i++)
		asm volatile("pause");
	cli();
	check_runs(timer_irqs, n + 1, "timer_irq: the deadline's handler");
	check(!early, "timer_irq: the handler ran before the TSC reached the deadline");
	check(rdmsr(MSR_TSC_DEADLINE) == 0, "timer_irq: IA32_TSC_DEADLINE not 0 after the timer fired");

	wrmsr(MSR_X2APIC_LVTT, LVTT_MASKED_TSCDL);
	memcpy(gate, saved, sizeof(saved));
}
