build/unit/obj/tests/unit/stubs.c.o: tests/unit/stubs.c \
 tests/unit/stubs.h dev/device.h
tests/unit/stubs.h:
dev/device.h:
