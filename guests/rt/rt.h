/* lightpath guest runtime: what every guest kernel under guests/ links with.
 * Built both -m32 (flat protected mode, paging off) and -m64 (long mode,
 * identity-mapped first GiB with 2 MiB pages). The entry code sets up its
 * own GDT/IDT and stack, copies the command line, then calls guest_main()
 * and exits the VM with its return value. */
#ifndef GUESTS_RT_RT_H
#define GUESTS_RT_RT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "include/lightpath/abi.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "guests/rt/msr.h"

/* Register width: 32 bits in the 32-bit guests, 64 in long mode. */
typedef unsigned long ureg_t;
typedef long sreg_t;

/* GDT selectors set up by the entry code. */
#define RT_SEL_CODE     0x08
#define RT_SEL_DATA     0x10
/* 32-bit guests only: a second flat code/data pair for the legacy-mode
 * SYSCALL test (SYSCALL loads CS = STAR[47:32], SS = that + 8). */
#define RT_SEL_CODE_ALT 0x18
#define RT_SEL_DATA_ALT 0x20

/* Saved state of an exception or interrupt, in the stub's push order.
 * A handler may change ip/flags; the stub returns with IRET. */
struct rt_frame {
#ifdef __x86_64__
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t ip, cs, flags, sp, ss;
#else
	uint32_t edi, esi, ebp, esp_unused, ebx, edx, ecx, eax;
	uint32_t vector, error;
	uint32_t ip, cs, flags;
#endif
};

#define RT_FLAGS_IF (1u << 9)
#define RT_FLAGS_RF (1u << 16)

/* ---- entry point supplied by each guest ---- */
int guest_main(void);

/* ---- VM end ---- */
/* Ends the VM through isa-debug-exit (port 0xf4); never returns. */
__attribute__((noreturn)) void guest_exit(unsigned status);

/* ---- serial console (16550 at 0x3f8) ---- */
void rt_putc(char c);
void rt_puts(const char *s);
int rt_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int rt_vprintf(const char *fmt, va_list ap);

/* ---- multiboot / command line ---- */
extern uint32_t rt_mb_magic;        /* EAX at entry (0x2BADB002) */
extern uint32_t rt_mb_info;         /* EBX at entry: multiboot info address */
/* The command line without its first word (the image path). */
const char *rt_args(void);
/* Copies the value of key=value into buf; returns false if key is absent. */
bool rt_arg(const char *key, char *buf, size_t len);
/* Numeric value (decimal or 0x hex) of key=, or def when absent/invalid. */
uint64_t rt_arg_u64(const char *key, uint64_t def);

/* The ACPI PM timer's count (24 bits) and the TSC's rate measured against
 * it over 2 ms (at least 1). */
uint32_t rt_pm_now(void);
uint64_t rt_tsc_per_ms(void);

/* ---- exceptions and interrupts ---- */
typedef void (*rt_handler_t)(struct rt_frame *f);
/* Installs a C handler for one vector (exceptions and interrupts). */
void rt_set_handler(unsigned vector, rt_handler_t fn);
/* Loads the runtime's IDT on the calling CPU: an application processor
 * shares the boot CPU's gates and handlers (which must then be safe to run
 * on several CPUs at once). */
void rt_idt_load(void);

/* What the last unhandled-but-expected exception was. A test clears it,
 * runs one instruction with RT_ARM_RESUME in front (so a fault continues at
 * the label after the instruction) and looks at count/vector. */
struct rt_trap {
	volatile unsigned count;
	volatile unsigned vector;
	volatile ureg_t error;
	volatile ureg_t ip;
};
extern struct rt_trap rt_trap;
extern volatile ureg_t rt_resume;    /* 0 = not armed */
void rt_trap_clear(void);

/* Inline-asm fragment: arm rt_resume with local label 1f (put "1:" right
 * after the instruction under test). Use in asm with operands (%%). */
#ifdef __x86_64__
#define RT_ARM_RESUME "movq $1f, rt_resume(%%rip)\n\t"
#else
#define RT_ARM_RESUME "movl $1f, rt_resume\n\t"
#endif

/* ---- hypercalls ---- */
/* The CPU vendor, read once from CPUID leaf 0 before guest_main: a guest
 * under lightpath's VMX backend sees GenuineIntel and must use VMCALL
 * (0f 01 c1); under SVM it sees AuthenticAMD and uses VMMCALL (0f 01 d9).
 * Each executes as #UD on the other vendor's CPUs. */
extern bool rt_intel;
/* The third byte of the hypercall instruction: 0xc1 (VMCALL) or 0xd9 (VMMCALL). */
static inline uint8_t rt_hypercall_modrm(void) { return rt_intel ? 0xc1 : 0xd9; }
/* "vmcall" or "vmmcall", for test descriptions. */
static inline const char *rt_hypercall_name(void) { return rt_intel ? "vmcall" : "vmmcall"; }

/* VMMCALL (VMCALL on Intel) with RAX=nr, RBX/RCX/RDX = a/b/c; returns RAX, RBX/RCX into
 * out_rbx and out_rcx when non-NULL. If VMMCALL faults (no hypervisor) the
 * fault is recorded in rt_trap and LP_HC_FAULTED is returned. */
#define LP_HC_FAULTED ((sreg_t)-4095)
sreg_t lp_hypercall(ureg_t nr, ureg_t a, ureg_t b, ureg_t c,
		    ureg_t *out_rbx, ureg_t *out_rcx);
/* True when CPUID 0x40000000 carries the lightpath signature. */
bool rt_on_lightpath(void);
/* Makes lightpath's MMIO test device (LP_MMIO_TEST_BASE) reachable: a no-op
 * with paging off; in 64-bit mode, where entry64 maps only the first GiB,
 * an identity 2 MiB page for it. */
void rt_map_mmio_test(void);
/* The same for any device page in the 4th GiB (the I/O APIC, the local
 * APIC): an identity, uncached 2 MiB page around pa in 64-bit mode. */
void rt_map_mmio(uint64_t pa);

/* ---- ACPI: the firmware's tables, found the way an OS finds them ---- */
/* The RSDP (signature and checksum checked): the first KiB of the EBDA, then
 * 0xe0000-0xfffff; 0 if there is none. */
uint64_t rt_acpi_rsdp(void);
/* The table with signature sig ("APIC", "FACP", ...) listed in the XSDT when
 * the RSDP has one, else in the RSDT, with a good checksum; 0 if none (or,
 * in 64-bit mode, if it lies beyond the identity-mapped first GiB). */
uint64_t rt_acpi_table(const char *sig);

/* The guest image as linked (guests/rt/guest.ld). */
extern char __image_start[], __image_end[];

/* ---- TAP-style self-test output ---- */
void tap_begin(const char *name);
/* Each prints "ok N - desc" or "not ok N - desc (got X, expected Y)". */
bool tap_eq(uint64_t got, uint64_t expected, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool tap_ge(uint64_t got, uint64_t min, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool tap_ok(bool cond, uint64_t got, const char *expected, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* "ok N - # SKIP why": counts as passed. */
void tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "selftest NAME: P passed, F failed"; returns the exit status. */
int tap_end(void);

/* ---- instructions ---- */
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
		     "d"((uint32_t)(v >> 32)) : "memory");
}

/* RDMSR/WRMSR that survive #GP: return the vector taken (0 = none). */
unsigned rdmsr_safe(uint32_t msr, uint64_t *v);
unsigned wrmsr_safe(uint32_t msr, uint64_t v);

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t sub)
{
	struct cpuid_regs r;
	asm volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
		     : "a"(leaf), "c"(sub));
	return r;
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;
	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline void cli(void) { asm volatile("cli" ::: "memory"); }
static inline void sti(void) { asm volatile("sti" ::: "memory"); }

static inline ureg_t read_flags(void)
{
	ureg_t f;
	asm volatile("pushf\n\tpop %0" : "=r"(f));
	return f;
}

/* The local APIC at its reset base (identity-mapped in both guest modes). */
#define RT_LAPIC 0xfee00000u

/* Local APIC register `off` (its xAPIC MMIO offset): through MMIO, or
 * through its MSR (0x800 + off / 16) when `x2apic`. */
static inline uint32_t rt_apic_read(bool x2apic, unsigned off)
{
	if (x2apic)
		return (uint32_t)rdmsr(0x800u + (off >> 4));
	return *(volatile uint32_t *)(uintptr_t)(RT_LAPIC + off);
}

static inline void rt_apic_write(bool x2apic, unsigned off, uint32_t val)
{
	if (x2apic)
		wrmsr(0x800u + (off >> 4), val);
	else
		*(volatile uint32_t *)(uintptr_t)(RT_LAPIC + off) = val;
}

/* Bits set in the eight 32-bit registers from `base` (ISR, TMR or IRR). */
static inline unsigned rt_apic_bits(bool x2apic, unsigned base)
{
	unsigned n = 0;
	for (unsigned r = 0; r < 8; r++)
		for (uint32_t w = rt_apic_read(x2apic, base + r * 0x10); w; w &= w - 1)
			n++;
	return n;
}

/* ---- application processors (flat 32-bit guests only: guests/rt/ap32.c) ---- */
/* A STARTUP IPI with vector RT_AP_SIPI_VECTOR starts an AP in real mode at
 * RT_AP_TRAMP (below 1 MiB; the image itself is linked at 1 MiB), where
 * rt_ap_install copied a trampoline: protected mode with the runtime's
 * selectors, paging off, interrupts off, then a call of `entry` on the stack
 * last given to rt_ap_set_stack (each AP needs its own: start them one at a
 * time). `entry` must not return (the trampoline halts if it does); it loads
 * the IDT itself (rt_idt_load). The guest sends INIT and the STARTUP IPIs. */
#define RT_AP_TRAMP       0x8000u
#define RT_AP_SIPI_VECTOR 0x08u
void rt_ap_install(void (*entry)(void));
void rt_ap_set_stack(void *top);

/* The I/O APIC at the PC's address (a 64-bit guest maps its page with
 * rt_map_mmio first): register `index` through IOREGSEL/IOWIN. */
#define RT_IOAPIC 0xfec00000u

static inline void rt_ioapic_write(uint8_t index, uint32_t val)
{
	*(volatile uint32_t *)(uintptr_t)RT_IOAPIC = index;
	*(volatile uint32_t *)(uintptr_t)(RT_IOAPIC + 0x10) = val;
}

/* Pin `pin` to `vector`: fixed, physical to APIC 0, unmasked, edge or level. */
static inline void rt_ioapic_route(unsigned pin, uint8_t vector, bool level)
{
	rt_ioapic_write((uint8_t)(0x11 + 2 * pin), 0);
	rt_ioapic_write((uint8_t)(0x10 + 2 * pin), vector | (level ? 1u << 15 : 0));
}

static inline void rt_ioapic_mask(unsigned pin)
{
	rt_ioapic_write((uint8_t)(0x10 + 2 * pin), 1u << 16);
}

#endif
