build/guests/obj32/lib/string.c.o: lib/string.c lib/string.h
lib/string.h:
