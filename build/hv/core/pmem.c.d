build/hv/core/pmem.c.o: core/pmem.c core/pmem.h core/bootinfo.h \
 lib/string.h
core/pmem.h:
core/bootinfo.h:
lib/string.h:
