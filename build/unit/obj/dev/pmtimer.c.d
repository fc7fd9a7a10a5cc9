build/unit/obj/dev/pmtimer.c.o: dev/pmtimer.c dev/pmtimer.h dev/device.h \
 include/lightpath/abi.h
dev/pmtimer.h:
dev/device.h:
include/lightpath/abi.h:
