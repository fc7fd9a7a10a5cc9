build/hv/core/main.c.o: core/main.c core/bootinfo.h core/console.h \
 core/cpu.h core/options.h core/pmem.h core/tsc.h include/lightpath/abi.h \
 vmm/vendor.h vmm/vm.h dev/debug_exit.h dev/device.h dev/pmtimer.h \
 include/lightpath/abi.h dev/postcode.h dev/uart16550.h \
 vmm/svm/svm_vcpu.h vmm/svm/vmcb.h
core/bootinfo.h:
core/console.h:
core/cpu.h:
core/options.h:
core/pmem.h:
core/tsc.h:
include/lightpath/abi.h:
vmm/vendor.h:
vmm/vm.h:
dev/debug_exit.h:
dev/device.h:
dev/pmtimer.h:
include/lightpath/abi.h:
dev/postcode.h:
dev/uart16550.h:
vmm/svm/svm_vcpu.h:
vmm/svm/vmcb.h:
