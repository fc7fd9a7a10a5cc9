/* Vendor hooks, set-up and lifecycle: the CPU, the VM and the vCPU made
 * ready, the run loop entered, the host's idle state, and the intercepts
 * the common code switches on and off. Out of line, in the backend
 * (vmm/svm/cpu.c, vcpu.c, npt.c; vmm/vmx/cpu.c, vcpu.c, ept.c). The other
 * hook headers and the umbrella are in vmm/vendor.h. */
#ifndef VMM_VENDOR_SETUP_H
#define VMM_VENDOR_SETUP_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct vm;
struct lp_options;
struct linux_boot_state;
struct percpu;

/* ---- the CPU ---- */

/* Checks the CPU and enables virtualization; prints one clear line and
 * returns negative when it cannot. */
int vendor_cpu_init(const struct lp_options *opt);
/* Host SMP (core/smp.c, through vmm/hv.c). On the boot CPU, before an AP
 * is started: its pages into pc->virt_pa (core/percpu.h); negative when
 * out of memory. */
int vendor_cpu_alloc(struct percpu *pc);
/* On the CPU itself (the boot CPU from vendor_cpu_init, an AP from
 * core/smp.c): turns virtualization on with those pages and loads the
 * boot CPU's syscall MSRs. Returns NULL, or why it could not (for an AP the
 * boot CPU prints it: APs print nothing). */
const char *vendor_cpu_virt_on(struct percpu *pc);
/* The backend's name for the banner: "AMD SVM" or "Intel VT-x". */
const char *vendor_name(void);
/* Whether the CPU can make RDTSC exit and offset the TSC (else the clock
 * never polls). */
bool vendor_has_tsc_control(void);

/* ---- the VM and its vCPUs ---- */

/* Second-stage page tables (guest RAM only) and the I/O and MSR bitmaps. */
int vendor_vm_init(struct vm *vm);
void vendor_vm_destroy(struct vm *vm);
/* Multiboot start state: 32-bit protected mode, paging off, flat segments. */
void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx);
/* INIT and a STARTUP IPI with `vector`: real mode at vector << 12 (an AP's
 * start, docs/SMP.md). On the vCPU's CPU. */
void vendor_vcpu_init_sipi(struct vcpu *v, uint8_t vector);
/* The vCPU is done on its CPU (the VM ends): nothing of it may stay there
 * (VT-x: VMCLEAR). On that CPU. */
void vendor_vcpu_release(struct vcpu *v);
/* Linux 64-bit boot protocol start state (long mode, paging on). */
void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st);
/* The switch-set bits only this backend knows (SW_VMLOAD_ALWAYS, SW_NRIP). */
unsigned vendor_switch_bits(const struct lp_options *o);

/* ---- the run loop ---- */

/* Runs the guest in the light loop (the exit stub) until it is left. */
void vendor_enter_guest(struct vcpu *v);
/* Takes pending host interrupts (the timer) from the heavy path. */
void vendor_host_interrupt_window(void);
/* Sleeps until a host interrupt has been taken. */
void vendor_host_wait_for_interrupt(void);
/* After a VM's end: the CPU as lightpath's idle code wants it, interrupts
 * off and deliverable once enabled (SVM: GIF, which #VMEXIT cleared, set
 * again; a CPU halting with GIF=0 never wakes). */
void vendor_host_idle_state(void);

/* ---- intercepts the common code switches ---- */

/* Stops trapping MOV DR (dr=lazy, first use): the DRs are switched from now on.
 * (SVM keeps trapping DR7 writes, and DR0-3 writes while a breakpoint is
 * enabled: vmm/svm/debug.h.) */
void vendor_dr_intercept_off(struct vcpu *v);
/* The VM's clock (vmm/guest_clock.h): RDTSC and RDTSCP exit or not. */
void vendor_rdtsc_exiting(struct vcpu *v, bool on);
/* The guest's local APIC changed mode (IA32_APIC_BASE): VT-x's APIC
 * virtualization follows it (xAPIC, x2APIC, disabled). */
void vendor_apic_mode_changed(struct vcpu *v);

/* ---- inline, in the backend's arch_exit.h (through vmm/vendor.h) ----
 *
 * State the heavy path switches (the lazy halves):
 *   vendor_guest_msrs_enter(v) / vendor_guest_msrs_leave(v)   the guest's
 *       lazily switched MSRs (SVM: the VMLOAD state, which carries the
 *       syscall MSRs; VT-x: the syscall MSRs) into the CPU, and back out
 * State switched per exit by the "always" switches:
 *   vendor_vmload_leave(v) / vendor_vmload_enter(v)   (SVM VMSAVE/VMLOAD)
 *   vendor_dr_save_guest_load_host(v) / vendor_dr_load_guest(v)
 *   vendor_pmu_save_guest_load_host(v) / vendor_pmu_load_guest(v)
 * Constants:
 *   VENDOR_EXIT_CODES           size of the light table (codes past it share
 *                               its last slot); in arch_vcpu.h
 *   VENDOR_LIGHT_SETS(X, ...)   the switch sets compiled as straight light
 *                               paths (vmm/light.h, LIGHT_BENCH_SETS)
 */

#endif
