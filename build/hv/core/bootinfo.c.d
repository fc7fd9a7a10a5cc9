build/hv/core/bootinfo.c.o: core/bootinfo.c core/bootinfo.h lib/string.h
core/bootinfo.h:
lib/string.h:
