build/hv/core/console.c.o: core/console.c core/console.h core/cpu.h \
 include/lightpath/abi.h lib/printf.h
core/console.h:
core/cpu.h:
include/lightpath/abi.h:
lib/printf.h:
