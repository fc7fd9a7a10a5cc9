build/gen/asm-offsets.h.s: vmm/svm/asm-offsets.c vmm/vm.h core/options.h \
 dev/debug_exit.h dev/device.h dev/pmtimer.h include/lightpath/abi.h \
 dev/postcode.h dev/uart16550.h include/lightpath/abi.h \
 vmm/svm/svm_vcpu.h vmm/svm/vmcb.h
vmm/vm.h:
core/options.h:
dev/debug_exit.h:
dev/device.h:
dev/pmtimer.h:
include/lightpath/abi.h:
dev/postcode.h:
dev/uart16550.h:
include/lightpath/abi.h:
vmm/svm/svm_vcpu.h:
vmm/svm/vmcb.h:
