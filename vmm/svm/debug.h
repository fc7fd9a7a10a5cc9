/* AMD SVM: the guest's debug registers and lightpath's own safety. The
 * hypervisor must never run with a guest breakpoint armed. Hardware
 * disables the host's breakpoints at #VMEXIT, but QEMU 7.2 keeps the
 * guest's armed (it evaluates DR7 only when DR7 is written), so a guest
 * that points DR0 at lightpath's code would stop it with a host #DB. While
 * the guest has breakpoints enabled, its vCPU runs in an armed light loop (svm_light_loops[1])
 * (vmm/svm/entry.S), which arms them right before VMRUN and disarms them
 * right after #VMEXIT; lightpath learns that they are enabled by keeping
 * the guest's DR7 writes intercepted (and, while any is enabled, its DR0-3
 * writes). A guest without breakpoints keeps the plain light loop. */
#ifndef VMM_SVM_DEBUG_H
#define VMM_SVM_DEBUG_H

struct vcpu;

/* After any change of the guest's DR7, DR0-3 or of dr=lazy's first use:
 * which light loop, what it arms, which DR writes exit. */
void svm_dr_update(struct vcpu *v);
/* Exit: a MOV to DR0-DR7 the VMCB intercepts (heavy path). */
void svm_heavy_dr_write(struct vcpu *v);

#endif
