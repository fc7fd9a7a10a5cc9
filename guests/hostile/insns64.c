/* insns64: a hostile guest that executes the instructions which would reach
 * the physical CPU if lightpath let them run (docs/SECURITY.md, "What a
 * guest can execute", case 6), and checks what a guest must see instead:
 *
 * - MONITOR/MWAIT (and AMD's MONITORX/MWAITX), which CPUID does not offer:
 *   #UD. Run natively, MWAIT with interrupts off parks the CPU (under QEMU
 *   and Bochs the whole machine: the boot never ends);
 * - RDPMC: the VM's own counters, which never count (no vPMU): counter 0
 *   reads 0, a fixed counter (which neither vendor's VM has) is #GP(0);
 *   natively it would read the physical counters;
 * - RDPRU: #UD (not offered);
 * - WBINVD, WBNOINVD, INVD: no-ops that reach lightpath (they are counted
 *   as exits) and never the physical caches;
 * - MOV to/from CR8: the VM's own task priority; without CR8 exiting on
 *   VT-x it was the physical TPR, and CR8=15 masked the host's timer (the
 *   guest's timer below never came);
 * - INVPCID, RDTSCP: do what CPUID says (VT-x has to enable them);
 * - CPUID offers none of the refused features;
 * - PAUSE, INVLPG, RDTSC run as on a CPU.
 * Every line is the same on both vendors. */
#include "guests/rt/rt.h"

#define VEC_UD    6u
#define VEC_GP    13u
#define VEC_TIMER 0x41u
#define NO_FAULT  (~0u)

static volatile uint64_t monitored;
static volatile unsigned timer_count;

/* Runs one instruction (bytes) with RAX/RCX/RDX set; the vector it raised,
 * or NO_FAULT. */
#define RUN(bytes, a, c, d)                                                        \
	({                                                                         \
		ureg_t a_ = (a), c_ = (c), d_ = (d);                               \
		rt_trap_clear();                                                   \
		asm volatile(RT_ARM_RESUME bytes "\n1:"                            \
			     : "+a"(a_), "+c"(c_), "+d"(d_) : : "memory");         \
		rt_resume = 0;                                                     \
		rt_trap.count ? rt_trap.vector : NO_FAULT;                         \
	})

static uint64_t exits_other(void)
{
	return (uint64_t)lp_hypercall(LP_HC_STATS, LP_EXIT_OTHER, 0, 0, NULL, NULL);
}

static void on_timer(struct rt_frame *f)
{
	(void)f;
	timer_count++;
}

static void test_monitor_mwait(void)
{
	ureg_t addr = (ureg_t)&monitored;
	cli();
	tap_eq(RUN(".byte 0x0f, 0x01, 0xc8", addr, 0, 0), VEC_UD, "MONITOR (0f 01 c8) raises #UD");
	tap_eq(RUN(".byte 0x0f, 0x01, 0xc9", 0, 0, 0), VEC_UD,
	       "MWAIT (0f 01 c9) with interrupts off raises #UD");
	tap_eq(RUN(".byte 0x0f, 0x01, 0xfa", addr, 0, 0), VEC_UD, "MONITORX (0f 01 fa) raises #UD");
	tap_eq(RUN(".byte 0x0f, 0x01, 0xfb", 0, 0, 0), VEC_UD,
	       "MWAITX (0f 01 fb) with interrupts off raises #UD");
	tap_eq(RUN(".byte 0x0f, 0x01, 0xfd", 0, 0, 0), VEC_UD, "RDPRU (0f 01 fd) raises #UD");
}

static void test_rdpmc(void)
{
	ureg_t a = 0x1234, c = 0, d = 0x5678;
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME ".byte 0x0f, 0x33\n1:" : "+a"(a), "+c"(c), "+d"(d) : : "memory");
	rt_resume = 0;
	tap_ok(!rt_trap.count && !a && !d, rt_trap.count ? rt_trap.vector : a | d, "no fault, 0",
	       "RDPMC counter 0 reads 0 (the VM's counters never count)");
	tap_eq(RUN(".byte 0x0f, 0x33", 0, 0x40000000u, 0), VEC_GP,
	       "RDPMC fixed counter 0 (0x40000000) raises #GP");
	tap_eq(rt_trap.error, 0, "RDPMC fixed counter 0: error code 0");
}

static void test_caches(void)
{
	uint64_t before = exits_other();
	tap_eq(RUN(".byte 0x0f, 0x09", 0, 0, 0), NO_FAULT, "WBINVD (0f 09) runs");
	tap_eq(RUN(".byte 0xf3, 0x0f, 0x09", 0, 0, 0), NO_FAULT, "WBNOINVD (f3 0f 09) runs");
	tap_eq(RUN(".byte 0x2e, 0x0f, 0x09", 0, 0, 0), NO_FAULT, "WBINVD with a prefix (2e 0f 09) runs");
	tap_eq(RUN(".byte 0x0f, 0x08", 0, 0, 0), NO_FAULT, "INVD (0f 08) runs");
	tap_eq(exits_other() - before, 4, "each of the four reached lightpath, not the caches");
}

static void test_cr8(void)
{
	ureg_t got;
	asm volatile("mov %1, %%cr8\n\tmov %%cr8, %0" : "=r"(got) : "r"((ureg_t)15) : "memory");
	tap_eq(got, 15, "MOV CR8 = 15 reads back 15");
	/* lightpath's emulation on both backends (case 15: SVM intercepts CR8
	 * too, so QEMU's V_TPR, which took the low bits without the #GP, is
	 * no longer involved) */
	tap_eq(RUN("mov %%rdx, %%cr8", 0, 0, 16), VEC_GP, "MOV CR8 = 16 (a reserved bit) raises #GP");
	asm volatile("mov %%cr8, %0" : "=r"(got));
	tap_eq(got, 15, "CR8 is still 15");

	/* With the guest's priority at 15, the host must still get its timer
	 * (the test facility's vector does not depend on the guest's TPR). */
	rt_set_handler(VEC_TIMER, on_timer);
	sreg_t armed = lp_hypercall(LP_HC_TIMER, 2000, VEC_TIMER, 0, NULL, NULL);
	tap_eq((uint64_t)armed, 0, "LP_HC_TIMER(2000 us) returns 0");
	for (unsigned i = 0; i < 100 && !timer_count && armed == 0; i++)
		asm volatile("sti\n\thlt\n\tcli" ::: "memory");
	tap_eq(timer_count, 1, "with CR8 = 15 the timer still wakes the guest");

	asm volatile("mov %1, %%cr8\n\tmov %%cr8, %0" : "=r"(got) : "r"((ureg_t)0) : "memory");
	tap_eq(got, 0, "MOV CR8 = 0 reads back 0");
}

static void test_as_cpuid_says(void)
{
	struct cpuid_regs l0 = cpuid(0, 0), e0 = cpuid(0x80000000u, 0);
	bool invpcid = l0.eax >= 7 && (cpuid(7, 0).ebx & (1u << 10));
	bool rdtscp = e0.eax >= 0x80000001u && (cpuid(0x80000001u, 0).edx & (1u << 27));
	struct { uint64_t pcid, addr; } desc = { 0, 0 };
	ureg_t type = 2;   /* all contexts, globals included */
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "invpcid %0, %1\n1:" : : "m"(desc), "r"(type) : "memory");
	rt_resume = 0;
	tap_eq(rt_trap.count ? rt_trap.vector : NO_FAULT, invpcid ? NO_FAULT : VEC_UD,
	       "INVPCID does what CPUID says");
	tap_eq(RUN(".byte 0x0f, 0x01, 0xf9", 0, 0, 0), rdtscp ? NO_FAULT : VEC_UD,
	       "RDTSCP does what CPUID says");
}

static void test_cpuid(void)
{
	struct cpuid_regs l0 = cpuid(0, 0), e0 = cpuid(0x80000000u, 0);
	tap_eq(cpuid(1, 0).ecx & (1u << 3), 0, "CPUID.1:ECX.MONITOR is clear");
	tap_eq(l0.eax >= 7 ? cpuid(7, 0).ecx & (1u << 5) : 0, 0, "CPUID.7:ECX.WAITPKG is clear");
	tap_eq(l0.eax >= 0xa ? cpuid(0xa, 0).eax : 0, 0, "CPUID.0AH:EAX (PMU version, counters) is 0");
	tap_eq(e0.eax >= 0x80000001u ? cpuid(0x80000001u, 0).ecx & (1u << 29) : 0, 0,
	       "CPUID.80000001H:ECX.MONITORX is clear");
	tap_eq(e0.eax >= 0x80000008u ? cpuid(0x80000008u, 0).ebx & (1u << 4) : 0, 0,
	       "CPUID.80000008H:EBX.RDPRU is clear");
}

static void test_let_run(void)
{
	tap_eq(RUN("pause", 0, 0, 0), NO_FAULT, "PAUSE runs");
	tap_eq(RUN("invlpg (%%rax)", (ureg_t)&monitored, 0, 0), NO_FAULT, "INVLPG runs");
	uint64_t t0 = rdtsc(), t1 = rdtsc();
	tap_ok(t1 > t0, t1 - t0, "> 0", "RDTSC runs and advances");
}

int guest_main(void)
{
	tap_begin("insns64");
	test_cpuid();
	test_monitor_mwait();
	test_rdpmc();
	test_caches();
	test_cr8();
	test_as_cpuid_says();
	test_let_run();
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL still returns 0 afterwards");
	return tap_end();
}
