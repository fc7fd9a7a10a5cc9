/* spec64: a hostile guest against the speculative-execution hygiene of the
 * exit path (docs/SECURITY.md, case 14).
 *
 * - It fills the return stack buffer with its own addresses right before
 *   each VM exit: 40 CALLs that never return (each pushes the address of
 *   the next instruction), then the exiting instruction, then it drops
 *   the 40 return addresses from its stack. Without the overwrite after
 *   the exit (spec=on), the hypervisor's first RETs would be predicted
 *   into these guest addresses. The exits are light (null hypercall,
 *   CPUID, a port read) and heavy (LP_HC_NULL_HEAVY), ROUNDS of each.
 *   What the guest can check is the architectural side: every exit
 *   returns where it should, with the right result, its stack intact, and
 *   each was an exit. Neither emulator models speculation: whether a
 *   prediction would have been taken is not observable here.
 * - IA32_SPEC_CTRL (0x48) and IA32_PRED_CMD (0x49) answer as the VM's CPUID
 *   says: where CPUID offers no SPEC_CTRL (IBRS, STIBP, SSBD) RDMSR and
 *   WRMSR of 0x48 raise #GP; where it offers no IBPB, WRMSR of 0x49 raises
 *   #GP; where offered, the offered bits read back, a reserved bit is #GP
 *   and leaves the value, PRED_CMD takes 1 and refuses 2 and every read.
 *   With SPEC_CTRL offered the guest ends with every offered bit set, for
 *   the next VM (resetcheck) to find 0.
 *
 * No CPU model of QEMU 7.2 or Bochs 2.7 offers SPEC_CTRL or IBPB to a VM
 * (lightpath offers what the CPU has): under `make test` the #GP branches
 * run; the others are written for a CPU that has them. */
#include "guests/rt/rt.h"

#define MSR_PRED_CMD  0x49u
#define VEC_GP        13u
#define ROUNDS        250u
#define DEPTH         40

/* Intel: CPUID.7.0:EDX; AMD: CPUID.80000008H:EBX */
#define INTEL_IBRS_IBPB (1u << 26)
#define INTEL_STIBP     (1u << 27)
#define INTEL_SSBD      (1u << 31)
#define AMD_IBPB        (1u << 12)
#define AMD_IBRS        (1u << 14)
#define AMD_STIBP       (1u << 15)
#define AMD_SSBD        (1u << 24)
/* SPEC_CTRL bits: IBRS 0, STIBP 1, SSBD 2 */
#define SPEC_IBRS  (1u << 0)
#define SPEC_STIBP (1u << 1)
#define SPEC_SSBD  (1u << 2)

enum exit_kind { EXIT_HC_NULL, EXIT_HC_HEAVY, EXIT_CPUID, EXIT_PORT, EXIT_KINDS };
static const char *const kind_name[EXIT_KINDS] = {
	"null hypercall (light)", "LP_HC_NULL_HEAVY (heavy)", "CPUID (light)",
	"PM timer read (light)",
};
static const unsigned kind_stat[EXIT_KINDS] = {
	LP_EXIT_HYPERCALL, LP_EXIT_HYPERCALL, LP_EXIT_CPUID, LP_EXIT_IO,
};

/* 40 CALLs to the next instruction: the RSB (and the stack) hold 40 guest
 * return addresses that are never returned to. */
#define FILL ".rept " RT_STR(DEPTH) "\n\t.byte 0xe8, 0, 0, 0, 0\n\t.endr\n\t"
#define RT_STR(x) RT_STR_(x)
#define RT_STR_(x) #x
#ifdef __x86_64__
#define DROP "add $" RT_STR(DEPTH) "*8, %%rsp\n\t"
#define SP "rsp"
#else
#define DROP "add $" RT_STR(DEPTH) "*4, %%esp\n\t"
#define SP "esp"
#endif

/* One exit of `kind` behind a filled RSB; the value it returns (RAX/EAX),
 * and *sp_moved = how far the stack pointer moved across it (0). */
static ureg_t exit_behind_filled_rsb(enum exit_kind kind, ureg_t *sp_moved)
{
	ureg_t ax = 0, bx = 0, cx = 0, dx = 0, sp0, sp1;
	asm volatile("mov %%" SP ", %0" : "=r"(sp0));
	switch (kind) {
	case EXIT_HC_NULL:
	case EXIT_HC_HEAVY:
		ax = kind == EXIT_HC_NULL ? LP_HC_NULL : LP_HC_NULL_HEAVY;
		if (rt_intel)
			asm volatile(FILL "vmcall\n\t" DROP
				     : "+a"(ax), "+b"(bx), "+c"(cx), "+d"(dx) : : "memory", "cc");
		else
			asm volatile(FILL "vmmcall\n\t" DROP
				     : "+a"(ax), "+b"(bx), "+c"(cx), "+d"(dx) : : "memory", "cc");
		break;
	case EXIT_CPUID:
		ax = 0x40000000u;
		asm volatile(FILL "cpuid\n\t" DROP
			     : "+a"(ax), "+b"(bx), "+c"(cx), "+d"(dx) : : "memory", "cc");
		ax = bx;   /* the signature's first word */
		break;
	case EXIT_PORT:
		dx = LP_PMTIMER_PORT;
		asm volatile(FILL "inl %%dx, %%eax\n\t" DROP
			     : "+a"(ax), "+d"(dx) : : "memory", "cc");
		ax = (ax & ~0xffffffull) ? 1 : 0;   /* the top 8 bits of a 24-bit timer */
		break;
	default:
		break;
	}
	asm volatile("mov %%" SP ", %0" : "=r"(sp1));
	*sp_moved = sp0 - sp1;
	return ax;
}

static uint64_t exits_of(unsigned reason)
{
	return (uint64_t)lp_hypercall(LP_HC_STATS, reason, 0, 0, NULL, NULL);
}

static void test_filled_rsb(void)
{
	uint32_t sig = cpuid(0x40000000u, 0).ebx;
	for (unsigned k = 0; k < EXIT_KINDS; k++) {
		uint64_t before = exits_of(kind_stat[k]);
		unsigned right = 0, moved = 0;
		for (unsigned i = 0; i < ROUNDS; i++) {
			ureg_t sp_moved;
			ureg_t r = exit_behind_filled_rsb((enum exit_kind)k, &sp_moved);
			ureg_t want = k == EXIT_CPUID ? sig : 0;
			right += r == want;
			moved += sp_moved != 0;
		}
		uint64_t made = exits_of(kind_stat[k]) - before;
		tap_eq(right, ROUNDS, "%s behind %d guest return addresses: the right result, %u times",
		       kind_name[k], DEPTH, ROUNDS);
		tap_eq(moved, 0, "%s: the guest's stack is intact after each", kind_name[k]);
		/* the STATS hypercall itself counts as a hypercall exit */
		tap_ge(made, ROUNDS, "%s: each one was a VM exit", kind_name[k]);
	}
}

static void test_msrs(uint32_t spec_bits, bool ibpb)
{
	uint64_t v = 0;
	if (!spec_bits) {
		tap_eq(rdmsr_safe(MSR_SPEC_CTRL, &v), VEC_GP, "RDMSR SPEC_CTRL raises #GP (not offered)");
		tap_eq(wrmsr_safe(MSR_SPEC_CTRL, 0), VEC_GP, "WRMSR SPEC_CTRL 0 raises #GP");
		tap_eq(wrmsr_safe(MSR_SPEC_CTRL, SPEC_IBRS | SPEC_STIBP | SPEC_SSBD), VEC_GP,
		       "WRMSR SPEC_CTRL IBRS|STIBP|SSBD raises #GP");
	} else {
		tap_eq(rdmsr_safe(MSR_SPEC_CTRL, &v), 0, "RDMSR SPEC_CTRL works (offered)");
		tap_eq(v, 0, "SPEC_CTRL reads 0 at the start");
		tap_eq(wrmsr_safe(MSR_SPEC_CTRL, spec_bits), 0, "WRMSR SPEC_CTRL with the offered bits");
		rdmsr_safe(MSR_SPEC_CTRL, &v);
		tap_eq(v, spec_bits, "SPEC_CTRL reads them back");
		tap_eq(wrmsr_safe(MSR_SPEC_CTRL, spec_bits | (1ull << 63)), VEC_GP,
		       "WRMSR SPEC_CTRL with reserved bit 63 raises #GP");
		rdmsr_safe(MSR_SPEC_CTRL, &v);
		tap_eq(v, spec_bits, "SPEC_CTRL is unchanged");
		ureg_t moved;
		tap_eq(exit_behind_filled_rsb(EXIT_HC_HEAVY, &moved), 0,
		       "a heavy exit with the guest's SPEC_CTRL set");
		rdmsr_safe(MSR_SPEC_CTRL, &v);
		tap_eq(v, spec_bits, "SPEC_CTRL is the guest's after it");
		/* left set: the next VM must find 0 */
	}
	if (!ibpb) {
		tap_eq(wrmsr_safe(MSR_PRED_CMD, 1), VEC_GP, "WRMSR PRED_CMD (IBPB) raises #GP (not offered)");
	} else {
		tap_eq(wrmsr_safe(MSR_PRED_CMD, 1), 0, "WRMSR PRED_CMD 1 (IBPB) works (offered)");
		tap_eq(wrmsr_safe(MSR_PRED_CMD, 2), VEC_GP, "WRMSR PRED_CMD 2 raises #GP");
		tap_eq(rdmsr_safe(MSR_PRED_CMD, &v), VEC_GP, "RDMSR PRED_CMD raises #GP (write-only)");
	}
}

int guest_main(void)
{
	uint32_t spec_bits = 0;
	bool ibpb = false;
	if (rt_intel) {
		uint32_t d = cpuid(0, 0).eax >= 7 ? cpuid(7, 0).edx : 0;
		spec_bits = ((d & INTEL_IBRS_IBPB) ? SPEC_IBRS : 0) | ((d & INTEL_STIBP) ? SPEC_STIBP : 0) |
			    ((d & INTEL_SSBD) ? SPEC_SSBD : 0);
		ibpb = d & INTEL_IBRS_IBPB;
	} else {
		uint32_t b = cpuid(0x80000000u, 0).eax >= 0x80000008u ? cpuid(0x80000008u, 0).ebx : 0;
		spec_bits = ((b & AMD_IBRS) ? SPEC_IBRS : 0) | ((b & AMD_STIBP) ? SPEC_STIBP : 0) |
			    ((b & AMD_SSBD) ? SPEC_SSBD : 0);
		ibpb = b & AMD_IBPB;
	}
	tap_begin("spec64");
	rt_printf("spec64: CPUID offers SPEC_CTRL bits 0x%x, IBPB %s\n", spec_bits, ibpb ? "yes" : "no");
	test_filled_rsb();
	test_msrs(spec_bits, ibpb);
	return tap_end();
}
