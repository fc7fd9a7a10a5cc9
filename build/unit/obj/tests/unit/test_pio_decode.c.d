build/unit/obj/tests/unit/test_pio_decode.c.o: \
 tests/unit/test_pio_decode.c emul/pio_decode.h vmm/io_intercept.h
emul/pio_decode.h:
vmm/io_intercept.h:
