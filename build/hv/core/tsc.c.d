build/hv/core/tsc.c.o: core/tsc.c core/tsc.h core/cpu.h
core/tsc.h:
core/cpu.h:
