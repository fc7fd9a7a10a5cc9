/* Vendor hooks, event injection: exceptions, interrupts and NMIs into the
 * guest, the windows that say when they can go in, and the guest's
 * interrupt shadow. The other hook headers and the umbrella are in
 * vmm/vendor.h. */
#ifndef VMM_VENDOR_EVENTS_H
#define VMM_VENDOR_EVENTS_H

struct vcpu;

/* Out of line (vmm/svm/, vmm/vmx/), on the heavy path. */

/* The single-step #DB after an instruction lightpath completed for a guest
 * with RFLAGS.TF set (VCPU_PENDING_STEP): DR6.BS, the interrupt shadow
 * ended, #DB injected. */
void vendor_single_step_trap(struct vcpu *v);
/* One short phrase on the vCPU's interrupt state, for debugging dumps. */
const char *vendor_interrupt_state(struct vcpu *v);

/* ---- inline, in the backend's arch_exit.h (through vmm/vendor.h) ----
 *
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
 */

#endif
