build/hv/boot/entry.S.o: boot/entry.S
