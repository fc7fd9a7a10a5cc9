/* resetcheck: a healthy VM that checks it starts from the architectural
 * reset state of everything a guest can read (docs/SECURITY.md, case 1): x87
 * (control, status and tag words, the last-instruction pointers, the register
 * contents), MXCSR and the XMM registers, XCR0, the upper halves of the YMM
 * registers and every other XSAVE component the CPU offers, TSC_AUX (RDMSR
 * and RDTSCP), DR0-3/DR6/DR7, CR2, CR4, CR8, EFER, PAT, the syscall, SYSENTER
 * and segment-base MSRs, IA32_APIC_BASE, SPEC_CTRL, a register in two
 * devices, the UART's line settings, guest RAM above 2 MiB (a 4 KiB page at
 * every MiB up to the end of RAM: zero), the interrupt controllers as a PC
 * BIOS hands them over (docs/SECURITY.md case 8: the 8259 masks and requests,
 * the local APIC's SVR, LINT0/1, LVTs, TPR and timer, every I/O APIC pin
 * masked). Then that the VM runs normally from there: an NMI sent to itself
 * arrives once (no NMI blocking or pending NMI left by the last VM, case 7),
 * and with IF=1 for a few milliseconds no interrupt arrives (no timer, pin or
 * request left programmed). Run it after a hostile guest: nothing that guest
 * did may be visible.
 *
 * Everything is read before the first line is printed. To read the SSE,
 * AVX and other XSAVE state the checker turns on CR4.OSFXSR and
 * CR4.OSXSAVE and, after checking that XCR0 reads 1, sets XCR0 to every
 * component the CPU reports (leaving that for the next VM to undo).
 *
 * Built twice: resetcheck.elf (32-bit, paging off) and resetcheck64.elf
 * (long mode: XMM8-15, YMM8-15 and CR8 too). Reset values: x87 as FNINIT and
 * XRSTOR's init configuration leave it (FCW 0x37f, all registers empty and
 * zero: what QEMU and KVM give a vCPU at reset; a CPU's power-up FCW is
 * 0x40), MXCSR 0x1f80, XCR0 1, DR6 0xffff0ff0, DR7 0x400, PAT
 * 0x0007040600070406, everything else 0. */
#include "guests/rt/rt.h"

#define CR4_OSFXSR     (1u << 9)
#define CR4_OSXMMEXCPT (1u << 10)
#define CR4_OSXSAVE    (1u << 18)
#define CPUID1_ECX_XSAVE (1u << 26)
#define CPUID1_ECX_AVX   (1u << 28)
#define CPUID81_EDX_RDTSCP (1u << 27)
#define CPUID7_ECX_RDPID   (1u << 22)


#define PAT_RESET   0x0007040600070406ull
#define MXCSR_RESET 0x1f80u
#define FCW_RESET   0x037fu
#define DR6_RESET   0xffff0ff0u
#define DR7_RESET   0x400u
/* xAPIC at 0xfee00000, enabled, bootstrap processor */
#define APIC_BASE_RESET 0xfee00900ull

/* CPUID bits that offer IA32_SPEC_CTRL: Intel leaf 7 EDX (IBRS, STIBP,
 * SSBD), AMD 0x80000008 EBX (IBRS, STIBP, SSBD) */
#define CPUID7_EDX_SPEC_CTRL   ((1u << 26) | (1u << 27) | (1u << 31))
#define CPUID88_EBX_SPEC_CTRL  ((1u << 14) | (1u << 15) | (1u << 24))

#define PIC1_CMD  0x20
#define PIC1_DATA 0x21
#define PIC2_CMD  0xa0
#define PIC2_DATA 0xa1
#define COM1      0x3f8
#define LAPIC     0xfee00000u
#define IOAPIC    0xfec00000u
#define LAPIC_ICR_LO 0x300u
#define LAPIC_ICR_HI 0x310u
#define ICR_NMI_SELF ((4u << 8) | (1u << 18))   /* delivery mode NMI, to itself */
#define PM_HZ     3579545u
#define PM_MASK   0xffffffu
#define IF_WINDOW_MS 5u
/* RAM the loader leaves zero for this image: above its 1 MiB image and
 * the boot data it puts low (the multiboot information at 0x9000) */
#define RAM_SCAN_FROM (2ull << 20)
#define RAM_SCAN_STEP (1ull << 20)
#define PAGE_SIZE     4096u

#ifdef __x86_64__
#define NAME    "resetcheck64"
#define NR_XMM  16
#define EFER_EXPECTED 0x500ull  /* LME and LMA: the runtime's entry code */
#define CR4_EXPECTED  0x20u     /* PAE: the runtime's entry code */
#else
#define NAME    "resetcheck"
#define NR_XMM  8
#define EFER_EXPECTED 0ull
#define CR4_EXPECTED  0u
#endif

#define XSAVE_AREA_MAX 12288

/* FNSTENV/FNSAVE in 32-bit protected-mode format */
struct x87_env {
	uint32_t fcw, fsw, ftw, fip, fcs_fop, fdp, fds;
};
struct x87_save {
	struct x87_env env;
	uint8_t st[8][10];
};

struct msr_expect {
	uint32_t msr;
	const char *name;
	uint64_t reset;
};

static const struct msr_expect msrs[] = {
	{ MSR_EFER, "EFER", EFER_EXPECTED },
	{ MSR_APIC_BASE, "IA32_APIC_BASE", APIC_BASE_RESET },
	{ MSR_PAT, "PAT", PAT_RESET },
	{ MSR_STAR, "STAR", 0 },
	{ MSR_LSTAR, "LSTAR", 0 },
	{ MSR_CSTAR, "CSTAR", 0 },
	{ MSR_SFMASK, "SFMASK", 0 },
	{ MSR_KERNEL_GS_BASE, "KERNEL_GS_BASE", 0 },
	{ MSR_SYSENTER_CS, "SYSENTER_CS", 0 },
	{ MSR_SYSENTER_ESP, "SYSENTER_ESP", 0 },
	{ MSR_SYSENTER_EIP, "SYSENTER_EIP", 0 },
	{ MSR_FS_BASE, "FS.base", 0 },
	{ MSR_GS_BASE, "GS.base", 0 },
};
#define NR_MSRS (sizeof(msrs) / sizeof(msrs[0]))

/* What was read, before anything was printed. */
static struct {
	ureg_t cr2, cr4, cr8;
	struct x87_env env;
	struct x87_save save;
	uint32_t mxcsr;
	uint8_t xmm[NR_XMM][16];
	bool has_xsave, has_avx, xsetbv_ok;
	uint64_t xcr0_at_start, xcr0_supported;
	uint8_t ymm_hi[NR_XMM][16];
	uint32_t xsave_size;
	bool has_tsc_aux, has_rdtscp;
	uint32_t rdtscp_aux;
	uint64_t msr[NR_MSRS];
	unsigned msr_fault[NR_MSRS];
	uint64_t tsc_aux;
	unsigned tsc_aux_fault;
	ureg_t dr[8];
	uint8_t uart_scr, cmos_40, cmos_b;
	bool has_spec_ctrl;
	unsigned spec_ctrl_fault;
	uint64_t spec_ctrl;
	/* the platform's interrupt controllers and the UART's settings */
	uint8_t pic_imr[2], pic_irr[2], pic_isr[2];
	uint8_t uart_ier, uart_lcr, uart_mcr;
	uint32_t lapic_svr, lapic_lint0, lapic_lint1, lapic_timer, lapic_error, lapic_tpr,
		 lapic_icount;
	unsigned ioapic_unmasked, ioapic_first;
	/* how the VM runs from there */
	unsigned nmis_sent_at;            /* NMIs seen before the guest sent one */
	ureg_t nmi_after;                 /* where it must arrive: after the ICR write */
	unsigned irqs, irq_first;         /* events in the IF=1 window */
	/* guest RAM: one page per MiB from RAM_SCAN_FROM to the end */
	uint64_t ram_end;
	unsigned ram_pages, ram_dirty;
	uint64_t ram_first_dirty;
} got;

static volatile unsigned nmis, events, event_first = ~0u;
static volatile ureg_t nmi_ip;

static uint8_t xsave_area[XSAVE_AREA_MAX] __attribute__((aligned(64)));

static inline ureg_t read_cr2(void)
{
	ureg_t v;
	asm volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

static inline ureg_t read_cr4(void)
{
	ureg_t v;
	asm volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}

static inline void write_cr4(ureg_t v)
{
	asm volatile("mov %0, %%cr4" : : "r"(v) : "memory");
}

static inline uint64_t xgetbv(uint32_t xcr)
{
	uint32_t lo, hi;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(xcr));
	return ((uint64_t)hi << 32) | lo;
}

/* XSETBV that survives #GP/#UD: returns the vector taken (0 = none). */
static unsigned xsetbv_safe(uint32_t xcr, uint64_t v)
{
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "xsetbv\n1:"
		     : : "c"(xcr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

static void read_xmm(void)
{
	asm volatile("movdqu %%xmm0, 0x00(%0)\n\tmovdqu %%xmm1, 0x10(%0)\n\t"
		     "movdqu %%xmm2, 0x20(%0)\n\tmovdqu %%xmm3, 0x30(%0)\n\t"
		     "movdqu %%xmm4, 0x40(%0)\n\tmovdqu %%xmm5, 0x50(%0)\n\t"
		     "movdqu %%xmm6, 0x60(%0)\n\tmovdqu %%xmm7, 0x70(%0)"
		     : : "r"(got.xmm) : "memory");
#ifdef __x86_64__
	asm volatile("movdqu %%xmm8, 0x00(%0)\n\tmovdqu %%xmm9, 0x10(%0)\n\t"
		     "movdqu %%xmm10, 0x20(%0)\n\tmovdqu %%xmm11, 0x30(%0)\n\t"
		     "movdqu %%xmm12, 0x40(%0)\n\tmovdqu %%xmm13, 0x50(%0)\n\t"
		     "movdqu %%xmm14, 0x60(%0)\n\tmovdqu %%xmm15, 0x70(%0)"
		     : : "r"(got.xmm[8]) : "memory");
#endif
}

/* The upper 128 bits of each YMM register (VEX: needs XCR0.YMM). */
static void read_ymm_hi(void)
{
	asm volatile("vextractf128 $1, %%ymm0, 0x00(%0)\n\tvextractf128 $1, %%ymm1, 0x10(%0)\n\t"
		     "vextractf128 $1, %%ymm2, 0x20(%0)\n\tvextractf128 $1, %%ymm3, 0x30(%0)\n\t"
		     "vextractf128 $1, %%ymm4, 0x40(%0)\n\tvextractf128 $1, %%ymm5, 0x50(%0)\n\t"
		     "vextractf128 $1, %%ymm6, 0x60(%0)\n\tvextractf128 $1, %%ymm7, 0x70(%0)"
		     : : "r"(got.ymm_hi) : "memory");
#ifdef __x86_64__
	asm volatile("vextractf128 $1, %%ymm8, 0x00(%0)\n\tvextractf128 $1, %%ymm9, 0x10(%0)\n\t"
		     "vextractf128 $1, %%ymm10, 0x20(%0)\n\tvextractf128 $1, %%ymm11, 0x30(%0)\n\t"
		     "vextractf128 $1, %%ymm12, 0x40(%0)\n\tvextractf128 $1, %%ymm13, 0x50(%0)\n\t"
		     "vextractf128 $1, %%ymm14, 0x60(%0)\n\tvextractf128 $1, %%ymm15, 0x70(%0)"
		     : : "r"(got.ymm_hi[8]) : "memory");
#endif
}

#define READ_DR(n, dst) asm volatile("mov %%dr" #n ", %0" : "=r"(dst))

static uint8_t cmos_read(uint8_t index)
{
	outb(0x70, index);
	return inb(0x71);
}

static uint8_t pic_read(uint16_t cmd, uint8_t ocw3)
{
	outb(cmd, ocw3);
	return inb(cmd);
}

static uint32_t lapic_read(unsigned off)
{
	return *(volatile uint32_t *)(uintptr_t)(LAPIC + off);
}

static uint32_t ioapic_read(uint8_t index)
{
	*(volatile uint32_t *)(uintptr_t)IOAPIC = index;
	return *(volatile uint32_t *)(uintptr_t)(IOAPIC + 0x10);
}

/* The 8259s, the local APIC and the I/O APIC as the VM finds them, first of
 * all (the PIT runs at 18.2 Hz from the start, as a BIOS leaves it, and its
 * IRQ 0 is latched in the master's IRR after 55 ms: that bit is left out).
 * The UART's settings too: the checker writes nothing to it before. */
static void read_platform(void)
{
	got.pic_irr[0] = pic_read(PIC1_CMD, 0x0a);
	got.pic_irr[1] = pic_read(PIC2_CMD, 0x0a);
	got.pic_isr[0] = pic_read(PIC1_CMD, 0x0b);
	got.pic_isr[1] = pic_read(PIC2_CMD, 0x0b);
	outb(PIC1_CMD, 0x0a);
	outb(PIC2_CMD, 0x0a);
	got.pic_imr[0] = inb(PIC1_DATA);
	got.pic_imr[1] = inb(PIC2_DATA);
	got.uart_ier = inb(COM1 + 1);
	got.uart_lcr = inb(COM1 + 3);
	got.uart_mcr = inb(COM1 + 4);

	rt_map_mmio(LAPIC);     /* 64-bit: the 4th GiB is not mapped by the entry */
	rt_map_mmio(IOAPIC);
	got.lapic_svr = lapic_read(0xf0);
	got.lapic_lint0 = lapic_read(0x350);
	got.lapic_lint1 = lapic_read(0x360);
	got.lapic_timer = lapic_read(0x320);
	got.lapic_error = lapic_read(0x370);
	got.lapic_tpr = lapic_read(0x80);
	got.lapic_icount = lapic_read(0x380);
	got.ioapic_first = ~0u;
	for (unsigned pin = 0; pin < 24; pin++) {
		if (!(ioapic_read((uint8_t)(0x10 + 2 * pin)) & (1u << 16))) {
			got.ioapic_unmasked++;
			if (got.ioapic_first == ~0u)
				got.ioapic_first = pin;
		}
	}
}

static void on_nmi(struct rt_frame *f)
{
	if (nmis++ == 0)
		nmi_ip = f->ip;
}

static void on_event(struct rt_frame *f)
{
	if (event_first == ~0u)
		event_first = (unsigned)f->vector;
	events++;
}

static uint32_t pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & PM_MASK;
}

/* Runs normally from there: an NMI to itself (xAPIC ICR, shorthand self)
 * with IF=0 runs the handler once, right after the ICR write; then with
 * IF=1 for IF_WINDOW_MS nothing arrives (every IRQ is masked). An NMI or
 * interrupt left pending by the last VM would come before either (the
 * runtime reports it as an unexpected exception or a spurious interrupt). */
static void run_events(void)
{
	rt_set_handler(2, on_nmi);
	for (unsigned v = 32; v < 256; v++)
		rt_set_handler(v, on_event);
	cli();
	got.nmis_sent_at = nmis;
	*(volatile uint32_t *)(uintptr_t)(LAPIC + LAPIC_ICR_HI) = 0;
	asm volatile("mov $1f, %0\n\t"
		     "movl %1, (%2)\n"
		     "1:"
		     : "=&r"(got.nmi_after)
		     : "r"(ICR_NMI_SELF), "r"((uintptr_t)(LAPIC + LAPIC_ICR_LO)) : "memory");
	uint64_t need = (uint64_t)PM_HZ * IF_WINDOW_MS / 1000, elapsed = 0;
	uint32_t last = pm_now();
	sti();
	while (elapsed < need) {
		uint32_t now = pm_now();
		elapsed += (now - last) & PM_MASK;
		last = now;
	}
	cli();
	got.irqs = events;
	got.irq_first = event_first;
}

/* A page at every MiB of RAM from RAM_SCAN_FROM to the end of RAM (the
 * multiboot information's mem_upper), each read whole: a VM's RAM is its
 * own and zero at its start, so nothing the previous VM wrote is there. */
static void read_ram(void)
{
	const volatile uint32_t *mi = (const volatile uint32_t *)(uintptr_t)rt_mb_info;
	if (!(mi[0] & 1))
		return;
	got.ram_end = (1ull << 20) + ((uint64_t)mi[2] << 10);
	for (uint64_t a = RAM_SCAN_FROM; a + PAGE_SIZE <= got.ram_end; a += RAM_SCAN_STEP) {
		const volatile uint32_t *p = (const volatile uint32_t *)(uintptr_t)a;
		uint32_t any = 0;
		for (unsigned i = 0; i < PAGE_SIZE / 4; i++)
			any |= p[i];
		got.ram_pages++;
		if (any && got.ram_dirty++ == 0)
			got.ram_first_dirty = a;
	}
}

static void read_everything(void)
{
	read_platform();
	read_ram();
	got.cr2 = read_cr2();
	got.cr4 = read_cr4();
#ifdef __x86_64__
	asm volatile("mov %%cr8, %0" : "=r"(got.cr8));
#endif
	/* x87 first: FNSTENV masks the exceptions, FNSAVE re-initialises */
	asm volatile("fnstenv %0" : "=m"(got.env));
	asm volatile("fnsave %0" : "=m"(got.save));

	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
	asm volatile("stmxcsr %0" : "=m"(got.mxcsr));
	read_xmm();

	struct cpuid_regs r1 = cpuid(1, 0);
	got.has_xsave = r1.ecx & CPUID1_ECX_XSAVE;
	if (got.has_xsave) {
		write_cr4(read_cr4() | CR4_OSXSAVE);
		got.xcr0_at_start = xgetbv(0);
		struct cpuid_regs d = cpuid(0xd, 0);
		got.xcr0_supported = ((uint64_t)d.edx << 32) | d.eax;
		/* every component on, so that XSAVE shows them all */
		got.xsetbv_ok = !xsetbv_safe(0, got.xcr0_supported);
		got.has_avx = (r1.ecx & CPUID1_ECX_AVX) && (got.xcr0_supported & 4) && got.xsetbv_ok;
		if (got.has_avx)
			read_ymm_hi();
		if (got.xsetbv_ok) {
			got.xsave_size = cpuid(0xd, 0).ebx;
			if (got.xsave_size <= sizeof(xsave_area))
				asm volatile("xsave %0" : "+m"(xsave_area) : "a"(~0u), "d"(~0u));
		}
	}

	struct cpuid_regs e = cpuid(0x80000000u, 0);
	got.has_rdtscp = e.eax >= 0x80000001u && (cpuid(0x80000001u, 0).edx & CPUID81_EDX_RDTSCP);
	got.has_tsc_aux = got.has_rdtscp || (cpuid(0, 0).eax >= 7 && (cpuid(7, 0).ecx & CPUID7_ECX_RDPID));
	if (got.has_rdtscp)
		asm volatile("rdtscp" : "=c"(got.rdtscp_aux) : : "eax", "edx");
	if (got.has_tsc_aux)
		got.tsc_aux_fault = rdmsr_safe(MSR_TSC_AUX, &got.tsc_aux);
	for (unsigned i = 0; i < NR_MSRS; i++)
		got.msr_fault[i] = rdmsr_safe(msrs[i].msr, &got.msr[i]);
	if (rt_intel)
		got.has_spec_ctrl = cpuid(0, 0).eax >= 7 && (cpuid(7, 0).edx & CPUID7_EDX_SPEC_CTRL);
	else
		got.has_spec_ctrl = e.eax >= 0x80000008u &&
				    (cpuid(0x80000008u, 0).ebx & CPUID88_EBX_SPEC_CTRL);
	got.spec_ctrl_fault = rdmsr_safe(MSR_SPEC_CTRL, &got.spec_ctrl);

	READ_DR(0, got.dr[0]);
	READ_DR(1, got.dr[1]);
	READ_DR(2, got.dr[2]);
	READ_DR(3, got.dr[3]);
	READ_DR(6, got.dr[6]);
	READ_DR(7, got.dr[7]);

	got.uart_scr = inb(0x3ff);
	got.cmos_40 = cmos_read(0x40);
	got.cmos_b = cmos_read(0x0b);
	run_events();
}

/* The offset of the first byte that is not `v`, or -1. */
static int first_not(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return (int)i;
	return -1;
}

/* The first non-zero 64-bit word of register `i` in a file of 16-byte
 * registers, or 0 when all of them are zero; *which = the register. */
static uint64_t first_nonzero_reg(const uint8_t (*regs)[16], unsigned n, unsigned *which)
{
	for (unsigned i = 0; i < n; i++) {
		int at = first_not(regs[i], 16, 0);
		if (at >= 0) {
			uint64_t w;
			memcpy(&w, &regs[i][at & ~7], 8);
			*which = i;
			return w ? w : 1;
		}
	}
	return 0;
}

static const char *xsave_component_name(unsigned i)
{
	switch (i) {
	case 2: return "AVX (YMM upper halves)";
	case 3: return "MPX bound registers";
	case 4: return "MPX BNDCSR";
	case 5: return "AVX-512 opmask";
	case 6: return "AVX-512 ZMM_Hi256";
	case 7: return "AVX-512 Hi16_ZMM";
	case 9: return "PKRU";
	case 17: return "AMX TILECFG";
	case 18: return "AMX TILEDATA";
	}
	return "(unnamed)";
}

static void check_x87(void)
{
	const struct x87_env *e = &got.env;
	tap_eq(e->fcw & 0xffff, FCW_RESET, "x87 control word is 0x37f");
	tap_eq(e->fsw & 0xffff, 0, "x87 status word is 0 (TOP 0, no flags)");
	tap_eq(e->ftw & 0xffff, 0xffff, "x87 tag word is 0xffff (every register empty)");
	tap_eq(((uint64_t)e->fdp << 32) | e->fip, 0, "x87 last instruction and data pointers are 0");
	tap_eq(((uint64_t)(e->fds & 0xffff) << 32) | (e->fcs_fop & 0x07ffffffu), 0,
	       "x87 last opcode and pointer selectors are 0");
	unsigned bad = 8;
	for (unsigned i = 0; i < 8 && bad == 8; i++)
		if (first_not(got.save.st[i], 10, 0) >= 0)
			bad = i;
	uint64_t w = 0;
	if (bad < 8)
		memcpy(&w, got.save.st[bad], 8);
	tap_ok(bad == 8, w, "0 in ST0-ST7", "x87 registers ST0-ST7 hold +0.0%s",
	       bad < 8 ? " (first non-zero shown)" : "");
}

static void check_sse(void)
{
	tap_eq(got.mxcsr, MXCSR_RESET, "MXCSR is 0x1f80");
	unsigned which = 0;
	uint64_t w = first_nonzero_reg((const uint8_t (*)[16])got.xmm, NR_XMM, &which);
	tap_ok(!w, w, "0", "XMM0-XMM%u are zero%s", NR_XMM - 1, w ? " (see the first non-zero word)" : "");
	if (w)
		rt_printf("# XMM%u is not zero\n", which);
}

/* Every XSAVE component above SSE that XSAVE reports in use holds its
 * init value (all zeros for components 2-18). */
static void check_xsave_components(void)
{
	uint64_t bv;
	memcpy(&bv, xsave_area + 512, 8);
	for (unsigned i = 2; i < 63; i++) {
		if (!((got.xcr0_supported >> i) & 1))
			continue;
		struct cpuid_regs c = cpuid(0xd, i);
		int at = -1;
		if ((bv >> i) & 1)
			at = c.ebx + c.eax <= sizeof(xsave_area) ? first_not(xsave_area + c.ebx, c.eax, 0) : 0;
		tap_ok(at < 0, (uint64_t)at, "-1: every byte 0",
		       "XSAVE component %u, %s, is in its init state (byte offset of the first non-zero byte)",
		       i, xsave_component_name(i));
	}
}

static void check_xstate(void)
{
	if (!got.has_xsave) {
		tap_ok(true, 0, "", "no XSAVE: XCR0 and XSAVE components not checked");
		return;
	}
	tap_eq(got.xcr0_at_start, 1, "XCR0 reads 1 (x87 only)");
	tap_ok(got.xsetbv_ok, got.xcr0_supported, "no fault",
	       "XSETBV enables every component CPUID reports");
	if (got.has_avx) {
		unsigned which = 0;
		uint64_t w = first_nonzero_reg((const uint8_t (*)[16])got.ymm_hi, NR_XMM, &which);
		tap_ok(!w, w, "0", "upper halves of YMM0-YMM%u are zero", NR_XMM - 1);
		if (w)
			rt_printf("# YMM%u's upper half is not zero\n", which);
	}
	if (!got.xsetbv_ok)
		return;
	tap_ok(got.xsave_size <= sizeof(xsave_area), got.xsave_size, "<= 12288",
	       "the XSAVE area fits the checker's buffer");
	check_xsave_components();
}

static void check_msrs(void)
{
	if (got.has_tsc_aux) {
		tap_eq(got.tsc_aux_fault, 0, "RDMSR TSC_AUX does not fault");
		tap_eq(got.tsc_aux, 0, "TSC_AUX reads 0");
	}
	if (got.has_rdtscp)
		tap_eq(got.rdtscp_aux, 0, "RDTSCP returns TSC_AUX 0 in ECX");
	if (got.has_spec_ctrl) {
		tap_eq(got.spec_ctrl_fault, 0, "RDMSR SPEC_CTRL does not fault (CPUID offers it)");
		tap_eq(got.spec_ctrl, 0, "SPEC_CTRL reads 0");
	} else {
		tap_eq(got.spec_ctrl_fault, 13, "RDMSR SPEC_CTRL raises #GP (CPUID offers no SPEC_CTRL)");
	}
	for (unsigned i = 0; i < NR_MSRS; i++) {
		if (got.msr_fault[i])
			tap_eq(got.msr_fault[i], 0, "RDMSR %s does not fault", msrs[i].name);
		else
			tap_eq(got.msr[i], msrs[i].reset, "%s reads 0x%llx", msrs[i].name,
			       (unsigned long long)msrs[i].reset);
	}
}

static void check_registers(void)
{
	tap_eq(got.cr2, 0, "CR2 is 0");
	tap_eq(got.cr4, CR4_EXPECTED, "CR4 is 0x%x at the start", CR4_EXPECTED);
#ifdef __x86_64__
	tap_eq(got.cr8, 0, "CR8 (the task priority) is 0");
#endif
	for (unsigned i = 0; i < 4; i++)
		tap_eq(got.dr[i], 0, "DR%u is 0", i);
	tap_eq(got.dr[6], DR6_RESET, "DR6 is 0xffff0ff0");
	tap_eq(got.dr[7], DR7_RESET, "DR7 is 0x400");
}

static void check_devices(void)
{
	tap_eq(got.uart_scr, 0, "the UART's scratch register is 0");
	tap_eq(got.uart_ier, 0, "the UART's IER is 0 (no interrupt enabled)");
	tap_eq(got.uart_lcr, 0, "the UART's LCR is 0 (DLAB clear)");
	tap_eq(got.uart_mcr, 0x08, "the UART's MCR is 0x08 (OUT2)");
	tap_eq(got.cmos_40, 0, "CMOS byte 0x40 is 0");
	tap_eq(got.cmos_b, 0x02, "RTC register B is 0x02 (24-hour, BCD)");
}

/* The state a PC BIOS hands over (guests/selftest/irqstate.c checks the
 * same at a VM's start, and that nothing arrives on an exception vector). */
static void check_interrupt_controllers(void)
{
	tap_eq(got.pic_imr[0], 0xfb, "8259 master IMR is 0xfb (all masked but the cascade)");
	tap_eq(got.pic_imr[1], 0xff, "8259 slave IMR is 0xff (all masked)");
	tap_eq(got.pic_irr[0] & 0xfe, 0, "8259 master IRR is empty (IRQ 0, the PIT, aside)");
	tap_eq(got.pic_irr[1], 0, "8259 slave IRR is empty");
	tap_eq(((unsigned)got.pic_isr[1] << 8) | got.pic_isr[0], 0, "8259 ISRs are empty");
	tap_eq(got.lapic_svr, 0x1ff, "local APIC SVR is 0x1ff");
	tap_eq(got.lapic_lint0, 0x8700, "local APIC LINT0 is 0x8700 (ExtINT)");
	tap_eq(got.lapic_lint1, 0x8400, "local APIC LINT1 is 0x8400 (NMI)");
	tap_eq(got.lapic_timer, 0x10000, "local APIC timer LVT is masked");
	tap_eq(got.lapic_error, 0x10000, "local APIC error LVT is masked");
	tap_eq(got.lapic_tpr, 0, "local APIC TPR is 0");
	tap_eq(got.lapic_icount, 0, "local APIC timer initial count is 0 (stopped)");
	tap_eq(got.ioapic_unmasked, 0, "every I/O APIC pin is masked (first unmasked: %d)",
	       (int)got.ioapic_first);
}

static void check_ram(void)
{
	tap_ok(got.ram_end > RAM_SCAN_FROM, got.ram_end, "the end of RAM, from mem_upper",
	       "the multiboot information gives the end of RAM (0x%llx)",
	       (unsigned long long)got.ram_end);
	tap_eq(got.ram_dirty, 0, "guest RAM is zero: %u pages, one per MiB from 2 MiB (first "
	       "non-zero at 0x%llx)", got.ram_pages, (unsigned long long)got.ram_first_dirty);
}

static void check_events(void)
{
	tap_eq(got.nmis_sent_at, 0, "no NMI before it sent one");
	tap_eq(nmis, 1, "an NMI sent to itself with IF=0 ran the handler once");
	tap_eq(nmi_ip, got.nmi_after, "it arrived right after the ICR write");
	tap_eq(got.irqs, 0, "no interrupt with IF=1 for %u ms (first vector: %d)", IF_WINDOW_MS,
	       (int)got.irq_first);
}

int guest_main(void)
{
	read_everything();
	tap_begin(NAME);
	rt_printf(NAME ": XSAVE %s, AVX %s, XCR0 components 0x%llx\n", got.has_xsave ? "yes" : "no",
		  got.has_avx ? "yes" : "no", (unsigned long long)got.xcr0_supported);
	check_x87();
	check_sse();
	check_xstate();
	check_msrs();
	check_registers();
	check_devices();
	check_ram();
	check_interrupt_controllers();
	check_events();
	return tap_end();
}
