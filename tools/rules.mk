# User-facing targets: make deps / run / test / bench / iso (README.md).
# Included by the top Makefile; the scripts live in tools/.

PYTHON  ?= /usr/bin/python3
LP_OPTS ?=
export LP_OPTS

# Installs missing Debian packages (quiet when everything is present).
deps:
	@tools/deps.sh

# Boot lightpath with the benchmark guests; status 0 -> exit 0.
run: deps
	@$(MAKE) --no-print-directory all
	@tools/run.sh

# Unit tests (cmocka) + integration tests under QEMU; ends "N passed, M failed".
test: deps
	@$(MAKE) --no-print-directory all unit-tests
	@tools/test.sh

# Instructions per exit under QEMU -icount, all configurations.
bench: deps
	@$(MAKE) --no-print-directory all
	@$(PYTHON) tools/bench.py

# GRUB multiboot2 ISO for real hardware: build/lightpath.iso
iso: deps
	@$(MAKE) --no-print-directory all
	@tools/mkiso.sh
