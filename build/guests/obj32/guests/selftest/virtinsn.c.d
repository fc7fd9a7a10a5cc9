build/guests/obj32/guests/selftest/virtinsn.c.o: \
 guests/selftest/virtinsn.c guests/rt/rt.h include/lightpath/abi.h \
 lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
