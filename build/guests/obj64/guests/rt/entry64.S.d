build/guests/obj64/guests/rt/entry64.S.o: guests/rt/entry64.S \
 guests/rt/isr_stubs.inc
guests/rt/isr_stubs.inc:
