build/hv/emul/pio_decode.c.o: emul/pio_decode.c emul/pio_decode.h \
 vmm/io_intercept.h
emul/pio_decode.h:
vmm/io_intercept.h:
