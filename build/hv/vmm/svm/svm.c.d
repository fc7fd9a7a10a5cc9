build/hv/vmm/svm/svm.c.o: vmm/svm/svm.c core/console.h core/cpu.h \
 core/pmem.h core/bootinfo.h emul/pio_decode.h vmm/io_intercept.h \
 emul/svm_ioio.h lib/string.h vmm/exit.h vmm/vm.h core/options.h \
 dev/debug_exit.h dev/device.h dev/pmtimer.h include/lightpath/abi.h \
 dev/postcode.h dev/uart16550.h include/lightpath/abi.h \
 vmm/svm/svm_vcpu.h vmm/svm/vmcb.h vmm/guest_mem.h vmm/vendor.h
core/console.h:
core/cpu.h:
core/pmem.h:
core/bootinfo.h:
emul/pio_decode.h:
vmm/io_intercept.h:
emul/svm_ioio.h:
lib/string.h:
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
vmm/guest_mem.h:
vmm/vendor.h:
