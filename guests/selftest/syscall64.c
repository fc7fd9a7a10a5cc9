/* syscall64: guest writes to lazily switched MSRs, in 64-bit mode where both
 * vendors have SYSCALL (Intel has it nowhere else). lightpath switches LSTAR, STAR
 * and SFMASK lazily: a guest WRMSR must still be live in the CPU at once,
 * after a light exit and after a heavy exit, or the next SYSCALL goes to a
 * stale target. Each target counts its hits, records RFLAGS (SFMASK clears
 * AC here; not DF, which QEMU's TCG SYSCALL always clears) and returns with
 * the caller's RFLAGS from R11. */
#include "guests/rt/rt.h"

#ifndef __x86_64__
#error syscall64 is a 64-bit guest
#endif

#define EFER_SCE    1u
#define EFER_LME    (1u << 8)
#define FLAGS_AC    (1u << 18)   /* no effect at CPL 0 */

volatile uint64_t hit_a, hit_b, seen_flags;
void syscall_target_a(void);
void syscall_target_b(void);
asm(".pushsection .text\n"
    "syscall_target_a:\n"
    "	pushfq\n"
    "	popq seen_flags(%rip)\n"
    "	incq hit_a(%rip)\n"
    "	push %r11\n"
    "	popfq\n"
    "	jmp *%rcx\n"
    "syscall_target_b:\n"
    "	pushfq\n"
    "	popq seen_flags(%rip)\n"
    "	incq hit_b(%rip)\n"
    "	push %r11\n"
    "	popfq\n"
    "	jmp *%rcx\n"
    ".popsection");

/* SYSCALL with AC set; returns the vector it faulted with, or 0. */
static unsigned do_syscall(void)
{
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "pushfq\n\torq $0x40000, (%%rsp)\n\tpopfq\n\tsyscall\n"
		     "1:\tpushfq\n\tandq $~0x40000, (%%rsp)\n\tpopfq"
		     : : : "rax", "rcx", "r11", "memory");
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

int guest_main(void)
{
	tap_begin("syscall64");
	uint64_t efer = rdmsr(MSR_EFER);
	tap_eq(wrmsr_safe(MSR_EFER, efer | EFER_SCE), 0, "wrmsr EFER.SCE accepted");
	/* SYSCALL: CS = STAR[47:32] (0x08, 64-bit code), SS = 0x10 */
	wrmsr(MSR_STAR, (uint64_t)RT_SEL_CODE << 32);

	wrmsr(MSR_LSTAR, (uintptr_t)syscall_target_a);
	wrmsr(MSR_SFMASK, FLAGS_AC);
	tap_eq(do_syscall(), 0, "SYSCALL right after wrmsr LSTAR does not fault");
	tap_eq(hit_a, 1, "SYSCALL arrives at the LSTAR written just before");
	tap_eq(seen_flags & FLAGS_AC, 0, "SFMASK written just before clears AC at the target");

	wrmsr(MSR_LSTAR, (uintptr_t)syscall_target_b);
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0, "LP_HC_NULL returns 0");
	tap_eq(do_syscall(), 0, "SYSCALL after a light exit does not fault");
	tap_eq(hit_b, 1, "SYSCALL arrives at the new LSTAR after a light exit");

	wrmsr(MSR_LSTAR, (uintptr_t)syscall_target_a);
	wrmsr(MSR_SFMASK, 0);
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL_HEAVY returns 0");
	tap_eq(do_syscall(), 0, "SYSCALL after a heavy exit does not fault");
	tap_eq(hit_a, 2, "SYSCALL arrives at the new LSTAR after a heavy exit");
	tap_eq(seen_flags & FLAGS_AC, FLAGS_AC, "SFMASK 0 written before a heavy exit leaves AC set");
	tap_eq(rdmsr(MSR_LSTAR), (uintptr_t)syscall_target_a, "LSTAR reads back");
	tap_eq(rdmsr(MSR_SFMASK), 0, "SFMASK reads back");
	tap_eq(hit_b, 1, "the stale target was never reached again");

	/* EFER.LME may not change while paging is on (AMD APM, Intel SDM):
	 * #GP, and EFER is unchanged; the same LME is accepted. */
	uint64_t now = rdmsr(MSR_EFER);
	tap_eq(now & EFER_LME, EFER_LME, "EFER.LME is set in long mode");
	tap_eq(wrmsr_safe(MSR_EFER, now & ~EFER_LME), 13, "clearing EFER.LME with paging on: #GP");
	tap_eq(rdmsr(MSR_EFER), now, "EFER unchanged after the #GP");
	tap_eq(wrmsr_safe(MSR_EFER, now), 0, "writing EFER with the same LME is accepted");

	wrmsr(MSR_EFER, efer);
	return tap_end();
}
