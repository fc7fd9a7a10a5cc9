/* Guest state whose only home is the physical CPU: no VMCB or VMCS field
 * holds it, and lightpath itself never uses it. That is the extended state
 * (x87, SSE, AVX, the other XSAVE components) with XCR0, TSC_AUX (the
 * guest reads and writes it directly on both backends), and on VT-x CR2
 * (also under Bochs' SVM, which does not load the VMCB's at VMRUN) and CR8,
 * which without a TPR shadow is the local APIC's task priority.
 *
 * It stays in the CPU from the vCPU's start to its end: each vCPU owns its
 * CPU, and nothing else runs there in between. So a vCPU's start is where
 * the previous VM's values are wiped (vcpu_cpu_state_reset); a CPU handed
 * from one vCPU to another would save the old one's here and load the new
 * one's (XGETBV/XSETBV and XSAVE/XRSTOR with a per-vCPU area, RDMSR/WRMSR).
 * The CPU is the only home of the guest's XCR0 too: lightpath checks and
 * loads it on an XSETBV exit, but keeps no copy, because an emulator
 * without the XSETBV intercept (QEMU before 8.2) lets the guest write it
 * without an exit.
 *
 * The guest-owned MSRs the guest also writes without an exit (FS/GS.base,
 * SYSENTER_*, the syscall MSRs: vm_maps_pass_guest_msrs) are not here: each
 * has a per-vCPU home the lazy switch saves them to (VMCB, VMCS,
 * v->guest_smsr), made zeroed with the vCPU and loaded before its first
 * entry, which is their reset. */
#ifndef VMM_CPU_STATE_H
#define VMM_CPU_STATE_H

#include <stdint.h>

struct vcpu;

/* Puts the CPU-held state a guest can read in its architectural reset
 * state for `v`: extended state in its init configuration, XCR0 = 1,
 * TSC_AUX = 0, CR2 = 0, CR8 (TPR) = 0. Call on the CPU that will run `v`,
 * before its first entry. */
void vcpu_cpu_state_reset(struct vcpu *v);

/* The XCR0 components the VM's CPUID leaf 0xD offers (what its XSETBV may
 * enable), or 0 when it has no XSAVE. */
uint64_t vcpu_xcr0_offered(struct vcpu *v);

#endif
