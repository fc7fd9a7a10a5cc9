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
 * (struct exit_row, vmm/vcpu_exit.h): its light kind, instantiated once per
 * switch set so that every configuration runs a straight path. */
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
#define SW_SETS_MAX      128

/* The light handlers an exit-table row can name. */
enum light_kind {
	LIGHT_NONE,          /* no light handling: count it and take the heavy path */
	LIGHT_HYPERCALL,     /* VMMCALL/VMCALL */
	LIGHT_CPUID,
	LIGHT_IO,            /* IN/OUT from the exit information (io=fast) */
	LIGHT_MSR,           /* RDMSR or WRMSR, direction from the exit information */
	LIGHT_RDMSR,
	LIGHT_WRMSR,
	LIGHT_HLT,           /* HLT with an interrupt waiting for the guest */
	LIGHT_HOST_INTR,     /* a host interrupt (the timer) arrived in the guest */
	LIGHT_INTR_WINDOW,   /* the guest can take the interrupt it was refused */
	LIGHT_NPF,           /* nested page fault: plain MOVs to a light MMIO device */
	LIGHT_RDTSC,         /* RDTSC while the guest polls its clocks (vmm/guest_clock.h) */
	LIGHT_NPF_SHARED,    /* LIGHT_NPF in a VM of several vCPUs (exit_light_table_fill) */
	LIGHT_HYPERCALL_SHARED, /* LIGHT_HYPERCALL there */
	LIGHT_RDTSCP,        /* RDTSCP likewise (Linux's rdtsc_ordered on CPUs that have it) */
	LIGHT_KIND_COUNT
};

/* Every light handler, per switch set and kind (vmm/exit_light.c). */
extern light_handler_fn *const light_handlers[SW_SETS_MAX][LIGHT_KIND_COUNT];

#endif
