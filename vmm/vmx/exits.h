/* Intel VT-x: the heavy handlers of the exits only this backend has
 * (vmm/vmx/exits.c), which its exit table names (vmm/vmx/exit_table.c). */
#ifndef VMM_VMX_EXITS_H
#define VMM_VMX_EXITS_H

struct vcpu;

void vmx_heavy_exception(struct vcpu *v);     /* exception or NMI */
void vmx_heavy_task_switch(struct vcpu *v);
void vmx_heavy_cr_access(struct vcpu *v);     /* MOV CR, CLTS, LMSW */
void vmx_heavy_tpr_below(struct vcpu *v);     /* TPR below threshold */
void vmx_heavy_apic_access(struct vcpu *v);   /* APIC access (APIC virtualization) */
void vmx_heavy_eoi_induced(struct vcpu *v);   /* EOI-induced exit */
void vmx_heavy_apic_write(struct vcpu *v);    /* APIC write (APIC-register virtualization) */
void vmx_heavy_ept_misconfig(struct vcpu *v);

#endif
