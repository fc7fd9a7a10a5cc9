build/guests/obj32/guests/rt/entry32.S.o: guests/rt/entry32.S \
 guests/rt/isr_stubs.inc
guests/rt/isr_stubs.inc:
