/* What a vendor backend (vmm/svm/, vmm/vmx/) provides to the common code.
 * The choice is made at link time, never through function pointers: the
 * common code is compiled once per backend, and the backend's inline hooks
 * come from its own arch_exit.h (-Ivmm/svm or -Ivmm/vmx), so that the light
 * path compiles into one straight line per exit.
 *
 * Backends keep only what differs between AMD and Intel: where guest state
 * lives (VMCB fields or VMCS fields), how an exit is reported, how events are
 * injected, and the CPU setup. Everything an exit means is in the exit core
 * (vmm/vcpu_exit.h). */
#ifndef VMM_VENDOR_H
#define VMM_VENDOR_H

#include <stdbool.h>
#include <stdint.h>

#include "emul/pio_decode.h"    /* struct io_intercept */
#include "emul/x86_emulate.h"   /* struct guest_paging */
#include "vmm/vcpu_exit.h"

struct vcpu;
struct vm;
struct lp_options;
struct linux_boot_state;
struct percpu;

/* ---- setup (out of line) ---- */

/* Checks the CPU and enables virtualization; prints one clear line and
 * returns negative when it cannot. */
int vendor_cpu_init(const struct lp_options *opt);
/* Host SMP (core/smp.c). On the boot CPU, before an AP is started: its
 * pages into pc->virt_pa (core/percpu.h); negative when out of memory. */
int vendor_cpu_alloc(struct percpu *pc);
/* On the CPU itself (the boot CPU from vendor_cpu_init, an AP from
 * core/smp.c): turns virtualization on with those pages and loads the
 * boot CPU's syscall MSRs. Returns NULL, or why it could not (for an AP the
 * boot CPU prints it: APs print nothing). */
const char *vendor_cpu_virt_on(struct percpu *pc);
/* The backend's name for the banner: "AMD SVM" or "Intel VT-x". */
const char *vendor_name(void);
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

/* ---- the run loop (out of line) ---- */

/* Runs the guest in the light loop (the exit stub) until it is left. */
void vendor_enter_guest(struct vcpu *v);
/* The next RIP after the instruction `p` at RIP, prefixes included, or 0
 * (the VM is stopped) when the bytes there are not that instruction. */
uint64_t vendor_next_rip_slow(struct vcpu *v, struct insn_pattern p);
/* Takes pending host interrupts (the timer) from the heavy path. */
void vendor_host_interrupt_window(void);
/* Sleeps until a host interrupt has been taken. */
void vendor_host_wait_for_interrupt(void);
/* After a VM's end: the CPU as lightpath's idle code wants it, interrupts
 * off and deliverable once enabled (SVM: GIF, which #VMEXIT cleared, set
 * again; a CPU halting with GIF=0 never wakes). */
void vendor_host_idle_state(void);
/* The single-step #DB after an instruction lightpath completed for a guest
 * with RFLAGS.TF set (VCPU_PENDING_STEP): DR6.BS, the interrupt shadow
 * ended, #DB injected; on the heavy path. */
void vendor_single_step_trap(struct vcpu *v);
/* Stops trapping MOV DR (dr=lazy, first use): the DRs are switched from now on.
 * (SVM keeps trapping DR7 writes, and DR0-3 writes while a breakpoint is
 * enabled: vmm/svm/debug.h.) */
void vendor_dr_intercept_off(struct vcpu *v);
/* One short phrase on the vCPU's interrupt state, for debugging dumps. */
const char *vendor_interrupt_state(struct vcpu *v);
/* The VM's clock (vmm/guest_clock.h): RDTSC and RDTSCP exit or not. */
void vendor_rdtsc_exiting(struct vcpu *v, bool on);
/* The guest's local APIC changed mode (IA32_APIC_BASE): VT-x's APIC
 * virtualization follows it (xAPIC, x2APIC, disabled). */
void vendor_apic_mode_changed(struct vcpu *v);
/* Whether the CPU can make RDTSC exit and offset the TSC (else the clock
 * never polls). */
bool vendor_has_tsc_control(void);

/* Guest MSRs whose home is vendor state, without any checks (the exit core
 * checks values first, vmm/exit_msr.c). Return 0, or negative for #GP. */
uint64_t vendor_efer_read(struct vcpu *v);
void vendor_efer_write(struct vcpu *v, uint64_t efer);
int vendor_msr_pat(struct vcpu *v, uint64_t *val, bool is_write);
/* STAR/LSTAR/CSTAR/SFMASK/KERNEL_GS_BASE with msr=lazy, and SYSENTER_*:
 * wherever the guest's value lives right now. */
int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write);

/* What a nested page fault / EPT violation reports. */
struct npf_info {
	uint64_t gpa;
	bool final_access;       /* the access itself, not the guest's page walk */
	bool fetch;              /* an instruction fetch */
	bool in_event_delivery;  /* while the CPU was delivering an event */
};

/* ---- inline hooks, defined in the backend's arch_exit.h ----
 *
 * Guest registers:
 *   uint64_t *vendor_rax(struct vcpu *v)          RAX (SVM: in the VMCB)
 *   uint64_t *vendor_light_rsp(struct vcpu *v)    RSP if the light path can
 *                                                 reach it in memory, else 0
 *   uint64_t vendor_rsp(v), vendor_set_rsp(v, x)
 *   uint64_t vendor_guest_rip(v), vendor_set_rip(v, rip)
 *   uint64_t vendor_rflags(v), vendor_set_rflags(v, x)
 *   bool vendor_guest_tf(v)                       RFLAGS.TF (the light path's test)
 *   void vendor_guest_paging(v, struct guest_paging *pg)
 *   uint64_t vendor_cs_base(v); unsigned vendor_cpl(v)
 *   void vendor_seg_bases(v, uint64_t base[6])    ES CS SS DS FS GS
 *   void vendor_set_guest_cr2(v, cr2)
 *   uint64_t vendor_guest_cr4(v)                  CR4 as the guest reads it
 *   void vendor_set_tsc_offset(v, int64_t off)    guest TSC = host TSC + off
 *                                                 (vmm/guest_clock.c computes it)
 * The exit:
 *   uint64_t vendor_exit_code(v)    what the exit table is indexed by (SVM:
 *                                   EXITCODE, low 32 bits; VT-x: the basic
 *                                   exit reason)
 *   bool vendor_heavy_begin(v)      first thing on the heavy path for an exit
 *                                   left unhandled: re-injects an event whose
 *                                   delivery the exit interrupted; false (the
 *                                   VM stopped with one line) for a failed
 *                                   VM entry
 *   bool vendor_next_rip(v, struct insn_pattern p, sw, uint64_t *next)
 *       next RIP on the light path; false when it cannot tell cheaply
 *   void vendor_skip_insn(v, uint64_t next)
 *       RIP past that instruction, at the end of the handler (VT-x reads
 *       the length from the VMCS only here)
 *   void vendor_exit_io(v, struct io_intercept *io)     all but next_rip
 *   uint64_t vendor_exit_io_next_rip(v)
 *   bool vendor_exit_msr_write(v)
 *   void vendor_exit_npf(v, struct npf_info *f)
 *   uint64_t vendor_exit_npf_gpa(v)                 f->gpa alone
 *   bool vendor_exit_in_event_delivery(v)
 * Events:
 *   void vendor_inject_exception(v, vector, has_error_code, error_code)
 *   bool vendor_intr_injectable(v)                 IF=1, no shadow, nothing queued
 *   void vendor_inject_intr(v, vector)
 *   void vendor_intr_window(v, bool want)          exit when IF opens, or not
 *   bool vendor_intr_window_requested(v)
 *   bool vendor_intr_in_flight(v)                  injected, not yet taken by the
 *                                                  guest (SVM under QEMU's TCG)
 *   void vendor_apic_sync(v)       after each delivery decision: an exit when
 *                                   the guest lowers its TPR below what IRR
 *                                   holds back, where a TPR change makes none
 *                                   (VT-x's TPR shadow; SVM: CR8 exits, nothing);
 *                                   with virtual-interrupt delivery, IRR and
 *                                   ISR's highest vectors and the level-
 *                                   triggered ones for the CPU
 *   void vendor_clear_interrupt_shadow(v)
 *   bool vendor_nmi_blocked(v)      the guest's last NMI handler has not
 *                                   returned (IRET) yet
 *   bool vendor_nmi_injectable(v)   not blocked, no shadow, nothing queued
 *   void vendor_inject_nmi(v)       NMIs are blocked from now until its IRET
 *   void vendor_nmi_window(v, bool want)   an exit as soon as an NMI can be
 *                                   injected (SVM: the IRET intercept, or a
 *                                   single step; VT-x: NMI-window exiting), or not
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
 *   VENDOR_HYPERCALL_INSN       the hypercall instruction's struct insn_pattern
 *   VENDOR_TRIPLE_FAULT_EXIT    how the backend names that exit
 *   VENDOR_LIGHT_SETS(X, ...)   the switch sets compiled as straight light
 *                               paths (vmm/light.h, LIGHT_BENCH_SETS)
 */
#include "arch_exit.h"

/* After lightpath completed the guest's instruction (RIP advanced), on the
 * light or the heavy path: an STI or MOV SS shadow the instruction sat in
 * ends with it (the CPU reports the shadow at the exit; left set, the next
 * entry would hold interrupts through one more guest instruction, and a
 * `sti; out; cli` would never take the interrupt waiting for it: intr32/64),
 * and with RFLAGS.TF set the single-step #DB is due, as on a CPU
 * (VCPU_PENDING_STEP; the heavy path delivers it). Inline: the light path
 * pays the shadow clear and one test. */
static inline __attribute__((always_inline)) void exit_insn_completed(struct vcpu *v)
{
	vendor_clear_interrupt_shadow(v);
	if (__builtin_expect(vendor_guest_tf(v), 0))
		v->pending |= VCPU_PENDING_STEP;
}

#endif
