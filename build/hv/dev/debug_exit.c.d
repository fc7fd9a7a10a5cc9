build/hv/dev/debug_exit.c.o: dev/debug_exit.c dev/debug_exit.h \
 dev/device.h include/lightpath/abi.h
dev/debug_exit.h:
dev/device.h:
include/lightpath/abi.h:
