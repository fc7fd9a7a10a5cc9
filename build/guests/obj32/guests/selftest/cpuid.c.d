build/guests/obj32/guests/selftest/cpuid.c.o: guests/selftest/cpuid.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h \
 guests/selftest/nextrip.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
guests/selftest/nextrip.h:
