#!/usr/bin/python3
"""lightpath VMX integration tests: boot the Intel VT-x image under Bochs
(tools/lp-bochs, cpu corei7_skylake_x) with the project's guests and check
what it prints and how it ends; the self-test results must match the AMD SVM
backend's (booted under QEMU for the comparison) except for the documented
vendor-specific lines.

Run by tools/test.sh (`make test`) after itest.py; on its own:

    tests/integration/vmx_tests.py [-j JOBS] [-k REGEX] [--list] [--counts FILE]

Prints `PASS name` or `FAIL name: reason` per test (serial logs are kept in
build/test/vmx-<name>.log) and writes "passed failed" to --counts. Each Bochs
boot runs under `timeout` (LP_VMX_TIMEOUT seconds, default 120).
"""

import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import itest  # noqa: E402  (Boot, selftest_result, norm: the SVM suite's helpers)
from itest import Fail, check, guest, PREFIX  # noqa: E402

bench = itest.bench
ROOT = itest.ROOT
LP_BOCHS = os.path.join(ROOT, "tools", "lp-bochs")
TIMEOUT = int(os.environ.get("LP_VMX_TIMEOUT", "120"))

SELFTESTS = ("cpuid", "ports", "msrs", "virtinsn", "stats", "dr", "hlt", "nextrip64", "syscall64",
             "mmio32", "mmio64", "tfstep32", "tfstep64", "irqonce32", "irqonce64") + itest.UNCLAIMED_GUESTS + itest.MBINFO_GUESTS + \
            itest.CPUMSR_GUESTS + itest.TIMERS_GUESTS + itest.HPET_GUESTS + itest.INTR_GUESTS
# Guests run together (one VM each) in the switched-configuration boots.
MULTI_GUESTS = ("msrs", "dr", "hlt", "ports", "nextrip64", "syscall64")
ALL_OFF = " ".join("%s=%s" % (k, off) for k, _, off in bench.SWITCHES)
# Every switch off but light: the "always" pieces inside the light loop.
ALWAYS_IN_LIGHT = "dr=always pmu=always msr=always io=emulate"

# Lines that exist on one vendor only (guests/README.md, docs): the VMX
# instructions tested on Intel, and SYSCALL outside 64-bit mode, which Intel
# does not have (syscall64 tests the lazy syscall MSRs with a 64-bit SYSCALL on both).
INTEL_ONLY = re.compile(r"^ok # - (VMXON|VMCLEAR|VMPTRLD|VMPTRST|VMREAD|VMWRITE|VMLAUNCH|"
                        r"VMRESUME|VMXOFF|INVEPT|INVVPID|VMFUNC) |"
                        r"^ok # - legacy-mode SYSCALL raises #UD|"
                        r"^ok # - STAR reads back after a heavy exit$")
AMD_ONLY = re.compile(r"^ok # - (legacy-mode SYSCALL does not fault|SYSCALL arrives at STAR|"
                      r"SYSCALL loads CS from STAR|SYSCALL still arrives at the target after a "
                      r"heavy exit|STAR reads back after SYSCALL)")
NO_VMX_LINE = "lightpath: this CPU has no Intel VMX"
NO_EPT_LINE = "lightpath: this CPU's VMX has no EPT"
# The project's target for the VMX light path (instructions per VMCALL).
HYPERCALL_TARGET = 60

# The SVM image under Bochs' AMD model with NRIP save: the path every AMD CPU
# since 2009 takes (QEMU's SVM has no NRIP save).
SVM_IMAGE = "build/lightpath.elf"
NRIP_CPU = "ryzen"
NRIP_SELFTESTS = SELFTESTS + ("irqstate",)
NRIP_LINE = "lightpath: AMD SVM with nested paging; next RIP from the CPU (NRIP save)"
# Checks that fail under Bochs' SVM for a defect of the emulator, not of
# lightpath: at a #DB intercept Bochs 2.7 writes the cause neither into the
# VMCB's DR6 (as the APM has the CPU do, and as QEMU does) nor into DR6, so
# the #DB lightpath reflects carries no B0 (lightpath intercepts #DB:
# docs/SECURITY.md case 3, CVE-2015-8104). Exactly these may fail there, as exactly
# this; every other check must pass and equal QEMU's.
BOCHS_SVM_KNOWN = {
    "dr": ("DR6.B0 set in the #DB handler (got 0x0, expected 0x1)",),
    # the same for a single step the CPU made (lightpath's own steps over
    # the instructions it executes set DR6.BS in the VMCB and pass)
    "tfstep32": ("nop (run by the CPU): DR6.BS set (got 0x0, expected 0x4000)",),
    "tfstep64": ("nop (run by the CPU): DR6.BS set (got 0x0, expected 0x4000)",),
}


class BochsBoot(itest.Boot):
    """One Bochs run of the VMX image (`kernel`: another image, e.g. the SVM one
    under cpu ryzen); the same interface as itest.Boot."""

    def __init__(self, name, modules, append="", cpu=None, timeout=TIMEOUT, kernel=None, cpus=None):
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", name)
        self.log = os.path.join("build", "test", "vmx-" + safe + ".log")
        itest.claim_log(self.log)
        cmd = [LP_BOCHS, "--timeout", str(timeout * itest.CAP_FACTOR), "--log", self.log,
               "--name", "test-" + safe, "--append", append]
        if cpu:
            cmd += ["--cpu", cpu]
        if kernel:   # another image, e.g. the SVM one under cpu=ryzen
            cmd += ["--kernel", kernel]
        if cpus:     # Bochs' cpu: count=N
            cmd += ["--cpus", str(cpus)]
        cmd += list(modules)
        self.cmd = cmd
        self.timeout = timeout
        t0 = time.monotonic()
        # lp-bochs copies Bochs's serial file to the log at the end
        p, self.silent = itest.run_watched(cmd, os.path.join("build", "bochs", "test-" + safe,
                                                             "serial.txt"), timeout)
        self.secs = time.monotonic() - t0
        self.rc = p.returncode
        self.stderr = p.stderr
        try:
            self.text = itest.serial_log.read(os.path.join(ROOT, self.log))
        except OSError:
            self.text = ""
        self.lines = itest.serial_log.lines(self.text)   # split at '\n' only
        if p.stderr.strip():   # kept beside the log: make stress copies both
            with open(os.path.join(ROOT, self.log[:-4] + ".stderr"), "w") as f:
                f.write(p.stderr)

    def why_rc(self):
        if self.silent:
            return "hung: no output for %d s (at %d s)" % (self.silent, self.secs)
        if self.rc == 124 or self.rc == 137:
            return "timed out after %d s" % (self.timeout * itest.CAP_FACTOR)
        err = [l.strip() for l in self.stderr.splitlines() if l.strip()]
        own = [l for l in err if l.startswith("lp-bochs:")]
        if self.rc in (2, 3) and own:
            return own[-1]
        s = "lp-bochs exit %d" % self.rc
        if err:   # e.g. a tool lp-bochs ran (set -e) failed before Bochs started
            s += "; stderr: " + err[-1]
        if self.rc % 2 == 1:
            s += " (status %#x)" % (self.rc >> 1)
        last = [l for l in itest.serial_log.lightpath_lines(self.text) if l.startswith("lightpath:")]
        if last:
            s += "; last line: " + last[-1].strip()
        return s


def vendor_neutral(lines, vendor_only):
    """Normalised ok lines with the vendor's own instruction names mapped to
    AMD's and the vendor-specific lines left out."""
    out = []
    for l in lines:
        # (numbers are already blanked: "0f 01 c1" reads "#f # c#")
        l = l.replace("vmcall", "vmmcall").replace("#f # c#", "#f # d#")
        l = l.replace("GenuineIntel", "AuthenticAMD")
        if not vendor_only.match(l):
            out.append(l)
    return out


def diff(a, b):
    return [l for l in a if l not in b] + ["(missing) " + l for l in b if l not in a]


# name -> normalised ok lines of the VMX default-options run (for phase 2)
BASELINE = {}
BASELINE_LOCK = threading.Lock()


# How the VT-x banner names the way the guest's local APIC runs (vmm/vmx/cpu.c).
APICV_ON_LINE = (r"^lightpath: VMX local APIC: APIC virtualization \(APIC-access page, x2APIC and "
                 r"register virtualization, virtual-interrupt delivery\)$")
APICV_OFF_LINE = (r"^lightpath: VMX local APIC: interrupts injected, the APIC emulated on exits "
                  r"\(vmx.apicv=off\)$")
# Bochs 2.7's defect (virtual interrupts into IF=0 code on a host interrupt)
# is worked around where it exists: Bochs is detected from its BIOS's SMBIOS
# vendor and the absence of CPUID's hypervisor bit (vmm/vmx/bochs.c), with
# the default vmx.bochs_quirk=auto. Every default run under Bochs says so.
BOCHS_QUIRK_LINE = (r"^lightpath: VMX: Bochs detected \(SMBIOS BIOS vendor 'The Bochs Project', "
                    r"version 'Bochs [0-9.]+'; CPUID has no hypervisor bit\): host timer held out of "
                    r"guests, emulator defect workaround \(vmx\.bochs_quirk=auto\)$")
BOCHS_OFF_LINE = (r"^lightpath: VMX: Bochs detected \(SMBIOS BIOS vendor 'The Bochs Project', "
                  r"version 'Bochs [0-9.]+'; CPUID has no hypervisor bit\): no workaround "
                  r"\(vmx\.bochs_quirk=off: a virtual interrupt can reach guest code with IF=0\)$")
# What the Bochs twins' entry and exit add to a light exit (measured: 32;
# vmx_bochs_guest_entry and the two CR8 writes).
BOCHS_TWIN_EXTRA = 40
# With APIC virtualization off there is no virtual-interrupt delivery, and
# no defect to work around.
BOCHS_NO_QUIRK_LINE = (r"^lightpath: VMX: Bochs detected \(SMBIOS BIOS vendor 'The Bochs Project', "
                       r"version 'Bochs [0-9.]+'; CPUID has no hypervisor bit\): no workaround "
                       r"\(vmx\.bochs_quirk=auto, and no virtual-interrupt delivery, which the "
                       r"defect needs\)$")


# Exactly-once delivery through every kind of window, run with APIC
# virtualization (the default, vmx-selftest-*) and without (the fallback's
# injection path, vmx-selftest-*-apicv-off).
IRQONCE_GUESTS = ("irqonce32", "irqonce64")


def t_selftest(name):
    def run():
        b = BochsBoot("selftest-" + name, [guest(name)])
        oks = itest.selftest_result(b, name)
        b.expect_rc(1)
        b.expect(APICV_ON_LINE, "the banner line naming APIC virtualization (the default)")
        b.expect(BOCHS_QUIRK_LINE, "the line saying Bochs was detected and its defect worked around")
        b.expect(r"^lightpath: lightweight-exit hypervisor, Intel VT-x backend\s*$",
                 "'lightpath: lightweight-exit hypervisor, Intel VT-x backend'")
        b.expect(r"^lightpath: vm0: ended with status 0 ", "'lightpath: vm0: ended with status 0 (...)'")
        b.expect(r"^\s+total\s+\d+\s", "'total' row of the exit statistics table")
        b.expect_powered_off(0)
        if name in itest.UNCLAIMED_GUESTS:
            itest.expect_unclaimed_counts(b, name)
        with BASELINE_LOCK:
            BASELINE[name] = oks
        # The same guest on the SVM backend (QEMU TCG): the same results.
        s = itest.Boot("vmx-svm-baseline-" + name, [guest(name)])
        try:
            svm = itest.selftest_result(s, name, known=itest.QEMU_SVM_KNOWN)
        except Fail as e:
            raise Fail("the SVM run of %s failed, so there is nothing to compare with: %s" % (name, e))
        d = diff(vendor_neutral(oks, INTEL_ONLY), vendor_neutral(svm, AMD_ONLY))
        check(not d, "VMX and SVM results differ beyond the vendor-specific lines: " + "; ".join(d[:3]))
        return b
    return run


def t_nrip_selftest(name):
    """A self-test guest on the SVM image with NRIP save (Bochs ryzen): it
    passes, lightpath says it takes the next RIP from the CPU, and the
    results equal those under QEMU (no NRIP), apart from the CPU model."""
    def run():
        b = BochsBoot("nrip-selftest-" + name, [guest(name)], cpu=NRIP_CPU, kernel=SVM_IMAGE)
        oks = multi_results(b, [name], BOCHS_SVM_KNOWN)[name]
        expect_statuses(b, [name])
        b.expect(r"^lightpath: lightweight-exit hypervisor, AMD SVM backend\s*$",
                 "'lightpath: lightweight-exit hypervisor, AMD SVM backend'")
        b.expect(r"^%s\s*$" % re.escape(NRIP_LINE), "'%s'" % NRIP_LINE)
        if name in itest.UNCLAIMED_GUESTS:
            itest.expect_unclaimed_counts(b, name)
        with BASELINE_LOCK:
            BASELINE["nrip-" + name] = oks
        s = itest.Boot("nrip-qemu-baseline-" + name, [guest(name)])
        try:
            qemu = itest.selftest_result(s, name, known=itest.QEMU_SVM_KNOWN)
        except Fail as e:
            raise Fail("the QEMU run of %s failed, so there is nothing to compare with: %s" % (name, e))
        d = diff(oks, qemu)
        check(not d, "results with NRIP (Bochs) and without (QEMU) differ: " + "; ".join(d[:3]))
        return b
    return run


def t_nrip_switched(label, opts):
    """Every switch off on the SVM image with NRIP save: each "always" piece
    around the NRIP handlers; the guests' results equal the default run's."""
    def run():
        mods = [guest(n) for n in MULTI_GUESTS] + [guest("bench32", "n=20")]
        b = BochsBoot(label, mods, append=opts, cpu=NRIP_CPU, kernel=SVM_IMAGE)
        b.expect_options(opts)
        per = multi_results(b, MULTI_GUESTS, BOCHS_SVM_KNOWN)
        try:
            bench.parse_bench(b.text, n=20, modes=("flat32",))
            bench.check_config_bits(b.text, opts)
        except bench.BenchError as e:
            raise Fail(str(e))
        expect_statuses(b, list(MULTI_GUESTS) + ["bench32"])
        for n in MULTI_GUESTS:
            with BASELINE_LOCK:
                base = BASELINE.get("nrip-" + n)
            check(base is not None, "no baseline: nrip-selftest-%s (default options) failed" % n)
            d = diff(per[n], base)
            check(not d, "%s: results differ from the default options run: %s" % (n, "; ".join(d[:3])))
        return b
    return run


def expect_statuses(b, names):
    """Each guest ended with its excused failures as its status (0 for all
    but a BOCHS_SVM_KNOWN guest), and the power-off line and exit code agree."""
    statuses = [b.excused.get(n, 0) for n in names]
    for i, st in enumerate(statuses):
        b.expect(r"^lightpath: vm%d: ended with status %d " % (i, st),
                 "'lightpath: vm%d: ended with status %d (...)'" % (i, st))
    first = next((st for st in statuses if st), 0)
    if first:
        nonzero = sum(1 for st in statuses if st)
        i = statuses.index(first)
        itest.expect_first_nonzero(b, first, i, nonzero, len(names))
    else:
        b.expect_rc(1)
        b.expect_powered_off(0)


def multi_results(b, names, known=None):
    """{guest name: normalised ok lines} from a boot with one VM per guest.
    known: {guest: check texts an emulator defect fails}; such a failure
    counts as the check's ok line, any other fails the test."""
    per = {}
    b.excused = {}
    for i, n in enumerate(names):
        lines = [l[len("[vm%d] " % i):] for l in b.lines if l.startswith("[vm%d] " % i)]
        m = [re.match(r"selftest %s: (\d+) passed, (\d+) failed\s*$" % re.escape(n), l) for l in lines]
        m = [x for x in m if x]
        check(m, "vm%d (%s): no 'selftest %s:' verdict" % (i, n, n))
        allowed = (known or {}).get(n, ())
        bad = [l.strip() for l in lines if l.startswith("not ok")]
        excused = [l for l in bad if re.sub(r"^not ok \d+ - ", "", l) in allowed]
        unexcused = [l for l in bad if l not in excused]
        check(int(m[0].group(2)) == len(excused) and not unexcused,
              "vm%d (%s): %s" % (i, n, "; ".join(unexcused[:3]) or m[0].group(0)))
        check(int(m[0].group(1)) > 0, "vm%d (%s) ran no check" % (i, n))
        b.excused[n] = len(excused)   # the guest's exit status: its failed checks
        per[n] = [itest.norm(re.sub(r"^not ok (\d+ - .*?) \(got .*\)\s*$", r"ok \1", l)
                             if l.strip() in excused else l)
                  for l in lines if re.match(r"(not )?ok \d+", l)]
    return per


def t_switched(label, opts):
    def run():
        mods = [guest(n) for n in MULTI_GUESTS] + [guest("bench32", "n=20")]
        b = BochsBoot(label, mods, append=opts)
        b.expect_options(opts)
        per = multi_results(b, MULTI_GUESTS)
        try:
            bench.parse_bench(b.text, n=20, modes=("flat32",))
            bench.check_config_bits(b.text, opts)
        except bench.BenchError as e:
            raise Fail(str(e))
        b.expect_rc(1)
        b.expect_powered_off(0)
        for n in MULTI_GUESTS:
            with BASELINE_LOCK:
                base = BASELINE.get(n)
            check(base is not None, "no baseline: vmx-selftest-%s (default options) failed" % n)
            d = diff(per[n], base)
            check(not d, "%s: results differ from the default options run: %s" % (n, "; ".join(d[:3])))
        return b
    return run


def t_isolation():
    b = BochsBoot("isolation", [guest("triple"), guest("hello", "status=3")])
    b.expect(r"^\[vm0\] triple: about to triple fault\s*$", "'[vm0] triple: about to triple fault'")
    b.expect(r"^lightpath: vm0: stopped: triple fault \(VM exit 2\) at rip 0x[0-9a-fA-F]+\s*$",
             "'lightpath: vm0: stopped: triple fault (VM exit 2) at rip 0x...'")
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm1: ended with status 3 ", "'lightpath: vm1: ended with status 3 (...)'")
    itest.expect_first_nonzero(b, 0x70, 0, 2, 2)   # lp-bochs: the status lightpath wrote to port 0xe9
    return b


def t_smp(label, cpus, kernel=None, cpu=None):
    """Host SMP under Bochs: `cpus` CPUs, all found in the Bochs BIOS's ACPI
    MADT and started (VT-x: VMXON on each; ryzen: the SVM image), then two
    hello VMs side by side (docs/SMP.md): on CPU 1 and CPU 2 (CPU 0 with
    2 CPUs), each VM's lines exact and in order."""
    def run():
        b = BochsBoot(label, [itest.HELLO3, itest.HELLO3], cpus=cpus, kernel=kernel, cpu=cpu)
        itest.expect_smp_line(b, "lightpath: %d CPUs found (ACPI MADT), %d started" % (cpus, cpus))
        hello = os.path.basename(itest.HELLO)
        where = (1, 2) if cpus > 2 else (1, 0)
        for vm in (0, 1):
            h = itest.hello_lines(vm, hello=hello)
            itest.expect_vm_lines(b, vm, h[:1] + [itest.RUNS_ON % (vm, where[vm])] + h[1:])
        itest.expect_side_by_side(b, r"lightpath: all VMs ended; powering off with status 3 \(the first "
                                  r"non-zero status, vm0's; VMs that did not end with 0: 2 of 2\)",
                                  aps=cpus - 1)
        b.expect_rc((3 << 1) | 1)
        return b
    return run


# One VM of several vCPUs running guests/selftest/smp.c (docs/SMP.md):
# vCPU i has APIC ID i, runs on CPU i of the machine, the APs start by the
# guest's INIT-SIPI-SIPI (VT-x: in real mode under unrestricted guest).
SMP_GUEST_CFG = "# lightpath vm\nkernel = smp.elf\ncpus = %d\nmemory = 64\n"


def smp_guest_checks(b, cpus, vm=0, skips_allowed=None):
    """What itest's smp-guest-native asks of the guest itself (every check
    passed, every AP started, nothing skipped but what skips_allowed, a
    regex naming the backend's reason, lets through), plus lightpath's
    placement line. Returns the normalised ok lines."""
    oks = itest.selftest_result(b, "smp", vm=vm)
    aps = cpus - 1
    b.expect(r"^\[vm%d\] smp: %d CPUs found \(ACPI MADT\), %d APs? started\s*$" % (vm, cpus, aps),
             "'[vm%d] smp: %d CPUs found (ACPI MADT), %d AP%s started'"
             % (vm, cpus, aps, "" if aps == 1 else "s"))
    skips = [l.strip() for l in b.lines if re.match(r"^\[vm%d\] ok \d+ - # SKIP " % vm, l)
             and not (skips_allowed and re.search(skips_allowed, l))]
    check(not skips, "skipped: " + "; ".join(skips[:3]))
    b.expect(r"^lightpath: vm%d: %d vCPUs on CPUs %s \(vCPU i on the i-th\)\s*$"
             % (vm, cpus, ",".join(str(i) for i in range(cpus))),
             "'lightpath: vm%d: %d vCPUs on CPUs 0..%d'" % (vm, cpus, cpus - 1))
    return oks


def t_smp_guest(label, cpus, kernel=None, cpu=None):
    """The SMP self-test in one VM of `cpus` vCPUs on a Bochs machine of as
    many CPUs (VT-x by default; kernel/cpu: the SVM image under ryzen, with
    NRIP save): every check passes and none is skipped (the x2APIC the guest
    tests is lightpath's, which every backend has), every AP starts, the VM
    ends with 0 and nothing else is printed."""
    def run():
        cfg = itest.write_test_file("vmx-%s.cfg" % label, SMP_GUEST_CFG % cpus)
        b = BochsBoot(label, [cfg, guest("smp")], cpus=cpus, kernel=kernel, cpu=cpu)
        smp_guest_checks(b, cpus)
        b.expect(r"^lightpath: vm0: ended with status 0 \(isa-debug-exit\)\s*$",
                 "'lightpath: vm0: ended with status 0 (isa-debug-exit)'")
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=cpus - 1)
        b.expect_rc(1)
        return b
    return run


def t_side_by_side_triple(label, cpus, kernel=None, cpu=None):
    """itest's side-by-side-triple under Bochs: a VM keeps working on CPU 1
    while the next triple-faults on CPU 0 (CPU 2 with more CPUs) and is
    stopped; the first is unaffected."""
    def run():
        b = BochsBoot(label, ["%s/side.elf lines=8 ms=20" % itest.GUESTS, itest.guest("triple")],
                      cpus=cpus, kernel=kernel, cpu=cpu)
        itest.expect_vm_lines(b, 0, itest.side_lines(0, 8, 1, path="side.elf"))
        itest.expect_vm_lines(b, 1, itest.triple_side_lines(
            1, 2 if cpus > 2 else 0, path="triple.elf",
            why=r"triple fault \(VM exit 2\)" if kernel is None else r"triple fault \(SHUTDOWN exit\)"))
        itest.expect_side_by_side(b, itest.FINAL_VM1_STOPPED_ONLY, aps=cpus - 1)
        stop = [i for i, l in enumerate(b.lines) if l.startswith("lightpath: vm1: stopped:")]
        done = [i for i, l in enumerate(b.lines) if l.startswith("[vm0] side: done:")]
        itest.check(stop and done and stop[0] < done[0],
                    "vm1 was stopped after vm0 had finished: they did not run side by side")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def t_forge(label, switches=""):
    """The hostile guest that forges lightpath's lines (itest's `forge`),
    under Bochs: lp-bochs takes the status from port 0xe9, which forge also
    writes to, and never from the serial log (forge's lines say status 0).
    resetcheck after it."""
    def run():
        module, path, _ = itest.healthy(bochs=True)
        b = BochsBoot(label, [guest("forge", itest.FORGE_PAD), module], append=switches)
        itest.check_forge(b, healthy_path=path)
        return b
    return run


def t_status_0x80(label, switches=""):
    """Status 0x80 gave lp-bochs exit 1 ("every VM ended with 0"); resetcheck
    after it ends with 0, which must not hide it: 255 (above 127)."""
    def run():
        module, path, name = itest.healthy(bochs=True)
        b = BochsBoot(label, [guest("hello", "status=128"), module], append=switches)
        itest.expect_exact_lines(b, [
            itest.loaded(0, "hello.elf", 64, "hello.elf status=128"),
            r"\[vm0\] hello from lightpath guest",
            r'\[vm0\] hello: args "status=128"',
            r"\[vm0\] hello: exiting with status 128",
            r"lightpath: vm0: ended with status 128 \(isa-debug-exit\)",
            r"lightpath: vm0: exit statistics",
        ] + itest.resetcheck_lines(b, 1, path, name) + [
            r"lightpath: all VMs ended; powering off with status 128 \(the first non-zero status, "
            r"vm0's; VMs that did not end with 0: 1 of 2; passed on as 127, .*\)"])
        itest.expect_first_nonzero(b, 0x80, 0, 1, 2)
        return b
    return run


def t_irqstate_leave(label, switches=""):
    """docs/SECURITY.md case 8 on VT-x, and the platform's interrupts through the exit core:
    irqstate finds the controllers' handover state, no device interrupt on
    an exception vector while it has IF=1, then the PIT's and the UART's
    IRQs on the vectors it programmed (the VT-x backend asked the platform
    for nothing before the exit core was shared); with leave=1 it leaves
    them programmed onto exception vectors, and resetcheck after it must
    find the handover state again (itest.check_irqstate_leave)."""
    def run():
        h = itest.healthy(bochs=True)
        b = BochsBoot(label, [guest("irqstate", "leave=1"), h[0]], append=switches)
        itest.check_irqstate_leave(b, "irqstate.elf", h)
        return b
    return run


def t_config_cycle(label, switches=""):
    """docs/SECURITY.md case 13 on VT-x (the loader is shared): two descriptions naming each
    other are reported with one line each, resetcheck runs after them."""
    def run():
        b, lines = itest.config_cycle_boot(BochsBoot, label, switches)
        itest.expect_exact_lines(b, lines)
        b.expect_rc(225)
        return b
    return run


def t_timeout(label, mode, how, switches=""):
    """docs/SECURITY.md case 9 on VT-x: `forever mode=<mode>` stopped by a 1 s limit (a VM
    description's timeout = or vm.timeout=), then resetcheck starts from the
    reset state and runs. Bochs lists modules by basename. mode=spin (IF=0,
    no exit at all) gets no external-interrupt exit from Bochs 2.7: the
    VMX-preemption-timer watchdog stops it (docs/VMX.md)."""
    def run():
        module, path, name = itest.healthy(bochs=True)
        if how == "config":
            cfg = itest.write_test_file("vmx-timeout-%s.cfg" % label,
                                        "# lightpath vm\nname = never\nkernel = forever.elf\n"
                                        "memory = 32\ntimeout = 1\n")
            b = BochsBoot("timeout-" + label, [cfg, guest("forever", "mode=" + mode), module],
                          append=switches)
            first = itest.forever_stopped(0, "never", 32, mode, 1, r"time limit of 1 s reached",
                                          forever="forever.elf")
            rest = itest.resetcheck_lines(b, 1, path, name)
        else:
            b = BochsBoot("timeout-" + label, [guest("forever", "mode=" + mode), module],
                          append=("vm.timeout=1 " + switches).strip())
            first = itest.forever_stopped(0, "forever.elf", 64, mode, 1, r"time limit of 1 s reached",
                                          forever="forever.elf")
            rest = itest.resetcheck_lines(b, 1, path, name, 1)
        itest.expect_exact_lines(b, first + rest + [itest.FINAL_VM0_STOPPED_ONLY])
        b.expect_rc(225)
        return b
    return run


def t_mb_modules():
    """Multiboot modules on VT-x (the loader is shared): mbinfo32 with an
    initrd and two modules = entries from a description passes, the modules
    do not run as VMs, hello runs after it."""
    b, _ = itest.mb_modules_boot(BochsBoot, "32", "mbinfo32")
    itest.check_mb_modules(b, "mbinfo32", "32", hello="hello.elf")
    return b


def t_bench():
    """The bench guests pass their checks with the default options (under
    Bochs: through the Bochs twins of the exit stub, vmm/vmx/bochs.c, whose
    cost is bounded here too), and the light path real CPUs run (the plain
    stub, which only vmx.bochs_quirk=off selects under Bochs; spec=off:
    without the return-stack overwrite spec=on adds on this CPU model) meets
    its target and is what the twin adds to: the option does not hide a
    failure, it picks which of the two paths the target is about."""
    res = {}
    for label, append in (("bench", "spec=off"), ("bench-plain", "spec=off vmx.bochs_quirk=off")):
        b = BochsBoot(label, [guest("bench32", "n=200"), guest("bench64", "n=200")], append=append)
        b.expect_not(PREFIX + r"bench: check FAILED.*")
        b.expect_rc(1)
        b.expect(BOCHS_QUIRK_LINE if label == "bench" else BOCHS_OFF_LINE,
                 "the line saying what was decided about Bochs's defect")
        try:
            # every row lightpath reports, the APIC rows' (timer_irq...) included
            res[label] = bench.parse_bench(b.text, n=200, exits=bench.LP_EXITS)
            bench.check_config_bits(b.text, "spec=off")
        except bench.BenchError as e:
            raise Fail(str(e))
        b.expect_powered_off(0)
    for mode in bench.MODES:
        hc = res["bench-plain"][mode]["hypercall"]["min"]
        check(hc <= HYPERCALL_TARGET, "%s: VMCALL null hypercall takes %d instructions, target <= %d"
              % (mode, hc, HYPERCALL_TARGET))
        twin = res["bench"][mode]["hypercall"]["min"]
        check(twin <= hc + BOCHS_TWIN_EXTRA, "%s: the Bochs twin's null hypercall takes %d "
              "instructions, more than the plain stub's %d + %d" % (mode, twin, hc, BOCHS_TWIN_EXTRA))
    return b


def t_cpu_refused(label, model, line):
    def run():
        b = BochsBoot(label, [guest("hello")], cpu=model, timeout=min(TIMEOUT, 60))
        b.expect(r"^%s\s*$" % re.escape(line), "'%s'" % line)
        b.expect_rc(255)
        b.expect_not(r"^lightpath: vm\d+: loaded .*")
        return b
    return run


def t_stats_cost(label, kernel=None, cpu=None):
    """stats=all on VT-x (or SVM with NRIP save): the cost and sites
    sections as on QEMU (itest.check_stats_cost)."""
    def run():
        b = BochsBoot(label, [guest("stats")], append="stats=all", kernel=kernel, cpu=cpu)
        itest.selftest_result(b, "stats")
        itest.check_stats_cost(b, itest.GUESTS + "/stats.elf", 60)
        return b
    return run


def t_selftest_apicv_off(name):
    """The interrupt self-tests with VT-x's APIC virtualization off (the
    fallback for a CPU without it: every APIC access exits to the emulated
    APIC, interrupts are injected): the same results as with it on."""
    def run():
        b = BochsBoot("selftest-%s-apicv-off" % name, [guest(name)], append="vmx.apicv=off")
        oks = itest.selftest_result(b, name)
        b.expect_rc(1)
        b.expect(APICV_OFF_LINE, "the banner line naming the fallback (vmx.apicv=off)")
        b.expect(BOCHS_NO_QUIRK_LINE, "the line saying Bochs needs no workaround without APIC "
                 "virtualization")
        b.expect_powered_off(0)
        with BASELINE_LOCK:
            on = BASELINE.get(name)
        check(on is not None, "no results of vmx-selftest-%s (APIC virtualization on) to compare "
              "with" % name)
        d = diff(on, oks)
        check(not d, "vmx.apicv=off and on differ: " + "; ".join(d[:3]))
        return b
    return run


def t_bochs_quirk_option():
    """vmx.bochs_quirk= takes auto, on or off: anything else stops the boot
    with one error line naming the option and its words, before any VM."""
    b = BochsBoot("bochs-quirk-option", [guest("hello")], append="vmx.bochs_quirk=maybe")
    itest.expect_error_line(b, "vmx.bochs_quirk", "maybe")
    b.expect(r"^lightpath: error: bad value 'maybe' for vmx\.bochs_quirk= \(use auto, on or off\)$",
             "the exact error line for vmx.bochs_quirk=maybe")
    b.expect_not(r"^lightpath: VMX: ")
    return b


def all_tests():
    """[(phase, name, fn)]: phase 2 tests need phase 1's baselines."""
    t = []
    t.append((1, "vmx-stats-cost", t_stats_cost("stats-cost")))
    t.append((1, "nrip-stats-cost", t_stats_cost("nrip-stats-cost", kernel=SVM_IMAGE, cpu=NRIP_CPU)))
    for g in SELFTESTS:
        t.append((1, "vmx-selftest-" + g, t_selftest(g)))
    for g in itest.INTR_GUESTS + itest.TIMERS_GUESTS + IRQONCE_GUESTS:
        t.append((2, "vmx-selftest-%s-apicv-off" % g, t_selftest_apicv_off(g)))
    cfg, opts = itest.HOSTILE_SWITCHES
    t.append((1, "vmx-isolation", t_isolation))
    t.append((1, "vmx-smp-4", t_smp("smp-4", 4)))
    t.append((1, "svm-bochs-smp-2", t_smp("svm-smp-2", 2, kernel=SVM_IMAGE, cpu=NRIP_CPU)))
    t.append((1, "vmx-side-by-side-triple", t_side_by_side_triple("side-by-side-triple", 2)))
    t.append((1, "vmx-ap-panic", itest.t_ap_panic(BochsBoot, "ap-panic", "side.elf")))
    t.append((1, "vmx-smp-guest", t_smp_guest("smp-guest", 4)))
    t.append((1, "nrip-smp-guest", t_smp_guest("nrip-smp-guest", 2, kernel=SVM_IMAGE, cpu=NRIP_CPU)))
    t.append((1, "vmx-forge", t_forge("forge")))
    t.append((1, "vmx-forge-" + cfg, t_forge("forge-" + cfg, opts)))
    t.append((1, "vmx-status-0x80", t_status_0x80("status-0x80")))
    t.append((1, "vmx-status-0x80-" + cfg, t_status_0x80("status-0x80-" + cfg, opts)))
    t.append((1, "vmx-hostile-irqstate", t_irqstate_leave("hostile-irqstate")))
    t.append((1, "vmx-hostile-irqstate-" + cfg, t_irqstate_leave("hostile-irqstate-" + cfg, opts)))
    t.append((1, "vmx-config-cycle", t_config_cycle("config-cycle")))
    t.append((1, "vmx-config-cycle-" + cfg, t_config_cycle("config-cycle-" + cfg, opts)))
    t.append((1, "vmx-timeout-option-hlt", t_timeout("option-hlt", "hlt", "option")))
    t.append((1, "vmx-timeout-option-hlt-" + cfg, t_timeout("option-hlt-" + cfg, "hlt", "option",
                                                             opts)))
    t.append((1, "vmx-timeout-config-sti-spin", t_timeout("config-sti-spin", "sti-spin", "config")))
    t.append((1, "vmx-timeout-option-spin", t_timeout("option-spin", "spin", "option")))
    t.append((1, "vmx-multiboot-modules-32", t_mb_modules))
    t.append((1, "vmx-virtio-rw", itest.t_virtio(False, BochsBoot, "vmx-virtio")))
    label, segs, reason = itest.BAD_SEGMENTS[2]
    t.append((1, "vmx-bad-segment-" + label, itest.t_bad_segment(label, segs, reason,
                                                                 boot_cls=BochsBoot)))
    t.append((1, "vmx-bench", t_bench))
    t.append((1, "vmx-no-vmx", t_cpu_refused("no-vmx", "athlon64_clawhammer", NO_VMX_LINE)))
    t.append((1, "vmx-no-ept", t_cpu_refused("no-ept", "core2_penryn_t9600", NO_EPT_LINE)))
    t.append((1, "vmx-bochs-quirk-option", t_bochs_quirk_option))
    t.append((2, "vmx-switch-all-off", t_switched("switch-all-off", ALL_OFF)))
    t.append((2, "vmx-switch-always-in-light", t_switched("switch-always-in-light", ALWAYS_IN_LIGHT)))
    for g in NRIP_SELFTESTS:
        t.append((1, "nrip-selftest-" + g, t_nrip_selftest(g)))
    t.append((2, "nrip-switch-all-off", t_nrip_switched("nrip-switch-all-off", ALL_OFF)))
    t.extend(itest.plugin_tests("vmx_tests"))
    return t


def main():
    def needed(sel):
        # a phase-2 switch test needs its guest's phase-1 baselines
        keep = set()
        if any(n.startswith("vmx-switch-") for _, n, _ in sel):
            keep = set("vmx-selftest-" + g for g in MULTI_GUESTS)
        if any(n.startswith("nrip-switch-") for _, n, _ in sel):
            keep |= set("nrip-selftest-" + g for g in MULTI_GUESTS)
        return keep
    return itest.suite_main(__doc__, all_tests(), needed, "vmx integration")


if __name__ == "__main__":
    sys.exit(main())
