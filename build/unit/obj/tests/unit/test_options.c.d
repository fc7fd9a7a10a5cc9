build/unit/obj/tests/unit/test_options.c.o: tests/unit/test_options.c \
 core/options.h include/lightpath/abi.h
core/options.h:
include/lightpath/abi.h:
