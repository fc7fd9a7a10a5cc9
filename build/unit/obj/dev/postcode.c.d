build/unit/obj/dev/postcode.c.o: dev/postcode.c dev/postcode.h \
 dev/device.h include/lightpath/abi.h
dev/postcode.h:
dev/device.h:
include/lightpath/abi.h:
