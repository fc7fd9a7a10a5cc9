build/hv/vmm/svm/svm_entry.S.o: vmm/svm/svm_entry.S \
 build/gen/asm-offsets.h
build/gen/asm-offsets.h:
