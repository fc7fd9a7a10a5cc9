# Intel VT-x image: the common code compiled once more, against this
# backend's arch_vcpu.h, and linked with vmm/vmx/ into build/lightpath-vmx.elf
# (ELF32 like the SVM image, for GRUB's multiboot under Bochs). Included from
# the top Makefile.

VMX_SRCS   := $(filter-out vmm/vmx/asm-offsets.c,$(wildcard vmm/vmx/*.c vmm/vmx/*.S))
VMX_CFLAGS := $(HV_CFLAGS) -Ivmm/vmx -I$(BUILD)/gen/vmx
VMX_OBJS   := $(patsubst %,$(BUILD)/hv-vmx/%.o,$(COMMON_SRCS) $(VMX_SRCS))

hv: $(BUILD)/lightpath-vmx.elf

$(BUILD)/lightpath-vmx64.elf: $(VMX_OBJS) boot/linker.ld
	$(call say,LD,$@)$(CC) $(VMX_CFLAGS) $(HV_LDFLAGS) -o $@ $(VMX_OBJS)

$(BUILD)/lightpath-vmx.elf: $(BUILD)/lightpath-vmx64.elf
	$(call say,OBJCOPY,$@)$(OBJCOPY) -I elf64-x86-64 -O elf32-i386 $< $@

$(VMX_OBJS): Makefile vmm/vmx/rules.mk

$(BUILD)/hv-vmx/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$< [vmx])$(CC) $(VMX_CFLAGS) -c $< -o $@

$(BUILD)/hv-vmx/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(call say,AS,$< [vmx])$(CC) $(VMX_CFLAGS) -D__ASSEMBLY__ -c $< -o $@

$(BUILD)/gen/vmx/asm-offsets.h: vmm/vmx/asm-offsets.c $(wildcard vmm/*.h vmm/vmx/*.h)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(CC) $(VMX_CFLAGS) -S -o $@.s $<
	$(Q)sed -n 's/.*@@OFFSET \([A-Z0-9_]*\) \$$\{0,1\}\([0-9-]*\).*/#define \1 \2/p' $@.s > $@
$(BUILD)/hv-vmx/vmm/vmx/entry.S.o: $(BUILD)/gen/vmx/asm-offsets.h

-include $(VMX_OBJS:.o=.d)
