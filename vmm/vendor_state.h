/* Vendor hooks, guest state access: registers, RIP, RFLAGS, control
 * registers, segments, the TSC offset, and the MSRs whose home is vendor
 * state (the VMCB or the VMCS). The other hook headers and the umbrella
 * are in vmm/vendor.h. */
#ifndef VMM_VENDOR_STATE_H
#define VMM_VENDOR_STATE_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;

/* Guest MSRs whose home is vendor state, without any checks (the exit core
 * checks values first, vmm/exit_msr.c). Return 0, or negative for #GP.
 * Out of line (vmm/svm/vcpu.c, vmm/vmx/vcpu.c). */
uint64_t vendor_efer_read(struct vcpu *v);
void vendor_efer_write(struct vcpu *v, uint64_t efer);
int vendor_msr_pat(struct vcpu *v, uint64_t *val, bool is_write);
/* STAR/LSTAR/CSTAR/SFMASK/KERNEL_GS_BASE with msr=lazy, and SYSENTER_*:
 * wherever the guest's value lives right now. */
int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write);

/* ---- inline, in the backend's arch_exit.h (through vmm/vendor.h) ----
 *
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
 */

#endif
