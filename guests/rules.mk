# Guests lightpath runs (multiboot v1 kernels), included from the top
# Makefile. `make guests` builds build/guests/*.elf.

G_DIR     := $(BUILD)/guests
G_CFLAGS  := -std=gnu11 -O2 -Wall -Wextra -Werror -ffreestanding -fno-pic -fno-pie \
             -fno-stack-protector -nostdlib -static -mno-red-zone -mgeneral-regs-only \
             -fno-asynchronous-unwind-tables -I. -Iinclude -MMD -MP
G_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-z,max-page-size=0x1000 \
             -Wl,--no-warn-rwx-segments -Wl,-T,guests/rt/guest.ld

# Runtime: the same C for both widths; -m32 also needs 64-bit division.
G_RT32 := $(patsubst %,$(G_DIR)/obj32/%.o,guests/rt/entry32.S guests/rt/rt.c \
          guests/rt/ap32.c guests/rt/libgcc32.c lib/string.c lib/printf.c)
G_RT64 := $(patsubst %,$(G_DIR)/obj64/%.o,guests/rt/entry64.S guests/rt/rt.c \
          lib/string.c lib/printf.c)

# 32-bit self tests (flat protected mode, paging off): guests/selftest/NAME.c
G_TESTS32 := hello cpuid ports msrs virtinsn triple stats dr hlt mmio_bad irqstate forever timers side smp virtio virtionet
# 64-bit self tests (long mode, paging on): guests/selftest/NAME.c
G_TESTS64 := nextrip64 syscall64
# Self tests built at both widths from one source: guests/selftest/NAME.c ->
# NAME32.elf (flat protected mode) and NAME64.elf (long mode, paging on)
G_TESTS_BOTH := mmio unclaimed tfstep irqonce mbinfo cpumsr hpet intr
# 32-bit self tests linked at 0x8000 instead of 1 MiB (a kernel below 1 MiB):
# guests/selftest/NAME.c -> NAME-low32.elf
G_TESTS_LOW32 := mbinfo
G_LOW_ADDR    := 0x8000
# Hostile guests: every guests/hostile/NAME.c, 64-bit when NAME ends in 64
G_HOSTILE_SRCS := $(wildcard guests/hostile/*.c)
G_HOSTILE64 := $(patsubst guests/hostile/%.c,%,$(filter %64.c,$(G_HOSTILE_SRCS)))
G_HOSTILE32 := $(patsubst guests/hostile/%.c,%,$(filter-out %64.c,$(G_HOSTILE_SRCS)))

G_ELFS := $(G_TESTS32:%=$(G_DIR)/%.elf) $(G_TESTS64:%=$(G_DIR)/%.elf) \
          $(G_HOSTILE32:%=$(G_DIR)/%.elf) $(G_HOSTILE64:%=$(G_DIR)/%.elf) \
          $(G_DIR)/bench32.elf $(G_DIR)/bench64.elf $(G_DIR)/vbench.elf \
          $(G_TESTS_BOTH:%=$(G_DIR)/%32.elf) $(G_TESTS_BOTH:%=$(G_DIR)/%64.elf) \
          $(G_TESTS_LOW32:%=$(G_DIR)/%-low32.elf)

.PHONY: guests guests-native
guests: $(G_ELFS)

$(G_DIR)/obj32/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$< [guest32])$(CC) $(G_CFLAGS) -m32 -c $< -o $@

$(G_DIR)/obj32/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(call say,AS,$< [guest32])$(CC) $(G_CFLAGS) -m32 -c $< -o $@

$(G_DIR)/obj64/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$< [guest64])$(CC) $(G_CFLAGS) -m64 -c $< -o $@

$(G_DIR)/obj64/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(call say,AS,$< [guest64])$(CC) $(G_CFLAGS) -m64 -c $< -o $@

$(G_TESTS32:%=$(G_DIR)/%.elf): $(G_DIR)/%.elf: $(G_DIR)/obj32/guests/selftest/%.c.o \
		$(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_TESTS64:%=$(G_DIR)/%.elf): $(G_DIR)/%.elf: $(G_DIR)/obj64/guests/selftest/%.c.o \
		$(G_RT64) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m64 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_HOSTILE32:%=$(G_DIR)/%.elf): $(G_DIR)/%.elf: $(G_DIR)/obj32/guests/hostile/%.c.o \
		$(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_HOSTILE64:%=$(G_DIR)/%.elf): $(G_DIR)/%.elf: $(G_DIR)/obj64/guests/hostile/%.c.o \
		$(G_RT64) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m64 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_DIR)/bench32.elf: $(G_DIR)/obj32/guests/bench/bench.c.o $(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_DIR)/vbench.elf: $(G_DIR)/obj32/guests/bench/vbench.c.o $(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_DIR)/bench64.elf: $(G_DIR)/obj64/guests/bench/bench.c.o $(G_RT64) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m64 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_TESTS_BOTH:%=$(G_DIR)/%32.elf): $(G_DIR)/%32.elf: $(G_DIR)/obj32/guests/selftest/%.c.o \
		$(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_TESTS_BOTH:%=$(G_DIR)/%64.elf): $(G_DIR)/%64.elf: $(G_DIR)/obj64/guests/selftest/%.c.o \
		$(G_RT64) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m64 $(G_CFLAGS) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

$(G_TESTS_LOW32:%=$(G_DIR)/%-low32.elf): $(G_DIR)/%-low32.elf: $(G_DIR)/obj32/guests/selftest/%.c.o \
		$(G_RT32) guests/rt/guest.ld
	$(call say,LD,$@)$(CC) -m32 $(G_CFLAGS) -Wl,--defsym=RT_LOAD_ADDR=$(G_LOW_ADDR) $(G_LDFLAGS) -o $@ $(filter %.o,$^)

# ELF32 copies of the 64-bit guests, only so that QEMU's own multiboot
# loader (which refuses ELF64) can boot them without lightpath.
guests-native: $(G_TESTS64:%=$(G_DIR)/native/%.elf) $(G_DIR)/native/bench64.elf
$(G_DIR)/native/%.elf: $(G_DIR)/%.elf
	@mkdir -p $(dir $@)
	$(call say,OBJCOPY,$@)$(OBJCOPY) -I elf64-x86-64 -O elf32-i386 $< $@

-include $(G_RT32:.o=.d) $(G_RT64:.o=.d) \
         $(wildcard $(G_DIR)/obj32/guests/*/*.d $(G_DIR)/obj64/guests/*/*.d)
