build/guests/obj32/guests/selftest/hello.c.o: guests/selftest/hello.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
