build/guests/obj32/guests/rt/libgcc32.c.o: guests/rt/libgcc32.c
