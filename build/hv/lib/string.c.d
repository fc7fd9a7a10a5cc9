build/hv/lib/string.c.o: lib/string.c lib/string.h
lib/string.h:
