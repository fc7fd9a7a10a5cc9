build/guests/obj32/guests/selftest/hlt.c.o: guests/selftest/hlt.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
