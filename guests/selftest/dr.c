/* dr: debug registers under lightpath's lazy DR switching (dr=lazy).
 * DR0-3 keep their values across light and heavy exits, and an execution
 * breakpoint set through DR0/DR7 raises #DB in the guest, before and after
 * a heavy exit. */
#include "guests/rt/rt.h"

#define VEC_DB   1u
#define DR6_B0   1u
#define DR7_L0   1u
#define DR6_INIT 0xffff0ff0u

#define DEF_DR(n)                                                           \
	static inline ureg_t get_dr##n(void)                                \
	{                                                                   \
		ureg_t v;                                                   \
		asm volatile("mov %%dr" #n ", %0" : "=r"(v));               \
		return v;                                                   \
	}                                                                   \
	static inline void set_dr##n(ureg_t v)                              \
	{                                                                   \
		asm volatile("mov %0, %%dr" #n : : "r"(v) : "memory");      \
	}
DEF_DR(0)
DEF_DR(1)
DEF_DR(2)
DEF_DR(3)
DEF_DR(6)
DEF_DR(7)

static volatile unsigned db_count;
static volatile ureg_t db_dr6, db_ip;
static volatile unsigned target_runs;

/* #DB handler: record DR6 and continue with RF set, so the instruction
 * breakpoint does not fire again on the same instruction. */
static void on_db(struct rt_frame *f)
{
	db_count++;
	db_dr6 = get_dr6();
	db_ip = f->ip;
	set_dr6(DR6_INIT);
	f->flags |= RT_FLAGS_RF;
}

__attribute__((noinline, noclone)) static unsigned bp_target(unsigned x)
{
	target_runs++;
	return x + 1;
}

/* Called through a volatile pointer so the call cannot be inlined away. */
static unsigned (*volatile bp_fn)(unsigned) = bp_target;

static void check_drs(const ureg_t want[4], const char *when)
{
	ureg_t got[4] = { get_dr0(), get_dr1(), get_dr2(), get_dr3() };
	for (int i = 0; i < 4; i++)
		tap_eq(got[i], want[i], "DR%d reads back %s", i, when);
}

int guest_main(void)
{
	tap_begin("dr");
	rt_set_handler(VEC_DB, on_db);

	const ureg_t want[4] = { 0x1000, 0x2340, 0x5678, 0x9abc0 };
	set_dr0(want[0]);
	set_dr1(want[1]);
	set_dr2(want[2]);
	set_dr3(want[3]);
	check_drs(want, "at once");
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL_HEAVY returns 0");
	check_drs(want, "after a heavy exit");
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL returns 0");
	check_drs(want, "after a light exit");

	/* Execution breakpoint on bp_target: L0, RW0 = 00, LEN0 = 00. */
	set_dr6(DR6_INIT);
	set_dr0((ureg_t)(uintptr_t)bp_target);
	set_dr7(DR7_L0);
	tap_eq(get_dr7() & 0xffff00ffu, DR7_L0, "DR7 reads back L0 with RW0/LEN0 = 0");
	unsigned r = bp_fn(41);
	tap_eq(db_count, 1, "execution breakpoint raises #DB once");
	tap_eq(db_ip, (ureg_t)(uintptr_t)bp_target, "#DB reported at the breakpoint address");
	tap_eq(db_dr6 & DR6_B0, DR6_B0, "DR6.B0 set in the #DB handler");
	tap_eq(r, 42, "the function runs after #DB returns with RF set");
	tap_eq(target_runs, 1, "the function ran exactly once");

	/* Still armed after a heavy exit (the hypervisor may switch DRs). */
	lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
	tap_eq(get_dr7() & DR7_L0, DR7_L0, "DR7.L0 still set after a heavy exit");
	r = bp_fn(1);
	tap_eq(db_count, 2, "breakpoint fires again after a heavy exit");
	tap_eq(r, 2, "and the function still runs");

	set_dr7(0);
	set_dr6(DR6_INIT);
	r = bp_fn(2);
	tap_eq(db_count, 2, "no #DB once DR7 is cleared");
	tap_eq(r + target_runs, 3 + 3, "the function runs normally");
	return tap_end();
}
