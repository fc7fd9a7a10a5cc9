# User-facing targets: make deps / run / test / bench / iso (README.md).
# Included by the top Makefile; the scripts live in tools/.

PYTHON  ?= /usr/bin/python3
LP_OPTS ?=
export LP_OPTS

# Installs missing Debian packages (quiet when everything is present).
deps:
	@tools/deps.sh

# Boot lightpath with the Linux guest (2 vCPUs on a machine with 2 CPUs or
# more: tools/run.sh), its shell on the terminal; `poweroff`
# in the guest ends the run (status 0 -> exit 0). `make run LP_ROOT=disk`:
# Linux runs from the root disk build/linux/rootfs.img (1 vCPU).
run: deps
	@$(MAKE) --no-print-directory all linux-guest
	@tools/run.sh linux

# The old `make run`: lightpath with the benchmark guests under -icount.
run-bench: deps
	@$(MAKE) --no-print-directory all
	@tools/run.sh bench

# The Linux test guest from Debian packages (tools/linux/build.sh):
# build/linux/{vmlinuz,initrd.cpio.gz,rootfs.img,linux.cfg,linux-smp2.cfg,
# linux-rootfs.cfg}.
linux-guest: deps
	@tools/linux/build.sh

# Linux boot to the shell under lightpath vs plain QEMU (3 runs each): exit
# reasons, light share, wall-time ratio -> docs/BENCHMARKS.md (<!-- linux -->);
# then one -icount boot with stats=all for the exits' cost and sites, drawn
# with matplotlib (installed as for `make bench`; without it no pictures).
# BACKEND=vmx: the VT-x image under Bochs, 1 run, no direct boot
# (build/bench/linux-boot-vmx.json, <!-- linux-vmx -->).
# A few minutes; not part of `make test`.
linux-report: deps
	@LP_DEPS_BENCH=1 tools/deps.sh || true
	@$(MAKE) --no-print-directory all linux-guest
	@$(PYTHON) tools/linux-boot-report.py --backend $(BACKEND)

.PHONY: run-bench linux-guest linux-report

# Unit tests (cmocka) + integration tests under QEMU; ends "N passed, M failed".
test: deps
	@$(MAKE) --no-print-directory all unit-tests
	@tools/test.sh

# The timing-, interrupt-, SMP-, virtio- and link-sensitive integration
# tests (QEMU and Bochs; the list: tools/stress.py's SELECT), ROUNDS rounds
# under a host CPU hog (one busy process per core, stopped however the run
# ends): a table of runs and failures per test, failed runs' serial logs in
# build/stress/<test>-round<N>.log. STRESS_TESTS=regex: a subset; QUICK=1:
# one round of the shortest (what `make test` ends with). Hours at 20
# rounds of everything.
ROUNDS ?= 20
stress: deps
	@$(MAKE) --no-print-directory all
	@$(PYTHON) tools/stress.py --rounds $(ROUNDS) $(if $(STRESS_TESTS),--tests '$(STRESS_TESTS)') $(if $(QUICK),--quick)

.PHONY: stress

# Instructions per exit under QEMU -icount, all configurations;
# BACKEND=vmx: the Intel VT-x image under Bochs (build/bench/exits-vmx.json);
# BACKEND=svm-nrip: the SVM image with NRIP save under Bochs (exits-nrip.json).
# Each also draws its flat 32-bit table as docs/img/bench-*.svg with matplotlib,
# installed here rather than by `deps` (make test does not need it); if that
# install fails the bench still runs and says the picture was not drawn.
BACKEND ?= svm
bench: deps
	@LP_DEPS_BENCH=1 tools/deps.sh || true
	@$(MAKE) --no-print-directory all
	@$(PYTHON) tools/bench.py --backend $(BACKEND)

# One bench bracket, instruction by instruction, under QEMU's gdb stub
# (tools/exit_trace.py): ROW=hypercall (several: ROW="cpuid rdmsr"),
# CONFIG= one of the bench's configurations (default spec-off), GUEST=32|64,
# LIST=1 for every instruction's disassembly. Seconds per row.
ROW ?= hypercall
CONFIG ?= spec-off
GUEST ?= 32
exit-trace: deps
	@$(MAKE) --no-print-directory all
	@$(PYTHON) tools/exit_trace.py --config $(CONFIG) --guest $(GUEST) $(if $(LIST),--list) $(ROW)

.PHONY: exit-trace

# lightpath vs KVM on the same exits (tools/compare/): the bench guests under
# lightpath and under KVM in Debian's Linux, both in the same QEMU -icount
# configuration, in two pairs: lightpath spec=off vs Linux mitigations=off,
# and both sides' defaults -> build/bench/compare.json, docs/BENCHMARKS.md.
# A few minutes (two Linux boots under TCG); not part of `make test`.
compare: deps
	@$(MAKE) --no-print-directory all $(BUILD)/compare/kvmrun
	@$(PYTHON) tools/compare/compare.py

# The /dev/kvm runner, static so that it runs from a busybox initramfs.
$(BUILD)/compare/kvmrun: tools/compare/kvmrun.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -o $@ $<

.PHONY: compare

# GRUB multiboot2 ISO for real hardware: build/lightpath.iso
iso: deps
	@$(MAKE) --no-print-directory all
	@tools/mkiso.sh
