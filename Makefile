# lightpath build. `make` builds the hypervisor and guests; `make run`,
# `make test`, `make bench`, `make iso` are the user-facing targets (README).

BUILD      := build
CC         := gcc
OBJCOPY    := objcopy

# One line per step ("  CC      vmm/vm.c"); `make V=1` prints the commands
# in full. Compiler errors and warnings show either way. A recipe line
# starts with $(call say,TAG,WHAT) (or $(Q) for a step that needs no line
# of its own).
ifeq ($(V),1)
Q   :=
say  =
else
Q   := @
say  = @printf '  %-7s %s\n' '$(1)' '$(2)';
endif

WARN       := -Wall -Wextra -Werror
# -ffixed-r10/r11/rbx: no hypervisor C code uses r10, r11 or rbx (nor does
# its assembly, the exit stubs and the light path's rbx accessors aside), so
# the light loop keeps the guest's r10, r11 and rbx in the CPU across every
# light handler and interrupt, as it keeps rbp and r12-r15 (vmm/light.h); the
# exit stub need not store and load them (test fixed-regs checks the images).
HV_CFLAGS  := -std=gnu11 -O2 $(WARN) -ffreestanding -fno-pic -fno-pie -mno-red-zone \
              -mgeneral-regs-only -mcmodel=small -fno-stack-protector -fno-asynchronous-unwind-tables \
              -ffixed-r10 -ffixed-r11 -ffixed-rbx \
              -fno-builtin -nostdinc -isystem $(shell $(CC) -print-file-name=include) -I. -Iinclude -MMD -MP
HV_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=0x1000 -Wl,-T,boot/linker.ld

# Vendor split at link time: the common code is compiled once per backend
# (struct vcpu embeds the backend's arch_vcpu.h) and linked with that
# backend only. build/lightpath.elf is the AMD SVM image.
COMMON_SRCS := $(wildcard boot/*.S boot/*.c lib/*.c core/*.S core/*.c vmm/*.c dev/*.c emul/*.c)
SVM_SRCS    := $(filter-out vmm/svm/asm-offsets.c,$(wildcard vmm/svm/*.c vmm/svm/*.S))
SVM_CFLAGS  := $(HV_CFLAGS) -Ivmm/svm -I$(BUILD)/gen/svm
SVM_OBJS    := $(patsubst %,$(BUILD)/hv/%.o,$(COMMON_SRCS) $(SVM_SRCS))

.PHONY: all hv guests run test bench iso unit-tests clean deps
all: hv guests

hv: $(BUILD)/lightpath.elf

# Linked as ELF64 at 1 MiB; QEMU's -kernel wants the multiboot image as ELF32.
$(BUILD)/lightpath64.elf: $(SVM_OBJS) boot/linker.ld
	$(call say,LD,$@)$(CC) $(SVM_CFLAGS) $(HV_LDFLAGS) -o $@ $(SVM_OBJS)

$(BUILD)/lightpath.elf: $(BUILD)/lightpath64.elf
	$(call say,OBJCOPY,$@)$(OBJCOPY) -I elf64-x86-64 -O elf32-i386 $< $@

# The flags are part of every object (-ffixed-r10/r11 above all): a
# change to them rebuilds the hypervisor.
$(SVM_OBJS): Makefile

$(BUILD)/hv/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(SVM_CFLAGS) -c $< -o $@

$(BUILD)/hv/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(CC) $(SVM_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

# Assembly offsets are generated from C (offsetof), never typed by hand.
$(BUILD)/gen/svm/asm-offsets.h: vmm/svm/asm-offsets.c $(wildcard vmm/*.h vmm/svm/*.h)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(CC) $(SVM_CFLAGS) -S -o $@.s $<
	$(Q)sed -n 's/.*@@OFFSET \([A-Z0-9_]*\) \$$\{0,1\}\([0-9-]*\).*/#define \1 \2/p' $@.s > $@
$(BUILD)/hv/vmm/svm/entry.S.o: $(BUILD)/gen/svm/asm-offsets.h

# A second backend adds its own image the same way (vmm/vmx/rules.mk).
-include vmm/vmx/rules.mk

-include guests/rules.mk
-include tests/unit/rules.mk
-include tools/rules.mk

clean:
	$(call say,CLEAN,$(BUILD))rm -rf $(BUILD)

-include $(SVM_OBJS:.o=.d)
