build/hv/vmm/exit.c.o: vmm/exit.c vmm/exit.h vmm/vm.h core/options.h \
 dev/debug_exit.h dev/device.h dev/pmtimer.h include/lightpath/abi.h \
 dev/postcode.h dev/uart16550.h include/lightpath/abi.h \
 vmm/svm/svm_vcpu.h vmm/svm/vmcb.h core/console.h core/cpu.h lib/printf.h \
 vmm/vendor.h
vmm/exit.h:
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
core/console.h:
core/cpu.h:
lib/printf.h:
vmm/vendor.h:
