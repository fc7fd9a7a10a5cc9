/* leak64: a hostile guest that leaves a marker value in everything a guest
 * can write and the next VM could read (docs/SECURITY.md, case 1), then ends with
 * status 0: the x87 registers, control, status and tag words, pointers and
 * opcode, MXCSR, XMM0-15, XCR0 and every XSAVE component it can turn on
 * (YMM upper halves, AVX-512, PKRU), TSC_AUX, DR0-3/DR6/DR7, CR2, CR8, EFER,
 * PAT, the syscall, SYSENTER and FS/GS.base MSRs, the UART's scratch
 * register, two CMOS bytes, and guest RAM (a 4 KiB page at every MiB from
 * 2 MiB to the end of RAM). resetcheck, run after it, must see none of it.
 * 64-bit, to reach XMM8-15 and the upper ZMM registers.
 *
 * The guest-owned MSRs (syscall, SYSENTER, FS/GS.base) are passed through
 * by default (docs/SECURITY.md, case 18): leak64 counts the MSR
 * exits their writes and reads make, and reads them back after a heavy
 * exit, which lightpath's lazy switch must have kept without having seen
 * the writes.
 *
 * The x87/SSE markers are set before XSETBV, so that they are left behind
 * even where XSETBV stops the VM (the VT-x backend used to). Markers are
 * harmless values: exceptions stay masked, breakpoints disabled. */
#include "guests/rt/rt.h"

#define CR4_OSFXSR     (1u << 9)
#define CR4_OSXMMEXCPT (1u << 10)
#define CR4_OSXSAVE    (1u << 18)
#define CPUID1_ECX_XSAVE (1u << 26)

#define EFER_SCE (1u << 0)
#define EFER_NXE (1u << 11)

/* XSAVE components given markers: AVX, AVX-512 (opmask, ZMM_Hi256,
 * Hi16_ZMM) and PKRU; MPX and AMX are left alone (their registers have
 * side effects or validity rules). */
#define MARKED_COMPONENTS ((1u << 2) | (7u << 5) | (1u << 9))
#define XSAVE_AREA_MAX 12288

static uint8_t area[XSAVE_AREA_MAX] __attribute__((aligned(64)));

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

/* The legacy (FXSAVE) region: x87 and SSE state, all markers. */
static void fill_legacy(uint8_t *a)
{
	memset(a, 0, 512);
	*(uint16_t *)(a + 0) = 0x0e7f;      /* FCW: PC 10b, RC 11b, exceptions masked */
	*(uint16_t *)(a + 2) = 0x7f00;      /* FSW: TOP 7, C0-C3, no exception flags */
	a[4] = 0xff;                        /* abridged FTW: every register valid */
	*(uint16_t *)(a + 6) = 0x0123;      /* FOP */
	*(uint32_t *)(a + 8) = 0x01234560;  /* FIP */
	*(uint16_t *)(a + 12) = 0x0008;     /* FCS */
	*(uint32_t *)(a + 16) = 0x07654320; /* FDP */
	*(uint16_t *)(a + 20) = 0x0010;     /* FDS */
	*(uint32_t *)(a + 24) = 0x7f80;     /* MXCSR: round toward zero */
	for (unsigned i = 0; i < 8; i++)     /* ST0-7 */
		memset(a + 32 + 16 * i, 0x10 + i, 10);
	for (unsigned i = 0; i < 16; i++)    /* XMM0-15 */
		memset(a + 160 + 16 * i, 0xa0 + i, 16);
}

static uint64_t leave_xsave_markers(void)
{
	if (!(cpuid(1, 0).ecx & CPUID1_ECX_XSAVE))
		return 0;
	write_cr4(read_cr4() | CR4_OSXSAVE);
	struct cpuid_regs d = cpuid(0xd, 0);
	uint64_t xcr0 = (((uint64_t)d.edx << 32) | d.eax) & (MARKED_COMPONENTS | 3u);
	asm volatile("xsetbv" : : "c"(0), "a"((uint32_t)xcr0), "d"((uint32_t)(xcr0 >> 32)) : "memory");
	memset(area, 0, sizeof(area));
	fill_legacy(area);
	memcpy(area + 512, &xcr0, 8);       /* XSTATE_BV: every component from memory */
	for (unsigned i = 2; i < 32; i++) {
		if (!((xcr0 >> i) & 1))
			continue;
		struct cpuid_regs c = cpuid(0xd, i);
		if (c.ebx + c.eax <= sizeof(area))
			memset(area + c.ebx, 0x50 + i, c.eax);
	}
	asm volatile("xrstor %0" : : "m"(area), "a"(~0u), "d"(~0u) : "memory");
	return xcr0;
}

/* RAM: the pages resetcheck reads, from 2 MiB to the end of RAM
 * (mem_upper), each filled with a marker; the number of pages, or 0. */
#define RAM_MARK_FROM (2ull << 20)
#define RAM_MARK_STEP (1ull << 20)
#define RAM_MARKER    0x5a5a5a5a5a5a5a5aull
static unsigned ram_pages;
static uint64_t ram_end;

static void leave_ram_markers(void)
{
	const volatile uint32_t *mi = (const volatile uint32_t *)(uintptr_t)rt_mb_info;
	if (!(mi[0] & 1))
		return;
	ram_end = (1ull << 20) + ((uint64_t)mi[2] << 10);
	for (uint64_t a = RAM_MARK_FROM; a + 4096 <= ram_end; a += RAM_MARK_STEP) {
		volatile uint64_t *p = (volatile uint64_t *)(uintptr_t)a;
		for (unsigned i = 0; i < 4096 / 8; i++)
			p[i] = RAM_MARKER;
		ram_pages++;
	}
}

static bool ram_markers_there(void)
{
	unsigned found = 0;
	for (uint64_t a = RAM_MARK_FROM; a + 4096 <= ram_end; a += RAM_MARK_STEP)
		found += *(volatile uint64_t *)(uintptr_t)(a + 4096 - 8) == RAM_MARKER;
	return ram_pages && found == ram_pages;
}

/* The guest-owned MSRs and their markers (canonical, no reserved bits). */
static const struct {
	uint32_t msr;
	uint64_t val;
} owned[] = {
	{ MSR_STAR, 0x0023001000000000ull },
	{ MSR_LSTAR, 0xffff800012345000ull },
	{ MSR_CSTAR, 0xffff800012346000ull },
	{ MSR_SFMASK, 0x4700 },
	{ MSR_KERNEL_GS_BASE, 0xffff800012347000ull },
	{ MSR_SYSENTER_CS, 0x10 },
	{ MSR_SYSENTER_ESP, 0x12348000 },
	{ MSR_SYSENTER_EIP, 0x12349000 },
	{ MSR_FS_BASE, 0x00005a5a5a5a5000ull },
	{ MSR_GS_BASE, 0x00006b6b6b6b6000ull },
};
#define NR_OWNED (sizeof(owned) / sizeof(owned[0]))

static uint64_t msr_exits(void)
{
	return (uint64_t)lp_hypercall(LP_HC_STATS, LP_EXIT_MSR_READ, 0, 0, NULL, NULL) +
	       (uint64_t)lp_hypercall(LP_HC_STATS, LP_EXIT_MSR_WRITE, 0, 0, NULL, NULL);
}

/* Writes the markers and reads them back at once: the MSR exits that made. */
static uint64_t leave_owned_msrs(void)
{
	uint64_t before = msr_exits();
	unsigned ok = 0;
	for (unsigned i = 0; i < NR_OWNED; i++)
		wrmsr(owned[i].msr, owned[i].val);
	for (unsigned i = 0; i < NR_OWNED; i++)
		ok += rdmsr(owned[i].msr) == owned[i].val;
	uint64_t exits = msr_exits() - before;
	if (ok != NR_OWNED)
		rt_printf("leak64: only %u of %u guest-owned MSRs read back at once\n", ok,
			  (unsigned)NR_OWNED);
	return exits;
}

/* After a heavy exit (and everything since the writes): how many still
 * hold their marker. */
static unsigned owned_msrs_kept(void)
{
	lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
	unsigned ok = 0;
	for (unsigned i = 0; i < NR_OWNED; i++)
		ok += rdmsr(owned[i].msr) == owned[i].val;
	return ok;
}

/* A sample of the markers, read back: the leak is real, so a clean
 * resetcheck after it means something. */
#define NR_READ_BACK 10
static unsigned markers_read_back(uint64_t xcr0)
{
	uint16_t fcw;
	uint32_t mxcsr;
	uint64_t cr2, cr8, dr0, aux = 0;
	asm volatile("fnstcw %0" : "=m"(fcw));
	asm volatile("stmxcsr %0" : "=m"(mxcsr));
	asm volatile("mov %%cr2, %0" : "=r"(cr2));
	asm volatile("mov %%cr8, %0" : "=r"(cr8));
	asm volatile("mov %%dr0, %0" : "=r"(dr0));
	rdmsr_safe(MSR_TSC_AUX, &aux);
	uint32_t lo, hi;
	if (xcr0)
		asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	else
		lo = hi = 0;
	return (fcw == 0x0e7f) + (mxcsr == 0x7f80) + (cr2 == 0x00000c2c2c2c2000ull) + (cr8 == 5) +
	       (dr0 == 0x1000) +
	       (aux == 0x5a5a5a5a) + (rdmsr(MSR_LSTAR) == 0xffff800012345000ull) +
	       (inb(0x3ff) == 0x5a) + (xcr0 && (((uint64_t)hi << 32) | lo) == xcr0) +
	       ram_markers_there();
}

int guest_main(void)
{
	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
	fill_legacy(area);
	asm volatile("fxrstor %0" : : "m"(*(uint8_t(*)[512])area) : "memory");

	asm volatile("mov %0, %%cr2" : : "r"(0x00000c2c2c2c2000ull));
	asm volatile("mov %0, %%cr8" : : "r"(5ull));                /* task priority */
	asm volatile("mov %0, %%dr0" : : "r"(0x1000ull));
	asm volatile("mov %0, %%dr1" : : "r"(0x2000ull));
	asm volatile("mov %0, %%dr2" : : "r"(0x3000ull));
	asm volatile("mov %0, %%dr3" : : "r"(0x4000ull));
	asm volatile("mov %0, %%dr6" : : "r"(0xffff4ff3ull));   /* BS, B1, B0 */
	asm volatile("mov %0, %%dr7" : : "r"(0x00dd0700ull));   /* LE, GE, types: nothing enabled */

	uint64_t owned_exits = leave_owned_msrs();
	wrmsr(MSR_PAT, 0x0606060606060606ull);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE | EFER_NXE);
	unsigned aux_fault = wrmsr_safe(MSR_TSC_AUX, 0x5a5a5a5a);

	outb(0x3ff, 0x5a);                  /* UART scratch */
	outb(0x70, 0x40);
	outb(0x71, 0xa5);                   /* CMOS RAM */
	outb(0x70, 0x0b);
	outb(0x71, 0x06);                   /* RTC register B: binary, 24-hour */

	leave_ram_markers();
	uint64_t xcr0 = leave_xsave_markers();
	rt_printf("leak64: markers left in x87, SSE, XSAVE components (XCR0 0x%llx), TSC_AUX%s, "
		  "DR0-7, CR2, CR8, MSRs, devices and %u pages of RAM\n", (unsigned long long)xcr0,
		  aux_fault ? " (WRMSR faulted)" : "", ram_pages);
	rt_printf("leak64: %u of %u markers read back\n", markers_read_back(xcr0), NR_READ_BACK);
	rt_printf("leak64: %u of %u guest-owned MSRs kept across a heavy exit; their writes and "
		  "reads made %llu MSR exits\n", owned_msrs_kept(), (unsigned)NR_OWNED,
		  (unsigned long long)owned_exits);
	return 0;
}
