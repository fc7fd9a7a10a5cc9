/* The SVM part of a vCPU: its VMCB, first in struct vcpu so that the VMCB's
 * physical address (identity mapped) is also the vcpu pointer. */
#ifndef VMM_SVM_ARCH_VCPU_H
#define VMM_SVM_ARCH_VCPU_H

#include "vmm/svm/vmcb.h"

struct vcpu_arch {
	struct vmcb vmcb;
};

#endif
