# Host unit tests (cmocka). The code under test is the hypervisor's own
# dev/, emul/ and core/options.c, built hosted with sanitizers.
#   make unit-tests   build build/unit/test_*
#   make unit-check   run them all; non-zero exit if any test failed
#   make zydis-diff N=1000000   longer decoder differential run against Zydis
#   make fuzz FUZZ_SECONDS=60   libFuzzer run of decode+emulate (clang)

UNIT_DIR     := $(BUILD)/unit
UNIT_CC      ?= gcc
UNIT_CFLAGS  := -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined \
                -fno-omit-frame-pointer -fno-sanitize-recover=all -I. -Iinclude -MMD -MP
UNIT_LDLIBS  := -lcmocka

# Code under test, shared by every test binary (plus the service stubs).
UNIT_SUT_SRCS := core/options.c core/madt.c core/smbios.c $(wildcard dev/*.c emul/*.c) vmm/linux_boot.c vmm/vmconfig.c \
                 vmm/loader.c vmm/firmware.c \
                 vmm/spec_policy.c vmm/cpuid_policy.c vmm/msr_map.c vmm/exit_table.c tests/unit/stubs.c
UNIT_SUT_OBJS := $(patsubst %,$(UNIT_DIR)/obj/%.o,$(UNIT_SUT_SRCS))
UNIT_TEST_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS     := $(patsubst tests/unit/%.c,$(UNIT_DIR)/%,$(UNIT_TEST_SRCS))

# The decoder's differential test against Zydis (libzydis-dev): a cmocka
# program too, run by unit-check with a bounded sample (ZYDIS_DIFF_N).
UNIT_ZYDIS     := $(UNIT_DIR)/diff_zydis
UNIT_TESTS     += $(UNIT_ZYDIS)

.PHONY: unit-tests unit-check
unit-tests: $(UNIT_TESTS)

$(UNIT_DIR)/obj/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$< [unit])$(UNIT_CC) $(UNIT_CFLAGS) -c $< -o $@

$(UNIT_DIR)/test_%: $(UNIT_DIR)/obj/tests/unit/test_%.c.o $(UNIT_SUT_OBJS)
	$(call say,LD,$@)$(UNIT_CC) $(UNIT_CFLAGS) -o $@ $^ $(UNIT_LDLIBS)

$(UNIT_ZYDIS): $(UNIT_DIR)/obj/tests/unit/diff_zydis.c.o $(UNIT_DIR)/obj/emul/x86_decode.c.o
	$(call say,LD,$@)$(UNIT_CC) $(UNIT_CFLAGS) -o $@ $^ $(UNIT_LDLIBS) -lZydis

# test_linux_boot loads a real bzImage: Debian's kernel (the package
# linux-image-amd64 depends on), fetched with apt-get download (nothing is
# installed) by tools/linux/build.sh --kernel-only, which also builds the
# Linux test guest from the same .deb (`make linux-guest`): one download,
# kept in build/linux/debs/. Offline, the fetch only warns and the
# real-kernel tests skip; the fabricated-header tests still run.
UNIT_LINUX_DIR    := $(BUILD)/linux
UNIT_LINUX_KERNEL := $(UNIT_LINUX_DIR)/vmlinuz
$(UNIT_DIR)/test_linux_boot: | $(UNIT_LINUX_KERNEL)
$(UNIT_LINUX_KERNEL):
	@if tools/linux/build.sh --kernel-only >/dev/null 2>&1 && [ -f $@ ]; then \
		echo "unit: fetched Debian's bzImage -> $@"; \
	else \
		echo "unit: warning: could not fetch a Debian kernel; test_linux_boot skips its real-kernel tests"; \
	fi

# Runs every binary even after a failure, so one run shows all failures.
unit-check: unit-tests
	@failed=""; \
	for t in $(UNIT_TESTS); do \
		echo "== $$t"; \
		$$t || failed="$$failed $$(basename $$t)"; \
	done; \
	if [ -n "$$failed" ]; then echo "unit-check: FAILED:$$failed"; exit 1; fi; \
	echo "unit-check: all $(words $(UNIT_TESTS)) test programs passed"

-include $(UNIT_SUT_OBJS:.o=.d) $(UNIT_TEST_SRCS:tests/unit/%.c=$(UNIT_DIR)/obj/tests/unit/%.c.d)
-include $(UNIT_DIR)/obj/tests/unit/diff_zydis.c.d

# Keep the objects make would otherwise delete as intermediates.
.SECONDARY: $(UNIT_SUT_OBJS) $(UNIT_TEST_SRCS:tests/unit/%.c=$(UNIT_DIR)/obj/tests/unit/%.c.o) \
            $(UNIT_DIR)/obj/tests/unit/diff_zydis.c.o

# Longer differential run: `make zydis-diff N=2000000 [SEED=n]`.
.PHONY: zydis-diff
zydis-diff: N ?= 2000000
zydis-diff: SEED ?=
zydis-diff: $(UNIT_ZYDIS)
	ZYDIS_DIFF_N=$(N) ZYDIS_DIFF_SEED=$(SEED) $(UNIT_ZYDIS)

# libFuzzer target for decode + emulate against a fake guest memory:
# `make fuzz FUZZ_SECONDS=60`. Needs clang and its libFuzzer/sanitizer
# runtime (Debian 12: clang + libclang-rt-14-dev, installed by
# LP_DEPS_FUZZ=1 tools/deps.sh). The corpus grows in build/fuzz/corpus,
# seeded from tests/fuzz/seeds; crashing inputs land in build/fuzz/artifacts/.
FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 60
FUZZ_CFLAGS   := -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=all -fno-omit-frame-pointer -I. -Iinclude
FUZZ_SRCS     := tests/fuzz/fuzz_emulate.c emul/x86_decode.c emul/x86_emulate.c emul/emul_operand.c \
                 emul/emul_string.c emul/emul_alu.c emul/emul_paging.c
.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_DIR)/fuzz_emulate
$(FUZZ_DIR)/fuzz_emulate: $(FUZZ_SRCS) $(wildcard emul/*.h)
	@mkdir -p $(dir $@)
	@command -v $(FUZZ_CC) >/dev/null || { echo "fuzz: $(FUZZ_CC) not found (apt-get install clang)"; exit 1; }
	$(call say,CC,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(FUZZ_SRCS)
fuzz:
	@LP_DEPS_FUZZ=1 tools/deps.sh
	@$(MAKE) --no-print-directory fuzz-build
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	$(FUZZ_DIR)/fuzz_emulate -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus tests/fuzz/seeds
