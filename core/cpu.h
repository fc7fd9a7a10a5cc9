/* Thin wrappers around x86 instructions the hypervisor needs. */
#ifndef CORE_CPU_H
#define CORE_CPU_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_IA32_TSC         0x010u
#define MSR_IA32_TSC_ADJUST  0x03Bu
#define MSR_IA32_MTRRCAP     0x0FEu
#define MSR_IA32_DEBUGCTL    0x1D9u
#define MSR_IA32_SYSENTER_CS  0x174u
#define MSR_IA32_SYSENTER_ESP 0x175u
#define MSR_IA32_SYSENTER_EIP 0x176u
#define MSR_IA32_PAT         0x277u
#define MSR_IA32_MTRR_DEF_TYPE 0x2FFu
#define MSR_EFER            0xC0000080u
#define MSR_STAR            0xC0000081u
#define MSR_LSTAR           0xC0000082u
#define MSR_CSTAR           0xC0000083u
#define MSR_SFMASK          0xC0000084u
#define MSR_FS_BASE         0xC0000100u
#define MSR_GS_BASE         0xC0000101u
#define MSR_KERNEL_GS_BASE  0xC0000102u
#define MSR_TSC_AUX         0xC0000103u
#define MSR_VM_CR           0xC0010114u
#define MSR_VM_HSAVE_PA     0xC0010117u
#define MSR_PERF_CTL0       0xC0010000u  /* legacy PerfEvtSel0..3 */
#define MSR_PERF_CTR0       0xC0010004u  /* legacy PerfCtr0..3 */
#define MSR_AMD_NB_CFG      0xC001001Fu

#define EFER_SCE   (1ull << 0)
#define EFER_LME   (1ull << 8)
#define EFER_LMA   (1ull << 10)
#define EFER_NXE   (1ull << 11)
#define EFER_SVME  (1ull << 12)
#define EFER_FFXSR (1ull << 14)

#define CR0_PE  (1ull << 0)
#define CR0_ET  (1ull << 4)
#define CR0_NE  (1ull << 5)
#define CR0_NW  (1ull << 29)
#define CR0_CD  (1ull << 30)
#define CR0_PG  (1ull << 31)
#define CR4_DE  (1ull << 3)
#define CR4_PCE (1ull << 8)
#define CR4_PSE (1ull << 4)
#define CR4_PAE (1ull << 5)
#define CR4_PCIDE (1ull << 17)

#define RFLAGS_TF (1ull << 8)
#define RFLAGS_IF (1ull << 9)
#define RFLAGS_RF (1ull << 16)
#define RFLAGS_VM (1ull << 17)

/* Debug registers: DR6 and DR7 at rest (no breakpoint hit, none enabled),
 * DR6's breakpoint-hit bits, DR7's enable bits. */
#define DR6_INIT      0xffff0ff0ull
#define DR6_B0_B3     0xfull
#define DR7_INIT      0x400ull
#define DR7_ENABLES   0xffull
#define DR7_GD        (1ull << 13)
/* Nothing enabled, all four breakpoints typed "data write": written to DR7
 * before DR7_INIT, it makes an emulator that keeps armed breakpoints in
 * lists (QEMU 7.2) remove every one, instruction and data alike
 * (vmm/svm/debug.c) */
#define DR7_PURGE_DATA 0x11110400ull

#define DR6_BS    (1ull << 14)   /* #DB: single step */

/* A 48-bit virtual address is canonical when bits 63:47 are all equal. */
static inline int canonical_address(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" ::"c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)) : "memory");
}

/* rbx is the guest's on the light path and no hypervisor code may change it
 * (-ffixed-rbx, Makefile): CPUID's EBX goes through another register and
 * rbx gets its value back. */
static inline void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	uint64_t ebx;
	asm volatile("mov %%rbx, %q1\n\tcpuid\n\txchg %%rbx, %q1"
		     : "=a"(r[0]), "=&r"(ebx), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
	r[1] = (uint32_t)ebx;
}

/* CPUID leaf 0's vendor string of an Intel CPU ("GenuineIntel" in EBX, EDX, ECX). */
static inline bool cpuid_vendor_is_intel(const uint32_t leaf0[4])
{
	return leaf0[1] == 0x756e6547u && leaf0[3] == 0x49656e69u && leaf0[2] == 0x6c65746eu;
}

static inline bool cpu_is_intel(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	return cpuid_vendor_is_intel(r);
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" ::"a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" ::"a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;
	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint64_t read_cr0(void) { uint64_t v; asm volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr3(void) { uint64_t v; asm volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline uint64_t read_cr4(void) { uint64_t v; asm volatile("mov %%cr4, %0" : "=r"(v)); return v; }

static inline __attribute__((noreturn)) void halt_forever(void)
{
	for (;;)
		asm volatile("cli; hlt");
}

#endif
