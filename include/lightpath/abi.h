/* lightpath guest ABI: what a guest can rely on (hypercalls, CPUID leaves,
 * exit reason numbers). Shared by the hypervisor and the guests it ships;
 * freestanding, no includes beyond compiler headers. */
#ifndef LIGHTPATH_ABI_H
#define LIGHTPATH_ABI_H

/* CPUID 0x40000000: EAX = highest hypervisor leaf, EBX:ECX:EDX = "lightpath\0\0\0".
 * CPUID 0x40000001: EAX = ABI version, EBX = LP_CONFIG_* bits in force. */
#define LP_CPUID_BASE          0x40000000u
#define LP_CPUID_INFO          0x40000001u
#define LP_CPUID_MAX           LP_CPUID_INFO
#define LP_CPUID_SIG_EBX       0x6867696cu /* "ligh" */
#define LP_CPUID_SIG_ECX       0x74617074u /* "tpat" */
#define LP_CPUID_SIG_EDX       0x00000068u /* "h\0\0\0" */
#define LP_ABI_VERSION         1u

/* Hypercalls: VMMCALL (AMD) or VMCALL (Intel). RAX = number, RBX/RCX/RDX =
 * arguments. Result in RAX (negative = -errno); some calls return more in
 * RBX/RCX. A 32-bit guest sees the low halves. */
#define LP_HC_NULL             0u  /* returns 0; the benchmark's null hypercall */
#define LP_HC_STATS            1u  /* RBX = LP_STATS_ALL or an LP_EXIT_* reason:
                                    * RAX = exits, RBX = light, RCX = heavy */
#define LP_HC_EXIT             2u  /* RBX = status: ends the VM like isa-debug-exit */
#define LP_HC_RAISE_IRQ        3u  /* RBX = vector 32..255: queue a virtual interrupt
                                    * (a self-IPI), delivered when RFLAGS.IF = 1 */
#define LP_HC_CONFIG           4u  /* RAX = LP_CONFIG_* bits in force */
#define LP_HC_NULL_HEAVY       5u  /* returns 0 like LP_HC_NULL but always takes
                                    * the heavy path (tests and benchmarks) */
#define LP_HC_TIMER            6u  /* RBX = delay in microseconds (1..10^7), RCX =
                                    * vector 32..255: queue that interrupt once the
                                    * delay has passed (a one-shot test timer) */

#define LP_STATS_ALL           0xffffffffu

#define LP_ENOSYS              38
#define LP_EINVAL              22

/* LP_HC_CONFIG bits: set = the optimisation is on (lazy/fast), clear = off. */
#define LP_CONFIG_LIGHT        (1u << 0)
#define LP_CONFIG_VMLOAD_LAZY  (1u << 1)
#define LP_CONFIG_DR_LAZY      (1u << 2)
#define LP_CONFIG_PMU_LAZY     (1u << 3)
#define LP_CONFIG_MSR_LAZY     (1u << 4)
#define LP_CONFIG_IO_FAST      (1u << 5)
#define LP_CONFIG_SPEC         (1u << 6)  /* spec=on: exit-path speculation hygiene */

/* Exit reasons as counted by lightpath's statistics (vendor-neutral). */
enum lp_exit_reason {
	LP_EXIT_HYPERCALL = 0,
	LP_EXIT_CPUID,
	LP_EXIT_IO,
	LP_EXIT_IO_STRING,
	LP_EXIT_MSR_READ,
	LP_EXIT_MSR_WRITE,
	LP_EXIT_HLT,
	LP_EXIT_DR_ACCESS,
	LP_EXIT_NPF,
	LP_EXIT_EXCEPTION,
	LP_EXIT_INTR,
	LP_EXIT_VINTR,
	LP_EXIT_VIRT_INSN,   /* VMRUN/VMLOAD/VMSAVE/STGI/CLGI/SKINIT/INVLPGA, VMX insns */
	LP_EXIT_SHUTDOWN,    /* triple fault */
	LP_EXIT_OTHER,
	LP_EXIT_RDTSC,       /* RDTSC/RDTSCP: they exit only while the guest polls its clocks */
	LP_EXIT_COUNT
};

/* A synthetic MSR the benchmark reads and writes: IA32_MTRR_DEF_TYPE is
 * virtualized by lightpath (and handled in-kernel by KVM). */
#define LP_BENCH_MSR           0x2ffu
/* Light-path sink for the port-write benchmark: the POST code port. */
#define LP_BENCH_PORT_OUT      0x80u
/* ACPI PM timer (PIIX4 layout: PM base 0x600 + 8), 24-bit, 3.579545 MHz. */
#define LP_PMTIMER_PORT        0x608u
#define LP_PMTIMER_HZ          3579545u
#define LP_DEBUG_EXIT_PORT     0xf4u

/* The emulator's MMIO test device (dev/mmio_test.h): 4 KiB, present in every
 * VM; the first 2 KiB read back what was written. */
#define LP_MMIO_TEST_BASE      0xfeb00000u

/* VM end statuses lightpath itself uses (QEMU exit code = (status << 1) | 1;
 * lightpath powers off with min(status, 127), core/console.h). */
#define LP_STATUS_VM_FAULT     0x70u /* VM stopped for misbehaving (QEMU: 225) */
#define LP_STATUS_HV_ERROR     0x7fu /* hypervisor could not run (QEMU: 255) */

#endif
