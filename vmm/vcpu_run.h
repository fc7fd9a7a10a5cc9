/* A vCPU's life on its host CPU (vmm/vcpu_run.c), the AP vCPUs of a VM of
 * several, and the kicks between CPUs. */
#ifndef VMM_VCPU_RUN_H
#define VMM_VCPU_RUN_H

#include <stdbool.h>

#include "vmm/vm.h"

/* vCPU t has work (an interrupt, an NMI, INIT/SIPI, the VM's end): on this
 * CPU its hazard bit; on another, `kicked` and a host IPI there, which
 * makes it leave the guest (or its halt) and look. */
void vcpu_notify(struct vcpu *t);
/* On the vCPU's own heavy path (VM lock held with several vCPUs): what
 * other CPUs left for it (kicked: posted vectors, frames another VM sent to
 * its network link) taken in; sets its hazard bit if anything was. */
void vcpu_take_notices(struct vcpu *v);

/* The VM's vCPUs: vCPU i has APIC ID i and runs on host CPU run_on[i];
 * false when out of memory (vcpus_free gives back what was allocated). */
bool vcpus_alloc(struct vm *vm, const struct vm_spec *spec);
void vcpus_free(struct vm *vm);
/* Posts every AP vCPU to its CPU (one that cannot be posted stops the VM);
 * after the VM's end, vcpus_wait_finished waits until each CPU is done. */
void vcpus_post(struct vm *vm);
void vcpus_wait_finished(struct vm *vm);
/* Runs the vCPU on this CPU until its VM ends (vCPU 0: from the loaded
 * image; after an INIT, from the next STARTUP's vector). */
void vcpu_life(struct vcpu *v);

#endif
