/* badcr64: a hostile guest that writes control-register values a CPU
 * refuses (docs/SECURITY.md, case 12), and one segment state it refuses.
 *
 * Under QEMU 7.2 (SVM) a MOV to CR3/CR4 with a reserved bit ends in
 * VMEXIT_INVALID instead of the guest's #GP: lightpath must give the guest
 * the #GP a CPU raises, and the guest goes on. Two more states QEMU lets a
 * guest reach are refused only by the next VMRUN: CR0.NW=1 with CR0.CD=0
 * (end=nw) and a code segment with L=1 and D=1 in long mode (end=csld). The
 * VM is then stopped with a line that names the check; a CPU, and Bochs,
 * raise #GP instead, and the guest goes on.
 *
 * On VT-x, a CR0 write that also changes a bit VMX owns (NE here) is
 * emulated by lightpath: leaving and entering long mode that way must
 * switch IA-32e mode as the MOV would (the next VM entry failed). */
#include "guests/rt/rt.h"

#define VEC_GP   13u
#define NO_FAULT (~0u)
#define EFER_LMA (1u << 10)
#define CR0_NE   (1ul << 5)
#define CR0_NW   (1ul << 29)
#define CR0_CD   (1ul << 30)
#define CR0_PG   (1ul << 31)

uint32_t badcr_sig __attribute__((used));
uint32_t badcr_cr0_legacy __attribute__((used));
uint32_t badcr_efer_legacy __attribute__((used));
uint64_t badcr_saved_rsp __attribute__((used));

#define MOV_TO_CR(cr, val)                                                         \
	({                                                                         \
		rt_trap_clear();                                                   \
		asm volatile(RT_ARM_RESUME "mov %0, %%" cr "\n1:" : : "r"((ureg_t)(val)) \
			     : "memory");                                          \
		rt_resume = 0;                                                     \
		rt_trap.count ? rt_trap.vector : NO_FAULT;                         \
	})

static ureg_t read_cr(unsigned n)
{
	ureg_t v = 0;
	if (n == 0)
		asm volatile("mov %%cr0, %0" : "=r"(v));
	else if (n == 3)
		asm volatile("mov %%cr3, %0" : "=r"(v));
	else
		asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static void test_reserved(void)
{
	ureg_t cr4 = read_cr(4), cr3 = read_cr(3);
	tap_eq(MOV_TO_CR("cr4", cr4 | (1ul << 15)), VEC_GP, "MOV CR4 with reserved bit 15 raises #GP");
	tap_eq(rt_trap.error, 0, "with error code 0");
	tap_eq(read_cr(4), cr4, "CR4 is unchanged");
	tap_eq(MOV_TO_CR("cr4", cr4 | (1ul << 13)), VEC_GP,
	       "MOV CR4 with VMXE (VMX is not offered) raises #GP");
	tap_eq(read_cr(4), cr4, "CR4 is unchanged");
	tap_eq(MOV_TO_CR("cr3", cr3 | (1ul << 62)), VEC_GP, "MOV CR3 with reserved bit 62 raises #GP");
	tap_eq(read_cr(3), cr3, "CR3 is unchanged");
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0, "LP_HC_NULL returns 0");
}

/* Leaves long mode by a CR0 write (that also sets NE when `LEAVE_NE` is
 * 0x20), makes an exit with paging off and reads EFER, and comes back by a
 * CR0 write that also clears NE (interrupts off: the IDT is a long-mode
 * one). On VT-x a write that changes NE is lightpath's to emulate. */
#define PAGING_TRIP(LEAVE_NE)                                                                  \
	asm volatile(                                                                          \
		"push %%rbp\n\t"                                                               \
		"mov %%rsp, badcr_saved_rsp(%%rip)\n\t"                                        \
		"cli\n\t"                                                                      \
		"lea 1f(%%rip), %%rax\n\t"                                                     \
		"pushq $0x18\n\t"                                                              \
		"push %%rax\n\t"                                                               \
		"lretq\n\t"                                                                    \
		".code32\n"                                                                    \
		"1:\tmov %%cr0, %%eax\n\tand $0x7fffffff, %%eax\n\tor $" #LEAVE_NE ", %%eax\n\t" \
		"mov %%eax, %%cr0\n\t"                                                         \
		"mov $0x40000000, %%eax\n\txor %%ecx, %%ecx\n\tcpuid\n\tmov %%ebx, badcr_sig\n\t" \
		"mov $0xc0000080, %%ecx\n\trdmsr\n\tmov %%eax, badcr_efer_legacy\n\t"          \
		"mov %%cr0, %%eax\n\tmov %%eax, badcr_cr0_legacy\n\t"                          \
		"or $0x80000020, %%eax\n\tmov %%eax, %%cr0\n\t"                                \
		"and $0xffffffdf, %%eax\n\tmov %%eax, %%cr0\n\t"                               \
		"ljmp $0x08, $2f\n\t"                                                          \
		".code64\n"                                                                    \
		"2:\tmov badcr_saved_rsp(%%rip), %%rsp\n\t"                                    \
		"pop %%rbp\n\t"                                                                \
		:                                                                              \
		:                                                                              \
		: "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",   \
		  "r13", "r14", "r15", "memory", "cc")

static void check_paging_trip(const char *how, uint32_t ne)
{
	tap_eq(badcr_cr0_legacy & (CR0_PG | CR0_NE), ne, "%s: paging off, CR0.NE %u", how, ne ? 1 : 0);
	tap_eq(badcr_efer_legacy & EFER_LMA, 0, "%s: paging off, EFER.LMA is 0", how);
	tap_eq(badcr_sig, LP_CPUID_SIG_EBX, "%s: an exit with paging off works", how);
	tap_eq(rdmsr(MSR_EFER) & EFER_LMA, EFER_LMA, "%s: CR0 write PG=1 NE=1: back in long mode", how);
	tap_eq(read_cr(0) & (CR0_PG | CR0_NE), CR0_PG, "%s: CR0.NE written back to 0", how);
}

static void test_paging_switch(void)
{
	PAGING_TRIP(0x20);
	check_paging_trip("left by a CR0 write with NE=1", CR0_NE);
	badcr_sig = badcr_efer_legacy = badcr_cr0_legacy = 0;
	PAGING_TRIP(0);
	check_paging_trip("left by a plain CR0 write", 0);
}

static void end_nw(void)
{
	ureg_t cr0 = read_cr(0);
	rt_printf("badcr64: CR0.NW=1 with CR0.CD=0 next\n");
	tap_eq(MOV_TO_CR("cr0", (cr0 | CR0_NW) & ~CR0_CD), VEC_GP, "MOV CR0 NW=1 CD=0 raises #GP");
	tap_eq(MOV_TO_CR("cr0", ((cr0 | CR0_NW) & ~CR0_CD) ^ CR0_NE), VEC_GP,
	       "MOV CR0 NW=1 CD=0 with NE changed raises #GP");
	tap_eq(read_cr(0), cr0, "CR0 is unchanged");
}

static void end_csld(void)
{
	static uint64_t gdt[5] __attribute__((aligned(16))) = {
		0, 0x00af9a000000ffffull, 0x00cf92000000ffffull, 0x00cf9a000000ffffull,
		0x00ef9a000000ffffull,   /* 0x20: code with L=1 and D=1 */
	};
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } mine = {
		sizeof(gdt) - 1, (uint64_t)(uintptr_t)gdt }, saved;
	asm volatile("sgdt %0" : "=m"(saved));
	asm volatile("lgdt %0" : : "m"(mine));
	rt_printf("badcr64: CS with L=1 and D=1 next\n");
	rt_trap_clear();
	asm volatile("mov %%rsp, %%rbx\n\t"
		     "lea 2f(%%rip), %%rax\n\t"
		     "pushq $0x20\n\t"
		     "push %%rax\n\t"
		     RT_ARM_RESUME
		     "lretq\n"
		     "2:\tmov $0, %%eax\n\t"
		     "cpuid\n\t"              /* an exit in that state */
		     "lea 1f(%%rip), %%rax\n\t"
		     "pushq $0x08\n\t"
		     "push %%rax\n\t"
		     "lretq\n"
		     "1:\tmov %%rbx, %%rsp"
		     : : : "rax", "rbx", "rcx", "rdx", "memory");
	rt_resume = 0;
	asm volatile("lgdt %0" : : "m"(saved));
	tap_eq(rt_trap.count ? rt_trap.vector : NO_FAULT, VEC_GP,
	       "a far return to a code segment with L=1 and D=1 raises #GP");
}

int guest_main(void)
{
	char end[8] = "";
	rt_arg("end", end, sizeof(end));
	tap_begin("badcr64");
	test_reserved();
	test_paging_switch();
	if (!strcmp(end, "nw"))
		end_nw();
	else if (!strcmp(end, "csld"))
		end_csld();
	return tap_end();
}
