# Host unit tests (cmocka). The code under test is the hypervisor's own
# dev/, emul/ and core/options.c, built hosted with sanitizers.
#   make unit-tests   build build/unit/test_*
#   make unit-check   run them all; non-zero exit if any test failed

UNIT_DIR     := $(BUILD)/unit
UNIT_CC      ?= gcc
UNIT_CFLAGS  := -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined \
                -fno-omit-frame-pointer -fno-sanitize-recover=all -I. -Iinclude -MMD -MP
UNIT_LDLIBS  := -lcmocka

# Code under test, shared by every test binary (plus the service stubs).
UNIT_SUT_SRCS := core/options.c $(wildcard dev/*.c emul/*.c) tests/unit/stubs.c
UNIT_SUT_OBJS := $(patsubst %,$(UNIT_DIR)/obj/%.o,$(UNIT_SUT_SRCS))
UNIT_TEST_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS     := $(patsubst tests/unit/%.c,$(UNIT_DIR)/%,$(UNIT_TEST_SRCS))

.PHONY: unit-tests unit-check
unit-tests: $(UNIT_TESTS)

$(UNIT_DIR)/obj/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(UNIT_CC) $(UNIT_CFLAGS) -c $< -o $@

$(UNIT_DIR)/test_%: $(UNIT_DIR)/obj/tests/unit/test_%.c.o $(UNIT_SUT_OBJS)
	$(UNIT_CC) $(UNIT_CFLAGS) -o $@ $^ $(UNIT_LDLIBS)

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

# Keep the objects make would otherwise delete as intermediates.
.SECONDARY: $(UNIT_SUT_OBJS) $(UNIT_TEST_SRCS:tests/unit/%.c=$(UNIT_DIR)/obj/tests/unit/%.c.o)
