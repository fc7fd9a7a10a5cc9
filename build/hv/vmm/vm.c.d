build/hv/vmm/vm.c.o: vmm/vm.c vmm/vm.h core/options.h dev/debug_exit.h \
 dev/device.h dev/pmtimer.h include/lightpath/abi.h dev/postcode.h \
 dev/uart16550.h include/lightpath/abi.h vmm/svm/svm_vcpu.h \
 vmm/svm/vmcb.h core/console.h core/cpu.h core/pmem.h core/bootinfo.h \
 core/tsc.h lib/printf.h lib/string.h vmm/exit.h vmm/loader.h \
 vmm/vendor.h
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
core/pmem.h:
core/bootinfo.h:
core/tsc.h:
lib/printf.h:
lib/string.h:
vmm/exit.h:
vmm/loader.h:
vmm/vendor.h:
