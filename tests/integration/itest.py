#!/usr/bin/python3
"""lightpath integration tests: boot the real hypervisor under QEMU (TCG, AMD
SVM) with the project's guests and check what it prints and how it exits.

Run by tools/test.sh (`make test`); on its own:

    tests/integration/itest.py [-j JOBS] [-k REGEX] [--list] [--counts FILE]

Prints `PASS name` or `FAIL name: reason` per test (serial logs are kept in
build/test/<name>.log) and writes "passed failed" to --counts. Every boot runs
under `timeout` (LP_TEST_TIMEOUT seconds, default 60), so a hang is a failure.
"""

import argparse
import concurrent.futures
import itertools
import glob
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tools"))
import bench  # noqa: E402  (tools/bench.py: the bench-line parser under test)
sys.path.insert(0, os.path.join(ROOT, "tools", "linux"))
import lpguest  # noqa: E402  (tools/linux/lpguest.py: its exit-statistics parser)
import serial_log  # noqa: E402  (tools/serial_log.py: lines a guest cannot forge)

LP_QEMU = os.path.join(ROOT, "tools", "lp-qemu")
OUT = os.path.join(ROOT, "build", "test")
GUESTS = "build/guests"
# A run fails as hung when its serial output stays the same for TIMEOUT
# seconds, not when a loaded host makes it slow; CAP_FACTOR * TIMEOUT
# seconds in all bound a run that prints for ever (run_watched).
TIMEOUT = int(os.environ.get("LP_TEST_TIMEOUT", "60"))
CAP_FACTOR = int(os.environ.get("LP_TEST_CAP_FACTOR", "10"))

# The multiboot self-test (guests/selftest/mbinfo.c): 32-bit, 64-bit, and
# 32-bit linked at 0x8000, below 1 MiB.
MBINFO_GUESTS = ("mbinfo32", "mbinfo64", "mbinfo-low32")
# The CPU a VM finds (guests/selftest/cpumsr.c, docs/CPUID.md): the
# CPUID walk, the counters, IA32_TSC, CPUID following guest state.
CPUMSR_GUESTS = ("cpumsr32", "cpumsr64")
# The PC's timers as Linux relies on them (guests/selftest/timers.c).
TIMERS_GUESTS = ("timers",)
# The HPET as an OS finds and uses it (guests/selftest/hpet.c).
HPET_GUESTS = ("hpet32", "hpet64")
# Interrupt delivery (guests/selftest/intr.c): the APIC
# timer, self-IPIs, STI shadow and TPR windows, NMIs, ExtINT from the 8259.
INTR_GUESTS = ("intr32", "intr64")
# Checks that QEMU 7.2's SVM fails now and then for a defect of the emulator,
# not of lightpath (docs/TESTING.md, the `selftest-intr32` row): it ignores
# the VMCB's interrupt-shadow bit at VMRUN. When a host interrupt's exit
# lands between STI and the instruction in its shadow, the exit reports the
# shadow, lightpath asks for an interrupt window, and QEMU opens it at
# once: the interrupt comes one instruction early, at the instruction in the
# shadow ("got 0x0": intr.c reports offsets from it). Exactly that failure of
# exactly these checks is excused under QEMU; under Bochs (VT-x and ryzen)
# they must pass.
QEMU_SVM_KNOWN = {g: (re.compile(r"pending with IF=0, `sti; [^`]+`: right after the instruction in "
                                 r"the STI shadow \(got 0x0, expected 0x[0-9a-f]+\)$"),)
                  for g in INTR_GUESTS}
SELFTESTS = ("cpuid", "ports", "msrs", "virtinsn", "stats", "dr", "hlt", "nextrip64",
             "mmio32", "mmio64", "irqstate", "tfstep32", "tfstep64", "irqonce32", "irqonce64") + MBINFO_GUESTS + CPUMSR_GUESTS + \
            TIMERS_GUESTS + HPET_GUESTS + INTR_GUESTS
# Guests whose results must not depend on the lazy/always code paths.
SWITCHED_GUESTS = ("msrs", "dr", "hlt", "nextrip64", "ports", "tfstep32", "tfstep64")
# The instruction emulator self-tests, under the switches that change its path.
MMIO_GUESTS = ("mmio32", "mmio64")
MMIO_SWITCHES = ("io-emulate", "light-off")
SWITCHES = bench.SWITCHES  # (name, on value, off value)
ALL_OFF = " ".join("%s=%s" % (k, off) for k, _, off in SWITCHES)
SWITCH_CONFIGS = (
    ("msr-always", "msr=always"),
    ("vmload-always", "svm.vmload=always"),
    ("dr-always", "dr=always"),
    ("io-emulate", "io=emulate"),
    ("light-off", "light=off"),
    ("all-off", ALL_OFF),
)
# The timer guests also run with timer=exact (the default, timer=lead, fires
# a VM's timers ahead of their deadline: vmm/timer_lead.h): the same results.
TIMER_EXACT_GUESTS = TIMERS_GUESTS + HPET_GUESTS + INTR_GUESTS + CPUMSR_GUESTS + \
                     ("irqonce32", "irqonce64")
TIMER_LEAD_LINE = (r"^\s+timer lead: (\d+) timers fired ahead of their deadline, (\d+) past it; "
                   r"(\d+) waits \((\d+) us in all\), (\d+) found the deadline passed; "
                   r"lead (\d+) ns$")
TIMER_LEAD_MAX_NS = 10000   # vmm/timer_lead.h
# The hostile-guest cases (docs/SECURITY.md) also run with the heavy paths forced.
HOSTILE_SWITCHES = ("hostile-opts", "light=off io=emulate dr=always")
# Self-tests that also run under HOSTILE_SWITCHES (the interrupt paths forced heavy).
HOSTILE_GUESTS = ("irqonce32", "irqonce64") + INTR_GUESTS

PREFIX = r"\[vm\d+\] "   # every line of guest output starts with it
NO_SVM_LINE = "lightpath: this CPU has no AMD SVM with nested paging"


_current = threading.local()  # .logs, .name: serial logs and name of the test running on this thread
_log_owners = {}               # log path -> the test of this run that wrote it
_log_owners_lock = threading.Lock()


def descendants(pid):
    """Every process below pid (the emulator under its wrappers)."""
    out, todo = [], [pid]
    while todo:
        p = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True)
        kids = [int(x) for x in p.stdout.split()]
        out += kids
        todo += kids
    return out


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def run_watched(cmd, watch, stall):
    """Runs cmd (the emulator's wrapper, whose own --timeout is the cap)
    until it exits, or until the file `watch` (where the machine's serial
    output lands) has not changed size for `stall` seconds: then the
    emulator is stopped (the wrapper still collects its log) and the run
    counts as hung. Returns (completed process, seconds of silence that
    stopped it or 0). The child stays in this process group, so that
    Ctrl-C and tools/stress.py's killpg still reach the emulator."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    out = {}
    readers = [threading.Thread(target=lambda k, f: out.__setitem__(k, f.read()), args=(k, f))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    path = os.path.join(ROOT, watch)
    size, since, silent = -1, time.monotonic(), 0
    while p.poll() is None:
        try:
            now_size = os.path.getsize(path)
        except OSError:
            now_size = -1
        now = time.monotonic()
        if now_size != size:
            size, since = now_size, now
        elif now - since >= stall:
            silent = now - since
            signal_all(descendants(p.pid), signal.SIGTERM)   # the wrapper collects the log
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                signal_all(descendants(p.pid) + [p.pid], signal.SIGKILL)
            break
        try:
            p.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
    p.wait()
    for t in readers:
        t.join()
    return subprocess.CompletedProcess(cmd, 124 if silent else p.returncode, out.get("out", ""),
                                       out.get("err", "")), silent


def claim_log(log):
    """Records that the running test writes `log` (a Bochs boot's emulator
    directory is named like its log). A second test of the run that would
    write the same one fails here, every time, rather than racing on the
    file and the directory when the two happen to run in parallel."""
    name = getattr(_current, "name", None)
    with _log_owners_lock:
        owner = _log_owners.setdefault(log, name)
    check(owner == name, "%s is also test %s's log: give the two boots distinct names" % (log, owner))
    getattr(_current, "logs", []).append(log)


class Fail(Exception):
    pass


def check(cond, reason):
    if not cond:
        raise Fail(reason)


class Boot:
    """One QEMU run of lightpath; .rc, .text, .lines, .log (repo-relative).
    `kernel`: boot that multiboot image instead of lightpath (a 32-bit guest
    run natively, `append` its arguments)."""

    silent = 0   # seconds without output that stopped the run (run_watched)

    def __init__(self, name, modules, append="", cpu=None, timeout=TIMEOUT, smp=None, icount=False,
                 kernel=None):
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", name)
        self.log = os.path.join("build", "test", safe + ".log")
        claim_log(self.log)
        cmd = [LP_QEMU, "--timeout", str(timeout * CAP_FACTOR), "--log", self.log,
               "--append", append]
        if kernel:
            cmd += ["--kernel", kernel]
        if cpu:
            cmd += ["--cpu", cpu]
        if smp:   # QEMU's -smp (default 1)
            cmd += ["--smp", smp]
        if icount:   # -icount: QEMU runs its CPUs round robin, not in threads
            cmd += ["--icount"]
        cmd += list(modules)
        self.cmd = cmd
        self.timeout = timeout
        t0 = time.monotonic()
        p, self.silent = run_watched(cmd, self.log, timeout)
        self.secs = time.monotonic() - t0
        self.rc = p.returncode
        self.stderr = p.stderr
        try:
            self.text = serial_log.read(os.path.join(ROOT, self.log))
        except OSError:
            self.text = ""
        # split at '\n' only: a guest can print the other line breaks
        self.lines = serial_log.lines(self.text)
        if p.stderr.strip():
            with open(os.path.join(ROOT, self.log[:-4] + ".stderr"), "w") as f:
                f.write(p.stderr)

    def why_rc(self):
        if self.silent:
            return "hung: no output for %d s (at %d s)" % (self.silent, self.secs)
        if self.rc == 124 or self.rc == 137:
            return "timed out after %d s" % (self.timeout * CAP_FACTOR)
        if self.rc == 2 and self.stderr.startswith("lp-qemu:"):
            return self.stderr.strip().splitlines()[0]
        if self.rc == 0:
            return "QEMU exit 0 (the machine reset or lightpath triple-faulted)"
        s = "QEMU exit %d" % self.rc
        if self.rc % 2 == 1:
            s += " (status %#x)" % (self.rc >> 1)
        err = [l for l in self.stderr.splitlines()
               if l.strip() and "TCG doesn't support requested feature" not in l]
        if err:
            s += "; stderr: " + err[-1].strip()
        last = [l for l in serial_log.lightpath_lines(self.text) if l.startswith("lightpath:")]
        if last:
            s += "; last line: " + last[-1].strip()
        return s

    def expect_rc(self, rc):
        check(self.rc == rc, "expected QEMU exit %d, got %s" % (rc, self.why_rc()))

    def find(self, regex):
        """First match of regex (anchored at line start) or None."""
        r = re.compile(regex)
        for line in self.lines:
            m = r.match(line)
            if m:
                return m
        return None

    def findall(self, regex):
        r = re.compile(regex)
        return [m for m in (r.match(l) for l in self.lines) if m]

    def expect(self, regex, what=None):
        m = self.find(regex)
        check(m is not None, "no line %s" % (what or "matching /%s/" % regex))
        return m

    def expect_not(self, regex, what=None):
        m = self.find(regex)
        check(m is None, "unexpected line: %s" % (m.group(0).strip() if m else what))

    def expect_options(self, append):
        """lightpath's echo of its options agrees with what we asked for."""
        m = self.expect(r"^lightpath: options: (.*)$", "'lightpath: options: ...'")
        seen = dict(w.split("=", 1) for w in m.group(1).split() if "=" in w)
        for word in append.split():
            k, v = word.split("=", 1)
            check(seen.get(k) == v, "asked for %s, lightpath reports options: %s"
                  % (word, m.group(1).strip()))

    def expect_powered_off(self, status, why=None):
        """The last line: `status`, and the rule that chose it (a regex;
        default: every VM ended with 0 for status 0, the first non-zero
        otherwise)."""
        if why is None:
            why = (r"every VM ended with status 0" if status == 0 else
                   r"the first non-zero status, vm\d+'s; .*")
        m = self.expect(r"^lightpath: all VMs ended; powering off with status %d \((.*)\)$" % status,
                        "'lightpath: all VMs ended; powering off with status %d (...)'" % status)
        check(re.fullmatch(why, m.group(1)), "powering off with status %d, but (%s); expected /%s/"
              % (status, m.group(1), why))
        ends = self.findall(r"^lightpath: all VMs ended")
        check(len(ends) == 1, "%d 'lightpath: all VMs ended' lines" % len(ends))


def guest(name, args=""):
    return ("%s/%s.elf %s" % (GUESTS, name, args)).strip()


def norm(line):
    """A guest test line with numbers blanked, for comparing runs."""
    line = re.sub(r"^\[vm\d+\] ", "", line)
    return re.sub(r"\d+", "#", re.sub(r"0x[0-9a-fA-F]+", "0x#", line)).strip()


def selftest_result(b, name, vm=None, prefix=None, known=None):
    """Checks the self-test verdict (of VM `vm` only, when given; `prefix=""`
    for a guest run without lightpath); returns the normalised ok/not-ok lines.
    known: {guest: regexes of check texts an emulator defect may fail}; such
    a failure counts as the check's ok line, and b.excused says how many
    there were (the guest then ends with status 1)."""
    if prefix is None:
        prefix = PREFIX if vm is None else r"\[vm%d\] " % vm
    oks = [l for l in b.lines if re.match(prefix + r"(not )?ok \d+", l)]
    bad = [re.sub(r"^\[vm\d+\] ", "", l).strip() for l in oks if re.match(prefix + "not ok", l)]
    allowed = (known or {}).get(name, ())
    excused = [l for l in bad if any(k.match(re.sub(r"^not ok \d+ - ", "", l)) for k in allowed)]
    unexcused = [l for l in bad if l not in excused]
    b.excused = len(excused)
    m = b.find(prefix + r"selftest %s: (\d+) passed, (\d+) failed\s*$" % re.escape(name))
    if m is None:
        check(b.rc == 1, b.why_rc() + "; no 'selftest %s:' verdict" % name)
        raise Fail("no 'selftest %s: P passed, F failed' line%s"
                   % (name, "; failing: " + "; ".join(bad[:3]) if bad else ""))
    passed, failed = int(m.group(1)), int(m.group(2))
    check(failed == len(excused) and not unexcused,
          "selftest %s: %d failed: %s" % (name, failed, "; ".join(unexcused[:3] or bad[:3])))
    check(passed > 0, "selftest %s ran no test (0 passed)" % name)
    check(len(oks) == passed + failed, "verdict says %d passed, %d failed but %d 'ok N'/'not ok N' "
          "lines were printed" % (passed, failed, len(oks)))
    if excused:
        print("note: %s: %d check(s) failed as QEMU's known defect makes them: %s"
              % (b.log, len(excused), "; ".join(excused)), flush=True)
    return [norm(re.sub(r"^(\[vm\d+\] )?not ok (\d+ - .*?) \(got .*\)\s*$", r"ok \2", l)
                 if re.sub(r"^\[vm\d+\] ", "", l).strip() in excused else l)
            for l in oks]


# name -> normalised ok lines of the default-options run (phase 1 -> phase 2)
BASELINE = {}
BASELINE_LOCK = threading.Lock()


def expect_status(b, status):
    """vm0 ended with `status` (0, or 1 for QEMU_SVM_KNOWN's excused checks),
    and so did the machine."""
    b.expect(r"^lightpath: vm0: ended with status %d " % status,
             "'lightpath: vm0: ended with status %d (...)'" % status)
    if status:
        expect_first_nonzero(b, status, 0, 1, 1)
    else:
        b.expect_rc(1)
        b.expect_powered_off(0)


def t_selftest(name):
    def run():
        b = Boot("selftest-" + name, [guest(name)])
        oks = selftest_result(b, name, known=QEMU_SVM_KNOWN)
        expect_status(b, min(b.excused, 1))
        b.expect(r"^lightpath: vm0: exit statistics\s*$", "'lightpath: vm0: exit statistics'")
        b.expect(r"^\s+total\s+\d+\s", "'total' row of the exit statistics table")
        with BASELINE_LOCK:
            BASELINE[name] = oks
        return b
    return run


def t_switched(name, cfg, opts):
    def run():
        b = Boot("switch-%s-%s" % (name, cfg), [guest(name)], append=opts)
        b.expect_options(opts)
        oks = selftest_result(b, name, known=QEMU_SVM_KNOWN)
        expect_status(b, min(b.excused, 1))
        with BASELINE_LOCK:
            base = BASELINE.get(name)
        check(base is not None, "no baseline: selftest-%s (default options) failed" % name)
        if oks != base:
            diff = [l for l in oks if l not in base] + ["(missing) " + l for l in base if l not in oks]
            raise Fail("guest-visible results differ from the default options run: %s"
                       % ("; ".join(diff[:3]) or "order differs"))
        return b
    return run


def t_timer_exact(name):
    """timer=exact: the results of the default run, and no timer fired early."""
    switched = t_switched(name, "timer-exact", "timer=exact")
    def run():
        b = switched()
        b.expect_not(r"^\s+timer lead: ", "a 'timer lead:' line under timer=exact")
        return b
    return run


def t_timer_lead(name):
    """The default timer=lead: the self-test passes (its checks that no
    interrupt comes before its time included), and its VM fired timers
    ahead of their deadline, with a lead within the bound. Under -icount:
    in real-time TCG the host timer comes tens of microseconds late, past
    any lead (the timers then count as fired past their deadline)."""
    def run():
        b = Boot("timer-lead-" + name, [guest(name)], icount=True)
        selftest_result(b, name, known=QEMU_SVM_KNOWN)
        expect_status(b, min(b.excused, 1))
        m = b.expect(TIMER_LEAD_LINE, "'timer lead: ...' in vm0's statistics")
        early, lead_ns = int(m.group(1)), int(m.group(6))
        check(early > 0, "no timer fired early: %s" % m.group(0).strip())
        check(lead_ns <= TIMER_LEAD_MAX_NS, "lead above its bound: %s" % m.group(0).strip())
        return b
    return run


def combo_opts(bits):
    return " ".join("%s=%s" % (k, off if bits & (1 << i) else on)
                    for i, (k, on, off) in enumerate(SWITCHES))


def combo_name(bits):
    offs = ["%s=%s" % (k, off) for i, (k, _, off) in enumerate(SWITCHES) if bits & (1 << i)]
    return "combo[%s]" % (",".join(offs) if offs else "all-on")


def t_combo(bits):
    def run():
        opts = combo_opts(bits)
        b = Boot(combo_name(bits).replace("[", "-").replace("]", "").replace(",", "+"),
                 [guest("bench32", "n=20"), guest("bench64", "n=20")], append=opts)
        b.expect_not(PREFIX + r"bench: check FAILED.*")
        b.expect_rc(1)
        b.expect_options(opts)
        try:
            # every row lightpath reports, the APIC rows' (timer_irq...) included
            bench.parse_bench(b.text, n=20, exits=bench.LP_EXITS)
            bench.check_config_bits(b.text, opts)
        except bench.BenchError as e:
            raise Fail(str(e))
        b.expect_powered_off(0)
        return b
    return run


def t_hello_status():
    b = Boot("hello-status", [guest("hello", "status=5")])
    b.expect(PREFIX + r"hello from lightpath guest\s*$", "'hello from lightpath guest'")
    b.expect_rc((5 << 1) | 1)
    b.expect(r"^lightpath: vm0: ended with status 5 \(isa-debug-exit\)",
             "'lightpath: vm0: ended with status 5 (isa-debug-exit)'")
    b.expect_not(r"still running after the port 0xf4 write",
                 "the VM must end at the port 0xf4 write itself")
    b.expect_powered_off(5)
    return b


def t_isolation():
    b = Boot("isolation", [guest("triple"), guest("hello", "status=3")])
    b.expect(r"^\[vm0\] triple: about to triple fault\s*$", "'[vm0] triple: about to triple fault'")
    b.expect(r"^lightpath: vm0: stopped: triple fault \(SHUTDOWN exit\) at rip 0x[0-9a-fA-F]+\s*$",
             "'lightpath: vm0: stopped: triple fault (SHUTDOWN exit) at rip 0x...'")
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm1: ended with status 3 ", "'lightpath: vm1: ended with status 3 (...)'")
    expect_first_nonzero(b, 0x70, 0, 2, 2)
    return b


def expect_first_nonzero(b, status, vm, nonzero, vms):
    """Powered off with vmN's status, the first non-zero of the boot, and the
    QEMU exit code that goes with it: (status << 1) | 1, or 255 above 127."""
    b.expect_powered_off(status, r"the first non-zero status, vm%d's; VMs that did not end with 0: "
                         r"%d of %d" % (vm, nonzero, vms) + (r"; passed on as 127, .*" if status > 127 else ""))
    b.expect_rc((min(status, 127) << 1) | 1)


def triple_lines(vm, path, why=r"triple fault \(SHUTDOWN exit\)"):
    """The lines of the triple guest as VM `vm`, stopped for `why`."""
    return [loaded(vm, path, 64, path),
            r"\[vm%d\] triple: about to triple fault" % vm,
            r"lightpath: vm%d: stopped: %s at rip 0x[0-9a-f]+" % (vm, why),
            r"lightpath: vm%d: exit statistics" % vm]


def t_status_stopped_then_healthy(label, switches=""):
    """A stopped VM, then one that ends with 0 (resetcheck, which must also
    start from the reset state): not "status 0" (QEMU exit 1 means every VM
    ended with 0), but the stopped VM's 0x70."""
    def run():
        module, path, name = healthy()
        b = Boot(label, [guest("triple"), module], append=switches)
        expect_exact_lines(b, triple_lines(0, guest("triple")) + resetcheck_lines(b, 1, path, name) +
                           [FINAL_VM0_STOPPED_ONLY])
        expect_first_nonzero(b, 0x70, 0, 1, 2)
        return b
    return run


def t_status_first_nonzero():
    """0, 5, 9: the first non-zero status (5) is the final one, not the last."""
    b = Boot("status-first-nonzero", [guest("hello", "status=%d" % v) for v in (0, 5, 9)])
    for i, v in enumerate((0, 5, 9)):
        b.expect(r"^lightpath: vm%d: ended with status %d \(isa-debug-exit\)$" % (i, v),
                 "'lightpath: vm%d: ended with status %d (isa-debug-exit)'" % (i, v))
    expect_first_nonzero(b, 5, 1, 2, 3)
    return b


def t_status_high(status):
    """A guest status whose low 7 bits are 0 (0x80) used to leave QEMU with
    exit 1, "every VM ended with 0"; any status above 127 now gives 255."""
    def run():
        b = Boot("status-%#x" % status, [guest("hello", "status=%d" % status)])
        b.expect(r"^lightpath: vm0: ended with status %d \(isa-debug-exit\)$" % status,
                 "'lightpath: vm0: ended with status %d (isa-debug-exit)'" % status)
        expect_first_nonzero(b, status, 0, 1, 1)
        return b
    return run


# What guests/hostile/forge.c prints behind its tricks: (line, times).
FORGE_ENDED = "lightpath: vm0: ended with status 0 (isa-debug-exit)"
FORGE_POWER = "lightpath: all VMs ended; powering off with status 0 (every VM ended with status 0)"
FORGE_LINES = ((FORGE_ENDED, 10), (FORGE_POWER, 7), ("lightpath-power-off-status: 0", 2),
               ("  total                 100  100.0%", 1))
FORGE_PAD = "pad=" + "x" * 300    # a module command line longer than a lightpath line


def check_forge(b, status=3, healthy_path=None):
    """forge (status 3) then resetcheck (`healthy_path`: as lightpath names
    it): nothing forge printed passes for lightpath's output; lightpath's own
    lines are whole; resetcheck finds the reset state and runs."""
    b.expect(r"^\[vm0\] forge: start$", "'[vm0] forge: start'")
    b.expect(r"^\[vm0\] forge: done, exiting with status %d$" % status,
             "'[vm0] forge: done, exiting with status %d' (forge ran all its tricks)" % status)
    # The tricks are real: a reader that splits the way str.splitlines() does
    # would see forged lines at a line start.
    naive = [l for l in b.text.replace("\r\n", "\n").splitlines() if l.startswith(FORGE_ENDED)]
    check(naive, "forge's output has no line that str.splitlines() takes for lightpath's "
          "(the guest did not print its tricks?)")
    # Each forged line is in the log, inside a line of vm0's output.
    for text, times in FORGE_LINES:
        n = sum(1 for vm, rest in serial_log.guest_lines(b.text, 0) if text in rest)
        check(n == times, "%d lines of vm0 output hold %r, forge prints it %d times" % (n, text, times))
    # lightpath's lines: the usual ones and the exit statistics, each VM's
    # end reported once, with the real status.
    own = serial_log.lightpath_lines(b.text)
    odd = [l for l in own if not NORMAL_LINE.match(l) and not STATS_LINE.match(l)]
    check(not odd, "lines outside any [vmN] prefix that lightpath does not print: %s"
          % " | ".join(repr(l[:80]) for l in odd[:3]))
    ended = [l for l in own if l.startswith("lightpath: vm0: ended")]
    check(ended == ["lightpath: vm0: ended with status %d (isa-debug-exit)" % status],
          "vm0's end as lightpath reports it: %r" % ended)
    # Guest output around lightpath's lines: the over-long "loaded" line is
    # cut visibly and ends, and forge's last, unfinished line is ended
    # before lightpath's "ended" line.
    i = next((i for i, l in enumerate(b.lines) if l.startswith("lightpath: vm0: loaded ")), None)
    check(i is not None, "no 'lightpath: vm0: loaded' line")
    check(b.lines[i].endswith("...[cut]"), "the long 'loaded' line does not end in '...[cut]': %r"
          % b.lines[i][-40:])
    check(b.lines[i + 1] == "[vm0] forge: start", "the line after 'loaded' is %r" % b.lines[i + 1][:80])
    j = b.lines.index(ended[0])
    check(b.lines[j - 1] == "[vm0] " + FORGE_POWER, "the line before vm0's end is %r, not forge's "
          "unfinished last line" % b.lines[j - 1][:100])
    # On a terminal: after a bare '\r' the prefix is written again (not
    # before an escape sequence, which must stay whole).
    check("progress 50%\r[vm0] " + FORGE_POWER in b.text, "no '[vm0] ' written again after "
          "forge's carriage return")
    check("[vm0] \x1b[2K\x1b[1G" + FORGE_POWER in b.text, "forge's escape sequence was altered")
    # The exit statistics as tools/linux/lpguest.py reads them: the real table
    # (forge makes thousands of exits), not the forged total row.
    rows, _ = lpguest.exit_stats(b.text, 0)
    check(rows and rows.get("total", (0,))[0] > 1000, "exit statistics of vm0 misread: %r" % rows)
    # The healthy VM after it starts from the reset state (forge wrote
    # thousands of bytes to the UART) and runs: its lines exactly, to the end.
    expect_lines_from(b, resetcheck_lines(b, 1, healthy_path) + [
        r"lightpath: all VMs ended; powering off with status %d \(the first non-zero status, "
        r"vm0's; VMs that did not end with 0: 1 of 2\)" % status])
    expect_first_nonzero(b, status, 0, 1, 2)


def t_forge(label, switches=""):
    def run():
        module, path, _ = healthy()
        b = Boot(label, [guest("forge", FORGE_PAD), module], append=switches)
        check_forge(b, healthy_path=path)
        return b
    return run


def t_mmio_bad():
    b = Boot("mmio-bad-isolation", [guest("mmio_bad"), guest("hello", "status=3")])
    b.expect(r"^\[vm0\] mmio_bad: about to use an unsupported MMIO instruction\s*$",
             "'[vm0] mmio_bad: about to use an unsupported MMIO instruction'")
    m = b.expect(r"^lightpath: vm0: stopped: cannot emulate the MMIO access at rip 0x[0-9a-fA-F]+ "
                 r"\(([^;]+); bytes ([0-9a-f ]+)\)\s*$",
                 "'lightpath: vm0: stopped: cannot emulate the MMIO access at rip 0x... (...; bytes ...)'")
    check(m.group(2).startswith("0f b1"), "the bytes named are not the CMPXCHG (0f b1): " + m.group(2))
    b.expect_not(r"^\[vm0\] mmio_bad: still running", "mmio_bad ran on after the unsupported access")
    check(len(b.findall(r"^lightpath: vm0: stopped:")) == 1, "more than one 'vm0: stopped' line")
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm1: ended with status 3 ", "'lightpath: vm1: ended with status 3 (...)'")
    expect_first_nonzero(b, 0x70, 0, 2, 2)
    return b


UNCLAIMED_GUESTS = ("unclaimed32", "unclaimed64")


def expect_unclaimed_counts(b, name, vm=0):
    """The guest's own count of its accesses to unclaimed addresses equals
    lightpath's statistics line for the VM."""
    m = b.expect(PREFIX + r"%s: made (\d+) reads, (\d+) writes to unclaimed addresses\s*$"
                 % re.escape(name), "'%s: made N reads, M writes to unclaimed addresses'" % name)
    want = (int(m.group(1)), int(m.group(2)))
    s = b.expect(r"^\s+emulated: \d+ instructions; unclaimed MMIO: (\d+) reads, (\d+) writes\s*$",
                 "'emulated: N instructions; unclaimed MMIO: R reads, W writes' in vm%d's statistics" % vm)
    got = (int(s.group(1)), int(s.group(2)))
    check(got == want, "lightpath counted %d reads, %d writes of unclaimed addresses; the guest "
          "made %d, %d" % (got + want))


def t_unclaimed(name):
    """Unclaimed guest-physical addresses read all-ones and drop writes
    (unclaimed=pc, the default), counted in the exit statistics."""
    def run():
        b = Boot("selftest-" + name, [guest(name)])
        selftest_result(b, name)
        b.expect_rc(1)
        expect_unclaimed_counts(b, name)
        return b
    return run


UNCLAIMED_STOP = (r"^lightpath: vm0: stopped: guest-physical access to 0x%x outside its RAM and "
                  r"devices at rip 0x[0-9a-f]+ \(unclaimed=stop\)\s*$")


def t_unclaimed_stop(how):
    """unclaimed=stop, set by the boot option or by a VM description's
    `unclaimed =` (which overrides the option): the first access stops the
    VM; the next VM runs."""
    def run():
        if how == "option":
            b = Boot("unclaimed-stop-option", [guest("unclaimed32"), HELLO3], append="unclaimed=stop")
            b.expect_options("unclaimed=stop")
        else:
            stop = write_test_file("unclaimed-stop.cfg", "# lightpath vm\nname = strict\n"
                                   "kernel = unclaimed32.elf\nmemory = 32\nunclaimed = stop\n")
            pc = write_test_file("unclaimed-pc.cfg", "# lightpath vm\nname = lenient\n"
                                 "kernel = unclaimed64.elf\nmemory = 32\nunclaimed = pc\n")
            b = Boot("unclaimed-stop-config", [stop, pc, guest("unclaimed32"), guest("unclaimed64")],
                     append="unclaimed=stop")
        b.expect(UNCLAIMED_STOP % 0xfeb01000, "'vm0: stopped: guest-physical access to 0xfeb01000 "
                 "outside its RAM and devices at rip 0x... (unclaimed=stop)'")
        b.expect_not(r"^\[vm0\] ok 1 ", "vm0 ran on after its first unclaimed access")
        if how == "option":
            b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
            b.expect(r"^lightpath: vm1: ended with status 3 ", "'lightpath: vm1: ended with status 3'")
        else:
            # the description's `unclaimed = pc` wins over the boot option
            selftest_result(b, "unclaimed64")
            expect_unclaimed_counts(b, "unclaimed64", vm=1)
        expect_first_nonzero(b, 0x70, 0, 2 if how == "option" else 1, 2)
        return b
    return run


IRQSTATE_LEAVE = "irqstate: leave=1: the controllers stay programmed onto exception vectors"


def check_irqstate_leave(b, path, healthy):
    """docs/SECURITY.md, case 8: `irqstate leave=1` (`path`: as lightpath names it)
    finds the handover state, gets no device interrupt on an exception
    vector, then leaves every controller programmed onto exception vectors
    with its devices raising interrupts; resetcheck (`healthy`: healthy())
    after it must find the handover state again, get no interrupt in its
    IF=1 window and its own NMI once. Every line exactly; returns vm0's ok
    lines (normalised)."""
    expect_exact_lines(b, [loaded(0, path, 64, path + " leave=1")] +
                       selftest_lines(b, 0, "irqstate", [re.escape(IRQSTATE_LEAVE)], 10) +
                       [r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
                        r"lightpath: vm0: exit statistics"] +
                       resetcheck_lines(b, 1, healthy[1], healthy[2]) + [FINAL_ALL_ZERO])
    b.expect_rc(1)
    return [norm(l) for l in b.lines if re.match(r"\[vm0\] (not )?ok \d+", l)]


def t_irqstate_leave(label, switches=""):
    """With `switches`, the irqstate results must also equal those of
    selftest-irqstate (default options)."""
    def run():
        h = healthy()
        b = Boot(label, [guest("irqstate", "leave=1"), h[0]], append=switches)
        oks = check_irqstate_leave(b, guest("irqstate"), h)
        if switches:
            b.expect_options(switches)
            with BASELINE_LOCK:
                base = BASELINE.get("irqstate")
            check(base is not None, "no baseline: selftest-irqstate (default options) failed")
            check(oks == base, "irqstate's results differ from the default options run: %s"
                  % "; ".join(([l for l in oks if l not in base] +
                               ["(missing) " + l for l in base if l not in oks])[:3]))
        return b
    return run


def t_virtinsn():
    b = Boot("virtinsn-then-hello", [guest("virtinsn"), guest("hello")])
    selftest_result(b, "virtinsn")
    b.expect_not(r"^lightpath: vm\d+: stopped:.*")
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$",
             "'[vm1] hello from lightpath guest' (lightpath must stay up after virtinsn)")
    b.expect_rc(1)
    b.expect_powered_off(0)
    return b


def expect_error_line(b, *needles):
    errs = b.findall(r"^lightpath: error: (.*)$")
    check(len(errs) == 1, "expected exactly one 'lightpath: error:' line, got %d" % len(errs))
    text = errs[0].group(1)
    for n in needles:
        check(n in text, "error line does not name '%s': %s" % (n, errs[0].group(0).strip()))
    b.expect_rc(255)
    b.expect_not(r"^lightpath: vm\d+: loaded .*")


def t_bad_option():
    b = Boot("bad-option", [guest("hello")], append="bogus=1")
    expect_error_line(b, "bogus")
    return b


def t_bad_value():
    b = Boot("bad-value", [guest("hello")], append="light=maybe")
    expect_error_line(b, "light", "maybe")
    return b


def t_bad_timeout_option():
    b = Boot("bad-timeout-option", [guest("hello")], append="vm.timeout=1.5")
    expect_error_line(b, "vm.timeout", "1.5")
    b.expect(r"^lightpath: error: bad value '1\.5' for vm\.timeout= \(use whole seconds 0\.\.86400; "
             r"0 = no limit\)\s*$", "the exact error line for vm.timeout=1.5")
    return b


def t_no_modules():
    b = Boot("no-modules", [])
    expect_error_line(b)
    return b


def t_bad_image(label, path_maker):
    def run():
        path = path_maker()
        b = Boot("bad-image-" + label, [path, guest("hello")])
        b.expect(r"^lightpath: vm0: cannot load guest image '%s': \S.*$" % re.escape(path),
                 "'lightpath: vm0: cannot load guest image '%s': <reason>'" % path)
        b.expect_not(r"^lightpath: vm0: loaded .*")
        b.expect(r"^\[vm1\] hello from lightpath guest\s*$",
                 "'[vm1] hello from lightpath guest' (the next VM must still run)")
        b.expect(r"^lightpath: vm1: ended with status 0 ", "'lightpath: vm1: ended with status 0 (...)'")
        expect_first_nonzero(b, 0x70, 0, 1, 2)   # a VM that could not start is not a 0
        return b
    return run


def make_text_file():
    path = "build/test/not-an-elf.txt"
    with open(os.path.join(ROOT, path), "w") as f:
        f.write("this is not a guest image\n" * 8)
    return path


def make_non_multiboot_elf():
    # An ordinary host ELF: no multiboot header. Copied so the path has no
    # surprises (and a unit-test binary is not required to exist).
    path = "build/test/not-multiboot.elf"
    shutil.copyfile("/bin/true", os.path.join(ROOT, path))
    return path


# Bad VM descriptions and bad Linux images, each followed by a healthy hello
# VM in the same boot: one clear line for the bad VM (vm0), then hello runs as
# vm1 and lightpath powers off normally.
NORMAL_LINE = re.compile(r"^lightpath: (lightweight-exit hypervisor|options: |AMD SVM with nested paging|"
                         r"Intel VMX with EPT |VMX local APIC: |spec=(on|off): |\d+ CPUs? found \(ACPI MADT|"
                         r"TSC \d+\.\d{3} MHz \(|TSC check: |"
                         r"vm\d+: loaded |vm\d+: ended with status |vm\d+: exit statistics\s*$|"
                         r"all VMs ended; powering off )")
HELLO = GUESTS + "/hello.elf"
# The rows of the exit statistics table (lightpath's, without a prefix).
STATS_LINE = re.compile(r"^  (reason|denied:|emulated:|clock:|vCPU \d+ +\d+ exits, |\S.*\s\d+\s+\d+(\.\d+)?%)")
LINUX_KERNEL = "build/linux/vmlinuz"
LINUX_KERNEL_LOCK = threading.Lock()


def write_test_file(name, data):
    """Writes build/test/<name> (text or bytes); returns its repo-relative path."""
    path = "build/test/" + name
    with open(os.path.join(ROOT, path), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return path


def linux_kernel():
    """build/linux/vmlinuz, built (Debian's kernel, `tools/linux/build.sh
    --kernel-only`) when missing or out of date; never skipped."""
    with LINUX_KERNEL_LOCK:
        log = os.path.join(OUT, "linux-kernel-build.log")
        with open(log, "w") as f:
            try:
                p = subprocess.run([os.path.join(ROOT, "tools", "linux", "build.sh"), "--kernel-only"],
                                   cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=900)
            except subprocess.TimeoutExpired:
                raise Fail("tools/linux/build.sh --kernel-only hung (see build/test/linux-kernel-build.log)")
        check(p.returncode == 0, "tools/linux/build.sh --kernel-only exited %d (see "
              "build/test/linux-kernel-build.log)" % p.returncode)
        path = os.path.join(ROOT, LINUX_KERNEL)
        check(os.path.isfile(path) and os.path.getsize(path) > 1 << 20,
              "tools/linux/build.sh --kernel-only did not produce " + LINUX_KERNEL)
        return LINUX_KERNEL


def odd_lines(b):
    """lightpath's lines other than the usual ones: errors and reports."""
    return [l.strip() for l in b.lines if l.startswith("lightpath:") and not NORMAL_LINE.match(l)]


def expect_bad_vms_then_hello(b, lines, hello=HELLO):
    """One problem line per bad VM, equal to lines[i] (a regex for the whole
    line) for vmi, in that order and nothing else; then hello runs as the
    next VM, and lightpath powers off with vm0's status 0x70 (the first
    non-zero: a VM that could not start is not a VM that ended with 0)."""
    b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
    odd = odd_lines(b)
    check(odd, "no error line for the bad VM (wanted /%s/); %s" % (lines[0], b.why_rc()))
    check(len(odd) == len(lines), "expected %d error line(s), got %d: %s"
          % (len(lines), len(odd), " | ".join(odd[:4])))
    for got, want in zip(odd, lines):
        check(re.fullmatch(want + r"\s*", got) is not None, "wrong error line: %r (wanted /%s/)"
              % (got, want))
    n = len(lines)
    for i in range(n):
        b.expect_not(r"^lightpath: vm%d: loaded .*" % i, "the bad VM vm%d must not be loaded" % i)
        b.expect_not(r"^\[vm%d\] .*" % i, "the bad VM vm%d must print nothing" % i)
    b.expect(r"^lightpath: vm%d: loaded %s " % (n, re.escape(hello)),
             "'lightpath: vm%d: loaded %s ...'" % (n, hello))
    b.expect(r"^\[vm%d\] hello from lightpath guest\s*$" % n,
             "'[vm%d] hello from lightpath guest' (the next VM must still run)" % n)
    b.expect(r"^lightpath: vm%d: ended with status 0 " % n,
             "'lightpath: vm%d: ended with status 0 (...)'" % n)
    expect_first_nonzero(b, 0x70, 0, n, n + 1)


def expect_bad_vm_then_hello(b, line, hello=HELLO):
    """Exactly one problem line, equal to `line` (a regex for the whole line,
    anchored), for vm0; then hello runs as vm1."""
    expect_bad_vms_then_hello(b, [line], hello=hello)


def t_bad_config(label, text, line_for):
    """A VM description `text` (build/test/bad-config-<label>.cfg), then hello;
    line_for(path) is the regex of the one error line expected."""
    def run():
        path = write_test_file("bad-config-%s.cfg" % label, text)
        b = Boot("bad-config-" + label, [path, HELLO])
        expect_bad_vm_then_hello(b, line_for(re.escape(path)))
        return b
    return run


BAD_CONFIGS = (
    ("pcpus-twice", "# lightpath vm\nkernel = hello.elf\ncpus = 2\npcpus = 1,1\n",
     lambda p: r"lightpath: error: %s:4: pcpus = 1,1: CPU 1 is listed twice" % p),
    ("pcpus-count", "# lightpath vm\nkernel = hello.elf\npcpus = 0,1\n",
     lambda p: r"lightpath: error: %s:3: pcpus = lists 2 CPUs, but the VM has 1 vCPU \(cpus = 1\): "
               r"give one CPU per vCPU" % p),
    ("pcpus-value", "# lightpath vm\nkernel = hello.elf\npcpus = 64\n",
     lambda p: r"lightpath: error: %s:3: pcpus = 64: use host CPU numbers 0\.\.63, separated by "
               r"commas, one per vCPU" % p),
    ("cpus-value", "# lightpath vm\nkernel = hello.elf\ncpus = 0\n",
     lambda p: r"lightpath: error: %s:3: cpus = 0: use 1\.\.64 \(the VM's vCPUs\)" % p),
    ("unknown-key", "# lightpath vm\nkernel = vmlinuz\ncolour = blue\nmemory = 64\n",
     lambda p: r"lightpath: error: %s:3: unknown key 'colour' "
               r"\(accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net\)" % p),
    ("memory", "# lightpath vm\nname = small\n\n# too little\nmemory = 12\nkernel = vmlinuz\n",
     lambda p: r"lightpath: error: %s:5: memory = 12: use an even number 16\.\.3072 \(MiB\)" % p),
    ("no-kernel", "# lightpath vm\nname = nokernel\nmemory = 64\n",
     lambda p: r"lightpath: error: %s: no 'kernel = \.\.\.' line \(every VM needs a kernel\)" % p),
    ("missing-module", "# lightpath vm\nkernel = missing.elf\n",
     lambda p: r"lightpath: vm0: %s names module 'missing\.elf', which was not given" % p),
    ("self", "# lightpath vm\nname = narcissus\nkernel = bad-config-self.cfg\n",
     lambda p: r"lightpath: vm0: %s names itself as its kernel" % p),
    ("timeout", "# lightpath vm\nkernel = vmlinuz\ntimeout = 2s\n",
     lambda p: r"lightpath: error: %s:3: timeout = 2s: use whole seconds 0\.\.86400 \(0 = no limit\)" % p),
)


def config_cycle_boot(boot_cls, label, switches=""):
    """Two descriptions naming each other, then resetcheck: (boot, the lines
    expected, exactly). Each description is reported with one line (the old
    loader took both for modules of the other and ran neither, without a
    word), and the healthy VM after them starts from the reset state."""
    bochs = boot_cls is not Boot
    a = write_test_file("%s-a.cfg" % label, "# lightpath vm\nkernel = %s-b.cfg\n" % label)
    bb = write_test_file("%s-b.cfg" % label, "# lightpath vm\nkernel = %s-a.cfg\n" % label)
    module, path, name = healthy(bochs)
    b = boot_cls(label, [a, bb, module], append=switches)
    shown = (lambda p: os.path.basename(p)) if bochs else (lambda p: p)
    lines = [r"lightpath: vm0: %s names module '%s-b\.cfg' as its kernel, but that is a VM "
             r"description" % (re.escape(shown(a)), re.escape(label)),
             r"lightpath: vm1: %s names module '%s-a\.cfg' as its kernel, but that is a VM "
             r"description" % (re.escape(shown(bb)), re.escape(label))]
    lines += resetcheck_lines(b, 2, path, name)
    lines.append(r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero "
                 r"status, vm0's; VMs that did not end with 0: 2 of 3\)")
    return b, lines


def t_config_cycle(label, switches=""):
    def run():
        b, lines = config_cycle_boot(Boot, label, switches)
        expect_exact_lines(b, lines)
        b.expect_rc(225)
        return b
    return run


def t_config_names_config():
    """A description naming a valid description: the first is refused, the
    second still runs as its own VM."""
    a = write_test_file("config-outer.cfg", "# lightpath vm\nkernel = config-inner.cfg\n")
    inner = write_test_file("config-inner.cfg", "# lightpath vm\nkernel = hello.elf\nmemory = 16\n")
    b = Boot("config-names-config", [a, inner, HELLO])
    odd = odd_lines(b)
    want = (r"lightpath: vm0: %s names module 'config-inner\.cfg' as its kernel, but that is a VM "
            r"description" % re.escape(a))
    check(len(odd) == 1 and re.fullmatch(want, odd[0]), "expected one line /%s/, got: %s"
          % (want, " | ".join(odd) or "none"))
    b.expect(r"^lightpath: vm1: loaded %s \(multiboot ELF32, .*\), 16 MiB" % re.escape(inner),
             "'lightpath: vm1: loaded %s (multiboot ELF32 ...), 16 MiB' (the inner description)" % inner)
    b.expect(r"^\[vm1\] hello from lightpath guest$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm1: ended with status 0 ", "'lightpath: vm1: ended with status 0 (...)'")
    b.expect_not(r"^lightpath: vm2:", "a third VM (hello.elf is the inner description's kernel)")
    expect_first_nonzero(b, 0x70, 0, 1, 2)
    return b


def t_too_many_modules(label, switches=""):
    """10 modules: the first 8 run, the 9th and 10th are reported by name
    (the old loader dropped them without a word). The 8th is resetcheck:
    the VMs before it left it nothing, and it runs normally."""
    module, path, name = healthy()
    mods = [guest("hello", "n=%d" % i) for i in range(1, 8)] + [module] + \
        [guest("hello", "n=%d" % i) for i in (9, 10)]

    def run():
        b = Boot(label, mods, append=switches)
        lines = [r"lightpath: error: module %d \('%s'\) is ignored: lightpath takes at most 8 modules"
                 % (i + 1, re.escape(mods[i])) for i in (8, 9)]
        for i in range(7):
            lines += [loaded(i, HELLO, 64, mods[i]),
                      r"\[vm%d\] hello from lightpath guest" % i,
                      r'\[vm%d\] hello: args "n=%d"' % (i, i + 1),
                      r"\[vm%d\] hello: exiting with status 0" % i,
                      r"lightpath: vm%d: ended with status 0 \(isa-debug-exit\)" % i,
                      r"lightpath: vm%d: exit statistics" % i]
        lines += resetcheck_lines(b, 7, path, name)
        lines.append(r"lightpath: all VMs ended; powering off with status 112 \(every VM ended with "
                     r"status 0, but 2 modules were ignored\)")
        expect_exact_lines(b, lines)
        b.expect_powered_off(0x70, r"every VM ended with status 0, but 2 modules were ignored")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def image_refused(path, reason):
    return r"lightpath: vm0: cannot load guest image '%s': %s" % (re.escape(path), reason)


def t_bad_linux_truncated():
    kernel = linux_kernel()
    with open(os.path.join(ROOT, kernel), "rb") as f:
        head = f.read(0x300)
    check(head[0x202:0x206] == b"HdrS", "%s has no HdrS magic" % kernel)
    setup = ((head[0x1f1] or 4) + 1) * 512
    path = write_test_file("bad-linux-truncated.bzImage", head)
    b = Boot("bad-linux-truncated", [path, HELLO])
    expect_bad_vm_then_hello(b, image_refused(path, r"truncated bzImage: 768 bytes, but the setup "
                                              r"code alone is %d" % setup))
    return b


def t_bad_linux_old_protocol():
    img = bytearray(0x1000)
    img[0x1f1] = 1                                    # setup_sects
    img[0x1fe:0x200] = struct.pack("<H", 0xaa55)      # boot_flag
    img[0x202:0x206] = b"HdrS"
    img[0x206:0x208] = struct.pack("<H", 0x0204)      # boot protocol 2.04
    path = write_test_file("bad-linux-old-protocol.bzImage", bytes(img))
    b = Boot("bad-linux-old-protocol", [path, HELLO])
    expect_bad_vm_then_hello(b, image_refused(path, r"boot protocol 2\.04 is too old: 64-bit entry "
                                              r"needs 2\.06\+"))
    return b


def t_bad_linux_small_memory():
    kernel = linux_kernel()
    path = write_test_file("bad-linux-small-memory.cfg",
                           "# lightpath vm\nname = tiny\nkernel = vmlinuz\nmemory = 32\n")
    b = Boot("bad-linux-small-memory", [path, kernel, HELLO])
    expect_bad_vm_then_hello(b, r"lightpath: vm0: cannot load guest image 'vmlinuz': the kernel needs "
                                r"(\d+) MiB; the VM has 32 MiB \(it loads at \d+ MiB and unpacks into "
                                r"\d+ MiB from there\)")
    need = int(b.find(r"^lightpath: vm0: cannot load .* the kernel needs (\d+) MiB").group(1))
    check(need > 32, "the kernel 'needs %d MiB', yet 32 MiB were refused" % need)
    return b


# Multiboot kernels get their modules, anywhere in RAM but
# lightpath's own ranges (guests/selftest/mbinfo.c checks what they find).
def xorshift_bytes(seed, n):
    out = bytearray(n)
    x = seed
    for k in range(n):
        x ^= (x << 13) & 0xffffffff
        x ^= x >> 17
        x ^= (x << 5) & 0xffffffff
        out[k] = x & 0xff
    return out


def make_mb_module(name, index, length, seed, string):
    """build/test/<name>: a module that says what it should look like to
    mbinfo (its index, length, seed and string; then xorshift32 bytes)."""
    s = string.encode()
    head = b"LPMOD\0\0\0" + struct.pack("<IIII", index, length, seed, len(s)) + s
    assert len(head) <= length
    data = xorshift_bytes(seed, length)
    data[:len(head)] = head
    return write_test_file(name, bytes(data))


def mb_modules_boot(boot_cls, label, kernel):
    """A description with initrd = and modules = for `kernel` (an mbinfo
    guest), its three modules (named after `label`, apart for parallel
    runs), then hello: (boot, the description's path)."""
    p = "mbmod-%s-" % label
    mods = [make_mb_module(p + "initrd.bin", 0, 5001, 7, p + "initrd.bin"),
            make_mb_module(p + "a.bin", 1, 300 * 1024 + 3, 8, p + "a.bin alpha beta=2"),
            make_mb_module(p + "b.bin", 2, 100, 9, p + "b.bin")]
    cfg = write_test_file(p + "vm.cfg", "# lightpath vm\nname = mb-%s\nkernel = %s.elf\n"
                          "initrd = %sinitrd.bin\nmodules = \"%sa.bin alpha beta=2\", %sb.bin\n"
                          "memory = 32\n" % (label, kernel, p, p, p))
    b = boot_cls("multiboot-modules-" + label, [cfg, guest(kernel, "mods=3 ram=32")] + mods + [HELLO])
    return b, cfg


def check_mb_modules(b, kernel, label, hello=HELLO):
    """The mbinfo VM passes with its 3 modules; the modules were not run as
    VMs; hello runs as vm1."""
    b.expect(r"^lightpath: vm0: loaded mb-%s \(multiboot ELF(32|64), entry 0x[0-9a-f]+, 3 modules\), "
             r"32 MiB, " % re.escape(label), "'lightpath: vm0: loaded mb-%s (..., 3 modules), 32 MiB'" % label)
    selftest_result(b, kernel)
    b.expect(r"^lightpath: vm1: loaded %s " % re.escape(hello), "'lightpath: vm1: loaded %s'" % hello)
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect_not(r"^lightpath: vm2:", "a third VM (the modules must not run as VMs)")
    b.expect_powered_off(0)
    b.expect_rc(1)


def t_mb_modules(kernel, label):
    def run():
        b, _ = mb_modules_boot(Boot, label, kernel)
        check_mb_modules(b, kernel, label)
        return b
    return run


def make_mb_elf(name, segments, entry=0x100000):
    """build/test/<name>: an ELF32 multiboot kernel whose PT_LOAD segments
    are [(paddr, memsz)] (one page of file data each, or less)."""
    n = len(segments)
    img = bytearray(0x1000 + 0x1000 * n)
    img[0:16] = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    img[16:52] = struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, entry, 52, 0, 0, 52, 32, n, 0, 0, 0)
    for i, (paddr, memsz) in enumerate(segments):
        off = 0x1000 * (i + 1)
        img[52 + 32 * i:84 + 32 * i] = struct.pack("<IIIIIIII", 1, off, paddr, paddr,
                                                   min(memsz, 0x1000), memsz, 7, 0x1000)
    img[0x200:0x20c] = struct.pack("<III", 0x1BADB002, 3, (-(0x1BADB002 + 3)) & 0xffffffff)
    return write_test_file(name, bytes(img))


# A kernel whose segment overlaps a range lightpath fills or that is not
# RAM: (label, segments, the reason in the refusal line).
BAD_SEGMENTS = (
    ("bda", [(0x100000, 0x1000), (0x400, 0x20)],
     r"program header 1 loads 0x400-0x41f, which overlaps 0x400-0x4ff, the BIOS data area"),
    ("ebda", [(0x9f000, 0x2000)],
     r"program header 0 loads 0x9f000-0xa0fff, which overlaps 0x9fc00-0x9ffff, the EBDA"),
    ("bios-area", [(0x100000, 0x1000), (0xf0000, 0x1000)],
     r"program header 1 loads 0xf0000-0xf0fff, which overlaps 0xe0000-0xfffff, the BIOS area with "
     r"the ACPI tables"),
    ("beyond-ram", [(0x3fff000, 0x2000)],
     r"program header 0 loads 0x3fff000-0x4000fff, beyond the VM's 64 MiB of RAM"),
)


def t_bad_segment(label, segments, reason, boot_cls=None):
    """A kernel with a segment where it cannot go, then hello: one line
    naming the segment's range and what it collides with, hello runs."""
    def run():
        path = make_mb_elf("bad-segment-%s.elf" % label, segments,
                           entry=segments[0][0] if segments[0][0] >= 0x100000 else 0x100000)
        b = (boot_cls or Boot)("bad-segment-" + label, [path, HELLO])
        hello = HELLO if boot_cls is None else "hello.elf"
        name = path if boot_cls is None else os.path.basename(path)
        expect_bad_vms_then_hello(b, [image_refused(name, reason)], hello=hello)
        return b
    return run


# Descriptions whose modules = cannot be used, each then hello (the second
# hello.elf: the first is the description's kernel and so not a VM of its
# own): (label, text, extra modules, the expected line for path p).
BAD_MODULE_CONFIGS = (
    ("module-missing", "# lightpath vm\nkernel = hello.elf\nmodules = \"gone.bin x=1\"\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names module 'gone\.bin', which was not given" % p),
    ("module-self", "# lightpath vm\nkernel = hello.elf\nmodules = hello.elf, "
     "bad-config-module-self.cfg\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names itself as a module" % p),
    ("module-syntax", "# lightpath vm\nkernel = hello.elf\nmodules = \"a.bin x\",\n", [],
     lambda p: r"lightpath: error: %s:3: modules: nothing after the last ','" % p),
    ("modules-too-many", "# lightpath vm\nkernel = hello.elf\nmodules = a,b,c,d,e,f,g,h,i\n", [],
     lambda p: r"lightpath: error: %s:3: modules: more than 8 entries" % p),
    ("module-too-big", "# lightpath vm\nkernel = hello.elf\nmemory = 16\n"
     "modules = bad-config-big.bin\n", [HELLO, "build/test/bad-config-big.bin"],
     lambda p: r"lightpath: vm0: cannot load guest image 'hello\.elf': module 'bad-config-big\.bin' "
               r"\(17408 KiB\) does not fit in the free RAM of the VM's 16 MiB"),
    ("disk-missing", "# lightpath vm\nkernel = hello.elf\ndisk = gone.img\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names module 'gone\.img', which was not given" % p),
    ("disk-odd-size", "# lightpath vm\nkernel = hello.elf\ndisk = bad-config-odd.img\n",
     [HELLO, "build/test/bad-config-odd.img"],
     lambda p: r"lightpath: vm0: %s: disk 'bad-config-odd\.img' is 1000 bytes, not a whole number "
               r"of 512-byte sectors" % p),
)


def t_bad_module_config(label, text, extra, line_for):
    def run():
        if label == "module-too-big":
            write_test_file("bad-config-big.bin", bytes(17 << 20))
        write_test_file("bad-config-odd.img", bytes(1000))
        write_test_file("bad-config-ok.img", bytes(4096))
        path = write_test_file("bad-config-%s.cfg" % label, text)
        b = Boot("bad-config-" + label, [path] + extra + [HELLO])
        expect_bad_vm_then_hello(b, line_for(re.escape(path)))
        return b
    return run


VIRTIO_SECTORS = 64


def virtio_disk(name):
    """build/test/<name>: a disk image whose sector s byte i is
    (s * 31 + i * 7 + 0x5a) & 0xff (guests/selftest/virtio.c checks it)."""
    img = bytearray(VIRTIO_SECTORS * 512)
    for sec in range(VIRTIO_SECTORS):
        for i in range(512):
            img[sec * 512 + i] = (sec * 31 + i * 7 + 0x5a) & 0xff
    return write_test_file(name, bytes(img))


def t_virtio(ro, boot_cls=None, label="virtio", cpus=1):
    """A VM description's `disk =` gives the VM a virtio-blk
    function (guests/selftest/virtio.c drives it: PCI, negotiation, reads
    against the image, a write, the edges, MSI-X, a hostile ring); a second
    VM given the same image reads it as it was (a writable disk is the VM's
    own copy; a read-only one is never written). cpus=2: both VMs have two
    vCPUs (QEMU -smp 2; the second waits for a SIPI that never comes): the
    device then runs on the heavy path, under the VM lock."""
    def run():
        tag = "%s-%s" % (label, "ro" if ro else "rw")
        disk = virtio_disk("%s.img" % tag)
        cfg, again = (write_test_file("%s%s.cfg" % (tag, which), "# lightpath vm\nname = %s%s\n"
                                      "kernel = virtio.elf\nmemory = 32\ncpus = %d\n"
                                      "disk = %s.img%s\n"
                                      % (tag, which, cpus, tag, ",ro" if ro else ""))
                      for which in ("", "-again"))
        args = "sectors=%d ro=%d" % (VIRTIO_SECTORS, 1 if ro else 0)
        kw = {"smp": str(cpus)} if cpus > 1 else {}
        b = (boot_cls or Boot)(tag, [cfg, again, guest("virtio", args), disk], **kw)
        selftest_result(b, "virtio", vm=0)
        selftest_result(b, "virtio", vm=1)
        # the device's own count of what the guest did (twice: one line per VM)
        stats = (r"^  disk: 10 reads \(7 KiB\), %d writes \(0 KiB\), 0 flushes; interrupts: 3 MSI-X "
                 r"messages, 1 dropped, 7 INTx$" % (0 if ro else 1),
                 r"^  disk refused: 2 outside the image, 1 malformed, %d writes to a read-only "
                 r"disk, 0 unsupported, 1 broken rings; 3 resets, 0 undefined accesses$"
                 % (1 if ro else 0))
        for want in stats:
            check(len([l for l in b.lines if re.match(want, l)]) == 2,
                  "two statistics lines (one per VM) matching %r" % want)
        b.expect_powered_off(0)
        return b
    return run


NET_MACS = {"ping": "52:54:00:00:00:01", "echo": "52:54:00:00:00:02", "other": "52:54:00:00:00:03"}
# about 25 ms of TSC: longer than ping's answer takes under TCG (of the ~11
# gaps of a run, 7 to 10 saw the frame come inside them)
ECHO_GAP = 50000000


def t_virtionet(frames=20):
    """`net =` gives a VM a virtio-net device on a link
    between VMs side by side (QEMU -smp 4, one CPU each).
    guests/selftest/virtionet.c as three VMs: ping and echo on link0 (hello,
    `frames` frames of 60..1514 bytes echoed with their bytes inverted, a
    broadcast, a frame to an address nobody on link0 has, hostile transmit
    chains), and other on link1 sending 200 broadcasts, which must reach
    nobody; nothing of link0 may reach it. lightpath's statistics lines say
    the same from the device's side. The echo VM spins ECHO_GAP TSC ticks
    between every second look at its empty ring and its HLT, so that frames
    come both there and while it is halted (issue 27: echo looked with
    interrupts on, took the interrupt before the HLT and slept on)."""
    def run():
        num = lambda mac: "0x" + mac.replace(":", "")
        mods = []
        for role, link in (("ping", "link0"), ("echo", "link0"), ("other", "link1")):
            peer = NET_MACS["echo" if role == "ping" else "ping"]
            elf = "build/test/virtionet-%s.elf" % role
            shutil.copyfile(os.path.join(ROOT, GUESTS, "virtionet.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("virtionet-%s.cfg" % role, "# lightpath vm\nname = %s\n"
                                  "kernel = virtionet-%s.elf\nmemory = 32\ntimeout = 120\n"
                                  "net = %s,mac=%s\n" % (role, role, link, NET_MACS[role]))
            mods += [cfg, "%s role=%s n=%d me=%s peer=%s other=%s%s" % (
                elf, role, frames, num(NET_MACS[role]), num(peer), num(NET_MACS["other"]),
                " gap=%d" % ECHO_GAP if role == "echo" else "")]
        b = Boot("virtionet", mods, smp="4", timeout=180)
        for vm in range(3):
            selftest_result(b, "virtionet", vm=vm)
        for vm, (role, link) in enumerate((("ping", "link0"), ("echo", "link0"),
                                           ("other", "link1"))):
            b.expect(r"^lightpath: vm%d: network device %s on link %s$" % (vm, NET_MACS[role], link))
        def stats(role):
            want = r"^  net (link\d) %s: (\d+) frames sent \(\d+ KiB\), (\d+) received " \
                   r"\(\d+ KiB\); interrupts: (\d+) MSI-X messages, 0 dropped, 0 INTx$" % NET_MACS[role]
            m = [re.match(want, l) for l in b.lines]
            m = [x for x in m if x]
            check(len(m) == 1, "one 'net ... %s:' statistics line" % NET_MACS[role])
            return [m[0].group(1)] + [int(v) for v in m[0].groups()[1:]]
        ping, echo, other = stats("ping"), stats("echo"), stats("other")
        # ping received exactly: READY, the echoes, the broadcast, the frame to other
        check(ping[2] == frames + 3, "ping received %d frames, not %d" % (ping[2], frames + 3))
        check(echo[1] == frames + 3, "echo sent %d frames, not %d" % (echo[1], frames + 3))
        check(echo[2] >= frames + 1 and echo[2] <= ping[1], "echo received %d frames of ping's %d"
              % (echo[2], ping[1]))
        check(other[1] == 200 and other[2] == 0, "other sent %d and received %d (200, 0)"
              % (other[1], other[2]))
        check(echo[3] >= 1, "no MSI-X message woke the echo VM")
        refused = [l for l in b.lines if l.startswith("  net refused:")]
        check(len(refused) == 3, "three 'net refused:' lines")
        check(len([l for l in refused if re.match(r"  net refused: 4 bad transmit chains, 0 bad "
                   r"receive chains, 0 receive buffers too small, 0 frames lost to a full inbox, "
                   r"0 broken rings; \d+ resets, 0 undefined accesses$", l)]) == 1,
              "the echo VM's four hostile transmit chains are not counted once: %s" % refused)
        b.expect_powered_off(0)
        return b
    return run


def t_virtionet_same_mac():
    """Two VMs side by side on one link with the same MAC address: the one
    that starts second is stopped with one line naming the address (which
    one that is, is a race; each runs guests/selftest/side.c for a second,
    so both are on the link together); the other runs on and ends with 0."""
    def run():
        mods = []
        for k in range(2):
            cfg = write_test_file("net-same-mac-%d.cfg" % k, "# lightpath vm\nkernel = side%d.elf\n"
                                  "memory = 32\nnet = l0,mac=52:54:00:aa:bb:cc\n" % k)
            elf = "build/test/side%d.elf" % k
            shutil.copyfile(os.path.join(ROOT, SIDE), os.path.join(ROOT, elf))
            mods += [cfg, elf + " lines=20 ms=50"]
        b = Boot("net-same-mac", mods, smp="2")
        stopped = b.findall(r"^lightpath: vm([01]): stopped: net = l0: link l0: another VM on it has "
                            r"the MAC address 52:54:00:aa:bb:cc$")
        check(len(stopped) == 1, "%d VMs stopped for the MAC address, wanted 1" % len(stopped))
        other = 1 - int(stopped[0].group(1))
        b.expect(r"^lightpath: vm%d: ended with status 0 \(isa-debug-exit\)$" % other)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def vm_stat(b, vm, regex):
    """The first match of `regex` among VM `vm`'s statistics lines (those
    after its 'exit statistics' line, up to the next lightpath line), or
    None."""
    lines = [l.rstrip() for l in b.lines]
    start = next((i for i, l in enumerate(lines)
                  if l == "lightpath: vm%d: exit statistics" % vm), None)
    if start is None:
        return None
    for l in lines[start + 1:]:
        if l.startswith("lightpath: "):
            break
        m = re.match(regex, l)
        if m:
            return m
    return None


def budget_stops(b, vm, dev):
    """VM `vm`'s device `dev` ('disk' or 'net'): (turns stopped at the
    budget, the longest such turn's descriptors, its KiB), from its budget
    line; (0, 0, 0) without one."""
    m = vm_stat(b, vm, r"  %s: (\d+) doorbell turns stopped at their budget \(2048 descriptors, "
                r"1024 KiB\); the longest of them: (\d+) descriptors, (\d+) KiB$" % dev)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


VQREFILL_SECTORS = 2048


def t_hostile_vqrefill(label, append, limit=15):
    """A VM of two vCPUs with a disk (guests/hostile/vqrefill.c) rings its
    doorbell once while its second vCPU keeps the ring full for ever; beside
    it a VM with its own disk runs guests/selftest/virtio.c (QEMU -smp 3).
    Without a budget that doorbell never ended (the time limit could not
    fire, QEMU's timeout ended the run). Passes when: the healthy VM's
    self-test passes, the attacker is stopped by its time limit, its disk
    served more than a ring of requests (the sibling did refill) and
    stopped at a budget at least once."""
    label = "hostile-" + label   # (its files and log)
    def run():
        # 1 MiB: each request reads all of it, a long copy during which the
        # sibling has time to refill (the sibling must keep up for the old
        # doorbell to never end; a short copy often let the ring run dry)
        disk_a = write_test_file("%s-attacker.img" % label, bytes(VQREFILL_SECTORS * 512))
        disk_h = virtio_disk("%s-healthy.img" % label)
        att = write_test_file("%s-attacker.cfg" % label, "# lightpath vm\nname = vqrefill\n"
                              "kernel = vqrefill.elf\nmemory = 32\ncpus = 2\ntimeout = %d\n"
                              "disk = %s-attacker.img\n" % (limit, label))
        hea = write_test_file("%s-healthy.cfg" % label, "# lightpath vm\nname = healthy\n"
                              "kernel = virtio.elf\nmemory = 32\ntimeout = 120\n"
                              "disk = %s-healthy.img\n" % label)
        b = Boot(label, [att, guest("vqrefill", "sectors=%d" % VQREFILL_SECTORS), hea,
                         guest("virtio", "sectors=%d ro=0" % VIRTIO_SECTORS),
                         disk_a, disk_h], append=append, smp="3", timeout=120)
        b.expect(r"^\[vm0\] vqrefill: ringing the doorbell; the sibling refills the ring for ever$")
        b.expect(r"^lightpath: vm0: stopped: time limit of %d s reached$" % limit,
                 "the attacker stopped by its time limit; %s" % b.why_rc())
        selftest_result(b, "virtio", vm=1)
        b.expect(r"^lightpath: vm1: ended with status 0 \(isa-debug-exit\)$")
        m = vm_stat(b, 0, r"  disk: (\d+) reads \(")
        check(m and int(m.group(1)) > 128, "the attacker's disk served %s reads, wanted more "
              "than one ring (128)" % (m.group(1) if m else "no"))
        stops, descs, kib = budget_stops(b, 0, "disk")
        check(stops >= 1, "the attacker's disk never stopped at its budget")
        # one turn: at most the budget, and the bytes' budget plus the one
        # chain (a 1 MiB read) that crossed it
        check(descs <= 2048 and kib <= 2 * 1024, "the attacker's longest turn: %d descriptors, "
              "%d KiB" % (descs, kib))
        check(budget_stops(b, 1, "disk")[0] == 0, "the healthy VM's disk stopped at a budget")
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        return b
    return run


def t_hostile_rxwalk(label, append, limit=30, frames=20):
    """guests/hostile/rxwalk.c: on link evil, a walker whose receive ring
    is 256 chains of 1279 descriptors (refused after the whole walk, so a
    frame waits and the next chain is walked) and a flooder that keeps a
    frame waiting for it; on link0 beside them the healthy ping and echo
    of guests/selftest/virtionet.c (QEMU -smp 4). Before the budget and the
    per-link locks, each frame walked ~327,000 descriptors under the lock
    every link shared. Passes when: ping gets all its echoes (its self-test
    passes) and ends while the walker still runs (ping's end is logged
    before the walker's time-limit stop), both attackers are stopped by
    their time limit, and the walker's device stopped at its budget."""
    label = "hostile-" + label   # (its files and log)
    def run():
        num = lambda mac: "0x" + mac.replace(":", "")
        macs = dict(NET_MACS, walk="52:54:00:00:00:11", flood="52:54:00:00:00:12")
        mods = []
        for role in ("walk", "flood"):   # (one image per VM: a kernel = names one module)
            elf = "build/test/%s-%s.elf" % (label, role)
            shutil.copyfile(os.path.join(ROOT, GUESTS, "rxwalk.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("%s-%s.cfg" % (label, role), "# lightpath vm\nname = %s\n"
                                  "kernel = %s-%s.elf\nmemory = 32\ntimeout = %d\n"
                                  "net = evil,mac=%s\n" % (role, label, role, limit, macs[role]))
            mods += [cfg, "%s role=%s me=%s" % (elf, role, num(macs[role]))]
        for role in ("ping", "echo"):
            peer = NET_MACS["echo" if role == "ping" else "ping"]
            elf = "build/test/%s-%s.elf" % (label, role)
            shutil.copyfile(os.path.join(ROOT, GUESTS, "virtionet.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("%s-%s.cfg" % (label, role), "# lightpath vm\nname = %s\n"
                                  "kernel = %s-%s.elf\nmemory = 32\ntimeout = 120\n"
                                  "net = link0,mac=%s\n" % (role, label, role, NET_MACS[role]))
            mods += [cfg, "%s role=%s n=%d me=%s peer=%s other=%s" % (
                elf, role, frames, num(NET_MACS[role]), num(peer), num(NET_MACS["other"]))]
        b = Boot(label, mods, append=append, smp="4", timeout=240)
        b.expect(r"^\[vm0\] rxwalk: walker: 256 chains of 1279 descriptors on the receive ring, "
                 r"for ever$")
        for vm in (2, 3):
            selftest_result(b, "virtionet", vm=vm)
        stop = r"^lightpath: vm%d: stopped: time limit of %d s reached$"
        for vm in (0, 1):
            b.expect(stop % (vm, limit), "vm%d stopped by its time limit; %s" % (vm, b.why_rc()))
        lines = [l.rstrip() for l in b.lines]
        ping_end = next((i for i, l in enumerate(lines)
                         if re.match(r"lightpath: vm2: ended with status 0 \(isa-debug-exit\)$", l)), None)
        walk_stop = next(i for i, l in enumerate(lines) if re.match(stop % (0, limit), l))
        check(ping_end is not None and ping_end < walk_stop,
              "ping did not end (with 0) while the walker ran: %s, %s" % (ping_end, walk_stop))
        stops, descs, _ = budget_stops(b, 0, "net")
        check(stops >= 1, "the walker's device never stopped at its budget")
        check(descs <= 2048, "the walker's longest turn walked %d descriptors" % descs)
        for vm in (2, 3):
            check(budget_stops(b, vm, "net")[0] == 0, "healthy vm%d's device stopped at a budget" % vm)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        return b
    return run

def t_bad_modules_linux():
    """modules = for a Linux kernel: refused with one line (Linux takes its
    initrd through initrd =)."""
    kernel = linux_kernel()
    path = write_test_file("bad-config-modules-linux.cfg", "# lightpath vm\nkernel = vmlinuz\n"
                           "modules = hello.elf\nmemory = 32\n")
    b = Boot("bad-config-modules-linux", [path, kernel, HELLO, HELLO])
    expect_bad_vm_then_hello(b, r"lightpath: vm0: %s: modules = is for multiboot kernels; 'vmlinuz' "
                                r"is a Linux bzImage \(its initrd is initrd =\)" % re.escape(path))
    return b


# docs/SECURITY.md, case 9: VMs that never end by themselves (guests/selftest/forever.c)
# are stopped by their time limit (a VM description's `timeout =`, or the boot
# option vm.timeout=) or by Ctrl-^ on the console; the next VM still runs.
FOREVER = GUESTS + "/forever.elf"
HELLO3 = HELLO + " status=3"
# lightpath's start-up lines, left out of the exact comparisons below
STARTUP_LINE = re.compile(r"^lightpath: (lightweight-exit hypervisor|options: |AMD SVM with nested paging|"
                          r"Intel VMX with |VMX local APIC: |VMX: |spec=(on|off): |\d+ CPUs? found \(ACPI MADT|"
                          r"TSC \d+\.\d{3} MHz \(|TSC check: )")


def expect_exact_lines(b, expected):
    """Every line lightpath or a guest printed (the exit statistics tables'
    rows aside), in order, each matching its regex in `expected` in full."""
    got = [l.rstrip() for l in b.lines
           if re.match(r"(lightpath: |\[vm\d+\] )", l) and not STARTUP_LINE.match(l)]
    for i, want in enumerate(expected):
        check(i < len(got), "line %d missing (wanted /%s/); %s" % (i + 1, want, b.why_rc()))
        check(re.fullmatch(want, got[i]) is not None,
              "line %d is %r, wanted /%s/" % (i + 1, got[i], want))
    check(len(got) == len(expected), "unexpected line %d: %r" % (len(expected) + 1,
                                                                got[len(expected)] if len(got) > len(expected) else ""))


def expect_lines_from(b, expected):
    """Like expect_exact_lines, from the first line that matches
    expected[0] to the end: for a boot whose first VMs are checked
    otherwise."""
    start = next((i for i, l in enumerate(b.lines) if re.fullmatch(expected[0], l.rstrip())), None)
    check(start is not None, "no line /%s/; %s" % (expected[0], b.why_rc()))
    tail = Boot.__new__(Boot)
    tail.__dict__.update(b.__dict__)
    tail.lines = b.lines[start:]
    expect_exact_lines(tail, expected)


def loaded(vm, name, mib, cmdline, elf="ELF32"):
    return (r"lightpath: vm%d: loaded %s \(multiboot %s, entry 0x[0-9a-f]+\), %d MiB, "
            r"cmdline \"%s\"" % (vm, re.escape(name), elf, mib, re.escape(cmdline)))


def hello_lines(vm, limit=None, hello=HELLO):
    """The lines of `hello status=3` as VM `vm` (`hello`: its path as lightpath names it)."""
    return ([loaded(vm, hello, 64, hello + " status=3")] +
            ([r"lightpath: vm%d: time limit %d s" % (vm, limit)] if limit else []) +
            [r"\[vm%d\] hello from lightpath guest" % vm,
             r"\[vm%d\] hello: args \"status=3\"" % vm,
             r"\[vm%d\] hello: exiting with status 3" % vm,
             r"lightpath: vm%d: ended with status 3 \(isa-debug-exit\)" % vm,
             r"lightpath: vm%d: exit statistics" % vm])


def selftest_lines(b, vm, name, info=(), min_passed=1):
    """The guest lines of self-test `name` as VM `vm` when every check passed:
    its `info` lines (regexes), `ok 1` .. `ok P`, the verdict. P is the number
    of checks its verdict in `b` counts, at least `min_passed`; a `not ok`
    line, or a missing verdict, fails where the log goes wrong."""
    m = b.find(r"\[vm%d\] selftest %s: (\d+) passed, (\d+) failed$" % (vm, re.escape(name)))
    passed = max(int(m.group(1)) + int(m.group(2)) if m else 0, min_passed)
    return ([r"\[vm%d\] %s" % (vm, i) for i in info] +
            [r"\[vm%d\] ok %d - .+" % (vm, n) for n in range(1, passed + 1)] +
            [r"\[vm%d\] selftest %s: %d passed, 0 failed" % (vm, re.escape(name), passed)])


# The checks resetcheck makes on every CPU (x87, SSE, XCR0 or its absence,
# MSRs, SPEC_CTRL, debug and control registers, devices, guest RAM, the
# interrupt controllers, an NMI and an interrupt window); more where the CPU has XSAVE
# components, AVX, TSC_AUX and SPEC_CTRL.
RESETCHECK_MIN_CHECKS = 56


def resetcheck_lines(b, vm, path, name="resetcheck", limit=None):
    """The lines of guests/hostile/resetcheck.c (`name` resetcheck or
    resetcheck64, `path` as lightpath names the image) as VM `vm`, when it
    found everything in its reset state and ran normally: run it after a
    hostile guest. `limit`: the time limit lightpath gives it (vm.timeout=)."""
    elf = "ELF64" if name.endswith("64") else "ELF32"
    info = r"%s: XSAVE (yes|no), AVX (yes|no), XCR0 components 0x[0-9a-f]+" % name
    return ([loaded(vm, path, 64, path, elf)] +
            ([r"lightpath: vm%d: time limit %d s" % (vm, limit)] if limit else []) +
            selftest_lines(b, vm, name, [info], RESETCHECK_MIN_CHECKS) +
            [r"lightpath: vm%d: ended with status 0 \(isa-debug-exit\)" % vm,
             r"lightpath: vm%d: exit statistics" % vm])


RESETCHECK = GUESTS + "/resetcheck.elf"
RESETCHECK64 = GUESTS + "/resetcheck64.elf"


def healthy(bochs=False, wide=False):
    """The healthy VM that follows a hostile one: (module, the path as
    lightpath names it, guest name). `wide`: resetcheck64, for a hostile
    guest in long mode or one that touches 64-bit-only state (XMM8-15, CR8);
    else resetcheck. `bochs`: lp-bochs names modules by their basename."""
    path = RESETCHECK64 if wide else RESETCHECK
    name = "resetcheck64" if wide else "resetcheck"
    return path, (os.path.basename(path) if bochs else path), name


def ok_lines(vm, name, descs):
    """The exact lines of self-test `name` as VM `vm` when each of its checks,
    described by `descs` in order, passed: `ok N - desc` and the verdict."""
    return ([r"\[vm%d\] ok %d - %s" % (vm, i + 1, re.escape(d)) for i, d in enumerate(descs)] +
            [r"\[vm%d\] selftest %s: %d passed, 0 failed" % (vm, re.escape(name), len(descs))])


def both_switch_sets(prefix, name, make_case):
    """A hostile-guest case under the default switches and under
    HOSTILE_SWITCHES, as [(phase, test name, fn)]: make_case(label, append)
    builds each; the test names are prefix + name (+ "-hostile-opts")."""
    cfg, opts = HOSTILE_SWITCHES
    return [(1, prefix + name, make_case(name, "")),
            (1, "%s%s-%s" % (prefix, name, cfg), make_case("%s-%s" % (name, cfg), opts))]


def guest64_then_resetcheck(name, vm0_lines, bochs=False, nrip=False, icount=False):
    """make_case (for both_switch_sets) of a 64-bit hostile guest that ends
    with status 0 and is followed by resetcheck64; vm0_lines(0) gives the
    guest's own lines. `bochs`: under Bochs VT-x (vmx_tests.BochsBoot);
    with `nrip` the SVM image under Bochs ryzen (NRIP save) instead;
    `icount`: QEMU with -icount (the guest's TSC counts instructions)."""
    def make_case(label, switches):
        def run():
            hc = healthy(bochs=bochs, wide=True)
            if bochs:
                import vmx_tests  # not at the top: it imports this module
                # the VT-x and ryzen runs of one guest must not share a log
                b = vmx_tests.BochsBoot(("svm-" if nrip else "") + label, [guest(name), hc[0]],
                                        append=switches,
                                        cpu=vmx_tests.NRIP_CPU if nrip else None,
                                        kernel=vmx_tests.SVM_IMAGE if nrip else None)
                path = name + ".elf"
            else:
                b = Boot(label, [guest(name), hc[0]], append=switches, icount=icount)
                path = guest(name)
            expect_exact_lines(b, [loaded(0, path, 64, path, "ELF64")] + vm0_lines(0) +
                               [r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
                                r"lightpath: vm0: exit statistics"] +
                               resetcheck_lines(b, 1, hc[1], hc[2]) + [FINAL_ALL_ZERO])
            b.expect_rc(1)
            return b
        return run
    return make_case


def bochs_vmx_and_svm(name, vm0_lines):
    """guest64_then_resetcheck's case under Bochs VT-x (tests "vmx-NAME") and
    Bochs ryzen, SVM with NRIP save ("bochs-svm-NAME"), each under both
    switch sets."""
    return (both_switch_sets("vmx-", name, guest64_then_resetcheck(name, vm0_lines, bochs=True)) +
            both_switch_sets("bochs-svm-", name,
                             guest64_then_resetcheck(name, vm0_lines, bochs=True, nrip=True)))


def forever_stopped(vm, name, mib, mode, limit, why, forever=FOREVER):
    """The lines of a forever VM that lightpath stops for `why`."""
    return [loaded(vm, name, mib, "%s mode=%s" % (forever, mode)),
            r"lightpath: vm%d: time limit %d s" % (vm, limit),
            r"\[vm%d\] forever: mode=%s, never ending by itself" % (vm, re.escape(mode)),
            r"lightpath: vm%d: stopped: %s" % (vm, why),
            r"lightpath: vm%d: exit statistics" % vm]


# The last line when vm0 was stopped (0x70) and hello then ended with 3, and
# when vm0 ended with 0 and hello with 3: the first non-zero status wins.
FINAL_VM0_STOPPED = (r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero "
                     r"status, vm0's; VMs that did not end with 0: 2 of 2\)")
FINAL_VM1_STATUS3 = (r"lightpath: all VMs ended; powering off with status 3 \(the first non-zero "
                     r"status, vm1's; VMs that did not end with 0: 1 of 2\)")
# ... when vm0 was stopped and the healthy VM after it (resetcheck) ended
# with 0, and when every VM ended with 0.
FINAL_VM0_STOPPED_ONLY = (r"lightpath: all VMs ended; powering off with status 112 \(the first "
                          r"non-zero status, vm0's; VMs that did not end with 0: 1 of 2\)")
FINAL_ALL_ZERO = r"lightpath: all VMs ended; powering off with status 0 \(every VM ended with status 0\)"


def limit_config(label, text):
    return write_test_file("timeout-%s.cfg" % label, text)


def t_timeout(label, mode, how, limit=1, switches=""):
    """`forever mode=<mode>` stopped by a limit of `limit` s set by `how`
    ("config": a description's timeout =; "option": vm.timeout=), then
    resetcheck, which must start from the reset state and run normally
    (under vm.timeout= with the same limit); `switches`: more boot options."""
    def run():
        module, path, name = healthy()
        if how == "config":
            cfg = limit_config(label, "# lightpath vm\nname = never-%s\nkernel = forever.elf\n"
                               "memory = 32\ntimeout = %d\n" % (mode, limit))
            b = Boot("timeout-" + label, [cfg, "%s mode=%s" % (FOREVER, mode), module],
                     append=switches)
            first = forever_stopped(0, "never-" + mode, 32, mode, limit,
                                    r"time limit of %d s reached" % limit)
            rest = resetcheck_lines(b, 1, path, name)
        else:
            b = Boot("timeout-" + label, ["%s mode=%s" % (FOREVER, mode), module],
                     append=("vm.timeout=%d %s" % (limit, switches)).strip())
            first = forever_stopped(0, FOREVER, 64, mode, limit, r"time limit of %d s reached" % limit)
            rest = resetcheck_lines(b, 1, path, name, limit)
        expect_exact_lines(b, first + rest + [FINAL_VM0_STOPPED_ONLY])
        b.expect_rc(225)   # the first non-zero status: vm0's 0x70
        # stopped at its limit: not before (the run includes QEMU's start), not
        # long after it
        check(b.secs >= limit, "the run took %.1f s, less than the %d s limit" % (b.secs, limit))
        check(b.secs < limit + 20, "the run took %.1f s for a %d s limit" % (b.secs, limit))
        return b
    return run


def t_timeout_precedence():
    """A description's timeout = overrides vm.timeout= (0 = no limit), and a
    limit does not end a VM that finishes within it."""
    free = limit_config("zero", "# lightpath vm\nname = unlimited\nkernel = forever.elf\n"
                        "memory = 32\ntimeout = 0\n")
    b = Boot("timeout-precedence", [free, "%s mode=busy ms=1500" % FOREVER, HELLO3],
             append="vm.timeout=1")
    expect_exact_lines(b, [
        loaded(0, "unlimited", 32, "%s mode=busy ms=1500" % FOREVER),
        r"\[vm0\] forever: mode=busy, reading the PM timer for 1500 ms",
        r"\[vm0\] forever: done after 1500 ms",
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + hello_lines(1, 1) + [FINAL_VM1_STATUS3])
    b.expect_rc(7)
    return b


def t_timeout_not_early():
    """A VM that ends by itself within its limit is not stopped. (It polls
    the PM timer without RDTSC: lightpath's guest clock hides nothing from
    it, vmm/guest_clock.h, and its 1000 ms take about 1 s of host time.)"""
    b = Boot("timeout-not-early", ["%s mode=busy ms=1000" % FOREVER, HELLO3], append="vm.timeout=3")
    expect_exact_lines(b, [
        loaded(0, FOREVER, 64, "%s mode=busy ms=1000" % FOREVER),
        r"lightpath: vm0: time limit 3 s",
        r"\[vm0\] forever: mode=busy, reading the PM timer for 1000 ms",
        r"\[vm0\] forever: done after 1000 ms",
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + hello_lines(1, 3) + [FINAL_VM1_STATUS3])
    b.expect_rc(7)
    return b


CLOCK_LOAD_CHECK_S = 5      # tsc.check=: seconds timed by the host PM timer and the TSC
CLOCK_LOAD_LIMIT_S = 5      # vm.timeout= of the forever VM
CLOCK_LOAD_REPORT_MS = 10   # forever's report= interval
CLOCK_LOAD_PPM = 10000      # 1%
CLOCK_LOAD_START_MS = 20    # the VM's start before the guest's first PM read


def t_clock_under_load():
    """Under a host CPU hog (one busy process per core, started and stopped
    here, unless LP_HOG says `make stress` already runs one): (1) the TSC
    at the rate lightpath calibrated while the hog ran times tsc.check=5 s
    within 1% of the host's ACPI PM timer (under QEMU without icount both
    follow the host's clock, so a stall bends neither: only a wrong
    calibration separates them); (2) vm.timeout=5 stops `forever mode=busy`
    when the guest's PM timer (lightpath's, from the TSC) has counted 5 s
    within 1%: its last report (every 10 ms) is at least 0.99 x 5000 ms
    less one interval and the start-up, and at most 1.01 x 5000 ms. The
    hog must have had at least 10% of the CPUs it asked for (the machine
    is shared with other emulators), or the test proves nothing."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import hog
    outer = os.environ.get("LP_HOG") == "1"
    h = None
    mods = ["%s mode=busy report=%d" % (FOREVER, CLOCK_LOAD_REPORT_MS), HELLO3]
    append = "tsc.check=%d vm.timeout=%d" % (CLOCK_LOAD_CHECK_S, CLOCK_LOAD_LIMIT_S)
    if outer:
        b = Boot("clock-under-load", mods, append=append)
    else:
        with hog.Hog() as h:
            b = Boot("clock-under-load", mods, append=append)
            check(h.alive(), "a hog process died during the run")
    cal = b.expect(r"^lightpath: TSC (\d+\.\d{3}) MHz \((.*)\)\s*$", "the TSC calibration line")
    b.expect_not(r"^lightpath: warning: TSC.*", "a TSC calibration warning")
    m = b.expect(r"^lightpath: TSC check: (\d+)\.(\d{3}) s by the PM timer, (\d+)\.(\d{3}) s by "
                 r"the TSC \(([+-])(\d+) ppm\)\s*$", "the 'TSC check:' line")
    check(int(m.group(1)) >= CLOCK_LOAD_CHECK_S, "TSC check: %r is shorter than asked" % m.group(0))
    check(int(m.group(6)) <= CLOCK_LOAD_PPM,
          "the TSC at %s MHz (%s) is %s%s ppm off the host's PM timer over %d s: more than 1%%"
          % (cal.group(1), cal.group(2), m.group(5), m.group(6), CLOCK_LOAD_CHECK_S))
    b.expect(r"^lightpath: vm0: stopped: time limit of %d s reached\s*$" % CLOCK_LOAD_LIMIT_S,
             "vm0 stopped at its limit")
    reports = [int(x.group(1)) for x in b.findall(r"^\[vm0\] forever: PM timer at (\d+) ms\s*$")]
    check(reports, "no 'forever: PM timer at N ms' line; %s" % b.why_rc())
    last, limit_ms = reports[-1], CLOCK_LOAD_LIMIT_S * 1000
    low = limit_ms * (1e6 - CLOCK_LOAD_PPM) / 1e6 - CLOCK_LOAD_REPORT_MS - CLOCK_LOAD_START_MS
    high = limit_ms * (1e6 + CLOCK_LOAD_PPM) / 1e6
    check(low <= last <= high,
          "vm.timeout=%d fired when the guest's PM timer had counted %d ms (allowed %.0f..%.0f)"
          % (CLOCK_LOAD_LIMIT_S, last, low, high))
    b.expect(r"^\[vm1\] hello: exiting with status 3\s*$", "the healthy VM after it")
    b.expect_rc(225)
    if h is not None:   # this machine is shared: other emulators take their part too
        check(h.busy_fraction() >= 0.1, "the hog got only %.0f%% of its %d CPUs: no load to "
              "test under" % (h.busy_fraction() * 100, h.n))
    print("clock-under-load: TSC %s MHz (%s); TSC check %s%s ppm; vm.timeout at guest PM %d ms; "
          "hog %s" % (cal.group(1), cal.group(2), m.group(5), m.group(6), last,
                      "of make stress" if outer else "%.0f%% busy" % (h.busy_fraction() * 100)),
          flush=True)
    return b


def t_timeout_cli_hlt():
    """HLT with IF=0 can never be woken: stopped at once, not at the limit."""
    b = Boot("timeout-cli-hlt", ["%s mode=cli-hlt" % FOREVER, HELLO3], append="vm.timeout=20")
    expect_exact_lines(b, forever_stopped(0, FOREVER, 64, "cli-hlt", 20,
                                          r"HLT at rip 0x[0-9a-f]+ with no interrupt pending and no "
                                          r"interrupt source that could wake it \(RFLAGS\.IF=0\)") +
                       hello_lines(1, 20) + [FINAL_VM0_STOPPED])
    b.expect_rc(225)
    check(b.secs < 15, "the run took %.1f s: the HLT waited for its 20 s limit" % b.secs)
    return b


CONSOLE_END_KEY = b"\x1e"  # Ctrl-^


def t_console_key():
    """Ctrl-^ on the console ends the VM that has it, even one that spins with
    IF=0 and never reads its serial port (108 bytes typed before the key: more
    than its receive FIFO holds); the next VM still runs. vm.timeout=30 only
    bounds the test if the key does not work."""
    log = os.path.join("build", "test", "console-key.log")
    cmd = [LP_QEMU, "--interactive", "--timeout", str(TIMEOUT), "--append", "vm.timeout=30",
           "%s mode=spin" % FOREVER, HELLO3]
    claim_log(log)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    text, typed = b"", False
    for chunk in iter(lambda: p.stdout.readline(), b""):
        text += chunk
        if not typed and b"[vm0] forever: mode=spin" in chunk:
            p.stdin.write(b"typed while the guest does not read " * 3 + CONSOLE_END_KEY)
            p.stdin.flush()
            typed = True
    rc = p.wait()
    with open(os.path.join(ROOT, log), "wb") as f:
        f.write(text)
    b = Boot.__new__(Boot)             # a Boot made from this run, for its checks
    b.log, b.cmd, b.timeout, b.rc, b.stderr = log, cmd, TIMEOUT, rc, ""
    b.secs = time.monotonic() - t0
    b.text = text.decode(errors="replace").replace("\r", "")
    b.lines = b.text.splitlines()
    check(typed, "the forever guest never printed its line, so nothing was typed; " + b.why_rc())
    expect_exact_lines(b, forever_stopped(0, FOREVER, 64, "spin", 30, r"Ctrl-\^ typed on the console") +
                       hello_lines(1, 30) + [FINAL_VM0_STOPPED])
    b.expect_rc(225)
    return b


CONSOLE_SWITCH_KEY = b"\x1c"  # Ctrl-\\


def t_console_switch():
    """With two VMs side by side (-smp 2, forever mode=hlt,
    neither ends by itself), console input goes to the VM that starts first
    (a race between the CPUs; lightpath says which); Ctrl-\\ passes it to the
    other, so the next Ctrl-^ stops that one; input goes back to the first
    (the only one left) and the next Ctrl-^ stops it. Each key is typed once
    the line before it has appeared."""
    cmd = [LP_QEMU, "--interactive", "--smp", "2", "--timeout", str(TIMEOUT), "--append",
           "vm.timeout=30", "%s mode=hlt" % FOREVER, "%s mode=hlt" % FOREVER]
    seen, steps = set(), []
    state = {"first": None}

    def on_line(chunk, stdin):
        if b"forever: mode=hlt" in chunk:
            seen.add(chunk[:5])
        m = re.match(rb"lightpath: console input goes to vm(\d) now\r?$", chunk)
        if state["first"] is None and m:
            first = state["first"] = int(m.group(1))
            other = 1 - first
            steps.extend([(None, CONSOLE_SWITCH_KEY),
                          (b"lightpath: console input goes to vm%d now" % other, CONSOLE_END_KEY),
                          (b"lightpath: console input goes to vm%d now (vm%d ended)"
                           % (first, other), CONSOLE_END_KEY)])
        if steps and (steps[0][0] in chunk if steps[0][0] else len(seen) == 2):
            stdin.write(steps.pop(0)[1])
            stdin.flush()

    b = interactive_boot("console-switch", cmd, on_line)
    first = state["first"]
    other = 1 - first if first is not None else None
    check(first is not None, "no line says which VM has console input; %s" % b.why_rc())
    check(not steps, "stuck before typing key %d; %s" % (4 - len(steps), b.why_rc()))
    for vm in (0, 1):
        f = forever_stopped(vm, FOREVER, 64, "hlt", 30, r"Ctrl-\^ typed on the console")
        expect_vm_lines(b, vm, f[:1] + [RUNS_ON % (vm, 1 - vm)] + f[1:])
    order = [l for l in b.lines if re.match(r"lightpath: (vm\d: stopped|console input)", l)]
    check(order == ["lightpath: console input goes to vm%d now" % first,
                    "lightpath: console input goes to vm%d now" % other,
                    "lightpath: vm%d: stopped: Ctrl-^ typed on the console" % other,
                    "lightpath: console input goes to vm%d now (vm%d ended)" % (first, other),
                    "lightpath: vm%d: stopped: Ctrl-^ typed on the console" % first],
          "console lines in this order: %r" % order)
    expect_side_by_side(b, FINAL_VM0_STOPPED, aps=1)
    b.expect_rc(225)
    return b


def interactive_boot(label, cmd, on_line):
    """Runs lp-qemu --interactive `cmd`, calling on_line(line, stdin) for
    each line of its output (a test's reactions: typing, the monitor), and
    returns a Boot made from the run (its log written to build/test)."""
    log = os.path.join("build", "test", label + ".log")
    claim_log(log)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    text = b""
    for chunk in iter(lambda: p.stdout.readline(), b""):
        text += chunk
        on_line(chunk, p.stdin)
    rc = p.wait()
    with open(os.path.join(ROOT, log), "wb") as f:
        f.write(text)
    b = Boot.__new__(Boot)
    b.log, b.cmd, b.timeout, b.rc, b.stderr = log, cmd, TIMEOUT, rc, ""
    b.secs = time.monotonic() - t0
    b.text = text.decode(errors="replace").replace("\r", "")
    b.lines = b.text.splitlines()
    return b


def monitor_command(sock, command):
    """One command to QEMU's monitor on Unix socket `sock`; returns once the
    monitor has answered with its next prompt (the command has been done)."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(sock)
    got = b""
    while not got.endswith(b"(qemu) "):            # the banner and first prompt
        got += s.recv(4096) or b"(qemu) "
    s.sendall(command.encode() + b"\n")
    got = b""
    while b"(qemu) " not in got:
        data = s.recv(4096)
        check(data, "QEMU's monitor closed before it answered %r" % command)
        got += data
    s.close()


HOST_NMI_LINE = r"lightpath: cpu%d: NMI \(host\)"


def t_host_nmi(smp):
    """A physical NMI is the host's, never a guest's (docs/SECURITY.md case
    27): QEMU's monitor command `nmi` sends one to every CPU while the side
    guest (which takes NMIs on vector 2 and counts them) spins without exits
    on CPU 0 (-smp 1) or CPU 1 (-smp 2, CPU 0 idle in lightpath). Once every
    CPU has said "lightpath: cpuN: NMI (host)", a key is typed; the guest
    then reports 0 NMIs and ends with 0, and the next VM runs."""
    def run():
        label = "host-nmi-smp%s" % smp
        sock = os.path.join(ROOT, "build", "test", label + ".monitor")
        if os.path.exists(sock):
            os.unlink(sock)
        args = "lines=2 ms=5 key=1"
        cmd = [LP_QEMU, "--interactive", "--smp", smp, "--monitor", sock, "--timeout", str(TIMEOUT),
               "%s %s" % (SIDE, args), HELLO3]
        cpus = set(range(int(smp)))
        st = {"nmi": False, "typed": False, "seen": set()}

        def on_line(line, stdin):
            if not st["nmi"] and line.startswith(b"[vm0] side: waiting for a key"):
                monitor_command(sock, "nmi")
                st["nmi"] = True
            m = re.match(rb"lightpath: cpu(\d+): NMI \(host\)\r?$", line)
            if m:
                st["seen"].add(int(m.group(1)))
            if st["nmi"] and not st["typed"] and st["seen"] >= cpus:
                stdin.write(b"k")
                stdin.flush()
                st["typed"] = True
        b = interactive_boot(label, cmd, on_line)
        check(st["nmi"], "the side guest never waited for its key, so no NMI was sent; " + b.why_rc())
        check(st["typed"], "NMI sent, but lightpath said 'NMI (host)' for CPUs %s of %s; %s"
              % (sorted(st["seen"]), sorted(cpus), b.why_rc()))
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        for c in cpus:
            n = len(b.findall(r"^%s\s*$" % (HOST_NMI_LINE % c)))
            check(n == 1, "%d 'cpu%d: NMI (host)' lines, wanted 1" % (n, c))
        side = side_lines(0, 2, 1, args=args)
        side.insert(-3, r"\[vm0\] side: waiting for a key")
        h = hello_lines(1)
        if smp == "1":
            side = side[:1] + side[2:]
        else:
            h = h[:1] + [RUNS_ON % (1, 0)] + h[1:]
        expect_vm_lines(b, 0, side)
        expect_vm_lines(b, 1, h)
        b.expect_powered_off(3)
        b.expect_rc((3 << 1) | 1)
        return b
    return run


def t_no_svm():
    b = Boot("no-svm", [guest("hello")], cpu="EPYC,-svm", timeout=min(TIMEOUT, 30))
    b.expect(r"^%s\s*$" % re.escape(NO_SVM_LINE), "'%s'" % NO_SVM_LINE)
    b.expect_rc(255)
    b.expect_not(r"^lightpath: vm\d+: loaded .*")
    return b


STATS_ROW = re.compile(r"^\s+(\S.*?)\s+(\d+)\s+(\d+(?:\.\d+)?)%\s+(\d+)\s+(\d+)(?:\s+light\s+\d+(?:\.\d+)?%)?\s*$")


def t_stats():
    b = Boot("stats-table", [guest("stats")])
    selftest_result(b, "stats")
    b.expect_rc(1)
    head = [i for i, l in enumerate(b.lines) if re.match(r"^lightpath: vm0: exit statistics\s*$", l)]
    check(len(head) == 1, "expected one 'lightpath: vm0: exit statistics' line, got %d" % len(head))
    rows = {}
    for line in b.lines[head[0] + 1:]:
        if re.match(r"^\s+reason\s+exits\s+share\s+light\s+heavy\s*$", line):
            continue
        m = STATS_ROW.match(line)
        if not m:
            break
        reason, exits, light, heavy = m.group(1), int(m.group(2)), int(m.group(4)), int(m.group(5))
        check(light + heavy == exits, "row '%s': light %d + heavy %d != exits %d"
              % (reason, light, heavy, exits))
        rows[reason] = exits
    check("hypercall" in rows, "no 'hypercall' row in the exit statistics table")
    check("total" in rows, "no 'total' row in the exit statistics table")
    check(rows["hypercall"] >= 50, "hypercall row has %d exits, expected >= 50" % rows["hypercall"])
    others = sum(v for k, v in rows.items() if k != "total")
    check(others == rows["total"], "rows add up to %d, total row says %d" % (others, rows["total"]))
    return b


COST_HEAD = re.compile(r"^  cost: TSC ticks per exit ")
COST_ROW = re.compile(r"^  (\S+) +(\d+) +(\d+) +(\d+) +(\d+)   ((?:\d+:\d+ ?)+)$")
SITES_HEAD = re.compile(r"^  sites: the guest RIPs that exited most")
SITES_ROW = re.compile(r"^  (\S+) +((?:  0x[0-9a-f]+: \d+(?: \(\+\d+\))?)+)$")


def elf_functions(path):
    """[(start, end, name)] of the ELF's function symbols (nm -S)."""
    out = subprocess.run(["nm", "-S", "--defined-only", os.path.join(ROOT, path)],
                         capture_output=True, text=True, check=True).stdout
    funcs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            funcs.append((int(f[0], 16), int(f[0], 16) + int(f[1], 16), f[3]))
    return funcs


def check_stats_cost(b, elf, hypercalls):
    """stats=all (docs/EXITS.md): vm0's cost table has a row for every
    reason of its exit table with the same count (every exit measured, light
    and heavy), min <= mean <= max, a histogram that adds up to the count
    with buckets between log2(min) and log2(max); its sites lie in the
    guest's functions (`elf`), no reason lists more exits than it made, and
    the top hypercall site made at least `hypercalls` exits (the guest's
    loop at one RIP)."""
    rows, _ = lpguest.exit_stats(b.text, 0)
    check(rows, "no exit statistics for vm0")
    lines = b.lines[next(i for i, l in enumerate(b.lines)
                         if re.match(r"^lightpath: vm0: exit statistics", l)):]
    ch = [i for i, l in enumerate(lines) if COST_HEAD.match(l)]
    sh = [i for i, l in enumerate(lines) if SITES_HEAD.match(l)]
    check(len(ch) >= 1 and len(sh) >= 1, "no 'cost:' or 'sites:' section after vm0's table")
    cost = {}
    for l in lines[ch[0] + 2:]:
        m = COST_ROW.match(l)
        if not m:
            break
        n, lo, mean, hi = (int(m.group(k)) for k in (2, 3, 4, 5))
        hist = {int(k): int(v) for k, v in (x.split(":") for x in m.group(6).split())}
        check(0 < lo <= mean <= hi, "cost row %r: not 0 < min <= mean <= max" % l)
        check(sum(hist.values()) == n, "cost row %r: the histogram adds up to %d, not %d"
              % (l, sum(hist.values()), n))
        check(min(hist) == lo.bit_length() - 1 and max(hist) == min(hi.bit_length() - 1, 23),
              "cost row %r: buckets %d..%d, min/max say %d..%d"
              % (l, min(hist), max(hist), lo.bit_length() - 1, hi.bit_length() - 1))
        cost[m.group(1)] = n
    tot = [re.match(r"^  cost total: (\d+) ticks in exit handling of (\d+) since the VM started "
                    r"\((\d+)\.(\d)%\)$", l) for l in lines]
    tot = [m for m in tot if m]
    check(len(tot) == 1, "no single 'cost total:' line")
    spent, ran = int(tot[0].group(1)), int(tot[0].group(2))
    check(0 < spent < ran and int(tot[0].group(3)) * 10 + int(tot[0].group(4)) == spent * 1000 // ran,
          "cost total: %d of %d ticks, share printed %s.%s%%" % (spent, ran, tot[0].group(3), tot[0].group(4)))
    reasons = {k: v[0] for k, v in rows.items() if k != "total"}
    check(cost == reasons, "cost rows %r differ from the exit table %r" % (cost, reasons))
    funcs = elf_functions(elf)
    sites = {}
    for l in lines[sh[0] + 1:]:
        m = SITES_ROW.match(l)
        if not m:
            break
        got = [(int(r, 16), int(n), int(e or 0)) for r, n, e in
               re.findall(r"0x([0-9a-f]+): (\d+)(?: \(\+(\d+)\))?", m.group(2))]
        sites[m.group(1)] = got
        check(m.group(1) in reasons, "sites for %r, which has no exits" % m.group(1))
        check(sum(n - e for _, n, e in got) <= reasons[m.group(1)],
              "sites of %r add up to more than its %d exits: %r" % (m.group(1), reasons[m.group(1)], got))
        for rip, _, _ in got:
            check(any(s <= rip < e for s, e, _ in funcs),
                  "site 0x%x of %r is in no function of %s" % (rip, m.group(1), elf))
    check(set(sites) == set(reasons), "sites for %r, exits for %r" % (sorted(sites), sorted(reasons)))
    top = sites["hypercall"][0]
    check(top[1] >= hypercalls, "the top hypercall site made %d exits, expected >= %d"
          % (top[1], hypercalls))


def t_stats_cost():
    """stats=all on the stats self-test: its 50 null and 10 heavy
    hypercalls come from one RIP (lp_hypercall's VMMCALL)."""
    b = Boot("stats-cost", [guest("stats")], append="stats=all")
    selftest_result(b, "stats")
    b.expect_rc(1)
    check_stats_cost(b, GUESTS + "/stats.elf", 60)
    return b


def t_stats_on_measures_nothing():
    """stats=on (the default) prints the exit table alone."""
    b = Boot("stats-on-no-cost", [guest("stats")], append="stats=on")
    selftest_result(b, "stats")
    b.expect_rc(1)
    check(not any(COST_HEAD.match(l) or SITES_HEAD.match(l) for l in b.lines),
          "stats=on printed a cost or sites section")
    return b


def t_iso():
    log = os.path.join(OUT, "iso.log")
    with open(log, "w") as f:
        p = subprocess.run(["make", "--no-print-directory", "iso"], cwd=ROOT, stdout=f,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
    check(p.returncode == 0, "make iso exited %d (see build/test/iso.log)" % p.returncode)
    iso = os.path.join(ROOT, "build", "lightpath.iso")
    check(os.path.isfile(iso), "make iso did not produce build/lightpath.iso")
    p = subprocess.run(["xorriso", "-indev", iso, "-find", "/boot", "-type", "f"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check(p.returncode == 0, "xorriso could not read the ISO: " + (p.stderr.strip().splitlines() or ["?"])[-1])
    files = set(l.strip().strip("'") for l in p.stdout.splitlines())
    for want in ("/boot/lightpath.elf", "/boot/bench32.elf", "/boot/bench64.elf", "/boot/grub/grub.cfg"):
        check(want in files, "ISO has no %s" % want)
    # Boot it: SeaBIOS -> GRUB -> multiboot2 -> lightpath -> both bench guests.
    boot_log = os.path.join(OUT, "iso-boot.log")
    try:
        p = subprocess.run(["timeout", "90", "qemu-system-x86_64", "-accel", "tcg", "-cpu", "EPYC,+svm",
                            "-m", "256", "-display", "none", "-monitor", "none", "-no-reboot",
                            "-serial", "file:" + boot_log, "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                            "-cdrom", iso], cwd=ROOT, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120)
    except subprocess.TimeoutExpired:
        raise Fail("booting the ISO hung (see build/test/iso-boot.log)")
    serial = serial_log.lines(serial_log.read(boot_log))
    check("[vm0] bench: mode=flat32 done" in serial and "[vm1] bench: mode=paged64 done" in serial,
          "the ISO (GRUB, multiboot2) did not run both bench guests (see build/test/iso-boot.log)")
    check(p.returncode == 1, "booting the ISO: QEMU exit %d, expected 1 (see build/test/iso-boot.log)"
          % p.returncode)
    return None


def t_exit_trace():
    """tools/exit_trace.py (make exit-trace) on three rows of bench32: its
    count must equal `make bench`'s figure from a boot without gdb (the tool
    checks that and exits 1 when they differ), and the hypercall's trace
    must go through the stub and the light handler."""
    log = os.path.join(OUT, "exit-trace.log")
    with open(log, "w") as f:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "exit_trace.py"), "--list",
                            "none", "hypercall", "self_ipi"], cwd=ROOT, stdout=f,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
    text = open(log).read()
    check(p.returncode == 0, "exit_trace.py exited %d (see build/test/exit-trace.log)" % p.returncode)
    counts = re.findall(r"^  (\d+) instructions traced, (\d+) of them intercepted .* = (\d+); "
                        r"`make bench` without gdb \(min of 20\): (\d+)$", text, re.M)
    check(len(counts) == 3, "expected 3 count lines, got %d" % len(counts))
    for traced, exiting, total, measured in counts:
        check(total == measured, "traced %s (+1 -%s) = %s, bench %s" % (traced, exiting, total, measured))
    check(counts[0][0] == "1" and counts[0][3] == "2", "the empty bracket is not 1 instruction + RDTSC")
    hc = text[text.index("exit_trace: hypercall"):text.index("exit_trace: self_ipi")]
    for want in (r"host  svm_light_loop\b", r"host  light_\w+_hypercall\b", r"\bvmrun\b",
                 r"\bvmmcall\b"):
        check(re.search(want, hc), "the hypercall's trace has no %s" % want)
    ipi = text[text.index("exit_trace: self_ipi"):]
    check(re.search(r"guest on_self_ipi", ipi), "the self-IPI's trace does not reach the guest's handler")
    return None


# Where r10/r11 may appear in the hypervisor's code (vmm/light.h): the light
# loops and exit stubs, which keep the guest's values there; nothing else,
# not even the interrupt stub, touches them. __image_start is the multiboot
# header, data that objdump decodes as code.
FIXED_REGS_CODE = re.compile(r"^(svm_light_loop|vmx_light_loop|vmx_exit_stub)")
FIXED_REG = re.compile(r"%r1[01][dwb]?\b")
# rbx, which the light loop keeps too (-ffixed-rbx): besides the loops, only
# CPUID's wrapper (core/cpu.h: rbx kept in another register around CPUID and
# swapped back) and the light handlers' accessors (vmm/exit_light.c: rbx to or
# from memory, CPUID's EBX set) may name it; boot_entry32 runs before any VM.
RBX = re.compile(r"%(rbx|ebx|bx|bl|bh)\b")
RBX_SAVE = re.compile(r"^mov\s+%rbx,(%r\w+)$")
RBX_LIGHT = re.compile(r"^(mov\s+%rbx,(0x[0-9a-f]+)?\(%r\w+\)|mov\s+(0x[0-9a-f]+)?\(%r\w+\),%rbx|"
                       r"mov\s+((0x[0-9a-f]+)?\(%r\w+\)|%e\w+|%r\d+d),%ebx)$")


def fixed_regs_bad(out):
    """(bad uses, stub uses) of r10/r11 and rbx in one image's objdump -d."""
    fn, stubs, bad = None, 0, []
    insns = []
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            fn = m.group(1)
            continue
        if "\t" in line:
            insns.append((fn, line.split("\t")[-1].strip()))
    for i, (fn, insn) in enumerate(insns):
        fixed, rbx = FIXED_REG.search(insn), RBX.search(insn)
        if insn == "cpuid" and fn not in ("__image_start", "boot_entry32"):
            # CPUID writes EBX without naming it: only inside the wrapper
            m = RBX_SAVE.match(insns[i - 1][1]) if i else None
            if not (m and i + 1 < len(insns) and
                    re.match(r"^xchg\s+%rbx," + re.escape(m.group(1)) + "$", insns[i + 1][1])):
                bad.append("%s: cpuid outside core/cpu.h's wrapper" % fn)
            continue
        if not fixed and not rbx:
            continue
        if FIXED_REGS_CODE.match(fn or ""):
            stubs += 1
            continue
        if fn in ("__image_start", "boot_entry32"):
            continue
        if rbx and not fixed:
            m = RBX_SAVE.match(insn)
            if m and i + 2 < len(insns) and insns[i + 1][1] == "cpuid" and \
                    re.match(r"^xchg\s+%rbx," + re.escape(m.group(1)) + "$", insns[i + 2][1]):
                continue
            if insn.startswith("xchg") and i >= 2 and insns[i - 1][1] == "cpuid" and \
                    RBX_SAVE.match(insns[i - 2][1]):
                continue
            if (fn or "").startswith("light_") and RBX_LIGHT.match(insn):
                continue
        bad.append("%s: %s" % (fn, insn))
    return bad, stubs


def t_fixed_regs():
    """No hypervisor code but the exit stubs touches r10 or r11, and rbx only
    where the light path reads or writes the guest's value or CPUID's wrapper
    keeps it (-ffixed-r10 -ffixed-r11 -ffixed-rbx, Makefile): the light loop
    keeps the guest's values in them across every light handler, so an object
    built without the flags or assembly that clobbers them would hand a guest
    the host's values. A CPUID in C, a push of rbx, or rbx used as a base
    register is caught here."""
    for elf in ("build/lightpath64.elf", "build/lightpath-vmx64.elf"):
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(ROOT, elf)],
                             capture_output=True, text=True, check=True).stdout
        bad, stubs = fixed_regs_bad(out)
        check(not bad, "%s: r10/r11/rbx used outside the exit stubs and accessors: %s"
              % (elf, "; ".join(bad[:5])))
        check(stubs >= 6, "%s: the light loops do not keep r10/r11/rbx (%d uses)" % (elf, stubs))
    # the check itself: a function compiled without -ffixed-rbx is caught
    sample = ("0000000000100000 <some_fn>:\n  100000:\tpush   %rbx\n"
              "  100001:\tmov    0x8(%rbx),%rax\n"
              "0000000000100010 <light_x>:\n  100010:\tmov    %rbx,0x8(%rdi)\n"
              "0000000000100020 <other>:\n  100020:\tmov    %rbx,%rsi\n  100023:\tcpuid\n"
              "  100025:\txchg   %rbx,%rsi\n  100028:\tmov    %rbx,%rdx\n"
              "0000000000100030 <bare>:\n  100030:\tcpuid\n")
    bad, _ = fixed_regs_bad(sample)
    check(bad == ["some_fn: push   %rbx", "some_fn: mov    0x8(%rbx),%rax", "other: mov    %rbx,%rdx",
                  "bare: cpuid outside core/cpu.h's wrapper"],
          "the fixed-register check does not catch what it should: %s" % bad)
    return None


def t_bench_parser():
    sample = os.path.join(ROOT, "tests", "integration", "sample-bench.log")
    text = serial_log.read(sample)
    res = bench.parse_bench(text, n=1000)
    check(res["flat32"]["hypercall"] == {"min": 48, "mean": 48.25},
          "flat32 hypercall parsed as %r" % (res["flat32"].get("hypercall"),))
    check(res["paged64"]["hypercall_heavy"]["min"] == 219, "paged64 hypercall_heavy min misparsed")
    check(sorted(res["flat32"]) == sorted(bench.EXITS), "flat32 exits: %s" % sorted(res["flat32"]))
    check(bench.parse_options(text).get("svm.vmload") == "lazy", "options line misparsed")
    bench.check_config_bits(text, "")
    try:
        bench.check_config_bits(text, "light=off")
        raise Fail("config bits 0x7f accepted for light=off")
    except bench.BenchError:
        pass
    # It must reject broken logs, or it checks nothing.
    rdmsr64 = "bench: mode=paged64 exit=rdmsr n=1000 min=70 mean=70.25"
    check("[vm1] " + rdmsr64 + "\n" in text, "sample-bench.log changed: no paged64 rdmsr line")
    broken = {
        "check FAILED": text.replace("[vm1] bench: mode=paged64 done",
                                     "[vm1] bench: check FAILED: cpuid signature\n[vm1] bench: mode=paged64 done"),
        "missing exit": "\n".join(l for l in text.split("\n") if "flat32 exit=rdmsr" not in l),
        "missing done": "\n".join(l for l in text.split("\n") if "paged64 done" not in l),
        "wrong n": text.replace("exit=cpuid n=1000", "exit=cpuid n=999"),
        # a result line not at the start of a line of guest output
        "no [vmN] prefix": text.replace("[vm1] " + rdmsr64, rdmsr64),
        "result behind a \\x0b": text.replace("[vm1] " + rdmsr64, "[vm1] \x0b[vm1] " + rdmsr64),
        "result behind a \\r": text.replace("[vm1] " + rdmsr64, "[vm1] \r[vm1] " + rdmsr64),
        # another VM's guest reporting (forging) part of a mode
        "mode from two VMs": text.replace("[vm1] " + rdmsr64, "[vm0] " + rdmsr64),
    }
    for what, t in broken.items():
        try:
            bench.parse_bench(t, n=1000)
        except bench.BenchError:
            continue
        raise Fail("parser accepted a log with %s" % what)
    # And the command-line entry point agrees.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench.py"), "--parse", sample,
                        "--n-expected", "1000"], capture_output=True, text=True)
    check(p.returncode == 0, "tools/bench.py --parse failed: " + p.stderr.strip())
    return None


def t_compare_selfcheck():
    """`make compare` without its Linux boot: the KVM runner builds (static)
    and starts, and the compare script reads a recorded KVM serial log."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "compare"))
    import compare  # tools/compare/compare.py
    # 1. The runner, through its make rule.
    log = os.path.join(OUT, "compare-kvmrun.log")
    with open(log, "w") as f:
        p = subprocess.run(["make", "--no-print-directory", "build/compare/kvmrun"], cwd=ROOT,
                           stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
    check(p.returncode == 0, "make build/compare/kvmrun exited %d (see build/test/compare-kvmrun.log)"
          % p.returncode)
    exe = os.path.join(ROOT, "build", "compare", "kvmrun")
    with open(exe, "rb") as f:
        elf = f.read()
    check(elf[:4] == b"\x7fELF" and elf[4] == 2, "kvmrun is not an ELF64 executable")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]
    check(3 not in types, "kvmrun has a PT_INTERP: not linked statically (it must run from busybox)")
    p = subprocess.run([exe], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=10)
    check(p.returncode == 125 and "usage: kvmrun" in p.stderr,
          "kvmrun without arguments: exit %d, stderr %r" % (p.returncode, p.stderr.strip()))
    # 2. The parser, on a recorded log of tools/compare/kvmboot.py.
    sample = os.path.join(ROOT, "tests", "integration", "sample-compare-kvm.log")
    text = serial_log.read(sample)
    try:
        kvm, env = compare.parse_kvm(text, n=1000)
    except compare.CompareError as e:
        raise Fail("recorded KVM log rejected: %s" % e)
    check(kvm["flat32"]["hypercall"] == {"min": 2767, "mean": 2782.65},
          "flat32 hypercall parsed as %r" % (kvm["flat32"].get("hypercall"),))
    check(kvm["paged64"]["pio_out"]["min"] == 1624, "paged64 pio_out misparsed")
    check(env["kernel"] == "6.1.0-57-amd64" and env["kvm_amd"] == "npt=Y nrips=0",
          "environment misparsed: %r" % env)
    check(env["cpu_model"] == "AMD EPYC Processor", "cpu model misparsed: %r" % env["cpu_model"])
    lp = bench.parse_bench(serial_log.read(os.path.join(ROOT, "tests", "integration", "sample-bench.log")),
                           n=1000)
    # the recorded log is a defaults boot (no mitigations=off): the defaults
    # pair's rows come first here; the same figures stand in for the other
    # pair, for the docs section's shape
    doc = compare.json_doc([(compare.PAIRS[1], lp, kvm, env, "spec=on"),
                            (compare.PAIRS[0], lp, kvm, env, "spec=on")],
                           {"qemu": "QEMU", "kernel_deb": "k", "n": 1000})
    check(doc["unit"] == "instructions per exit (icount)", "unit: %r" % doc["unit"])
    check([r["exit"] for r in doc["results"]] ==
          ["hypercall", "cpuid", "pio_in_pmtimer", "pio_out", "rdmsr", "wrmsr"] * 2 and
          [r["pair"] for r in doc["results"]] == ["defaults"] * 6 + ["unmitigated"] * 6,
          "compare.json exits: %r" % [r["exit"] for r in doc["results"]])
    check(doc["results"][0] == {"pair": "defaults", "exit": "hypercall", "lightpath": 48, "kvm": 2767},
          "first row: %r" % doc["results"][0])
    row = [l for l in compare.table(doc["results"]).splitlines() if l.startswith("hypercall")]
    check(row and row[0].split() == ["hypercall", "48", "2767", "57.6x"], "table row: %r" % row)
    # It must reject broken logs, or it checks nothing.
    broken = {
        "check FAILED": text.replace("[guest] bench: mode=paged64 done",
                                     "[guest] bench: check FAILED: signature\n[guest] bench: mode=paged64 done"),
        # the guest's output is "[guest] "-prefixed: bare bench lines are not its
        "unprefixed result": text.replace("[guest] bench: mode=paged64 exit=cpuid", "bench: mode=paged64 exit=cpuid"),
        # a guest forging /init's status line behind a carriage return
        "forged status": text.replace("compare: init: kvmrun bench64 status 0",
                                      "compare: init: kvmrun bench64 status 1").replace(
            "[guest] bench: mode=paged64 done", "[guest] bench: mode=paged64 done\n[guest] "
            "\rcompare: init: kvmrun bench64 status 0"),
        "no host=kvm": text.replace("bench: mode=flat32 host=kvm", "bench: mode=flat32 config=0x0"),
        "status 1": text.replace("kvmrun bench64 status 0", "kvmrun bench64 status 1"),
        "missing exit": "\n".join(l for l in text.split("\n") if "paged64 exit=wrmsr" not in l),
        "missing guest": "\n".join(l for l in text.split("\n") if "kvmrun bench32 status" not in l),
        "wrong n": text.replace("exit=cpuid n=1000", "exit=cpuid n=999"),
        "no kvm_amd": "\n".join(l for l in text.split("\n") if "init: kvm_amd" not in l),
    }
    for what, t in broken.items():
        try:
            compare.parse_kvm(t, n=1000)
        except compare.CompareError:
            continue
        raise Fail("compare parser accepted a log with %s" % what)
    # A timer=1 run (kvmrun --irqchip): only its timer_irq counts, and its
    # rows repeated there are not duplicates of the first run's.
    def timer_run(g, mode, status):
        return ("compare: init: running %s timer=1 under KVM with its in-kernel irqchip\n"
                "[guest] bench: mode=%s exit=cpuid n=1000 min=7 mean=7.00\n"
                "[guest] bench: mode=%s exit=timer_irq n=1000 min=9 mean=9.50\n"
                "[guest] bench: mode=%s done\n"
                "compare: init: kvmrun %s-timer status %d\n" % (g, mode, mode, mode, g, status))
    end = "compare: init: end"
    check(end in text, "sample-compare-kvm.log changed: no '%s' line" % end)
    timed = text.replace(end, timer_run("bench32", "flat32", 0) + timer_run("bench64", "paged64", 0) + end)
    try:
        tk, _ = compare.parse_kvm(timed, n=1000)
    except compare.CompareError as e:
        raise Fail("compare parser rejected a log with timer=1 runs: %s" % e)
    check(tk["paged64"]["timer_irq"] == {"min": 9, "mean": 9.5} and
          tk["flat32"]["cpuid"] == kvm["flat32"]["cpuid"],
          "timer=1 runs misparsed: %r" % tk["flat32"])
    try:
        compare.parse_kvm(text.replace(end, timer_run("bench32", "flat32", 1) +
                                       timer_run("bench64", "paged64", 0) + end), n=1000)
        raise Fail("compare parser accepted a timer=1 run with status 1")
    except compare.CompareError:
        pass
    # 3. The docs section goes outside the analysis block, replaces itself,
    # and tools/bench.py keeps it when it regenerates docs/BENCHMARKS.md.
    md = "# t\n\n## Analysis\n\n<!-- analysis -->\nx\n<!-- /analysis -->\n"
    block = compare.doc_section(doc, "2000-01-01")
    once = compare.replace_block(md, block)
    check(compare.replace_block(once, block) == once, "replacing the compare section is not idempotent")
    check(once.index(compare.COMPARE_END) < once.index("<!-- analysis -->"),
          "the compare section is not placed before the analysis block")
    tmp = os.path.join(OUT, "compare-docs.md")
    with open(tmp, "w") as f:
        f.write(once)
    check(block in bench.read_blocks(tmp), "tools/bench.py would drop the compare section")
    # 4. The command-line entry point agrees.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "compare", "compare.py"),
                        "--parse-kvm", sample, "--n-expected", "1000"], capture_output=True, text=True)
    check(p.returncode == 0, "tools/compare/compare.py --parse-kvm failed: " + p.stderr.strip())
    return None


SPEC_ON_EPYC = ("lightpath: spec=on: return stack overwritten after each exit: 32 entries (no "
                "Automatic IBRS); IBPB between VMs: no (the CPU has no IBPB); guest SPEC_CTRL "
                "switched: no (the CPU has no SPEC_CTRL)")


def t_spec(opts, line):
    """spec= says what it does on this CPU model (EPYC under TCG has no IBPB,
    no SPEC_CTRL and no Automatic IBRS: the return-stack overwrite only), and
    the VM runs either way."""
    def run():
        b = Boot("spec-" + (opts or "default").replace("=", "-"), [HELLO], append=opts)
        b.expect(r"^%s$" % re.escape(line), "'%s'" % line)
        b.expect_rc(1)
        return b
    return run


def all_tests():
    """[(phase, name, fn)]: phase 2 tests need phase 1's baselines."""
    t = []
    t.append((0, "bench-parser", t_bench_parser))
    t.append((0, "compare-selfcheck", t_compare_selfcheck))
    for g in SELFTESTS:
        t.append((1, "selftest-" + g, t_selftest(g)))
    t.append((1, "hello-status", t_hello_status))
    t.append((1, "isolation", t_isolation))
    t.append((1, "virtinsn-stays-up", t_virtinsn))
    t.append((1, "mmio-bad-isolation", t_mmio_bad))
    for g in UNCLAIMED_GUESTS:
        t.append((1, "selftest-" + g, t_unclaimed(g)))
    for how in ("option", "config"):
        t.append((1, "unclaimed-stop-" + how, t_unclaimed_stop(how)))
    t.append((1, "status-stopped-then-healthy",
              t_status_stopped_then_healthy("status-stopped-then-healthy")))
    label = "status-stopped-then-healthy-" + HOSTILE_SWITCHES[0]
    t.append((1, label, t_status_stopped_then_healthy(label, HOSTILE_SWITCHES[1])))
    t.append((1, "status-first-nonzero", t_status_first_nonzero))
    t.append((1, "status-0x80", t_status_high(0x80)))
    t.append((1, "status-0x85", t_status_high(0x85)))
    t.append((1, "forge", t_forge("forge")))
    t.append((1, "forge-" + HOSTILE_SWITCHES[0], t_forge("forge-" + HOSTILE_SWITCHES[0],
                                                         HOSTILE_SWITCHES[1])))
    cfg, opts = HOSTILE_SWITCHES
    t.append((1, "config-cycle", t_config_cycle("config-cycle")))
    t.append((1, "config-cycle-" + cfg, t_config_cycle("config-cycle-" + cfg, opts)))
    t.append((1, "config-names-config", t_config_names_config))
    t.append((1, "modules-10", t_too_many_modules("modules-10")))
    t.append((1, "modules-10-" + cfg, t_too_many_modules("modules-10-" + cfg, opts)))
    t.append((1, "stats-table", t_stats))
    t.append((1, "stats-cost", t_stats_cost))
    t.append((1, "stats-on-no-cost", t_stats_on_measures_nothing))
    t.append((1, "bad-option", t_bad_option))
    t.append((1, "bad-value", t_bad_value))
    t.append((1, "no-modules", t_no_modules))
    t.append((1, "bad-image-text", t_bad_image("text", make_text_file)))
    t.append((1, "bad-image-elf", t_bad_image("elf", make_non_multiboot_elf)))
    for label, text, line_for in BAD_CONFIGS:
        t.append((1, "bad-config-" + label, t_bad_config(label, text, line_for)))
    for k in MBINFO_GUESTS:
        t.append((1, "multiboot-modules-" + k[len("mbinfo"):].lstrip("-"),
                  t_mb_modules(k, k[len("mbinfo"):].lstrip("-"))))
    for label, segs, reason in BAD_SEGMENTS:
        t.append((1, "bad-segment-" + label, t_bad_segment(label, segs, reason)))
    for label, text, extra, line_for in BAD_MODULE_CONFIGS:
        t.append((1, "bad-config-" + label, t_bad_module_config(label, text, extra, line_for)))
    t.append((1, "bad-config-modules-linux", t_bad_modules_linux))
    t.append((1, "virtio-rw", t_virtio(False)))
    t.append((1, "virtio-ro", t_virtio(True)))
    t.append((1, "virtio-smp2-rw", t_virtio(False, label="virtio-smp2", cpus=2)))
    t.append((1, "virtionet", t_virtionet()))
    t.append((1, "net-same-mac", t_virtionet_same_mac()))
    t += both_switch_sets("hostile-", "vqrefill", t_hostile_vqrefill)
    t += both_switch_sets("hostile-", "rxwalk", t_hostile_rxwalk)
    t.append((1, "bad-linux-truncated", t_bad_linux_truncated))
    t.append((1, "bad-linux-old-protocol", t_bad_linux_old_protocol))
    t.append((1, "bad-linux-small-memory", t_bad_linux_small_memory))
    t.append((1, "no-svm", t_no_svm))
    t.append((1, "bad-timeout-option", t_bad_timeout_option))
    for mode in ("spin", "hlt"):
        for how in ("config", "option"):
            t.append((1, "timeout-%s-%s" % (how, mode), t_timeout("%s-%s" % (how, mode), mode, how)))
        label = "option-%s-%s" % (mode, HOSTILE_SWITCHES[0])
        t.append((1, "timeout-" + label, t_timeout(label, mode, "option", switches=HOSTILE_SWITCHES[1])))
    t.append((1, "timeout-precedence", t_timeout_precedence))
    t.append((1, "timeout-not-early", t_timeout_not_early))
    t.append((1, "clock-under-load", t_clock_under_load))
    t.append((1, "timeout-cli-hlt", t_timeout_cli_hlt))
    t.append((1, "console-key", t_console_key))
    t.append((1, "iso", t_iso))
    t.append((1, "exit-trace", t_exit_trace))
    t.append((1, "fixed-regs", t_fixed_regs))
    t.append((1, "spec-on", t_spec("", SPEC_ON_EPYC)))
    t.append((1, "smp-4", t_smp("4", "4", "lightpath: 4 CPUs found (ACPI MADT), 4 started")))
    t.append((1, "smp-1", t_smp("1", "1", "lightpath: 1 CPU found (ACPI MADT), 1 started")))
    t.append((1, "smp-2-maxcpus-4", t_smp("2-maxcpus-4", "2,maxcpus=4",
                                          "lightpath: 2 CPUs found (ACPI MADT; 2 more listed, not "
                                          "enabled), 2 started")))
    t.append((1, "smp-4-cpus-option", t_smp("4-cpus-option", "4",
                                            "lightpath: 4 CPUs found (ACPI MADT), 2 started (cpus=2)",
                                            append="cpus=2")))
    t.append((1, "smp-4-selftest-hlt", t_smp_selftest("hlt", "4")))
    t.append((1, "bad-cpus-option", t_bad_cpus_option))
    t.append((1, "smp-guest-native", t_smp_guest_native))
    t.append((1, "side-by-side-triple", t_side_by_side_triple("side-by-side-triple", "2")))
    t.append((1, "side-by-side-triple-smp3", t_side_by_side_triple("side-by-side-triple-smp3", "3")))
    t.append((1, "side-by-side-4", t_side_by_side_four()))
    for label, smp, text, line in CPUS_REFUSED:
        t.append((1, "cpus-" + label, t_cpus_refused(label, smp, text, line)))
    t.append((1, "pcpus-pinned", t_pcpus_pinned()))
    t.append((1, "pcpus-no-blocking", t_pcpus_no_blocking()))
    t.append((1, "ap-panic", t_ap_panic()))
    t.append((1, "smp-guest-4-on-4", t_smp_guest("4", "4", "0,1,2,3")))
    t.append((1, "smp-guest-2-on-2", t_smp_guest("2", "2", "0,1")))
    t.append((1, "smp-guest-2-on-3", t_smp_guest("3", "2", "1,2")))
    t.append((1, "console-switch", t_console_switch))
    t.append((1, "host-nmi-smp1", t_host_nmi("1")))
    t.append((1, "host-nmi-smp2", t_host_nmi("2")))
    t.append((1, "spec-off", t_spec("spec=off",
                                    "lightpath: spec=off: no speculation hygiene on the exit path")))
    for g in SWITCHED_GUESTS:
        for cfg, opts in SWITCH_CONFIGS:
            t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    for g in TIMER_EXACT_GUESTS:
        t.append((2, "switch-%s-timer-exact" % g, t_timer_exact(g)))
    for g in ("hpet32", "hpet64", "intr32", "intr64"):
        t.append((1, "timer-lead-" + g, t_timer_lead(g)))
    for g in CPUMSR_GUESTS:   # pmu=always and the heavy paths around the MSR handlers
        t.append((2, "switch-%s-all-off" % g, t_switched(g, "all-off", ALL_OFF)))
    for g in MMIO_GUESTS:
        for cfg, opts in SWITCH_CONFIGS:
            if cfg in MMIO_SWITCHES:
                t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    cfg, opts = HOSTILE_SWITCHES
    t.append((1, "hostile-irqstate", t_irqstate_leave("hostile-irqstate")))
    t.append((2, "hostile-irqstate-" + cfg, t_irqstate_leave("hostile-irqstate-" + cfg, opts)))
    for g in HOSTILE_GUESTS:
        cfg, opts = HOSTILE_SWITCHES
        t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    for bits in range(1 << len(SWITCHES)):
        t.append((2, combo_name(bits), t_combo(bits)))
    t.extend(plugin_tests("qemu_tests"))
    return t


# Host SMP (docs/SMP.md): lightpath finds the CPUs in the firmware's ACPI
# MADT (SeaBIOS's under QEMU), starts the others and says how many; VMs still
# run one after another on the boot CPU.
SMP_CPU_LINE = re.compile(r"^lightpath: (\d+ CPUs? found|no ACPI MADT|CPU \d+ \(APIC id|"
                          r"the boot CPU \(APIC id)")


def smp_lines(b):
    """lightpath's lines about the host's CPUs."""
    return [l.rstrip() for l in b.lines if SMP_CPU_LINE.match(l)]


def expect_smp_line(b, want):
    got = smp_lines(b)
    check(got == [want], "CPU lines %r; wanted exactly [%r]; %s" % (got, want, b.why_rc()))


def t_smp(label, smp, want, append=""):
    """Two hello VMs (status 3 each) on a machine with `smp` CPUs: the exact
    CPU line, then both VMs' lines exactly, and the status. With one CPU they
    run one after the other, every line in order; with more, side by side
    (docs/SMP.md, "Static partitioning"): each VM's own lines in order, on CPU 1 and CPU 2 (or
    CPU 0 when there is no second AP)."""
    def run():
        b = Boot("smp-" + label, [HELLO3, HELLO3], append=append, smp=smp)
        expect_smp_line(b, want)
        final = (r"lightpath: all VMs ended; powering off with status 3 \(the first non-zero status, "
                 r"vm0's; VMs that did not end with 0: 2 of 2\)")
        if want.endswith(" 1 started"):
            expect_exact_lines(b, hello_lines(0) + hello_lines(1) + [final])
        else:
            started = int(re.search(r"(\d+) started", want).group(1))
            cpus = (1, 2) if started > 2 else (1, 0)
            for vm in (0, 1):
                h = hello_lines(vm)
                expect_vm_lines(b, vm, h[:1] + [RUNS_ON % (vm, cpus[vm])] + h[1:])
            expect_side_by_side(b, final)
        b.expect_rc((3 << 1) | 1)
        return b
    return run


# docs/SMP.md, "Static partitioning": VMs side by
# side, one CPU each. Lines of different VMs interleave in no fixed order, so
# each VM's own lines (guest and lightpath's "vmN:" lines) are compared in
# order, and every line must be one VM's or lightpath's, whole.
RUNS_ON = r"lightpath: vm%d: runs on CPU %d"
SIDE_BY_SIDE_LINE = (r"lightpath: VMs run side by side, one CPU per vCPU \(CPUs 1\.\.%d first, then CPU "
                     r"0\); console input goes to one VM at a time: Ctrl-\\ passes it on")
INPUT_MOVES = re.compile(r"^lightpath: console input goes to vm\d+ now( \(vm\d+ ended\))?$")


def vm_lines(b, vm):
    own = re.compile(r"(\[vm%d\] |lightpath: vm%d: )" % (vm, vm))
    return [l.rstrip() for l in b.lines if own.match(l)]


def expect_vm_lines(b, vm, expected):
    """VM `vm`'s own lines, in order, each matching its regex in full."""
    got = vm_lines(b, vm)
    for i, want in enumerate(expected):
        check(i < len(got), "vm%d: line %d missing (wanted /%s/); %s" % (vm, i + 1, want, b.why_rc()))
        check(re.fullmatch(want, got[i]) is not None,
              "vm%d: line %d is %r, wanted /%s/" % (vm, i + 1, got[i], want))
    check(len(got) == len(expected), "vm%d: unexpected line %d: %r"
          % (vm, len(expected) + 1, got[len(expected)] if len(got) > len(expected) else ""))


def expect_side_by_side(b, final, aps=None):
    """The rest of a side-by-side boot: the line that says so (once), no
    line but a VM's own, lightpath's start-up lines, the statistics rows and
    the console-input lines; no panic; `final` last."""
    b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
    sbs = b.findall(r"^lightpath: VMs run side by side")
    check(len(sbs) == 1, "%d 'VMs run side by side' lines" % len(sbs))
    if aps is not None:
        check(re.fullmatch(SIDE_BY_SIDE_LINE % aps, sbs[0].string.rstrip()),
              "side-by-side line: %r" % sbs[0].string.rstrip())
    for l in b.lines:
        l = l.rstrip()
        if not l or STATS_LINE.match(l) or STARTUP_LINE.match(l) or INPUT_MOVES.match(l):
            continue
        if re.match(r"(\[vm\d+\] |lightpath: vm\d+: |lightpath: VMs run side by side)", l):
            check("[vm" not in l[1:], "two VMs' output in one line: %r" % l)
            continue
        if SMP_CPU_LINE.match(l) or l.startswith("lightpath: all VMs ended"):
            continue
        raise Fail("unexpected line %r" % l)
    last = [l.rstrip() for l in b.lines if l.startswith("lightpath: ")][-1]
    check(re.fullmatch(final, last), "last line %r, wanted /%s/" % (last, final))


SIDE = GUESTS + "/side.elf"


def side_lines(vm, lines, cpu, status=0, args=None, mib=64, path=SIDE):
    """The side guest's lines (guests/selftest/side.c) as VM `vm` on `cpu`."""
    args = args or "lines=%d ms=20" % lines
    return ([loaded(vm, path, mib, path + " " + args), RUNS_ON % (vm, cpu)] +
            [r"\[vm%d\] side: line %d of %d: abcdefghijklmnopqrstuvwxyz-0123456789-"
             r"ABCDEFGHIJKLMNOPQRSTUVWXYZ" % (vm, i, lines) for i in range(1, lines + 1)] +
            [r"\[vm%d\] side: done: %d lines, 0 interrupts, 0 NMIs" % (vm, lines),
             r"lightpath: vm%d: ended with status %d \(isa-debug-exit\)" % (vm, status),
             r"lightpath: vm%d: exit statistics" % vm])


def triple_side_lines(vm, cpu, path=None, why=r"triple fault \(SHUTDOWN exit\)"):
    t = triple_lines(vm, path or guest("triple"), why)
    return t[:1] + [RUNS_ON % (vm, cpu)] + t[1:]


def t_side_by_side_triple(label, smp, icount=False):
    """Two VMs at the same time on different CPUs; the
    second triple-faults and is stopped, the first keeps working unaffected
    (every line of it, and no interrupt or NMI reaches it). The triple
    fault's line comes before the side guest is done: they overlapped.
    The side guest runs 40 lines of 20 ms: CPU 0 sets up the second VM
    while CPU 1 runs the first, and under a loaded CI (two tests at once,
    each QEMU with a thread per CPU) that set-up once took longer than the
    240 ms that 12 lines gave."""
    def run():
        b = Boot(label, [guest("side", "lines=40 ms=20"), guest("triple")], smp=smp,
                 icount=icount)
        expect_vm_lines(b, 0, side_lines(0, 40, 1))
        expect_vm_lines(b, 1, triple_side_lines(1, 2 if smp != "2" else 0))
        expect_side_by_side(b, FINAL_VM1_STOPPED_ONLY, aps=int(smp) - 1)
        stop = [i for i, l in enumerate(b.lines) if l.startswith("lightpath: vm1: stopped:")]
        done = [i for i, l in enumerate(b.lines) if l.startswith("[vm0] side: done:")]
        check(stop and done and stop[0] < done[0],
              "vm1 was stopped after vm0 had finished: they did not run side by side")
        expect_first_nonzero(b, 0x70, 1, 1, 2)
        return b
    return run


FINAL_VM1_STOPPED_ONLY = (r"lightpath: all VMs ended; powering off with status 112 \(the first "
                          r"non-zero status, vm1's; VMs that did not end with 0: 1 of 2\)")


def t_side_by_side_four():
    """-smp 4: three side guests on CPUs 1-3 and hello on CPU 0; VMs end out
    of order, and the final status is still the first non-zero by VM number
    (vm1's 5, though vm3's 3 ends first)."""
    def run():
        mods = [guest("side", "lines=6 ms=20"), guest("side", "lines=8 ms=20 status=5"),
                guest("side", "lines=4 ms=20 status=7"), HELLO3]
        b = Boot("side-by-side-4", mods, smp="4", append="mem=32")
        expect_vm_lines(b, 0, side_lines(0, 6, 1, mib=32))
        expect_vm_lines(b, 1, side_lines(1, 8, 2, 5, "lines=8 ms=20 status=5", mib=32))
        expect_vm_lines(b, 2, side_lines(2, 4, 3, 7, "lines=4 ms=20 status=7", mib=32))
        h = hello_lines(3)
        expect_vm_lines(b, 3, [loaded(3, HELLO, 32, HELLO3), RUNS_ON % (3, 0)] + h[1:])
        expect_side_by_side(b, r"lightpath: all VMs ended; powering off with status 5 \(the first "
                            r"non-zero status, vm1's; VMs that did not end with 0: 3 of 4\)", aps=3)
        b.expect_rc((5 << 1) | 1)
        return b
    return run


def cpus_config(label, text):
    return write_test_file("cpus-%s.cfg" % label, "# lightpath vm\nkernel = hello.elf\n" + text)


def t_cpus_refused(label, smp, text, line):
    """A description asking for CPUs lightpath cannot give: one line, not
    started (0x70); the next VM runs."""
    def run():
        path = cpus_config(label, text)
        # the description takes the first hello as its kernel; the second runs
        b = Boot("cpus-" + label, [path, HELLO3, HELLO3], smp=smp)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        expect_vm_lines(b, 0, [line])
        h = hello_lines(1, hello=HELLO)
        if smp == "1":
            h = hello_lines(1)
        else:
            h = h[:1] + [RUNS_ON % (1, 1)] + h[1:]
        expect_vm_lines(b, 1, h)
        expect_first_nonzero(b, 0x70, 0, 2, 2)
        return b
    return run


def t_pcpus_pinned():
    """pcpus = 0 pins vm0 to CPU 0 (which then runs it before it starts
    another VM); pcpus = 1 in the next waits for nothing."""
    def run():
        a = write_test_file("pcpus-a.cfg", "# lightpath vm\nname = a\nkernel = side.elf\n"
                            "pcpus = 0\nmemory = 16\n")
        b_cfg = write_test_file("pcpus-b.cfg", "# lightpath vm\nname = b\nkernel = hello.elf\n"
                                "pcpus = 1\nmemory = 16\n")
        b = Boot("pcpus-pinned", [a, b_cfg, SIDE + " lines=3 ms=10", HELLO3], smp="2")
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        check(b.find(RUNS_ON % (0, 0) + r"\s*$"), "vm0 (pcpus = 0) not on CPU 0; %s" % b.why_rc())
        check(b.find(RUNS_ON % (1, 1) + r"\s*$"), "vm1 (pcpus = 1) not on CPU 1; %s" % b.why_rc())
        b.expect(r"^\[vm0\] side: done: 3 lines, 0 interrupts, 0 NMIs\s*$", "vm0's side verdict")
        b.expect(r"^\[vm1\] hello: exiting with status 3\s*$", "vm1's hello")
        expect_first_nonzero(b, 3, 1, 1, 2)
        return b
    return run


def t_pcpus_no_blocking():
    """A VM waiting for its pinned CPU does not hold back a later VM whose
    CPU is free (-smp 2): vm0 and vm1 are both pinned to CPU 1 (pcpus = 1,
    the side guest, 30 lines of 20 ms), vm2 (hello) is not pinned. vm1
    waits for vm0's end; vm2 runs meanwhile, on CPU 0: its end comes before
    vm0's, and vm1 starts only after vm0's end."""
    def run():
        a = write_test_file("pcpus-wait-a.cfg", "# lightpath vm\nname = a\nkernel = side.elf\n"
                            "pcpus = 1\nmemory = 16\n")
        b_cfg = write_test_file("pcpus-wait-b.cfg", "# lightpath vm\nname = b\nkernel = side.elf\n"
                                "pcpus = 1\nmemory = 16\n")
        b = Boot("pcpus-no-blocking", [a, b_cfg, SIDE + " lines=30 ms=20", HELLO3], smp="2")
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")

        def at(regex, what):
            r = re.compile(regex)
            i = [k for k, l in enumerate(b.lines) if r.match(l)]
            check(i, "no line %s; %s" % (what, b.why_rc()))
            return i[0]
        end0 = at(r"^lightpath: vm0: ended with status 0 \(isa-debug-exit\)\s*$", "vm0's end")
        end2 = at(r"^lightpath: vm2: ended with status 3 \(isa-debug-exit\)\s*$", "vm2's end")
        run1 = at(r"^" + RUNS_ON % (1, 1) + r"\s*$", "vm1 on CPU 1")
        check(b.find(r"^" + RUNS_ON % (0, 1) + r"\s*$"), "vm0 (pcpus = 1) not on CPU 1")
        check(b.find(r"^" + RUNS_ON % (2, 0) + r"\s*$"), "vm2 not on CPU 0")
        check(end2 < end0, "vm2 ended after vm0: it waited behind vm1, which waited for CPU 1")
        check(run1 > end0, "vm1 started on CPU 1 before vm0 had ended there")
        for vm in (0, 1):
            b.expect(r"^\[vm%d\] side: done: 30 lines, 0 interrupts, 0 NMIs\s*$" % vm,
                     "vm%d's side verdict" % vm)
        expect_first_nonzero(b, 3, 2, 1, 3)
        return b
    return run


def t_ap_panic(boot_cls=None, label="ap-panic", path=SIDE):
    """An AP's panic stops its VM, not the machine (-smp 2, test.panic_ap=1,
    a test option inert by default): vm0 (side) starts on CPU 1, which
    panics as it starts running the vCPU: the panic line, then vm0 is
    stopped with one line; vm1, pinned to CPU 1, is refused with a line
    naming the panic; vm2 (side) runs on CPU 0 to its end; the final status
    is vm0's 0x70. `boot_cls`, `path`: a Bochs boot and the name the side
    guest has there (vmx_tests.py)."""
    def run():
        cfg = write_test_file("ap-panic-pinned.cfg", "# lightpath vm\nname = pinned\n"
                              "kernel = hello.elf\npcpus = 1\nmemory = 16\n")
        side = SIDE + " lines=3 ms=10"
        if boot_cls:
            b = boot_cls(label, [side, cfg, HELLO3, side], cpus=2, append="test.panic_ap=1")
        else:
            b = Boot(label, [side, cfg, HELLO3, side], smp="2", append="test.panic_ap=1")
        b.expect(r"^lightpath: test\.panic_ap=1: CPU 1 panics when it starts running a vCPU "
                 r"\(a test option\)\s*$", "the test option's line")
        expect_vm_lines(b, 0, [loaded(0, path, 64, path + " lines=3 ms=10"), RUNS_ON % (0, 1),
                               r"lightpath: vm0: stopped: CPU 1 panicked while it ran vCPU 0; "
                               r"that CPU is out of use from now on"])
        panics = b.findall(r"^lightpath: panic: (.*)$")
        check([m.group(1).rstrip() for m in panics] ==
              ["test.panic_ap=1: CPU 1 panics as it starts running vm0's vCPU"],
              "panic lines: %r" % [m.group(0) for m in panics])
        expect_vm_lines(b, 1, [r"lightpath: vm1: pcpus = 1: CPU 1 panicked earlier and is out of "
                               r"use; not started"])
        expect_vm_lines(b, 2, side_lines(2, 3, 0, args="lines=3 ms=10", path=path))
        b.expect_powered_off(0x70, r"the first non-zero status, vm0's; VMs that did not end with 0: "
                                   r"2 of 3")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def t_smp_selftest(name, smp):
    """A self-test guest with other CPUs idle: the same results as on one CPU."""
    def run():
        b = Boot("smp-%s-selftest-%s" % (smp.split(",")[0], name), [guest(name)], smp=smp)
        expect_smp_line(b, "lightpath: %s CPUs found (ACPI MADT), %s started" % (smp, smp))
        oks = selftest_result(b, name)
        b.expect_rc(1)
        one = Boot("smp-1-selftest-" + name, [guest(name)])
        base = selftest_result(one, name)
        d = [l for l in oks if l not in base] + ["(missing) " + l for l in base if l not in oks]
        check(not d, "results differ from the one-CPU run: " + "; ".join(d[:3]))
        return b
    return run


VCPUS_ON = r"lightpath: vm%d: %d vCPUs on CPUs %s \(vCPU i on the i-th\)"


def t_smp_guest(smp, cpus, where):
    """The SMP guest in a VM of `cpus` vCPUs under lightpath, QEMU -smp
    `smp`: its APs started by INIT/SIPI (real mode at the SIPI vector),
    every IPI form, NMIs, logical and lowest-priority destinations, the I/O
    APIC routed to each vCPU, x2APIC (lightpath's emulated local APIC has
    it): all passed, none skipped; vCPU i on the i-th CPU of `where`."""
    def run():
        cfg = write_test_file("smp-guest-%s.cfg" % cpus, "# lightpath vm\nkernel = smp.elf\n"
                              "cpus = %s\nmemory = 64\n" % cpus)
        b = Boot("smp-guest-%s-on-%s" % (cpus, smp), [cfg, guest("smp")], smp=smp)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        b.expect(r"^" + VCPUS_ON % (0, int(cpus), where) + r"\s*$", "vm0's vCPUs on CPUs " + where)
        selftest_result(b, "smp", vm=0)
        n = int(cpus)
        aps = "%d AP%s started" % (n - 1, "" if n == 2 else "s")
        b.expect(r"^\[vm0\] smp: %d CPUs found \(ACPI MADT\), %s\s*$" % (n, aps),
                 "'smp: %d CPUs found (ACPI MADT), %s'" % (n, aps))
        skips = [l.strip() for l in b.lines if re.match(r"^\[vm0\] ok \d+ - # SKIP ", l)]
        check(not skips, "skipped: " + "; ".join(skips[:3]))
        b.expect(r"^lightpath: vm0: ended with status 0 \(isa-debug-exit\)\s*$", "vm0's end")
        # statistics per vCPU: every vCPU sent IPIs and received some
        for i in range(n):
            m = b.find(r"^  vCPU %d +(\d+) exits, light \d+\.\d%%; IPIs sent (\d+), received (\d+)" % i)
            check(m, "no statistics line for vCPU %d" % i)
            check(int(m.group(1)) > 0 and int(m.group(2)) > 0 and int(m.group(3)) > 0,
                  "vCPU %d: %r" % (i, m.string.strip()))
        b.expect_rc(1)
        return b
    return run


def t_smp_guest_native():
    """The SMP guest (guests/selftest/smp.c) directly under QEMU, no lightpath
    (which runs one vCPU per VM so far): 4 CPUs from the MADT, 3 APs started
    by INIT/SIPI, every IPI and I/O APIC check passed; only x2APIC may be
    skipped (QEMU 7.2's TCG has none)."""
    b = Boot("smp-guest-native", [], append="cpus=4", smp="4", kernel=guest("smp"))
    selftest_result(b, "smp", prefix="")
    b.expect(r"^smp: 4 CPUs found \(ACPI MADT\), 3 APs started\s*$",
             "'smp: 4 CPUs found (ACPI MADT), 3 APs started'")
    skips = [l.strip() for l in b.lines if re.match(r"^ok \d+ - # SKIP ", l)
             and "no x2APIC" not in l]
    check(not skips, "skipped: " + "; ".join(skips[:3]))
    b.expect_rc(1)
    return b


CPUS_REFUSED = (
    ("more-than-machine", "2", "cpus = 3\n",
     r"lightpath: vm0: asks for 3 CPUs, but this machine has 2 running lightpath; not started"),
    ("more-than-machine-smp1", "1", "cpus = 2\n",
     r"lightpath: vm0: asks for 2 CPUs, but this machine has 1 running lightpath; not started"),
    ("pcpus-cpu0-not-first", "2", "cpus = 2\npcpus = 1,0\n",
     r"lightpath: vm0: pcpus: CPU 0 can run only a VM's first vCPU \(it keeps lightpath's "
     r"housekeeping\); not started"),
    ("pcpus-absent", "2", "pcpus = 5\n",
     r"lightpath: vm0: pcpus = 5: CPU 5 is not running lightpath \(2 CPUs run it: 0\.\.1\); "
     r"not started"),
)


def t_bad_cpus_option():
    b = Boot("bad-cpus-option", [guest("hello")], append="cpus=65")
    expect_error_line(b, "cpus", "65")
    b.expect(r"^lightpath: error: bad value '65' for cpus= \(use 1\.\.64: the most host CPUs to "
             r"start, the boot CPU included\)\s*$", "the exact error line for cpus=65")
    return b


def plugin_tests(kind):
    """Tests from tests/integration/hostile/*.py: each module may define
    qemu_tests() and vmx_tests(), returning [(phase, name, fn)] like
    all_tests(); one module per hostile-guest case."""
    import importlib.util
    t = []
    pattern = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hostile", "*.py")
    for path in sorted(glob.glob(pattern)):
        spec = importlib.util.spec_from_file_location("hostile_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, kind):
            t.extend(getattr(mod, kind)())
    return t


def run_suite(tests, jobs, title, counts=None):
    """Runs [(phase, name, fn)] on `jobs` threads, phase by phase, printing
    each start and PASS/FAIL; `counts`: write 'passed failed' there. 0 when
    all passed."""
    lock = threading.Lock()
    passed = failed = 0
    total = len(tests)
    started = [0]

    def run(name, fn):
        with lock:
            started[0] += 1
            print("[%3d/%d] %s ..." % (started[0], total, name), flush=True)
        t0 = time.monotonic()
        _current.logs, _current.name = [], name
        try:
            fn()
            return name, None, _current.logs, time.monotonic() - t0
        except Fail as e:
            return name, str(e), _current.logs, time.monotonic() - t0
        except Exception as e:  # a harness bug is still a failure, never a pass
            return name, "%s: %s" % (type(e).__name__, e), _current.logs, time.monotonic() - t0

    t_start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for phase in sorted(set(p for p, _, _ in tests)):
            futs = [pool.submit(run, n, fn) for p, n, fn in tests if p == phase]
            for fut in concurrent.futures.as_completed(futs):
                name, err, logs, secs = fut.result()
                with lock:
                    if err is None:
                        passed += 1
                        print("PASS %s (%.1f s)" % (name, secs), flush=True)
                    else:
                        failed += 1
                        log = " [serial log: %s]" % ", ".join(logs) if logs else ""
                        print("FAIL %s: %s%s" % (name, err, log), flush=True)
    print("%s: %d tests in %.0f s" % (title, passed + failed, time.monotonic() - t_start), flush=True)
    if counts:
        with open(counts, "w") as f:
            f.write("%d %d\n" % (passed, failed))
    return 0 if failed == 0 else 1


def suite_main(doc, tests, needed, title):
    """A suite's command line: -j, -k (with the baselines needed(selected)
    names), --list, --counts; runs the selected [(phase, name, fn)]."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("LP_JOBS", "2")))
    ap.add_argument("-k", "--match", help="only tests whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="list the tests and exit")
    ap.add_argument("--counts", help="write 'passed failed' to this file")
    args = ap.parse_args()
    if args.match:
        r = re.compile(args.match)
        sel = [x for x in tests if r.search(x[1])]
        keep = needed(sel)
        tests = [x for x in tests if x in sel or x[1] in keep]
    if args.list:
        for _, name, _ in tests:
            print(name)
        return 0
    os.makedirs(OUT, exist_ok=True)
    return run_suite(tests, args.jobs, title, args.counts)


def main():
    def needed(sel):
        # a phase-2 switch test needs its guest's phase-1 baseline
        return set("selftest-" + n.split("-")[1] for _, n, _ in sel
                   if n.startswith("switch-") or n == "hostile-irqstate-" + HOSTILE_SWITCHES[0])
    return suite_main(__doc__, all_tests(), needed, "integration")


if __name__ == "__main__":
    sys.exit(main())
