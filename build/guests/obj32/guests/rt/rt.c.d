build/guests/obj32/guests/rt/rt.c.o: guests/rt/rt.c guests/rt/rt.h \
 include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
