/* AMD SVM: the heavy handlers of the exits only this backend has
 * (vmm/svm/exits.c), which its exit table names (vmm/svm/exit_table.c). */
#ifndef VMM_SVM_EXITS_H
#define VMM_SVM_EXITS_H

struct vcpu;

void svm_heavy_cr8(struct vcpu *v);               /* MOV to or from CR8 */
void svm_heavy_cr0_write(struct vcpu *v);         /* CR0 write, host CR guard */
void svm_heavy_db(struct vcpu *v);                /* #DB: NMI step, or reflected */
void svm_heavy_reflect_exception(struct vcpu *v); /* #AC (and #DB): to the guest */
void svm_heavy_iret(struct vcpu *v);              /* IRET of the guest's NMI handler */
void svm_heavy_wbinvd(struct vcpu *v);            /* WBINVD, and QEMU's INVD */
void svm_heavy_invalid_state(struct vcpu *v);     /* VMEXIT_INVALID */

#endif
