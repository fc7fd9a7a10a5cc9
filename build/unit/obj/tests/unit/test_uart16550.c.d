build/unit/obj/tests/unit/test_uart16550.c.o: tests/unit/test_uart16550.c \
 dev/uart16550.h dev/device.h tests/unit/stubs.h
dev/uart16550.h:
dev/device.h:
tests/unit/stubs.h:
