/* tfstep: single-stepping over instructions lightpath executes for the guest
 * (docs/EXITS.md, "Completing an instruction"). With RFLAGS.TF=1 every
 * instruction is followed by a #DB trap with DR6.BS and the saved RIP at the
 * next instruction, also when the hypervisor skipped or emulated it: CPUID,
 * the hypercall (light and heavy), IN/OUT (a device's port, an unclaimed
 * one), RDMSR/WRMSR, MMIO through the emulator and through the light LAPIC
 * path, HLT, and REP OUTSB, which traps after each iteration as on a CPU.
 * Built flat 32-bit (tfstep32.elf) and 64-bit paged (tfstep64.elf).
 *
 * Each case sets TF with POPF right before the instruction (TF set by POPF
 * traps after the instruction that follows it); the #DB handler records the
 * trap and clears TF in the frame, so one step is taken per case. */
#include "guests/rt/rt.h"

#ifdef __x86_64__
#define NAME      "tfstep64"
#define SET_TF    "pushfq\n\torq $0x100, (%%rsp)\n\tpopfq\n\t"
#define HERE(r)   "lea 9b(%%rip), %" r "\n\t"
#define REP_AT(r) "lea 8b(%%rip), %" r "\n\t"
#else
#define NAME      "tfstep32"
#define SET_TF    "pushfl\n\torl $0x100, (%%esp)\n\tpopfl\n\t"
#define HERE(r)   "mov $9b, %" r "\n\t"
#define REP_AT(r) "mov $8b, %" r "\n\t"
#endif

#define VEC_DB      1u
#define VEC_TIMER   0x41u
#define DR6_BS      (1u << 14)
#define DR6_INIT    0xffff0ff0u
#define FLAGS_TF    0x100u
#define LAPIC_BASE  0xfee00000u
#define UNCLAIMED_PORT   0x1234u

static volatile unsigned db_count, timer_count;
static volatile ureg_t db_ip[8], db_dr6[8], db_cx[8];

static inline ureg_t get_dr6(void)
{
	ureg_t v;
	asm volatile("mov %%dr6, %0" : "=r"(v));
	return v;
}

static inline void set_dr6(ureg_t v)
{
	asm volatile("mov %0, %%dr6" : : "r"(v));
}

/* #DB: record where and why; the step continues only for REP (TF kept). */
static volatile bool keep_tf;
static void on_db(struct rt_frame *f)
{
	unsigned n = db_count++;
#ifdef __x86_64__
	ureg_t cx = f->rcx;
#else
	ureg_t cx = f->ecx;
#endif
	if (n < 8) {
		db_ip[n] = f->ip;
		db_dr6[n] = get_dr6();
		db_cx[n] = cx;
	}
	set_dr6(DR6_INIT);
	if (!keep_tf || !cx || n >= 7)   /* REP: on until the last iteration */
		f->flags &= ~(ureg_t)FLAGS_TF;
}

static void on_timer(struct rt_frame *f)
{
	(void)f;
	timer_count++;
}

static void expect_one_step(ureg_t after, const char *what)
{
	tap_eq(db_count, 1, "%s with TF=1: one #DB", what);
	tap_eq(db_ip[0], after, "%s: the #DB's RIP is the next instruction", what);
	tap_eq(db_dr6[0] & DR6_BS, DR6_BS, "%s: DR6.BS set", what);
	db_count = 0;
}

static void step_nop(void)
{
	ureg_t after;
	asm volatile(SET_TF "nop\n9:\n\t" HERE("0") : "=r"(after) : : "memory", "cc");
	expect_one_step(after, "nop (run by the CPU)");
}

static void step_cpuid(void)
{
	ureg_t after, a = 0, b, c = 0, d;
	asm volatile(SET_TF "cpuid\n9:\n\t" HERE("4")
		     : "+a"(a), "=b"(b), "+c"(c), "=d"(d), "=r"(after) : : "memory", "cc");
	expect_one_step(after, "cpuid");
}

static void step_hypercall(ureg_t nr, const char *what)
{
	ureg_t after, a = nr, b = 0, c = 0, d = 0;
	if (rt_intel)
		asm volatile(SET_TF ".byte 0x0f, 0x01, 0xc1\n9:\n\t" HERE("4")
			     : "+a"(a), "+b"(b), "+c"(c), "+d"(d), "=r"(after) : : "memory", "cc");
	else
		asm volatile(SET_TF ".byte 0x0f, 0x01, 0xd9\n9:\n\t" HERE("4")
			     : "+a"(a), "+b"(b), "+c"(c), "+d"(d), "=r"(after) : : "memory", "cc");
	tap_eq(a, 0, "%s returns 0", what);
	expect_one_step(after, what);
}

static void step_out(void)
{
	ureg_t after;
	asm volatile(SET_TF "outb %%al, $0x80\n9:\n\t" HERE("0")
		     : "=r"(after) : "a"(0x5a) : "memory", "cc");
	expect_one_step(after, "out 0x80 (a device's port)");
}

static void step_in_unclaimed(void)
{
	ureg_t after;
	uint32_t v;
	asm volatile(SET_TF "inl %%dx, %%eax\n9:\n\t" HERE("1")
		     : "=a"(v), "=r"(after) : "d"(UNCLAIMED_PORT) : "memory", "cc");
	tap_eq(v, 0xffffffffu, "in from an unclaimed port reads all-ones");
	expect_one_step(after, "in (an unclaimed port)");
}

static void step_in_pmtimer(void)
{
	ureg_t after;
	uint32_t v;
	asm volatile(SET_TF "inl %%dx, %%eax\n9:\n\t" HERE("1")
		     : "=a"(v), "=r"(after) : "d"(LP_PMTIMER_PORT) : "memory", "cc");
	expect_one_step(after, "in (the PM timer)");
}

static void step_rdmsr(void)
{
	ureg_t after;
	uint32_t lo, hi;
	asm volatile(SET_TF "rdmsr\n9:\n\t" HERE("2")
		     : "=a"(lo), "=d"(hi), "=r"(after) : "c"(MSR_APIC_BASE) : "memory", "cc");
	tap_eq((lo & 0xfffff000u), LAPIC_BASE, "rdmsr IA32_APIC_BASE reads the LAPIC base");
	expect_one_step(after, "rdmsr");
}

static void step_wrmsr(void)
{
	ureg_t after;
	asm volatile(SET_TF "wrmsr\n9:\n\t" HERE("0")
		     : "=r"(after) : "c"(MSR_TSC_DEADLINE), "a"(0), "d"(0) : "memory", "cc");
	expect_one_step(after, "wrmsr");
}

static void step_mmio(uintptr_t addr, const char *what)
{
	ureg_t after;
	uint32_t v;
	asm volatile(SET_TF "movl (%2), %0\n9:\n\t" HERE("1")
		     : "=r"(v), "=r"(after) : "r"(addr) : "memory", "cc");
	(void)v;
	expect_one_step(after, what);
}

/* HLT with TF: the #DB is an event, so the HLT ends at once (KVM behaves
 * the same); the timer armed before arrives afterwards. */
static void step_hlt(void)
{
	ureg_t after;
	tap_eq((uint64_t)lp_hypercall(LP_HC_TIMER, 3000, VEC_TIMER, 0, NULL, NULL), 0,
	       "LP_HC_TIMER(3000 us) returns 0");
	sti();
	asm volatile(SET_TF "hlt\n9:\n\t" HERE("0") : "=r"(after) : : "memory", "cc");
	expect_one_step(after, "hlt");
	while (!timer_count)
		asm volatile("hlt");
	cli();
	tap_eq(timer_count, 1, "the timer interrupt arrives after the step");
}

/* HLT with TF and an interrupt already waiting for IF: the POPF that sets
 * TF and IF together opens the window right before the HLT, so a CPU takes
 * the interrupt there (RIP at the HLT in its frame); the handler's IRET
 * restores TF and the HLT then traps with RIP after it. Lightpath brings
 * the interrupt with a window exit at the HLT, where it may not complete
 * the HLT for the guest: that would leave the step for the next
 * instruction (a #DB 5 bytes late, CI under host load). */
static void step_hlt_irq_waiting(void)
{
	ureg_t after;
	timer_count = 0;
	cli();
	tap_eq((uint64_t)lp_hypercall(LP_HC_RAISE_IRQ, VEC_TIMER, 0, 0, NULL, NULL), 0,
	       "LP_HC_RAISE_IRQ with IF=0 returns 0");
#ifdef __x86_64__
	asm volatile("pushfq\n\torq $0x300, (%%rsp)\n\tpopfq\n\t"
#else
	asm volatile("pushfl\n\torl $0x300, (%%esp)\n\tpopfl\n\t"
#endif
		     "hlt\n9:\n\t" HERE("0") : "=r"(after) : : "memory", "cc");
	cli();
	tap_eq(timer_count, 1, "hlt with an interrupt waiting: the interrupt is taken");
	expect_one_step(after, "hlt with an interrupt waiting");
}

/* REP OUTSB of 3 bytes: a #DB after each iteration, the first two at the
 * REP instruction itself (RCX 2, then 1), the last one after it. */
static void step_rep_outsb(void)
{
	static const uint8_t bytes[3] = { 1, 2, 3 };
	ureg_t after, rep_at, cx = 3;
	const void *si = bytes;
	keep_tf = true;
	asm volatile(SET_TF "8: rep outsb\n9:\n\t" HERE("2") REP_AT("3")
		     : "+S"(si), "+c"(cx), "=r"(after), "=r"(rep_at) : "d"(0x80) : "memory", "cc");
	keep_tf = false;
	tap_eq(db_count, 3, "rep outsb x3 with TF=1: a #DB after each iteration");
	tap_eq(db_ip[0], rep_at, "rep outsb: the first #DB at the REP instruction");
	tap_eq(db_cx[0], 2, "rep outsb: RCX 2 at the first #DB");
	tap_eq(db_ip[1], rep_at, "rep outsb: the second #DB at the REP instruction");
	tap_eq(db_cx[1], 1, "rep outsb: RCX 1 at the second #DB");
	tap_eq(db_ip[2], after, "rep outsb: the last #DB after it");
	tap_eq(db_cx[2], 0, "rep outsb: RCX 0 at the last #DB");
	tap_eq(db_dr6[0] & db_dr6[1] & db_dr6[2] & DR6_BS, DR6_BS, "rep outsb: DR6.BS each time");
	db_count = 0;
}

int guest_main(void)
{
	tap_begin(NAME);
	rt_set_handler(VEC_DB, on_db);
	rt_set_handler(VEC_TIMER, on_timer);
	rt_map_mmio_test();
	rt_map_mmio(LAPIC_BASE);

	/* Without lightpath (plain QEMU or Bochs, to compare with the CPU's
	 * own stepping) there is no hypercall and no LP_HC_TIMER. */
	bool lp = rt_on_lightpath();
	if (!lp)
		rt_printf("%s: not on lightpath: no hypercall and HLT cases\n", NAME);
	step_nop();
	step_cpuid();
	if (lp) {
		step_hypercall(LP_HC_NULL, "the null hypercall (light)");
		step_hypercall(LP_HC_NULL_HEAVY, "the heavy null hypercall");
	}
	step_out();
	step_in_unclaimed();
	step_in_pmtimer();
	step_rdmsr();
	step_wrmsr();
	step_mmio(LP_MMIO_TEST_BASE, "a load from the MMIO test device (the emulator)");
	step_mmio(LAPIC_BASE + 0x30, "a load from the LAPIC version register (light MMIO)");
	step_rep_outsb();
	if (lp) {
		step_hlt();
		step_hlt_irq_waiting();
	}
	return tap_end();
}
