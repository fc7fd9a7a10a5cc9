build/guests/obj64/guests/bench/bench.c.o: guests/bench/bench.c \
 guests/rt/rt.h include/lightpath/abi.h lib/printf.h lib/string.h
guests/rt/rt.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
