build/hv/dev/uart16550.c.o: dev/uart16550.c dev/uart16550.h dev/device.h \
 lib/string.h
dev/uart16550.h:
dev/device.h:
lib/string.h:
