build/guests/obj32/guests/selftest/stats.c.o: guests/selftest/stats.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
