/* gprs64: every general-purpose register a guest has must come back from an
 * exit as it left, except those the instruction defines, and no value of
 * lightpath's may show up in one. lightpath keeps the guest's rbx, rbp and
 * r10-r15 in the CPU across its light handlers (no hypervisor code uses rbx,
 * r10 or r11, vmm/light.h) and stores the others in memory: a host interrupt taken in
 * lightpath's window, a device model or the emulator that clobbered one, or
 * a heavy exit that lost the registers the light loop kept, would show here.
 *
 * Each case loads all 15 GPRs (not RSP) with distinct 64-bit markers, runs
 * one exit (CPUID, the null hypercall and the statistics one, whose operands
 * are in RBX, OUT, IN, RDMSR, WRMSR, HLT woken by a timer interrupt, MOVs to
 * and from the local APIC through a light register, through EBX, through
 * r10/r11, which the light path leaves to the heavy one, and through r10 as
 * the address), stores them all and compares. */
#include "guests/rt/rt.h"

#define APIC_BASE     0xfee00000ull
#define LAPIC_TPR     0x080u
#define VEC_TIMER     0x41u
#define MSR_MTRR_DEF_TYPE 0x2ffu

enum { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15, NGPR };
static const char *const gpr_name[NGPR] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };

/* What each case loads and what it finds afterwards (x86 encoding order;
 * the RSP slot is unused). Addressed RIP-relative from the asm, where no
 * register is free. */
uint64_t gpr_in[NGPR] __attribute__((used));
uint64_t gpr_out[NGPR] __attribute__((used));

#define LOAD_ALL                                                        \
	"mov gpr_in+8(%%rip), %%rcx\n\tmov gpr_in+16(%%rip), %%rdx\n\t"  \
	"mov gpr_in+24(%%rip), %%rbx\n\tmov gpr_in+40(%%rip), %%rbp\n\t" \
	"mov gpr_in+48(%%rip), %%rsi\n\tmov gpr_in+56(%%rip), %%rdi\n\t" \
	"mov gpr_in+64(%%rip), %%r8\n\tmov gpr_in+72(%%rip), %%r9\n\t"   \
	"mov gpr_in+80(%%rip), %%r10\n\tmov gpr_in+88(%%rip), %%r11\n\t" \
	"mov gpr_in+96(%%rip), %%r12\n\tmov gpr_in+104(%%rip), %%r13\n\t" \
	"mov gpr_in+112(%%rip), %%r14\n\tmov gpr_in+120(%%rip), %%r15\n\t" \
	"mov gpr_in+0(%%rip), %%rax\n\t"

#define STORE_ALL                                                       \
	"mov %%rax, gpr_out+0(%%rip)\n\tmov %%rcx, gpr_out+8(%%rip)\n\t" \
	"mov %%rdx, gpr_out+16(%%rip)\n\tmov %%rbx, gpr_out+24(%%rip)\n\t" \
	"mov %%rbp, gpr_out+40(%%rip)\n\tmov %%rsi, gpr_out+48(%%rip)\n\t" \
	"mov %%rdi, gpr_out+56(%%rip)\n\tmov %%r8, gpr_out+64(%%rip)\n\t" \
	"mov %%r9, gpr_out+72(%%rip)\n\tmov %%r10, gpr_out+80(%%rip)\n\t" \
	"mov %%r11, gpr_out+88(%%rip)\n\tmov %%r12, gpr_out+96(%%rip)\n\t" \
	"mov %%r13, gpr_out+104(%%rip)\n\tmov %%r14, gpr_out+112(%%rip)\n\t" \
	"mov %%r15, gpr_out+120(%%rip)\n\t"

/* Markers in every register, `insn`, every register stored. The
 * callee-saved ones are pushed around it, the rest declared clobbered. */
#define WITH_MARKERS(insn)                                              \
	asm volatile("push %%rbp\n\tpush %%rbx\n\tpush %%r12\n\tpush %%r13\n\t" \
		     "push %%r14\n\tpush %%r15\n\t" LOAD_ALL insn "\n\t" STORE_ALL \
		     "pop %%r15\n\tpop %%r14\n\tpop %%r13\n\tpop %%r12\n\t"     \
		     "pop %%rbx\n\tpop %%rbp"                                   \
		     : : : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", \
		       "memory", "cc")

#define HYPERCALL "cmpb $0, rt_intel(%%rip)\n\tjne 7f\n\tvmmcall\n\tjmp 8f\n7:\tvmcall\n8:"

static unsigned round_no;

/* Fresh markers: the register's number in the top byte, the round in the
 * next, a pattern in the rest that no 32-bit truncation keeps. */
static void markers(void)
{
	round_no++;
	for (unsigned i = 0; i < NGPR; i++)
		gpr_in[i] = ((uint64_t)(0xa0 + i) << 56) | ((uint64_t)(round_no & 0xff) << 48) |
			    0x0000c3d2e1f00f1eull;
}

/* Every register but those in `defined` (a bit per register) as loaded;
 * returns how many differ, each reported. */
static unsigned kept(const char *what, unsigned defined)
{
	unsigned bad = 0;
	for (unsigned i = 0; i < NGPR; i++) {
		if (i == RSP || (defined & (1u << i)) || gpr_out[i] == gpr_in[i])
			continue;
		bad++;
		rt_printf("# %s: %s = 0x%llx, loaded 0x%llx\n", what, gpr_name[i],
			  (unsigned long long)gpr_out[i], (unsigned long long)gpr_in[i]);
	}
	tap_eq(bad, 0, "%s: every other register comes back as loaded", what);
	return bad;
}

static volatile unsigned timer_count;

static void on_timer(struct rt_frame *f)
{
	(void)f;
	timer_count++;
}

#define B(r) (1u << (r))

static void simple_exits(void)
{
	markers();
	WITH_MARKERS("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\tcpuid");
	kept("CPUID leaf 0", B(RAX) | B(RBX) | B(RCX) | B(RDX));
	uint32_t leaf0_eax, leaf0_ebx, leaf0_ecx = 0, leaf0_edx;
	asm volatile("cpuid" : "=a"(leaf0_eax), "=b"(leaf0_ebx), "+c"(leaf0_ecx), "=d"(leaf0_edx)
		     : "a"(0));
	tap_eq(gpr_out[RBX], leaf0_ebx, "CPUID leaf 0's EBX in RBX (upper half zeroed), as a second CPUID");

	markers();
	gpr_in[RAX] = LP_HC_STATS;
	gpr_in[RBX] = LP_STATS_ALL;
	WITH_MARKERS(HYPERCALL);
	kept("the statistics hypercall (RBX in and out)", B(RAX) | B(RBX) | B(RCX));
	tap_ok(gpr_out[RBX] > 0 && gpr_out[RAX] == gpr_out[RBX] + gpr_out[RCX], gpr_out[RBX],
	       "RAX = RBX + RCX, RBX > 0",
	       "the statistics hypercall: RAX exits = RBX light + RCX heavy, RBX > 0");

	markers();
	WITH_MARKERS("xor %%eax, %%eax\n\t" HYPERCALL);
	kept("the null hypercall", B(RAX));
	tap_eq(gpr_out[RAX], 0, "the null hypercall returns 0");

	markers();
	WITH_MARKERS("out %%al, $0x80");
	kept("OUT to port 0x80", 0);

	markers();
	WITH_MARKERS("mov $0x608, %%edx\n\tin (%%dx), %%eax");
	kept("IN from the PM timer", B(RAX) | B(RDX));
	tap_eq(gpr_out[RAX] >> 32, 0, "IN EAX zeroes RAX's upper half");

	markers();
	WITH_MARKERS("mov $0x2ff, %%ecx\n\trdmsr");
	kept("RDMSR MTRR_DEF_TYPE", B(RAX) | B(RCX) | B(RDX));
	uint64_t mtrr = (gpr_out[RDX] << 32) | (uint32_t)gpr_out[RAX];

	markers();
	gpr_in[RAX] = (uint32_t)mtrr;
	gpr_in[RDX] = mtrr >> 32;
	gpr_in[RCX] = MSR_MTRR_DEF_TYPE;
	WITH_MARKERS("wrmsr");
	kept("WRMSR MTRR_DEF_TYPE (the value it had)", 0);
}

/* HLT with a timer interrupt to wake it: the host timer's exits, the
 * injection and the guest's own handler (which saves what it uses) all
 * come between the HLT and the next instruction. */
static void hlt_exits(void)
{
	rt_set_handler(VEC_TIMER, on_timer);
	for (unsigned i = 0; i < 3; i++) {
		timer_count = 0;
		sreg_t armed = lp_hypercall(LP_HC_TIMER, 500, VEC_TIMER, 0, NULL, NULL);
		tap_eq((uint64_t)armed, 0, "LP_HC_TIMER(500 us) returns 0");
		markers();
		WITH_MARKERS("sti\n\thlt\n\tcli");
		kept("HLT woken by a timer interrupt", 0);
		tap_eq(timer_count, 1, "the timer interrupt came");
	}
}

/* MOVs to and from the local APIC's TPR (the xAPIC page): through RSI, which
 * the light path reads in memory, and through R10 and R11, which it leaves
 * in the CPU (so the heavy path does the access and must hand them back). */
static void apic_movs(void)
{
	rt_map_mmio(APIC_BASE);

	markers();
	gpr_in[RDI] = APIC_BASE + LAPIC_TPR;
	gpr_in[RSI] = (gpr_in[RSI] & ~0xffffffffull) | 0x20;
	WITH_MARKERS("mov %%esi, (%%rdi)\n\tmov (%%rdi), %%edx");
	kept("MOV ESI to the TPR, MOV the TPR to EDX", B(RDX));
	tap_eq(gpr_out[RDX], 0x20, "the TPR reads back 0x20 into RDX (upper half zeroed)");

	markers();
	gpr_in[RDI] = APIC_BASE + LAPIC_TPR;
	gpr_in[RBX] = (gpr_in[RBX] & ~0xffffffffull) | 0x40;
	WITH_MARKERS("mov %%ebx, (%%rdi)\n\tmov (%%rdi), %%ebx");
	kept("MOV EBX to the TPR, MOV the TPR to EBX", B(RBX));
	tap_eq(gpr_out[RBX], 0x40, "the TPR reads back 0x40 into RBX (upper half zeroed)");

	markers();
	gpr_in[RDI] = APIC_BASE + LAPIC_TPR;
	gpr_in[R10] = (gpr_in[R10] & ~0xffffffffull) | 0x30;
	WITH_MARKERS("mov %%r10d, (%%rdi)\n\tmov (%%rdi), %%r11d");
	kept("MOV R10D to the TPR, MOV the TPR to R11D", B(R11));
	tap_eq(gpr_out[R11], 0x30, "the TPR reads back 0x30 into R11 (upper half zeroed)");

	markers();
	gpr_in[R10] = APIC_BASE;
	gpr_in[R11] = (gpr_in[R11] & ~0xffffffffull) | 0x10;
	WITH_MARKERS("mov %%r11d, 0x80(%%r10)\n\tmov 0x80(%%r10), %%eax");
	kept("MOV R11D to [R10 + TPR], MOV [R10 + TPR] to EAX", B(RAX));
	tap_eq(gpr_out[RAX], 0x10, "the TPR reads back 0x10 into RAX");

	markers();
	gpr_in[RDI] = APIC_BASE + LAPIC_TPR;
	gpr_in[R8] = gpr_in[R8] & ~0xffffffffull;
	WITH_MARKERS("mov %%r8d, (%%rdi)\n\tmov (%%rdi), %%r10d");
	kept("MOV R8D (0) to the TPR, MOV the TPR to R10D", B(R10));
	tap_eq(gpr_out[R10], 0, "the TPR reads back 0 into R10");
}

int guest_main(void)
{
	tap_begin("gprs64");
	simple_exits();
	hlt_exits();
	apic_movs();
	/* the same again, now that the heavy path has run: nothing it left in
	 * the CPU may reach a later light exit */
	simple_exits();
	return tap_end();
}
