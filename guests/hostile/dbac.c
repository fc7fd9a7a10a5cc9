/* dbac: #DB and #AC still reach the guest as the CPU delivers them, now
 * that lightpath intercepts both (each is a VM exit, reflected). A TAP
 * self-test:
 *
 *   single step   TF set by POPF: #DB after the next instruction, DR6.BS,
 *                 the return address after that instruction
 *   code breakpoint  DR0 on a function: #DB before its first instruction
 *                 (a fault: the return address is the function), DR6.B0,
 *                 and the function runs once the handler sets RF
 *   data breakpoint  DR1 on a variable (write, 4 bytes): #DB after the
 *                 writing instruction (a trap), DR6.B1
 *   #AC           a misaligned load at CPL 3 with CR0.AM and RFLAGS.AC:
 *                 #AC with error code 0 at the load, from CPL 3; the load
 *                 completes once the handler clears AC
 *
 * Each #DB handler reads DR6 and resets it, as a kernel does. ac=none says
 * that this CPU checks no alignment (QEMU 7.2 TCG raises no #AC): then the
 * #AC test checks that none comes. only=ac runs the #AC test alone (Bochs'
 * SVM leaves DR6 out of the VMCB at a #DB intercept, which AMD's CPUs and
 * QEMU write: the #DB tests run under QEMU there). */
#include "guests/hostile/ring3.h"

#define DR6_INIT      0xffff0ff0u
#define DR6_B0        (1u << 0)
#define DR6_B1        (1u << 1)
#define DR6_BS        (1u << 14)
#define DR7_L0        (1u << 0)
#define DR7_L1        (1u << 2)
#define DR7_RW1_WRITE (1u << 20)
#define DR7_LEN1_4    (3u << 22)
#define FLAGS_TF      (1u << 8)

static volatile unsigned db_count, ac_count;
static volatile uint32_t db_dr6, db_ip, ac_err, ac_ip, ac_cs;
static volatile uint32_t watched;
static volatile unsigned target_runs;

static void on_db(struct rt_frame *f)
{
	db_count++;
	uint32_t dr6;
	asm volatile("mov %%dr6, %0" : "=r"(dr6));
	asm volatile("mov %0, %%dr6" ::"r"(DR6_INIT));
	db_dr6 = dr6;
	db_ip = f->ip;
	f->flags = (f->flags | RT_FLAGS_RF) & ~FLAGS_TF;
}

static void on_ac(struct rt_frame *f)
{
	ac_count++;
	ac_err = f->error;
	ac_ip = f->ip;
	ac_cs = f->cs;
	f->flags &= ~R3_FLAGS_AC;   /* the load completes on the way back */
}

__attribute__((noinline, noclone)) static unsigned bp_target(unsigned x)
{
	target_runs++;
	return x + 1;
}
static unsigned (*volatile bp_fn)(unsigned) = bp_target;

/* user code: EAX = a misaligned address */
void dbac_user_load(void);
asm(".text\n"
    ".globl dbac_user_load\n"
    "dbac_user_load:\n\t"
    "mov (%eax), %edx\n\t"
    "int $0x81\n");
static uint32_t user_stack[64] __attribute__((aligned(16)));
static uint8_t misaligned_word[8] __attribute__((aligned(8)));

static void single_step(void)
{
	extern const char dbac_ss_next[];
	db_count = 0;
	asm volatile("pushf\n\torl %0, (%%esp)\n\tpopf\n\t"
		     "nop\n"                /* runs with TF set: #DB after it */
		     "dbac_ss_next:\n\tnop" ::"i"(FLAGS_TF) : "memory", "cc");
	tap_eq(db_count, 1, "single step: one #DB");
	tap_eq(db_dr6, DR6_INIT | DR6_BS, "single step: DR6 is BS alone");
	tap_eq(db_ip, (uint32_t)(uintptr_t)dbac_ss_next, "single step: returns after the stepped instruction");
}

static void code_breakpoint(void)
{
	db_count = 0;
	asm volatile("mov %0, %%dr0" ::"r"((uint32_t)(uintptr_t)bp_target));
	asm volatile("mov %0, %%dr7" ::"r"(DR7_L0));
	unsigned r = bp_fn(41);
	asm volatile("mov %0, %%dr7" ::"r"(0u));
	tap_eq(db_count, 1, "code breakpoint: one #DB");
	tap_eq(db_dr6, DR6_INIT | DR6_B0, "code breakpoint: DR6 is B0 alone");
	tap_eq(db_ip, (uint32_t)(uintptr_t)bp_target, "code breakpoint: a fault, at the function");
	tap_eq(r, 42, "code breakpoint: the function runs after the handler sets RF");
	tap_eq(target_runs, 1, "code breakpoint: the function ran once");
}

static void data_breakpoint(void)
{
	extern const char dbac_after_write[];
	db_count = 0;
	asm volatile("mov %0, %%dr1" ::"r"((uint32_t)(uintptr_t)&watched));
	asm volatile("mov %0, %%dr7" ::"r"(DR7_L1 | DR7_RW1_WRITE | DR7_LEN1_4));
	asm volatile("movl $7, %0\n"
		     "dbac_after_write:" : "=m"(watched) :: "memory");
	asm volatile("mov %0, %%dr7" ::"r"(0u));
	tap_eq(db_count, 1, "data breakpoint: one #DB");
	tap_eq(db_dr6, DR6_INIT | DR6_B1, "data breakpoint: DR6 is B1 alone");
	tap_eq(db_ip, (uint32_t)(uintptr_t)dbac_after_write, "data breakpoint: a trap, after the write");
	tap_eq(watched, 7, "data breakpoint: the write happened");
}

static void alignment_check(bool cpu_checks)
{
	r3_init();
	r3_set_cr0_am(true);
	ac_count = 0;
	r3_enter((uint32_t)(uintptr_t)dbac_user_load,
		 (uint32_t)(uintptr_t)(user_stack + sizeof(user_stack) / sizeof(user_stack[0])),
		 0x2 | R3_FLAGS_AC, (uint32_t)(uintptr_t)(misaligned_word + 1));
	r3_set_cr0_am(false);
	if (!cpu_checks) {
		tap_eq(ac_count, 0, "#AC: none (this CPU checks no alignment)");
		return;
	}
	tap_eq(ac_count, 1, "#AC: one, for a misaligned load at CPL 3 with AM and AC");
	tap_eq(ac_err, 0, "#AC: error code 0");
	tap_eq(ac_ip, (uint32_t)(uintptr_t)dbac_user_load, "#AC: a fault, at the load");
	tap_eq(ac_cs & 3, 3, "#AC: raised at CPL 3");
}

int guest_main(void)
{
	char ac[8], only[8];
	bool cpu_checks = !(rt_arg("ac", ac, sizeof(ac)) && !strcmp(ac, "none"));
	bool db = !(rt_arg("only", only, sizeof(only)) && !strcmp(only, "ac"));
	tap_begin("dbac");
	rt_set_handler(1, on_db);
	rt_set_handler(17, on_ac);
	asm volatile("mov %0, %%dr6" ::"r"(DR6_INIT));
	if (db) {
		single_step();
		code_breakpoint();
		data_breakpoint();
	}
	alignment_check(cpu_checks);
	return tap_end();
}
