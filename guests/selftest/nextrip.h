/* Next-RIP checks shared by cpuid.elf (32-bit) and nextrip64.elf.
 * lightpath computes the next RIP itself (QEMU's SVM has no NRIP save), so
 * each exiting instruction is emitted byte by byte, prefixes included, and
 * followed by a marker move: if the hypervisor resumes at the wrong byte,
 * the marker is skipped or garbage runs instead. A fault on the instruction
 * itself resumes at the label after the marker (marker stays 0). */
#ifndef GUESTS_SELFTEST_NEXTRIP_H
#define GUESTS_SELFTEST_NEXTRIP_H

#include "guests/rt/rt.h"

#define NR_MARK 0x11111111u

struct nr_regs {
	ureg_t a, b, c, d;
	uint32_t mark;
};

/* Runs the instruction given as a string of .byte directives with
 * EAX..EDX = r->a..d in, results and marker out. */
#define NR_RUN(r, bytes)                                                  \
	do {                                                              \
		uint32_t m_ = 0;                                          \
		rt_trap_clear();                                          \
		asm volatile(RT_ARM_RESUME bytes "\n\t"                   \
			     "mov %[mk], %%esi\n"                         \
			     "1:"                                         \
			     : "+a"((r)->a), "+b"((r)->b), "+c"((r)->c),  \
			       "+d"((r)->d), "+S"(m_)                     \
			     : [mk] "i"(NR_MARK) : "memory");             \
		rt_resume = 0;                                            \
		(r)->mark = m_;                                           \
	} while (0)

static inline void nr_report(const struct nr_regs *r, const char *what)
{
	if (rt_trap.count)
		tap_ok(false, rt_trap.vector, "no exception",
		       "%s: raises no exception", what);
	tap_eq(r->mark, NR_MARK, "%s: continues at the next instruction", what);
}

static inline bool nr_sig_ok(const struct nr_regs *r)
{
	return (uint32_t)r->b == LP_CPUID_SIG_EBX && (uint32_t)r->c == LP_CPUID_SIG_ECX &&
	       (uint32_t)r->d == LP_CPUID_SIG_EDX;
}

/* CPUID 0x40000000 with the given encoding. */
static inline void nr_cpuid(const char *what, int variant)
{
	struct nr_regs r = { LP_CPUID_BASE, 0, 0, 0, 0 };
	switch (variant) {
	case 0:
		NR_RUN(&r, ".byte 0x0f, 0xa2");
		break;
	case 1:
		NR_RUN(&r, ".byte 0x66, 0x0f, 0xa2");
		break;
#ifdef __x86_64__
	case 2:
		NR_RUN(&r, ".byte 0x48, 0x0f, 0xa2");	/* REX.W */
		break;
#endif
	default:
		NR_RUN(&r, ".byte 0x2e, 0x3e, 0x66, 0x0f, 0xa2"); /* three prefixes */
		break;
	}
	nr_report(&r, what);
	tap_ok(nr_sig_ok(&r), (uint32_t)r.b, "lightpath signature",
	       "%s: returns the lightpath signature", what);
}

/* The hypercall instruction nr with the given encoding: VMMCALL (0f 01 d9)
 * on AMD, VMCALL (0f 01 c1) on Intel, the same prefixes on both. RAX must
 * come back as expected (LP_HC_NULL -> 0; an unknown number -> -LP_ENOSYS,
 * which also shows the call reached the hypervisor rather than doing
 * nothing). `what` names the AMD form; on Intel it is printed as VMCALL. */
#define NR_HC(r, prefixes)                                                          \
	do {                                                                        \
		if (rt_intel)                                                       \
			NR_RUN(r, ".byte " prefixes "0x0f, 0x01, 0xc1");            \
		else                                                                \
			NR_RUN(r, ".byte " prefixes "0x0f, 0x01, 0xd9");            \
	} while (0)

/* "vmmcall ... (0f 01 d9)" -> "vmcall ... (0f 01 c1)" on Intel. */
static inline const char *nr_hc_what(const char *what, char *buf, size_t len)
{
	if (!rt_intel)
		return what;
	size_t n = 0;
	const char *p = what;
	if (!strncmp(p, "vmmcall", 7)) {
		memcpy(buf, "vmcall", 6);
		n = 6;
		p += 7;
	}
	for (; *p && n + 1 < len; p++) {
		if (!strncmp(p, "01 d9", 5)) {
			if (n + 6 >= len)
				break;
			memcpy(buf + n, "01 c1", 5);
			n += 5;
			p += 4;
			continue;
		}
		buf[n++] = *p;
	}
	buf[n] = '\0';
	return buf;
}

static inline void nr_vmmcall(const char *what_amd, int variant, ureg_t nr, ureg_t expect)
{
	char buf[128];
	const char *what = nr_hc_what(what_amd, buf, sizeof(buf));
	struct nr_regs r = { nr, 0, 0, 0, 0 };
	switch (variant) {
	case 0:
		NR_HC(&r, "");
		break;
	case 1:
		NR_HC(&r, "0x2e, ");
		break;
#ifdef __x86_64__
	case 2:
		NR_HC(&r, "0x48, ");	/* REX.W */
		break;
#endif
	default:
		NR_HC(&r, "0x3e, 0x26, ");
		break;
	}
	nr_report(&r, what);
	bool faulted = rt_trap.count != 0;
	tap_ok(!faulted && r.a == expect, r.a, faulted ? "no fault" : "the hypercall result",
	       "%s: RAX = 0x%llx", what, (unsigned long long)expect);
}

/* RDMSR 0x2ff with the given encoding after writing a known value. */
static inline void nr_rdmsr(const char *what, int variant, uint32_t value)
{
	wrmsr(LP_BENCH_MSR, value);
	struct nr_regs r = { 0, 0, LP_BENCH_MSR, 0, 0 };
	switch (variant) {
	case 0:
		NR_RUN(&r, ".byte 0x0f, 0x32");
		break;
	case 1:
		NR_RUN(&r, ".byte 0x3e, 0x0f, 0x32");
		break;
#ifdef __x86_64__
	case 2:
		NR_RUN(&r, ".byte 0x48, 0x0f, 0x32");	/* REX.W */
		break;
#endif
	default:
		NR_RUN(&r, ".byte 0x26, 0x66, 0x0f, 0x32");
		break;
	}
	nr_report(&r, what);
	tap_eq((uint32_t)r.a, value, "%s: returns the value written", what);
}

#endif
