/* cpumsr: the CPU a VM finds is the one its CPUID describes
 * (docs/CPUID.md). Built as cpumsr32 (flat protected mode)
 * and cpumsr64 (long mode, paging on).
 *
 * - the CPUID walk: for every feature with an MSR, a CR4 or EFER bit or an
 *   instruction of its own, shown means it works and hidden means its MSRs
 *   #GP, as on a CPU without it (the features checked are listed on
 *   `cpumsr:` lines; the ok lines are the same on every CPU model);
 * - the performance counters every CPU of the vendor has, without a vPMU:
 *   they read 0, take writes and never count; RDPMC agrees;
 * - IA32_TSC: reads agree with RDTSC, a write sets the TSC RDTSC reads from
 *   then on, IA32_TSC_ADJUST moves with it where CPUID shows it, and an
 *   armed TSC-deadline timer goes by the new TSC;
 * - CPUID follows guest state: CPUID.1:ECX.OSXSAVE is CR4.OSXSAVE,
 *   CPUID.1:EDX.APIC is IA32_APIC_BASE's enable, CPUID.(0DH,0):EBX is the
 *   XSAVE area of the XCR0 in force, CPUID.7:ECX.OSPKE is CR4.PKE. */
#include "guests/rt/rt.h"
#ifndef __x86_64__
#include "guests/hostile/ring3.h"
#endif

#define VEC_GP       13u
#define VEC_DEADLINE 0x42u
#define VEC_WAIT     0x43u

#define MSR_DEBUGCTL     0x1d9u
#define APIC_EN          (1u << 11)
#define APIC_EXTD        (1u << 10)
#define CR4_PCE          (1u << 8)
#define CR4_OSXSAVE      (1u << 18)
#define CR4_PKE          (1u << 22)

static uint32_t max_basic, max_ext;

static struct cpuid_regs cpuid_checked(uint32_t leaf, uint32_t sub)
{
	struct cpuid_regs z = { 0, 0, 0, 0 };
	if (leaf & 0x80000000u ? leaf > max_ext : leaf > max_basic)
		return z;                  /* a leaf the CPU does not have */
	return cpuid(leaf, sub);
}

static uint32_t cpuid_reg(uint32_t leaf, uint32_t sub, unsigned reg)
{
	struct cpuid_regs r = cpuid_checked(leaf, sub);
	return reg == 0 ? r.eax : reg == 1 ? r.ebx : reg == 2 ? r.ecx : r.edx;
}

static ureg_t read_cr4(void)
{
	ureg_t v;
	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

/* CR4 write that survives #GP: the vector, or 0 */
static unsigned write_cr4_safe(ureg_t v)
{
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "mov %0, %%cr4\n1:" ::"r"(v) : "memory");
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

/* ---- the CPUID walk ---- */

enum { EAX, EBX, ECX, EDX };
enum kind {
	RD,       /* the MSR reads */
	RW,       /* reads, takes back what it read, reads the same */
	WO,       /* write-only: takes 0 */
	CR4BIT,   /* CR4 bit sets and clears (shown only: hidden CR4 bits are not checked) */
	EFERBIT,  /* EFER bit sets and clears; hidden: #GP */
	INSN,     /* the instruction runs (shown only) */
};
enum insn { I_RDTSCP, I_RDPID, I_CLZERO, I_RDFSBASE, I_RDPKRU };
#define F_64    1u   /* 64-bit mode only */
#define F_AMD   2u
#define F_INTEL 4u

struct feat {
	const char *name;
	uint32_t leaf;
	uint8_t sub, reg;
	uint32_t mask;            /* shown: any of these bits */
	uint32_t leaf2;           /* ... or any of mask2 in leaf2.reg2 (0: none) */
	uint8_t reg2;
	uint32_t mask2;
	uint8_t kind, flags;
	uint32_t arg;             /* MSR, CR4/EFER bit number, insn */
};

#define B(n) (1u << (n))
#define L81 0x80000001u
#define L87 0x80000007u
#define L88 0x80000008u
static const struct feat feats[] = {
	/* CPUID.1 */
	{ "TSC", 1, 0, EDX, B(4), 0, 0, 0, RD, 0, MSR_TSC },
	{ "MCE", 1, 0, EDX, B(7), L81, EDX, B(7), RD, 0, 0x17a },        /* MCG_STATUS */
	{ "MCA", 1, 0, EDX, B(14), L81, EDX, B(14), RD, 0, 0x179 },      /* MCG_CAP */
	{ "APIC", 1, 0, EDX, B(9), 0, 0, 0, RD, 0, MSR_APIC_BASE },
	{ "SEP", 1, 0, EDX, B(11), 0, 0, 0, RW, 0, 0x174 },
	{ "MTRR", 1, 0, EDX, B(12), L81, EDX, B(12), RD, 0, 0xfe },      /* MTRRCAP */
	{ "MTRR", 1, 0, EDX, B(12), L81, EDX, B(12), RW, 0, 0x2ff },     /* MTRR_DEF_TYPE */
	{ "PAT", 1, 0, EDX, B(16), L81, EDX, B(16), RW, 0, 0x277 },
	{ "DS", 1, 0, EDX, B(21), 0, 0, 0, RW, 0, 0x600 },               /* IA32_DS_AREA */
	{ "ACPI", 1, 0, EDX, B(22), 0, 0, 0, RD, 0, 0x19a },             /* CLOCK_MODULATION */
	{ "DE", 1, 0, EDX, B(2), 0, 0, 0, CR4BIT, 0, 3 },
	{ "FXSR", 1, 0, EDX, B(24), 0, 0, 0, CR4BIT, 0, 9 },
	{ "VMX", 1, 0, ECX, B(5), 0, 0, 0, RD, 0, 0x480 },               /* VMX_BASIC */
	{ "EST", 1, 0, ECX, B(7), 0, 0, 0, RD, 0, 0x198 },               /* PERF_STATUS */
	{ "SDBG", 1, 0, ECX, B(11), 0, 0, 0, RD, 0, 0xc80 },
	{ "PDCM", 1, 0, ECX, B(15), 0, 0, 0, RD, 0, 0x345 },             /* PERF_CAPABILITIES */
	{ "PCID", 1, 0, ECX, B(17), 0, 0, 0, CR4BIT, F_64, 17 },
	{ "TSC-deadline", 1, 0, ECX, B(24), 0, 0, 0, RW, 0, MSR_TSC_DEADLINE },
	{ "XSAVE", 1, 0, ECX, B(26), 0, 0, 0, CR4BIT, 0, 18 },
	/* CPUID.6 */
	{ "DTS", 6, 0, EAX, B(0), 0, 0, 0, RD, 0, 0x19c },               /* THERM_STATUS */
	{ "HWP", 6, 0, EAX, B(7), 0, 0, 0, RD, 0, 0x770 },
	{ "APERF/MPERF", 6, 0, ECX, B(0), L87, EDX, B(10), RD, 0, 0xe8 },
	{ "EPB", 6, 0, ECX, B(3), 0, 0, 0, RD, 0, 0x1b0 },
	/* CPUID.7.0 */
	{ "FSGSBASE", 7, 0, EBX, B(0), 0, 0, 0, CR4BIT, 0, 16 },
	{ "FSGSBASE", 7, 0, EBX, B(0), 0, 0, 0, INSN, F_64, I_RDFSBASE },
	{ "TSC_ADJUST", 7, 0, EBX, B(1), 0, 0, 0, RW, 0, MSR_TSC_ADJUST },
	{ "SMEP", 7, 0, EBX, B(7), 0, 0, 0, CR4BIT, 0, 20 },
	{ "RDT-M", 7, 0, EBX, B(12), 0, 0, 0, RD, 0, 0xc8d },            /* QM_EVTSEL */
	{ "MPX", 7, 0, EBX, B(14), 0, 0, 0, RW, 0, 0xd90 },              /* BNDCFGS */
	{ "RDT-A", 7, 0, EBX, B(15), 0, 0, 0, RD, 0, 0xc8f },            /* PQR_ASSOC */
	{ "SMAP", 7, 0, EBX, B(20), 0, 0, 0, CR4BIT, 0, 21 },
	{ "PT", 7, 0, EBX, B(25), 0, 0, 0, RD, 0, 0x570 },               /* RTIT_CTL */
	{ "UMIP", 7, 0, ECX, B(2), 0, 0, 0, CR4BIT, 0, 11 },
	{ "PKU", 7, 0, ECX, B(3), 0, 0, 0, INSN, 0, I_RDPKRU },
	{ "WAITPKG", 7, 0, ECX, B(5), 0, 0, 0, RD, 0, 0xe1 },            /* UMWAIT_CONTROL */
	{ "CET", 7, 0, ECX, B(7), 7, EDX, B(20), RD, 0, 0x6a0 },         /* U_CET */
	{ "TME", 7, 0, ECX, B(13), 0, 0, 0, RD, 0, 0x982 },
	{ "RDPID", 7, 0, ECX, B(22), 0, 0, 0, INSN, 0, I_RDPID },
	{ "ENQCMD", 7, 0, ECX, B(29), 0, 0, 0, RD, 0, 0xd93 },           /* PASID */
	{ "PKS", 7, 0, ECX, B(31), 0, 0, 0, RW, 0, 0x6e1 },              /* PKRS */
	{ "UINTR", 7, 0, EDX, B(5), 0, 0, 0, RD, 0, 0x985 },
	{ "TSX_FORCE_ABORT", 7, 0, EDX, B(13), 0, 0, 0, RD, 0, 0x10f },
	{ "ARCH_LBR", 7, 0, EDX, B(19), 0, 0, 0, RD, 0, 0x14ce },
	{ "SPEC_CTRL", 7, 0, EDX, B(26) | B(27) | B(31), L88, EBX, B(14) | B(15) | B(24), RW, 0, 0x48 },
	{ "IBPB", 7, 0, EDX, B(26), L88, EBX, B(12), WO, 0, 0x49 },      /* PRED_CMD */
	{ "L1D_FLUSH", 7, 0, EDX, B(28), 0, 0, 0, WO, 0, 0x10b },
	{ "ARCH_CAPABILITIES", 7, 0, EDX, B(29), 0, 0, 0, RD, 0, 0x10a },
	{ "CORE_CAPABILITIES", 7, 0, EDX, B(30), 0, 0, 0, RD, 0, 0xcf },
	/* CPUID.0DH.1, 0AH */
	{ "XSAVES", 0xd, 1, EAX, B(3), 0, 0, 0, RW, 0, 0xda0 },          /* IA32_XSS */
	{ "XFD", 0xd, 1, EAX, B(4), 0, 0, 0, RD, 0, 0x1c4 },
	{ "PMU v2", 0xa, 0, EAX, 0xfe, 0, 0, 0, RD, 0, 0x38f },          /* PERF_GLOBAL_CTRL */
	/* CPUID.80000001H */
	{ "SVM", L81, 0, ECX, B(2), 0, 0, 0, RD, 0, 0xc0010114 },        /* VM_CR */
	{ "SVM", L81, 0, ECX, B(2), 0, 0, 0, RD, 0, 0xc0010117 },        /* VM_HSAVE_PA */
	{ "OSVW", L81, 0, ECX, B(9), 0, 0, 0, RD, 0, 0xc0010140 },
	{ "IBS", L81, 0, ECX, B(10), 0, 0, 0, RD, 0, 0xc0011030 },
	{ "LWP", L81, 0, ECX, B(15), 0, 0, 0, RD, 0, 0xc0000105 },
	{ "TCE", L81, 0, ECX, B(17), 0, 0, 0, EFERBIT, F_AMD, 15 },
	{ "NodeId", L81, 0, ECX, B(19), 0, 0, 0, RD, 0, 0xc001100c },
	{ "PerfCtrExtCore", L81, 0, ECX, B(23), 0, 0, 0, RW, 0, 0xc0010200 },
	{ "PerfCtrExtCore", L81, 0, ECX, B(23), 0, 0, 0, RW, 0, 0xc001020b },
	{ "PerfCtrExtNB", L81, 0, ECX, B(24), 0, 0, 0, RD, 0, 0xc0010240 },
	{ "DataBkptExt", L81, 0, ECX, B(26), 0, 0, 0, RD, 0, 0xc0011027 },
	{ "PerfTsc", L81, 0, ECX, B(27), 0, 0, 0, RD, 0, 0xc0010280 },
	{ "PerfCtrExtLLC", L81, 0, ECX, B(28), 0, 0, 0, RD, 0, 0xc0010230 },
	{ "SYSCALL", L81, 0, EDX, B(11), 0, 0, 0, RW, 0, 0xc0000081 },   /* STAR */
	{ "SYSCALL", L81, 0, EDX, B(11), 0, 0, 0, EFERBIT, 0, 0 },       /* SCE */
	{ "NX", L81, 0, EDX, B(20), 0, 0, 0, EFERBIT, 0, 11 },
	{ "FFXSR", L81, 0, EDX, B(25), 0, 0, 0, EFERBIT, F_AMD, 14 },
	{ "RDTSCP", L81, 0, EDX, B(27), 7, ECX, B(22), RW, 0, 0xc0000103 },   /* TSC_AUX */
	{ "RDTSCP", L81, 0, EDX, B(27), 0, 0, 0, INSN, 0, I_RDTSCP },
	/* CPUID.80000007H, 80000008H, 8000001FH, 80000022H */
	{ "HwPstate", L87, 0, EDX, B(7), 0, 0, 0, RD, F_AMD, 0xc0010061 },
	{ "EffFreqRO", L87, 0, EDX, B(10), 0, 0, 0, RD, F_AMD, 0xc00000e7 },
	{ "RAPL", L87, 0, EDX, B(14), 0, 0, 0, RD, F_AMD, 0xc0010299 },
	{ "CLZERO", L88, 0, EBX, B(0), 0, 0, 0, INSN, F_AMD, I_CLZERO },
	{ "IRPERF", L88, 0, EBX, B(1), 0, 0, 0, RD, F_AMD, 0xc00000e9 },
	{ "PPIN", L88, 0, EBX, B(23), 0, 0, 0, RD, F_AMD, 0xc00102f0 },
	{ "VIRT_SSBD", L88, 0, EBX, B(25), 0, 0, 0, RD, F_AMD, 0xc001011f },
	{ "CPPC", L88, 0, EBX, B(27), 0, 0, 0, RD, F_AMD, 0xc00102b0 },
	{ "SME", 0x8000001fu, 0, EAX, B(0), 0, 0, 0, RD, F_AMD, 0xc0010010 },   /* SYSCFG */
	{ "PerfMonV2", 0x80000022u, 0, EAX, B(0), 0, 0, 0, RD, F_AMD, 0xc0000300 },
	/* LMSLE: AMD CPUs without it say so in CPUID.80000008H:EBX[20] */
	{ "LMSLE", L88, 0, EBX, 0, 0, 0, 0, EFERBIT, F_AMD, 13 },
};
#define N_FEATS (sizeof(feats) / sizeof(feats[0]))

static unsigned walk_shown, walk_shown_bad, walk_hidden, walk_hidden_bad;
static char shown_list[512], hidden_list[768];
static const char *shown_last, *hidden_last;

/* Adds a name to a list once (a feature's checks are next to each other). */
static void list_add(char *list, size_t len, const char **last, const char *name)
{
	size_t n = strlen(list);
	if (*last && !strcmp(*last, name))
		return;
	*last = name;
	snprintf(list + n, len - n, "%s%s", n ? " " : "", name);
}

static bool feat_shown(const struct feat *f)
{
	if (f->leaf == L88 && !strcmp(f->name, "LMSLE"))   /* the bit says "unsupported" */
		return !(cpuid_reg(L88, 0, EBX) & B(20));
	if (cpuid_reg(f->leaf, f->sub, f->reg) & f->mask)
		return true;
	return f->leaf2 && (cpuid_reg(f->leaf2, 0, f->reg2) & f->mask2);
}

static uint8_t clzero_line[128] __attribute__((aligned(64)));

static unsigned run_insn(unsigned id)
{
	ureg_t a = 0, c = 0, d = 0;
	rt_trap_clear();
	switch (id) {
	case I_RDTSCP:
		asm volatile(RT_ARM_RESUME "rdtscp\n1:" : "+a"(a), "+c"(c), "+d"(d) : : "memory");
		break;
	case I_RDPID:
		asm volatile(RT_ARM_RESUME ".byte 0xf3, 0x0f, 0xc7, 0xf8\n1:"   /* rdpid %eax */
			     : "+a"(a) : : "memory");
		break;
	case I_CLZERO:
		a = (ureg_t)(uintptr_t)clzero_line;
		asm volatile(RT_ARM_RESUME ".byte 0x0f, 0x01, 0xfc\n1:" : "+a"(a) : : "memory");
		break;
	case I_RDFSBASE:
#ifdef __x86_64__
		write_cr4_safe(read_cr4() | (1u << 16));
		asm volatile(RT_ARM_RESUME "rdfsbase %0\n1:" : "+a"(a) : : "memory");
		write_cr4_safe(read_cr4() & ~(1ul << 16));
#endif
		break;
	case I_RDPKRU:
		write_cr4_safe(read_cr4() | CR4_PKE);
		rt_trap_clear();
		asm volatile(RT_ARM_RESUME ".byte 0x0f, 0x01, 0xee\n1:"          /* rdpkru */
			     : "+a"(a), "+c"(c), "+d"(d) : : "memory");
		{
			unsigned vec = rt_trap.count ? rt_trap.vector : 0;
			write_cr4_safe(read_cr4() & ~(ureg_t)CR4_PKE);
			return vec;
		}
	}
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

/* One check; true when the CPU behaves as CPUID says. */
static bool check_feat(const struct feat *f, bool shown, char *what, size_t len)
{
	uint64_t v = 0, v2 = 0;
	switch (f->kind) {
	case RD:
		snprintf(what, len, "rdmsr 0x%x", f->arg);
		return (rdmsr_safe(f->arg, &v) == 0) == shown;
	case RW:
		snprintf(what, len, "rdmsr/wrmsr 0x%x", f->arg);
		if (!shown)
			return rdmsr_safe(f->arg, &v) == VEC_GP;
		if (f->arg == 0x48)   /* SPEC_CTRL: 0 is valid wherever it exists */
			v = 0;
		else if (rdmsr_safe(f->arg, &v))
			return false;
		return !wrmsr_safe(f->arg, v) && !rdmsr_safe(f->arg, &v2) &&
		       (f->arg == MSR_TSC_DEADLINE || v2 == v);
	case WO:
		snprintf(what, len, "wrmsr 0x%x, 0", f->arg);
		return (wrmsr_safe(f->arg, 0) == 0) == shown;
	case CR4BIT: {
		snprintf(what, len, "CR4 bit %u", f->arg);
		if (!shown)
			return true;
		ureg_t cr4 = read_cr4(), bit = (ureg_t)1 << f->arg;
		if (cr4 & bit)
			return true;   /* already on (entry64: PAE...) */
		bool ok = !write_cr4_safe(cr4 | bit) && (read_cr4() & bit);
		write_cr4_safe(cr4);
		return ok && read_cr4() == cr4;
	}
	case EFERBIT: {
		snprintf(what, len, "EFER bit %u", f->arg);
		uint64_t efer = rdmsr(MSR_EFER), bit = 1ull << f->arg;
		if (efer & bit)
			return shown;
		unsigned vec = wrmsr_safe(MSR_EFER, efer | bit);
		bool set = !vec && (rdmsr(MSR_EFER) & bit);
		if (!vec)
			wrmsr(MSR_EFER, efer);
		return shown ? set : vec == VEC_GP && rdmsr(MSR_EFER) == efer;
	}
	case INSN:
		snprintf(what, len, "the instruction");
		return !shown || run_insn(f->arg) == 0;
	}
	return false;
}

static void cpuid_walk(void)
{
	for (unsigned i = 0; i < N_FEATS; i++) {
		const struct feat *f = &feats[i];
#ifndef __x86_64__
		if (f->flags & F_64)
			continue;
#endif
		if (((f->flags & F_AMD) && rt_intel) || ((f->flags & F_INTEL) && !rt_intel))
			continue;
		bool shown = feat_shown(f);
		if (!shown && (f->kind == CR4BIT || f->kind == INSN))
			continue;
		char what[48];
		bool ok = check_feat(f, shown, what, sizeof(what));
		if (shown) {
			walk_shown++;
			walk_shown_bad += !ok;
			list_add(shown_list, sizeof(shown_list), &shown_last, f->name);
		} else {
			walk_hidden++;
			walk_hidden_bad += !ok;
			list_add(hidden_list, sizeof(hidden_list), &hidden_last, f->name);
		}
		if (!ok)
			rt_printf("cpumsr: FAIL: %s is %s but %s %s\n", f->name,
				  shown ? "shown" : "hidden", what,
				  shown ? "does not work" : "does not raise #GP");
	}
	rt_printf("cpumsr: shown, working: %s\n", shown_list);
	rt_printf("cpumsr: hidden, #GP: %s\n", hidden_list);
	tap_eq(walk_shown_bad, 0, "every feature CPUID shows works: its MSRs, CR4 and EFER bits and "
	       "instructions (%u checks)", walk_shown);
	tap_eq(walk_hidden_bad, 0, "every feature CPUID hides has its MSRs #GP, as on a CPU without "
	       "it (%u checks)", walk_hidden);
}

/* ---- performance counters without a vPMU ---- */

static unsigned rdpmc_safe(uint32_t ecx, uint64_t *v)
{
	ureg_t a = 0x1234, d = 0x5678, c = ecx;
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "rdpmc\n1:" : "+a"(a), "+c"(c), "+d"(d) : : "memory");
	rt_resume = 0;
	*v = ((uint64_t)(uint32_t)d << 32) | (uint32_t)a;
	return rt_trap.count ? rt_trap.vector : 0;
}

#ifndef __x86_64__
/* RDPMC at CPL 3: ECX 0, the result or the #GP recorded */
static volatile uint32_t user_eax, user_edx, user_gp;
void cpumsr_user_rdpmc(void);
asm(".text\n"
    ".globl cpumsr_user_rdpmc\n"
    "cpumsr_user_rdpmc:\n\t"
    "xor %ecx, %ecx\n\t"
    "mov $0x1234, %eax\n\t"
    "mov $0x5678, %edx\n\t"
    "rdpmc\n\t"
    "mov %eax, user_eax\n\t"
    "mov %edx, user_edx\n\t"
    "int $0x81\n");
static uint32_t user_stack[64] __attribute__((aligned(16)));

static void on_user_gp(struct rt_frame *f)
{
	user_gp++;
	f->ip += 2;   /* past the RDPMC */
}

static void rdpmc_cpl3(void)
{
	r3_init();
	rt_set_handler(VEC_GP, on_user_gp);
	for (unsigned pce = 0; pce < 2; pce++) {
		ureg_t cr4 = read_cr4();
		asm volatile("mov %0, %%cr4" ::"r"(pce ? cr4 | CR4_PCE : cr4 & ~(ureg_t)CR4_PCE));
		user_gp = 0;
		user_eax = user_edx = 0xdead;
		r3_enter((uint32_t)(uintptr_t)cpumsr_user_rdpmc,
			 (uint32_t)(uintptr_t)(user_stack + sizeof(user_stack) / sizeof(user_stack[0])),
			 0x2, 0);
		asm volatile("mov %0, %%cr4" ::"r"(cr4));
		if (!pce)
			tap_eq(user_gp, 1, "RDPMC at CPL 3 with CR4.PCE clear raises #GP");
		else
			tap_ok(!user_gp && user_eax == 0 && user_edx == 0, user_gp, "no #GP, 0",
			       "RDPMC at CPL 3 with CR4.PCE set reads 0");
	}
	rt_set_handler(VEC_GP, 0);
}
#endif

static void pmu(void)
{
	/* every CPU of the vendor has these, whatever CPUID says */
	uint32_t sel0 = rt_intel ? 0x186 : 0xc0010000u, ctr0 = rt_intel ? 0xc1 : 0xc0010004u;
	unsigned n = rt_intel ? 2 : 4, bad_sel = 0, bad_ctr = 0, bad_rdpmc = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = 1, v2 = 1;
		/* an enabled event (bit 22), user and OS, "cycles" (0x76 / 0x3c) */
		uint64_t evt = (1u << 22) | (3u << 16) | (rt_intel ? 0x3c : 0x76);
		bad_sel += rdmsr_safe(sel0 + i, &v) || v || wrmsr_safe(sel0 + i, evt) ||
			   rdmsr_safe(sel0 + i, &v2) || v2;
		bad_ctr += rdmsr_safe(ctr0 + i, &v) || v || wrmsr_safe(ctr0 + i, 0xabcd) ||
			   rdmsr_safe(ctr0 + i, &v2) || v2;
		bad_rdpmc += rdpmc_safe(i, &v) || v;
		wrmsr_safe(sel0 + i, 0);
	}
	tap_eq(bad_sel, 0, "the %u event selects every CPU of the vendor has read 0, take an "
	       "enabled event, read 0 (no vPMU)", n);
	tap_eq(bad_ctr, 0, "the %u counters read 0, take a value and still read 0: they never "
	       "count", n);
	tap_eq(bad_rdpmc, 0, "RDPMC of each of the %u counters reads 0", n);
	uint64_t v;
	tap_eq(rdpmc_safe(n, &v), VEC_GP, "RDPMC of counter %u, the first the CPU lacks, raises #GP", n);
	tap_eq(rt_trap.error, 0, "RDPMC of counter %u: error code 0", n);
	tap_eq(rdpmc_safe(0x40000000u, &v), VEC_GP, "RDPMC of fixed counter 0 (0x40000000) raises #GP");
	/* CPUID says there is nothing more */
	bool more = rt_intel ? cpuid_reg(0xa, 0, EAX) != 0
			     : (cpuid_reg(L81, 0, ECX) & (B(23) | B(24) | B(28))) ||
				       cpuid_reg(0x80000022u, 0, EAX);
	tap_eq(more, 0, "CPUID shows no counters beyond them (no architectural PMU, no "
	       "core-extension counters, no PerfMonV2)");
#ifndef __x86_64__
	rdpmc_cpl3();
#endif
}

/* ---- IA32_TSC ---- */

static volatile unsigned deadline_fired, wait_fired;

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

/* Waits with interrupts on until the test timer (LP_HC_TIMER) fires. */
static void wait_us(unsigned us)
{
	wait_fired = 0;
	lp_hypercall(LP_HC_TIMER, us, VEC_WAIT, 0, NULL, NULL);
	sti();
	while (!wait_fired && !deadline_fired)
		asm volatile("pause");
	cli();
}

#define TSC_SLACK (1ull << 34)   /* more than any host needs between two reads */

static void tsc(void)
{
	uint64_t t0 = rdtsc(), m = 0, t1;
	unsigned vec = rdmsr_safe(MSR_TSC, &m);
	t1 = rdtsc();
	tap_ok(!vec && t0 <= m && m <= t1, vec ? vec : m, "between two RDTSCs",
	       "IA32_TSC reads between the RDTSCs around it");

	bool has_adjust = cpuid_reg(7, 0, EBX) & B(1);
	uint64_t adj0 = 0, adj1 = 0;
	if (has_adjust)
		rdmsr_safe(MSR_TSC_ADJUST, &adj0);
	/* values no TSC reaches by itself, so that a write that did nothing shows */
	uint64_t high = 1ull << 41, target = 1ull << 40, before = rdtsc();
	vec = wrmsr_safe(MSR_TSC, high);
	uint64_t r = rdtsc();
	tap_ok(!vec && r >= high && r - high < TSC_SLACK, vec ? vec : r, "2^41 and a little",
	       "IA32_TSC = 2^41: RDTSC goes on from 2^41");
	rdmsr_safe(MSR_TSC, &m);
	t1 = rdtsc();
	tap_ok(r <= m && m <= t1, m, "between the RDTSCs", "IA32_TSC reads the new TSC too");
	bool a = true;
	if (cpuid_reg(L81, 0, EDX) & B(27)) {
		uint32_t lo, hi, c;
		asm volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c));
		uint64_t aux = ((uint64_t)hi << 32) | lo;
		a = aux >= t1 && aux - t1 < TSC_SLACK;
	}
	tap_eq(a && t1 >= high, 1, "RDTSCP (where CPUID shows it) reads the new TSC");
	vec = wrmsr_safe(MSR_TSC, target);
	r = rdtsc();
	tap_ok(!vec && r >= target && r - target < TSC_SLACK, r, "2^40 and a little",
	       "IA32_TSC = 2^40: the TSC goes back to 2^40");
	lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
	r = rdtsc();
	tap_ok(r >= target && r - target < TSC_SLACK, r, "2^40 and a little",
	       "and stays there across a heavy exit");

	/* IA32_TSC_ADJUST moves with the TSC (SDM vol. 3 17.17.3) */
	bool adj_ok = true;
	if (has_adjust) {
		rdmsr_safe(MSR_TSC_ADJUST, &adj1);
		/* two writes: to 2^41 from `before`, to 2^40 from about 2^41 */
		uint64_t moved = adj1 - adj0, expect = target - before;
		adj_ok = expect - moved < TSC_SLACK;   /* the time between our reads */
		uint64_t s0 = rdtsc();
		adj_ok = adj_ok && !wrmsr_safe(MSR_TSC_ADJUST, adj1 + (1ull << 36));
		uint64_t s1 = rdtsc(), adj2 = 0;
		rdmsr_safe(MSR_TSC_ADJUST, &adj2);
		adj_ok = adj_ok && s1 - s0 >= (1ull << 36) && s1 - s0 < (1ull << 36) + TSC_SLACK &&
			 adj2 == adj1 + (1ull << 36);
		if (!adj_ok)
			rt_printf("cpumsr: TSC_ADJUST %llx -> %llx (expected about %llx), moved TSC %llx\n",
				  (unsigned long long)adj0, (unsigned long long)adj1,
				  (unsigned long long)(adj0 + expect), (unsigned long long)(s1 - s0));
	} else {
		adj_ok = rdmsr_safe(MSR_TSC_ADJUST, &adj1) == VEC_GP;
	}
	tap_eq(adj_ok, 1, "IA32_TSC_ADJUST does what CPUID.7:EBX[1] says: moves with IA32_TSC and "
	       "moves it where shown, #GP where not");

	/* the TSC-deadline timer counts in the TSC as written (x2APIC mode) */
	uint64_t base = rdmsr(MSR_APIC_BASE);
	rt_set_handler(VEC_DEADLINE, on_deadline);
	rt_set_handler(VEC_WAIT, on_wait);
	wrmsr(MSR_APIC_BASE, base | APIC_EXTD);
	wrmsr(MSR_X2APIC_SVR, 0x1ff);
	wrmsr(MSR_X2APIC_LVTT, VEC_DEADLINE | (2u << 17));   /* TSC-deadline mode */
	deadline_fired = 0;
	uint64_t dl = rdtsc() + (1ull << 40);
	wrmsr(MSR_TSC_DEADLINE, dl);
	wait_us(2000);
	unsigned early = deadline_fired;
	wrmsr_safe(MSR_TSC, dl + 1000);
	wait_us(200000);
	tap_ok(!early && deadline_fired == 1, early ? 100 + early : deadline_fired,
	       "none before, one after", "a TSC-deadline 2^40 ahead fires once IA32_TSC is written "
	       "past it, not before");
	/* armed 40 ms ahead (in this host's TSC ticks), then the TSC goes back:
	 * not due for 2^40 ticks more, so nothing in the 200 ms after (a
	 * deadline left at its old host time would fire there). A host that
	 * stalls 40 ms between the two writes lets it fire before the TSC
	 * moves, as it must: such a try, seen in the TSC, is made again. */
	uint64_t t10 = rdtsc();
	wait_us(10000);
	t10 = rdtsc() - t10;
	unsigned fired, tries = 0;
	uint64_t took;
	do {
		deadline_fired = 0;
		uint64_t t0 = rdtsc();
		wrmsr(MSR_TSC_DEADLINE, t0 + 4 * t10);
		wrmsr_safe(MSR_TSC, rdtsc() - (1ull << 40));
		took = rdtsc() + (1ull << 40) - t0;
		wait_us(200000);
		fired = deadline_fired;
	} while (took >= 4 * t10 && ++tries < 5);
	tap_eq(fired, 0, "one armed 40 ms ahead does not fire once IA32_TSC goes 2^40 back");
	wrmsr(MSR_TSC_DEADLINE, 0);
	/* one-shot mode, unmasked: a deadline write is ignored and the MSR
	 * reads 0 (SDM 11.5.4.1; lightpath's WRMSR of it is dispatched on its
	 * own, vmm/lapic_access.c) */
	wrmsr(MSR_X2APIC_LVTT, VEC_DEADLINE);
	deadline_fired = 0;
	wrmsr(MSR_TSC_DEADLINE, rdtsc() + 1000);
	wait_us(2000);
	tap_ok(!deadline_fired && !rdmsr(MSR_TSC_DEADLINE), deadline_fired,
	       "none, reading 0", "in one-shot mode a TSC-deadline write is ignored and reads 0");
	wrmsr(MSR_X2APIC_LVTT, 1u << 16);
	wrmsr(MSR_APIC_BASE, base & ~(uint64_t)(APIC_EN | APIC_EXTD));   /* x2APIC -> xAPIC */
	wrmsr(MSR_APIC_BASE, base);
	rt_set_handler(VEC_DEADLINE, 0);
	rt_set_handler(VEC_WAIT, 0);
}

static void debugctl(void)
{
	uint64_t v = 1;
	tap_ok(!rdmsr_safe(MSR_DEBUGCTL, &v) && !v && !wrmsr_safe(MSR_DEBUGCTL, 0), v, "0",
	       "IA32_DEBUGCTL reads 0 and takes 0");
	tap_eq(wrmsr_safe(MSR_DEBUGCTL, 2), VEC_GP, "IA32_DEBUGCTL.BTF (not emulated) raises #GP");
}

/* ---- CPUID follows guest state ---- */

static uint32_t xsave_end(uint64_t xcr0)
{
	uint32_t end = 576;
	for (unsigned i = 2; i < 64; i++)
		if (xcr0 >> i & 1) {
			struct cpuid_regs r = cpuid(0xd, i);
			if (r.ebx + r.eax > end)
				end = r.ebx + r.eax;
		}
	return end;
}

static void xsetbv0(uint64_t v)
{
	asm volatile("xsetbv" ::"c"(0), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static void guest_state(void)
{
	ureg_t cr4 = read_cr4();
	bool xsave = cpuid(1, 0).ecx & B(26);
	unsigned bad = 0;
	write_cr4_safe(cr4 | CR4_OSXSAVE);
	tap_eq(cpuid(1, 0).ecx >> 27 & 1, xsave, "CR4.OSXSAVE set: CPUID.1:ECX.OSXSAVE reads 1 "
	       "(where XSAVE is shown)");
	write_cr4_safe(cr4 & ~(ureg_t)CR4_OSXSAVE);
	tap_eq(cpuid(1, 0).ecx >> 27 & 1, 0, "CR4.OSXSAVE clear: CPUID.1:ECX.OSXSAVE reads 0");
	for (unsigned i = 0; i < 100; i++) {
		bool on = i & 1;
		write_cr4_safe(on ? cr4 | CR4_OSXSAVE : cr4 & ~(ureg_t)CR4_OSXSAVE);
		bad += (cpuid(1, 0).ecx >> 27 & 1) != (on && xsave);
	}
	tap_eq(bad, 0, "CPUID.1:ECX.OSXSAVE follows 100 flips of CR4.OSXSAVE");

	/* leaf 0DH: EBX is the area for XCR0 as it is */
	if (xsave) {
		write_cr4_safe(cr4 | CR4_OSXSAVE);
		struct cpuid_regs d = cpuid(0xd, 0);
		uint64_t offered = ((uint64_t)d.edx << 32) | d.eax;
		tap_eq(d.ecx, xsave_end(offered), "CPUID.(0DH,0):ECX is the area of every component "
		       "offered");
		tap_eq(offered & ~0x2e7ull, 0, "CPUID.(0DH,0) offers no component beyond x87, SSE, AVX, "
		       "AVX-512 and PKRU");
		uint64_t xcr0 = 1 | (offered & 6);   /* x87|SSE|AVX as offered */
		xsetbv0(xcr0);
		tap_eq(cpuid(0xd, 0).ebx, xsave_end(xcr0), "XSETBV x87|SSE|AVX: CPUID.(0DH,0):EBX is "
		       "its area");
		xsetbv0(1);
		tap_eq(xgetbv0(), 1, "XSETBV x87: XGETBV reads it back");
		tap_eq(cpuid(0xd, 0).ebx, 576, "XSETBV x87: CPUID.(0DH,0):EBX is 576");
		xsetbv0(xcr0);
		tap_eq(cpuid(0xd, 0).ebx, xsave_end(xcr0), "XSETBV x87|SSE|AVX again: EBX follows");
		xsetbv0(1);
		write_cr4_safe(cr4 & ~(ureg_t)CR4_OSXSAVE);
	}

	/* CPUID.7:ECX.OSPKE mirrors CR4.PKE where PKU is shown */
	bool pku = cpuid_reg(7, 0, ECX) & B(3), ok = !(cpuid_reg(7, 0, ECX) & B(4));
	if (pku) {
		ok = ok && !write_cr4_safe(cr4 | CR4_PKE) && (cpuid_reg(7, 0, ECX) & B(4));
		write_cr4_safe(cr4);
		ok = ok && !(cpuid_reg(7, 0, ECX) & B(4));
	}
	tap_eq(ok, 1, "CPUID.7:ECX.OSPKE follows CR4.PKE (0 where PKU is hidden)");

	/* CPUID.1:EDX.APIC is IA32_APIC_BASE's enable (and AMD's copy) */
	uint64_t base = rdmsr(MSR_APIC_BASE);
	uint32_t ext_before = cpuid_reg(L81, 0, EDX) & B(9);
	tap_eq(cpuid(1, 0).edx >> 9 & 1, 1, "APIC enabled: CPUID.1:EDX.APIC reads 1");
	wrmsr(MSR_APIC_BASE, base & ~(uint64_t)APIC_EN);
	tap_eq(cpuid(1, 0).edx >> 9 & 1, 0, "IA32_APIC_BASE enable cleared: CPUID.1:EDX.APIC reads 0");
	tap_eq(cpuid_reg(L81, 0, EDX) & B(9), 0, "and CPUID.80000001H:EDX[9] reads 0");
	wrmsr(MSR_APIC_BASE, base);
	tap_eq(cpuid(1, 0).edx >> 9 & 1, 1, "enabled again: CPUID.1:EDX.APIC reads 1");
	tap_eq(cpuid_reg(L81, 0, EDX) & B(9), ext_before, "and CPUID.80000001H:EDX[9] is back");
	wrmsr(MSR_APIC_BASE, base | APIC_EXTD);
	tap_eq(cpuid(1, 0).edx >> 9 & 1, 1, "x2APIC mode: CPUID.1:EDX.APIC reads 1");
	wrmsr(MSR_APIC_BASE, base & ~(uint64_t)(APIC_EN | APIC_EXTD));
	wrmsr(MSR_APIC_BASE, base);
}

int guest_main(void)
{
	tap_begin(sizeof(void *) == 8 ? "cpumsr64" : "cpumsr32");
	max_basic = cpuid(0, 0).eax;
	max_ext = cpuid(0x80000000u, 0).eax;
	cli();
	cpuid_walk();
	pmu();
	tsc();
	debugctl();
	guest_state();
	return tap_end();
}
