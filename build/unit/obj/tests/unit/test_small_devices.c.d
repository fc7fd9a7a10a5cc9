build/unit/obj/tests/unit/test_small_devices.c.o: \
 tests/unit/test_small_devices.c dev/debug_exit.h dev/device.h \
 dev/postcode.h tests/unit/stubs.h
dev/debug_exit.h:
dev/device.h:
dev/postcode.h:
tests/unit/stubs.h:
