build/guests/obj32/guests/selftest/msrs.c.o: guests/selftest/msrs.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
