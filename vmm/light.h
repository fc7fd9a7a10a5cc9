/* The light-handler protocol: how an exit is handled next to VMRUN/VMRESUME.
 *
 * The exit stub (vmm/<vendor>/entry.S) stores the guest GPRs a C function may
 * clobber (rax and rcx-r9 but rsp; on SVM rax stays in the VMCB) into v->regs
 * and calls v->light_table[exit code] (codes past the table share its last
 * slot). rbx, rbp and r10-r15 stay in the CPU: light handlers are ordinary C
 * and preserve rbp and r12-r15, and no hypervisor code uses rbx, r10 or r11
 * (-ffixed-rbx -ffixed-r10 -ffixed-r11, Makefile); they are stored only when
 * the loop is left. A light handler reads and writes the guest's rbx in the
 * CPU (CPUID's answer, the MMIO decode's operand, a hypercall's argument:
 * light_rbx_*, vmm/exit_light.c); r10 and r11 it cannot reach (light_gpr).
 * The handler returns a
 * light_ret:
 *   light_resume(v)  the exit is handled: the stub re-enters the guest at once;
 *   light_leave()    the light loop ends: the heavy path (vmm/exit_heavy.c)
 *                    runs, and v->heavy_action says whether the exit is still
 *                    to be handled there (HEAVY_EXIT) or is done (HEAVY_NONE).
 * Handlers end through the helpers of vmm/exit_light.c, which keep the
 * statistics (each exit counted once, as light or heavy) and do the hazard
 * check: one test of v->pending on the way back to the guest.
 *
 * Which handler serves an exit comes from the backend's exit table
 * (struct exit_row, vmm/vcpu_exit.h): its light kind, compiled once per
 * measured switch set (a straight path) and once generic (below). */
#ifndef VMM_LIGHT_H
#define VMM_LIGHT_H

#include <stdint.h>

struct vcpu;

/* The vCPU to re-enter, or 0: leave the light loop. Returned in RAX, which
 * the stub tests. A pointer, not a struct wrapping one: GCC makes no tail
 * calls from functions that return a struct, and light handlers end in
 * tail calls. */
typedef struct vcpu *light_ret;

static inline light_ret light_resume(struct vcpu *v)
{
	return v;
}

static inline light_ret light_leave(void)
{
	return 0;
}

typedef light_ret light_handler_fn(struct vcpu *v);

/* The switch set one light-handler copy is compiled for: each bit is a boot
 * option in its "off" state, or a CPU feature. */
#define SW_LIGHT_OFF     (1u << 0)   /* light=off: every exit leaves the light loop */
#define SW_DR_ALWAYS     (1u << 1)   /* dr=always: DR0-3 (VMX: and DR6) on every exit */
#define SW_PMU_ALWAYS    (1u << 2)   /* pmu=always: PMU MSRs on every exit */
#define SW_MSR_ALWAYS    (1u << 3)   /* msr=always: syscall MSRs on every exit */
#define SW_IO_EMULATE    (1u << 4)   /* io=emulate: port I/O through the emulator */
#define SW_VMLOAD_ALWAYS (1u << 5)   /* SVM svm.vmload=always: VMSAVE/VMLOAD on every exit */
#define SW_NRIP          (1u << 6)   /* SVM: the CPU saves the next RIP (NRIP) */
#define SW_PER_EXIT      (SW_DR_ALWAYS | SW_PMU_ALWAYS | SW_MSR_ALWAYS | SW_VMLOAD_ALWAYS)

/* The light handlers an exit-table row can name, written once:
 * X(kind, name, fn, smp, ...) (the rest: LIGHT_KINDS's own arguments
 * after X, passed through). `name` makes the handler's symbol (below); `fn`
 * is the code of vmm/exit_light.c that handles it, fn(v, set, kind); `smp` is
 * the kind a VM of several vCPUs runs instead: what touches only the
 * vCPU's own state, the MSRs, the local APIC's page, the PM timer and the
 * HPET's counter stays light (their handlers of shared state leave for the
 * heavy path, but for a fixed IPI to another vCPU; vmm/lapic_access.c); the
 * rest (devices, the local APICs' timers, interrupt delivery) is shared
 * and goes to the heavy path, which holds the VM lock (docs/SMP.md). */
#define LIGHT_KINDS(X, ...)                                                                         \
        X(LIGHT_NONE, none, light_none, LIGHT_NONE, __VA_ARGS__)        /* no light handling: count it, go heavy */ \
        X(LIGHT_HYPERCALL, hypercall, light_hypercall, LIGHT_HYPERCALL_SHARED, __VA_ARGS__)/* VMMCALL/VMCALL */ \
	X(LIGHT_CPUID, cpuid, light_cpuid, LIGHT_CPUID, __VA_ARGS__)                                \
        X(LIGHT_IO, io, light_io, LIGHT_IO, __VA_ARGS__)                /* IN/OUT, decoded by the CPU (io=fast) */ \
        X(LIGHT_MSR, msr, light_msr_either, LIGHT_MSR, __VA_ARGS__)     /* RDMSR or WRMSR, as the exit says */ \
	X(LIGHT_RDMSR, rdmsr, light_msr, LIGHT_RDMSR, __VA_ARGS__)                                  \
	X(LIGHT_WRMSR, wrmsr, light_msr, LIGHT_WRMSR, __VA_ARGS__)                                  \
        X(LIGHT_HLT, hlt, light_hlt, LIGHT_NONE, __VA_ARGS__)           /* HLT with an interrupt waiting */ \
        X(LIGHT_HOST_INTR, host_intr, light_host_intr, LIGHT_NONE, __VA_ARGS__)/* a host interrupt (the timer) */ \
        X(LIGHT_INTR_WINDOW, intr_window, light_intr_window, LIGHT_NONE, __VA_ARGS__)/* a refused interrupt fits now */ \
        X(LIGHT_NPF, npf, light_npf, LIGHT_NPF_SHARED, __VA_ARGS__)     /* nested page fault: light MMIO */ \
        X(LIGHT_RDTSC, rdtsc, light_rdtsc, LIGHT_RDTSC, __VA_ARGS__)    /* while the guest polls its clocks */ \
        X(LIGHT_NPF_SHARED, npf_shared, light_npf, LIGHT_NONE, __VA_ARGS__)/* LIGHT_NPF, several vCPUs */ \
        X(LIGHT_HYPERCALL_SHARED, hypercall_shared, light_hypercall, LIGHT_NONE, __VA_ARGS__)/* LIGHT_HYPERCALL there */ \
        X(LIGHT_RDTSCP, rdtscp, light_rdtsc, LIGHT_RDTSCP, __VA_ARGS__) /* as RDTSC (rdtsc_ordered) */

enum light_kind {
#define LIGHT_KIND_ENUM(kind, name, fn, smp, ...) kind,
	LIGHT_KINDS(LIGHT_KIND_ENUM, _)
#undef LIGHT_KIND_ENUM
	LIGHT_KIND_COUNT
};

/* The switch sets compiled as straight paths, with no test of a switch on
 * the way: the configurations `make bench` publishes (tools/bench.py,
 * CONFIGS; spec=, timer= and vmx.apicv= are not switch bits), each with
 * the CPU bits `cpu` the backend passes (SVM: NRIP save, both ways).
 * X(name, set, ...), the rest passed through. Every other set runs the generic handlers, which test the
 * switches at run time (vmm/exit_light.c; docs/EXITS.md says why). */
#define SW_ALL_OFF (SW_LIGHT_OFF | SW_DR_ALWAYS | SW_PMU_ALWAYS | SW_MSR_ALWAYS | SW_IO_EMULATE)
#define LIGHT_BENCH_SETS(X, name, cpu, ...)                                       \
	X(name##all_on, (cpu), __VA_ARGS__)                                       \
	X(name##light_off, (cpu) | SW_LIGHT_OFF, __VA_ARGS__)                     \
	X(name##dr_always, (cpu) | SW_DR_ALWAYS, __VA_ARGS__)                     \
	X(name##pmu_always, (cpu) | SW_PMU_ALWAYS, __VA_ARGS__)                   \
	X(name##msr_always, (cpu) | SW_MSR_ALWAYS, __VA_ARGS__)                   \
	X(name##io_emulate, (cpu) | SW_IO_EMULATE, __VA_ARGS__)

/* The handler symbols, for traces, breakpoints and docs: light_<set>_<kind>
 * for a compiled set (light_all_on_hypercall, light_all_off_io; on SVM
 * with NRIP save light_nrip_all_on_hypercall, light_nrip_all_on_cpuid),
 * light_generic_<kind> for the rest
 * (light_generic_hypercall). The backend's sets: VENDOR_LIGHT_SETS,
 * arch_exit.h. */
light_handler_fn *exit_light_set_handler(unsigned sw, enum light_kind kind);

#endif
