build/unit/obj/tests/unit/test_svm_ioio.c.o: tests/unit/test_svm_ioio.c \
 emul/pio_decode.h vmm/io_intercept.h emul/svm_ioio.h
emul/pio_decode.h:
vmm/io_intercept.h:
emul/svm_ioio.h:
