/* nextrip64: lightpath's next-RIP computation for a 64-bit guest with
 * paging on, where fetching the instruction bytes means walking the guest's
 * page tables. Plain and prefixed CPUID/VMMCALL/RDMSR/WRMSR/IN/OUT, and
 * VMMCALLs whose three bytes straddle a 4 KiB page boundary: once in the
 * identity-mapped image, once through an alias mapping whose two virtual
 * pages sit on non-adjacent physical frames (so reading "the next physical
 * page" instead of translating the next virtual page gets wrong bytes). */
#include "guests/rt/rt.h"
#include "guests/selftest/nextrip.h"

#ifndef __x86_64__
#error nextrip64 is a 64-bit guest
#endif

#define PAGE        4096u
#define PTE_PW      0x3ull		/* present, writable */
#define ALIAS_BASE  0x40000000ull	/* PDPT slot 1: unused by the identity map */

extern uint64_t rt_pdpt[512];

/* Identity-mapped straddles: mov %edi,%eax; vmmcall; ret with the VMMCALL
 * at page_end-2 (0f 01 | d9) and at page_end-1 (0f | 01 d9). On Intel the
 * last byte is patched to c1 (VMCALL) before use. */
sreg_t straddle_at_m2(ureg_t nr);
sreg_t straddle_at_m1(ureg_t nr);
extern uint8_t straddle_m2_modrm[], straddle_m1_modrm[];
asm(".pushsection .text.straddle, \"ax\"\n"
    ".balign 4096\n"
    "straddle_page0:\n"
    ".org straddle_page0 + 4092, 0xcc\n"
    ".globl straddle_at_m2\n"
    "straddle_at_m2:\n"
    "	mov %edi, %eax\n"
    "	.byte 0x0f, 0x01\n"
    "straddle_m2_modrm:\n"
    "	.byte 0xd9\n"
    "	ret\n"
    ".org straddle_page0 + 4096 + 4093, 0xcc\n"
    ".globl straddle_at_m1\n"
    "straddle_at_m1:\n"
    "	mov %edi, %eax\n"
    "	.byte 0x0f, 0x01\n"
    "straddle_m1_modrm:\n"
    "	.byte 0xd9\n"
    "	ret\n"
    ".balign 4096, 0xcc\n"
    ".popsection");

/* Calls code at addr (mov %edi,%eax; vmmcall; ret) with RDI = nr. A fault
 * anywhere in it resumes after the call with the stack pointer restored. */
volatile uint64_t saved_rsp;
static sreg_t call_code(uint64_t addr, ureg_t nr)
{
	ureg_t rax = ~0ul;
	rt_trap_clear();
	asm volatile("mov %%rsp, saved_rsp(%%rip)\n\t"
		     RT_ARM_RESUME
		     "call *%[fn]\n"
		     "1:\tmov saved_rsp(%%rip), %%rsp"
		     : "+a"(rax), "+D"(nr)
		     : [fn] "r"(addr)
		     : "rbx", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory");
	rt_resume = 0;
	return rt_trap.count ? LP_HC_FAULTED : (sreg_t)rax;
}

static void check_straddle(uint64_t addr, const char *what_amd)
{
	char buf[128];
	const char *what = nr_hc_what(what_amd, buf, sizeof(buf));
	const ureg_t enosys = (ureg_t)-LP_ENOSYS;
	sreg_t r = call_code(addr, LP_HC_NULL);
	tap_ok(r == 0, (uint64_t)r, "0", "%s: LP_HC_NULL returns 0 and continues", what);
	r = call_code(addr, 0x777);
	tap_ok((ureg_t)r == enosys, (uint64_t)r, "-LP_ENOSYS",
	       "%s: hypercall 0x777 returns -LP_ENOSYS and continues", what);
}

static uint8_t frames[6][PAGE] __attribute__((aligned(PAGE)));
static uint64_t alias_pd[512] __attribute__((aligned(PAGE)));
static uint64_t alias_pt[512] __attribute__((aligned(PAGE)));

static void reload_cr3(void)
{
	ureg_t cr3;
	asm volatile("mov %%cr3, %0\n\tmov %0, %%cr3" : "=r"(cr3) : : "memory");
}

/* Map ALIAS_BASE -> frame lo, ALIAS_BASE + 4 KiB -> frame hi. */
static void map_alias(int lo, int hi)
{
	alias_pt[0] = (uintptr_t)frames[lo] | PTE_PW;
	alias_pt[1] = (uintptr_t)frames[hi] | PTE_PW;
	alias_pd[0] = (uintptr_t)alias_pt | PTE_PW;
	rt_pdpt[1] = (uintptr_t)alias_pd | PTE_PW;
	reload_cr3();
}

static void alias_tests(void)
{
	/* int3 everywhere, so a wrong fetch finds no valid VMMCALL. */
	memset(frames, 0xcc, sizeof(frames));

	/* Split 2|1: frames[1] then frames[4]; frames[2] (physically next to
	 * frames[1]) holds only int3. */
	static const uint8_t a_tail[] = { 0x89, 0xf8, 0x0f, 0x01 };	/* mov; 0f 01 */
	const uint8_t b_head[] = { rt_hypercall_modrm(), 0xc3 };	/* d9; ret */
	memcpy(&frames[1][PAGE - 4], a_tail, 4);
	memcpy(&frames[4][0], b_head, 2);
	map_alias(1, 4);
	check_straddle(ALIAS_BASE + PAGE - 4,
		       "vmmcall at page_end-2 across non-adjacent frames");

	/* Split 1|2 at the same virtual address after remapping the first
	 * page to another frame: a stale cached translation would read
	 * frames[1] (... 0f 01) and see no VMMCALL at page_end-1. */
	static const uint8_t c_tail[] = { 0x90, 0x89, 0xf8, 0x0f };	/* nop; mov; 0f */
	const uint8_t d_head[] = { 0x01, rt_hypercall_modrm(), 0xc3 };	/* 01 d9; ret */
	memcpy(&frames[3][PAGE - 4], c_tail, 4);
	memcpy(&frames[0][0], d_head, 3);
	map_alias(3, 0);
	check_straddle(ALIAS_BASE + PAGE - 4,
		       "vmmcall at page_end-1 after remapping, frames in reverse order");

	rt_pdpt[1] = 0;
	reload_cr3();
}

static void plain_io_msr_tests(void)
{
	struct nr_regs r;

	/* WRMSR then RDMSR 0x2ff. */
	r = (struct nr_regs){ 0x806, 0, LP_BENCH_MSR, 0, 0 };
	NR_RUN(&r, ".byte 0x0f, 0x30");
	nr_report(&r, "wrmsr 0x2ff (0f 30)");
	tap_eq(rdmsr(LP_BENCH_MSR), 0x806, "wrmsr 0x2ff (0f 30): value reads back");
	r = (struct nr_regs){ 0xc06, 0, LP_BENCH_MSR, 0, 0 };
	NR_RUN(&r, ".byte 0x48, 0x0f, 0x30");
	nr_report(&r, "wrmsr 0x2ff with REX.W (48 0f 30)");
	tap_eq(rdmsr(LP_BENCH_MSR), 0xc06, "wrmsr 0x2ff with REX.W: value reads back");

	/* IN from the PM timer (DX form, 0xdead in RDX[31:16] is ignored). */
	r = (struct nr_regs){ 0xffffffffffffffffull, 0, 0, 0xdead0000u | LP_PMTIMER_PORT, 0 };
	NR_RUN(&r, ".byte 0xed");
	nr_report(&r, "inl (%dx) from 0x608 (ed)");
	tap_eq(r.a >> 24, 0, "inl (%%dx) from 0x608: RAX[63:24] = 0 (32-bit IN zero-extends)");

	r = (struct nr_regs){ 0x5a, 0, 0, 0, 0 };
	NR_RUN(&r, ".byte 0xe6, 0x80");
	nr_report(&r, "outb %al, $0x80 (e6 80)");
	r = (struct nr_regs){ 0x5a5a, 0, 0, 0, 0 };
	NR_RUN(&r, ".byte 0x66, 0xe7, 0x80");
	nr_report(&r, "outw %ax, $0x80 (66 e7 80)");
	r = (struct nr_regs){ 0x12345600, 0, 0, 0x1234, 0 };
	NR_RUN(&r, ".byte 0x3e, 0xec");
	nr_report(&r, "inb (%dx) from unhandled 0x1234 with DS prefix (3e ec)");
	tap_eq(r.a, 0x123456ff, "inb (%%dx) from 0x1234: 0xff merged into RAX");
}

int guest_main(void)
{
	tap_begin("nextrip64");
	const ureg_t enosys = (ureg_t)-LP_ENOSYS;

	nr_cpuid("cpuid (0f a2)", 0);
	nr_cpuid("cpuid with operand-size prefix (66 0f a2)", 1);
	nr_cpuid("cpuid with REX.W (48 0f a2)", 2);
	nr_cpuid("cpuid with three prefixes (2e 3e 66 0f a2)", 3);
	nr_vmmcall("vmmcall LP_HC_NULL (0f 01 d9)", 0, LP_HC_NULL, 0);
	nr_vmmcall("vmmcall LP_HC_NULL with CS prefix (2e 0f 01 d9)", 1, LP_HC_NULL, 0);
	nr_vmmcall("vmmcall 0x777 with CS prefix (2e 0f 01 d9)", 1, 0x777, enosys);
	nr_vmmcall("vmmcall LP_HC_NULL with REX.W (48 0f 01 d9)", 2, LP_HC_NULL, 0);
	nr_vmmcall("vmmcall LP_HC_NULL with DS+ES prefixes (3e 26 0f 01 d9)", 3, LP_HC_NULL, 0);
	nr_rdmsr("rdmsr 0x2ff (0f 32)", 0, 0xc06);
	nr_rdmsr("rdmsr 0x2ff with DS prefix (3e 0f 32)", 1, 0x806);
	nr_rdmsr("rdmsr 0x2ff with REX.W (48 0f 32)", 2, 0x406);
	nr_rdmsr("rdmsr 0x2ff with ES+66 prefixes (26 66 0f 32)", 3, 0xc00);
	plain_io_msr_tests();

	straddle_m2_modrm[0] = straddle_m1_modrm[0] = rt_hypercall_modrm();
	check_straddle((uintptr_t)straddle_at_m2, "vmmcall at page_end-2 (identity map)");
	check_straddle((uintptr_t)straddle_at_m1, "vmmcall at page_end-1 (identity map)");
	alias_tests();
	return tap_end();
}
