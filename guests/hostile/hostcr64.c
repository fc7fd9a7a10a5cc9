/* hostcr64: a hostile guest that leaves long mode the legal way and stays in
 * the state QEMU 7.2's #VMEXIT gets wrong (docs/SECURITY.md, case 5):
 * EFER.LME=1 with CR0.PG=0 and CR4.PAE=0. From there it makes exits of every
 * kind the light and the heavy path handle (CPUID, hypercalls, port I/O, an
 * MSR read), clears and sets EFER.LME again by WRMSR and makes them again,
 * then goes back to long mode. Twice, so that the second departure from
 * long mode is seen as well as the first. Under QEMU 7.2 the host used to
 * keep the guest's CR0 after such an exit (paging off) and the VM went
 * astray; every exit must instead work as usual, and so must the next VM.
 *
 * While paging is off the guest runs 32-bit code with interrupts off (its
 * IDT is a long-mode one); the results go to memory below 4 GiB, and the
 * checks run in long mode afterwards. */
#include "guests/rt/rt.h"

#define EFER_LME          (1u << 8)
#define EFER_LMA          (1u << 10)
#define MSR_MTRR_DEF_TYPE 0x2ffu
#define MTRR_VALUE        0xc06u
#define CR0_PG            0x80000000u
#define CR4_PAE           0x20u

/* What one round of exits returned (offsets used by the assembly below). */
struct exits_seen {
	uint32_t sig[3];        /*  0: CPUID 0x40000000 EBX, ECX, EDX */
	uint32_t hc_null;       /* 12: LP_HC_NULL */
	uint32_t hc_heavy;      /* 16: LP_HC_NULL_HEAVY */
	uint32_t pm[2];         /* 20: the PM timer, before and after */
	uint32_t mtrr;          /* 28: RDMSR MTRR_DEF_TYPE */
};

/* One trip out of long mode: the state seen, then two rounds of exits
 * (after leaving by CR0/CR4, after WRMSR EFER.LME=0 then 1). */
struct trip {
	uint32_t cr0, cr4, efer;        /* 0, 4, 8: in the odd state */
	struct exits_seen by_cr;        /* 12 */
	struct exits_seen by_wrmsr;     /* 44 */
};
_Static_assert(sizeof(struct exits_seen) == 32, "offsets in the assembly");
_Static_assert(__builtin_offsetof(struct trip, by_wrmsr) == 44, "offsets in the assembly");

struct trip hostcr_trip __attribute__((used));
uint64_t hostcr_saved_rsp __attribute__((used));

/* One round of exits in 32-bit code; EDI = where to write them. */
#define EXITS_32(base)                                                                   \
	"mov $0x40000000, %%eax\n\txor %%ecx, %%ecx\n\tcpuid\n\t"                        \
	"mov %%ebx, " #base "+0(%%edi)\n\tmov %%ecx, " #base "+4(%%edi)\n\t"           \
	"mov %%edx, " #base "+8(%%edi)\n\t"                                              \
	"xor %%eax, %%eax\n\t" HYPERCALL_32 "mov %%eax, " #base "+12(%%edi)\n\t"          \
	"mov $5, %%eax\n\t" HYPERCALL_32 "mov %%eax, " #base "+16(%%edi)\n\t"             \
	"mov $0x608, %%edx\n\tin (%%dx), %%eax\n\tmov %%eax, " #base "+20(%%edi)\n\t"    \
	"out %%al, $0x80\n\t"                                                            \
	"mov $0x2ff, %%ecx\n\trdmsr\n\tmov %%eax, " #base "+28(%%edi)\n\t"               \
	"mov $0x608, %%edx\n\tin (%%dx), %%eax\n\tmov %%eax, " #base "+24(%%edi)\n\t"

/* VMMCALL on AMD, VMCALL on Intel (the other one is #UD, and there is no
 * usable IDT here) */
#define HYPERCALL_32 "cmpb $0, rt_intel\n\tjne 7f\n\tvmmcall\n\tjmp 8f\n7:\tvmcall\n8:\t"

static void leave_long_mode_and_return(void)
{
	asm volatile(
		"push %%rbp\n\t"
		"mov %%rsp, hostcr_saved_rsp(%%rip)\n\t"
		"cli\n\t"
		"lea 1f(%%rip), %%rax\n\t"
		"pushq $0x18\n\t"               /* the 32-bit code segment */
		"push %%rax\n\t"
		"lretq\n\t"
		".code32\n"
		"1:\tmov $hostcr_trip, %%edi\n\t"
		/* paging off (long mode off, LME stays 1), then PAE off */
		"mov %%cr0, %%eax\n\tand $0x7fffffff, %%eax\n\tmov %%eax, %%cr0\n\t"
		"mov %%cr4, %%eax\n\tand $0xffffffdf, %%eax\n\tmov %%eax, %%cr4\n\t"
		"mov %%cr0, %%eax\n\tmov %%eax, 0(%%edi)\n\t"
		"mov %%cr4, %%eax\n\tmov %%eax, 4(%%edi)\n\t"
		"mov $0xc0000080, %%ecx\n\trdmsr\n\tmov %%eax, 8(%%edi)\n\t"
		EXITS_32(12)
		/* EFER.LME off and on again by WRMSR, still paging off */
		"mov $0xc0000080, %%ecx\n\trdmsr\n\tand $0xfffffeff, %%eax\n\twrmsr\n\t"
		"mov $0xc0000080, %%ecx\n\trdmsr\n\tor $0x100, %%eax\n\twrmsr\n\t"
		EXITS_32(44)
		/* back: PAE, paging (long mode, compatibility), 64-bit code */
		"mov %%cr4, %%eax\n\tor $0x20, %%eax\n\tmov %%eax, %%cr4\n\t"
		"mov %%cr0, %%eax\n\tor $0x80000000, %%eax\n\tmov %%eax, %%cr0\n\t"
		"ljmp $0x08, $2f\n\t"
		".code64\n"
		"2:\tmov hostcr_saved_rsp(%%rip), %%rsp\n\t"
		"pop %%rbp\n\t"
		:
		:
		: "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
		  "r14", "r15", "memory", "cc");
}

static void check_exits(unsigned round, const char *how, const struct exits_seen *e)
{
	tap_eq(e->sig[0], LP_CPUID_SIG_EBX, "trip %u, %s: CPUID 0x40000000 EBX is lightpath's", round, how);
	tap_eq(e->sig[1], LP_CPUID_SIG_ECX, "trip %u, %s: CPUID 0x40000000 ECX is lightpath's", round, how);
	tap_eq(e->sig[2], LP_CPUID_SIG_EDX, "trip %u, %s: CPUID 0x40000000 EDX is lightpath's", round, how);
	tap_eq(e->hc_null, 0, "trip %u, %s: LP_HC_NULL returns 0", round, how);
	tap_eq(e->hc_heavy, 0, "trip %u, %s: LP_HC_NULL_HEAVY returns 0", round, how);
	tap_eq(e->pm[0] >> 24, 0, "trip %u, %s: the PM timer reads 24 bits", round, how);
	tap_ok(e->pm[1] != e->pm[0], e->pm[1], "a later value",
	       "trip %u, %s: the PM timer advances", round, how);
	tap_eq(e->mtrr, MTRR_VALUE, "trip %u, %s: MTRR_DEF_TYPE reads back", round, how);
}

int guest_main(void)
{
	tap_begin("hostcr64");
	tap_eq(wrmsr_safe(MSR_MTRR_DEF_TYPE, MTRR_VALUE), 0, "MTRR_DEF_TYPE written in long mode");
	for (unsigned round = 1; round <= 2; round++) {
		memset(&hostcr_trip, 0, sizeof(hostcr_trip));
		leave_long_mode_and_return();
		tap_eq(hostcr_trip.cr0 & CR0_PG, 0, "trip %u: CR0.PG was 0", round);
		tap_eq(hostcr_trip.cr4 & CR4_PAE, 0, "trip %u: CR4.PAE was 0", round);
		tap_eq(hostcr_trip.efer & (EFER_LME | EFER_LMA), EFER_LME,
		       "trip %u: EFER.LME was 1 and EFER.LMA 0", round);
		check_exits(round, "left by CR0", &hostcr_trip.by_cr);
		check_exits(round, "LME set by WRMSR", &hostcr_trip.by_wrmsr);
		tap_eq(rdmsr(MSR_EFER) & (EFER_LME | EFER_LMA), EFER_LME | EFER_LMA,
		       "trip %u: back in long mode", round);
	}
	return tap_end();
}
