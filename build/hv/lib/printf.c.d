build/hv/lib/printf.c.o: lib/printf.c lib/printf.h
lib/printf.h:
