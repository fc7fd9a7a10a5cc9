# lightpath build. `make` builds the hypervisor and guests; `make run`,
# `make test`, `make bench`, `make iso` are the user-facing targets (README).

BUILD      := build
CC         := gcc
OBJCOPY    := objcopy

WARN       := -Wall -Wextra -Werror
HV_CFLAGS  := -std=gnu11 -O2 $(WARN) -ffreestanding -fno-pic -fno-pie -mno-red-zone \
              -mgeneral-regs-only -mcmodel=small -fno-stack-protector -fno-asynchronous-unwind-tables \
              -fno-builtin -nostdinc -isystem $(shell $(CC) -print-file-name=include) -I. -Iinclude -MMD -MP
HV_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=0x1000 -Wl,-T,boot/linker.ld

HV_SRCS    := $(filter-out vmm/svm/asm-offsets.c,$(wildcard boot/*.S boot/*.c lib/*.c core/*.c vmm/*.c vmm/svm/*.c vmm/svm/*.S dev/*.c emul/*.c))
HV_OBJS    := $(patsubst %,$(BUILD)/hv/%.o,$(HV_SRCS))

.PHONY: all hv guests run test bench iso unit-tests clean deps
all: hv guests

hv: $(BUILD)/lightpath.elf

# Linked as ELF64 at 1 MiB; QEMU's -kernel wants the multiboot image as ELF32.
$(BUILD)/lightpath64.elf: $(HV_OBJS) boot/linker.ld
	$(CC) $(HV_CFLAGS) $(HV_LDFLAGS) -o $@ $(HV_OBJS)

$(BUILD)/lightpath.elf: $(BUILD)/lightpath64.elf
	$(OBJCOPY) -I elf64-x86-64 -O elf32-i386 $< $@

$(BUILD)/hv/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(HV_CFLAGS) -c $< -o $@

$(BUILD)/hv/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(HV_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

# Assembly offsets are generated from C (offsetof), never typed by hand.
$(BUILD)/gen/asm-offsets.h: vmm/svm/asm-offsets.c $(wildcard vmm/*.h vmm/svm/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(HV_CFLAGS) -S -o $@.s $<
	sed -n 's/.*@@OFFSET \([A-Z0-9_]*\) \$$\{0,1\}\([0-9-]*\).*/#define \1 \2/p' $@.s > $@
$(BUILD)/hv/vmm/svm/svm_entry.S.o: $(BUILD)/gen/asm-offsets.h

-include guests/rules.mk
-include tests/unit/rules.mk
-include tools/rules.mk

clean:
	rm -rf $(BUILD)

-include $(HV_OBJS:.o=.d)
