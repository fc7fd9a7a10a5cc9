build/unit/obj/tests/unit/test_pmtimer.c.o: tests/unit/test_pmtimer.c \
 dev/pmtimer.h dev/device.h include/lightpath/abi.h tests/unit/stubs.h
dev/pmtimer.h:
dev/device.h:
include/lightpath/abi.h:
tests/unit/stubs.h:
