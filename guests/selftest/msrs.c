/* msrs: MSR virtualization. Unknown MSRs raise #GP; the virtual
 * MTRR_DEF_TYPE keeps what is written and rejects reserved bits; the
 * syscall MSRs survive lightpath's heavy path; and a guest WRMSR to
 * STAR/EFER takes effect in the CPU at once, though lightpath switches them
 * lazily: a legacy-mode SYSCALL must arrive at the target just written. */
#include "guests/rt/rt.h"

#define EFER_SCE           1u
#define VEC_GP             13u

/* Legacy-mode SYSCALL target: CS = STAR[47:32] (0x18), SS = 0x20, ESP is
 * unchanged and ECX holds the return EIP. Record the hit and CS, restore
 * our own CS/SS and jump back. */
volatile uint32_t syscall_hit, syscall_cs;
void syscall_target(void);
asm(".pushsection .text\n"
    ".globl syscall_target\n"
    "syscall_target:\n"
    "	push %eax\n"
    "	mov %cs, %eax\n"
    "	mov %eax, syscall_cs\n"
    "	incl syscall_hit\n"
    "	ljmp $0x08, $2f\n"
    "2:	mov $0x10, %eax\n"
    "	mov %eax, %ss\n"
    "	pop %eax\n"
    "	jmp *%ecx\n"
    ".popsection");

static void check_gp(unsigned vec, const char *what)
{
	bool gp0 = vec == VEC_GP && rt_trap.error == 0;
	tap_ok(gp0, vec, "vector 13, error 0", "%s raises #GP(0)", what);
}

/* A reserved high bit in SFMASK or SYSENTER_CS. Where lightpath intercepts
 * the MSR (SFMASK under msr=always) its check gives #GP(0). Passed through
 * (docs/SECURITY.md, case 18) the CPU decides: the emulators take the write
 * (Bochs 2.7 drops the high half, QEMU 7.2 keeps SFMASK's), and then what
 * the CPU kept must be the guest's own, still there after a heavy exit. */
static void check_reserved_high(uint32_t msr, uint64_t val, const char *what)
{
	uint64_t old = rdmsr(msr), kept = 0, after = 1;
	unsigned vec = wrmsr_safe(msr, val);
	bool ok = vec == VEC_GP && rt_trap.error == 0;
	if (!vec) {
		rdmsr_safe(msr, &kept);
		lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
		rdmsr_safe(msr, &after);
		ok = after == kept;
	}
	wrmsr(msr, old);
	tap_ok(ok, vec, "#GP(0), or what the CPU kept, kept",
	       "%s raises #GP(0) or keeps what the CPU took across a heavy exit", what);
}

struct msr_val {
	uint32_t msr;
	const char *name;
	uint64_t value;
};

static const struct msr_val syscall_msrs[] = {
	{ MSR_STAR, "STAR", 0x0023001b00001234ull },
	{ MSR_LSTAR, "LSTAR", 0xffff800012345670ull },
	{ MSR_CSTAR, "CSTAR", 0x00007fff87654320ull },
	{ MSR_SFMASK, "SFMASK", 0x0000000000047700ull },
	{ MSR_KERNEL_GS_BASE, "KERNEL_GS_BASE", 0xffff888011223344ull },
};
#define N_SYSCALL_MSRS (sizeof(syscall_msrs) / sizeof(syscall_msrs[0]))

static void check_syscall_msrs(const char *when)
{
	for (unsigned i = 0; i < N_SYSCALL_MSRS; i++) {
		uint64_t v = 0;
		unsigned vec = rdmsr_safe(syscall_msrs[i].msr, &v);
		tap_ok(!vec && v == syscall_msrs[i].value, v, "the value written",
		       "%s reads back 0x%llx %s", syscall_msrs[i].name,
		       (unsigned long long)syscall_msrs[i].value, when);
	}
}

/* Hostile ECX: lightpath finds an MSR's handler in a table over three
 * blocks of 8192 (0, 0xC0000000, 0xC0010000; vmm/msr_map.h). Numbers at and
 * past their edges, and across the whole 32-bit space, none of them an MSR
 * lightpath has: each RDMSR and WRMSR must #GP(0) and nothing else. */
static void msr_sweep(void)
{
	static const uint32_t edges[] = { 0x1fff, 0x2000, 0xbfffffff, 0xc0000000, 0xc0001fff,
					  0xc0002000, 0xc000ffff, 0xc0011fff, 0xc0012000,
					  0x00010000, 0x40000000, 0x80000000, 0xfffe1fff,
					  0xffffffff };
	static const uint32_t lows[] = { 0x1fff, 0x2000, 0xffff };
	unsigned tried = 0, gp = 0;
	for (unsigned i = 0; i < sizeof(edges) / sizeof(edges[0]) + 256 * 3; i++) {
		uint32_t msr = i < sizeof(edges) / sizeof(edges[0]) ? edges[i] :
			       (i - sizeof(edges) / sizeof(edges[0])) / 3 << 24 |
			       lows[(i - sizeof(edges) / sizeof(edges[0])) % 3];
		uint64_t v;
		unsigned r = rdmsr_safe(msr, &v);
		gp += r == VEC_GP && rt_trap.error == 0;
		unsigned w = wrmsr_safe(msr, 0);
		gp += w == VEC_GP && rt_trap.error == 0;
		tried += 2;
		if (r != VEC_GP || w != VEC_GP)
			rt_printf("msrs: MSR 0x%x: rdmsr vector %u, wrmsr vector %u\n", msr, r, w);
	}
	tap_eq(gp, tried, "RDMSR and WRMSR of %u numbers at the lookup's block edges and "
	       "across the 32-bit space raise #GP(0)", tried / 2);
}

int guest_main(void)
{
	tap_begin("msrs");
	uint64_t v;

	check_gp(rdmsr_safe(0x12345678u, &v), "rdmsr of unknown MSR 0x12345678");
	check_gp(wrmsr_safe(0xc0011234u, 0x1), "wrmsr of unknown MSR 0xc0011234");
	msr_sweep();
	/* reserved bits of MSRs lightpath checks before they reach the CPU: #GP
	 * in the guest, never a fault in the hypervisor */
	check_reserved_high(0xc0000084u, 1ull << 32, "wrmsr SFMASK with a reserved high bit");
	check_reserved_high(0x174u, 1ull << 40, "wrmsr SYSENTER_CS with a reserved high bit");
	check_gp(wrmsr_safe(0x277u, 0x0202020202020202ull), "wrmsr PAT with reserved memory type 2");

	tap_eq(wrmsr_safe(LP_BENCH_MSR, 0xc06), 0, "wrmsr MTRR_DEF_TYPE 0xc06 is accepted");
	tap_eq(rdmsr(LP_BENCH_MSR), 0xc06, "MTRR_DEF_TYPE reads back 0xc06");
	tap_eq(wrmsr_safe(LP_BENCH_MSR, 0x406), 0, "wrmsr MTRR_DEF_TYPE 0x406 is accepted");
	tap_eq(rdmsr(LP_BENCH_MSR), 0x406, "MTRR_DEF_TYPE reads back 0x406");
	check_gp(wrmsr_safe(LP_BENCH_MSR, 0x806 | (1u << 12)),
		 "wrmsr MTRR_DEF_TYPE with reserved bit 12");
	check_gp(wrmsr_safe(LP_BENCH_MSR, 0x806 | (1ull << 32)),
		 "wrmsr MTRR_DEF_TYPE with reserved bit 32");
	tap_eq(rdmsr(LP_BENCH_MSR), 0x406, "MTRR_DEF_TYPE unchanged by the rejected writes");

	for (unsigned i = 0; i < N_SYSCALL_MSRS; i++)
		tap_eq(wrmsr_safe(syscall_msrs[i].msr, syscall_msrs[i].value), 0,
		       "wrmsr %s accepted", syscall_msrs[i].name);
	check_syscall_msrs("at once");
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL_HEAVY returns 0");
	check_syscall_msrs("after a heavy exit");
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL returns 0");
	check_syscall_msrs("after a light exit");

	/* The new STAR/EFER must be live in the CPU right away. */
	uint64_t efer = rdmsr(MSR_EFER);
	tap_eq(wrmsr_safe(MSR_EFER, efer | EFER_SCE), 0, "wrmsr EFER.SCE accepted");
	tap_eq(rdmsr(MSR_EFER) & EFER_SCE, EFER_SCE, "EFER.SCE reads back set");
	if (rt_intel) {
		/* Intel has SYSCALL in 64-bit mode only: here it is #UD, and
		 * syscall64.elf checks LSTAR/SFMASK with a real SYSCALL. */
		rt_trap_clear();
		asm volatile(RT_ARM_RESUME "syscall\n1:" : : : "ecx", "memory");
		rt_resume = 0;
		tap_eq(rt_trap.count ? rt_trap.vector : ~0u, 6,
		       "legacy-mode SYSCALL raises #UD (Intel: 64-bit mode only)");
		wrmsr(MSR_STAR, 0x0018001000001234ull);
		lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
		tap_eq(rdmsr(MSR_STAR), 0x0018001000001234ull, "STAR reads back after a heavy exit");
		wrmsr(MSR_EFER, efer);
		return tap_end();
	}
	uint64_t star = ((uint64_t)RT_SEL_CODE_ALT << 48) | ((uint64_t)RT_SEL_CODE_ALT << 32) |
			(uint32_t)(uintptr_t)syscall_target;
	wrmsr(MSR_STAR, star);
	syscall_hit = 0;
	syscall_cs = 0;
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "syscall\n1:" : : : "ecx", "memory");
	rt_resume = 0;
	tap_ok(!rt_trap.count, rt_trap.vector, "no exception", "legacy-mode SYSCALL does not fault");
	tap_eq(syscall_hit, 1, "SYSCALL arrives at STAR[31:0] written just before");
	tap_eq(syscall_cs & 0xffff, RT_SEL_CODE_ALT, "SYSCALL loads CS from STAR[47:32]");

	/* Again after a heavy exit, with a fresh STAR value. */
	wrmsr(MSR_STAR, star | (0x1111ull << 48));
	lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
	syscall_hit = 0;
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "syscall\n1:" : : : "ecx", "memory");
	rt_resume = 0;
	tap_eq(syscall_hit, 1, "SYSCALL still arrives at the target after a heavy exit");
	tap_eq(rdmsr(MSR_STAR), star | (0x1111ull << 48), "STAR reads back after SYSCALL");

	wrmsr(MSR_EFER, efer);
	return tap_end();
}
