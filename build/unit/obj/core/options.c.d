build/unit/obj/core/options.c.o: core/options.c core/options.h \
 include/lightpath/abi.h lib/printf.h lib/string.h
core/options.h:
include/lightpath/abi.h:
lib/printf.h:
lib/string.h:
