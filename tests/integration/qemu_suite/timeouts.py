"""VMs that never end by themselves (docs/SECURITY.md, case 9): stopped by
their time limit (a description's `timeout =`, the option vm.timeout=) or
at once by a HLT nothing can wake; the clock those limits are timed by."""

import os
import sys

from .boot import Boot, check, ROOT, write_test_file
from .lines import (expect_exact_lines, FINAL_VM0_STOPPED, FINAL_VM0_STOPPED_ONLY,
                    FINAL_VM1_STATUS3, FOREVER, forever_stopped, healthy, HELLO3, hello_lines,
                    loaded, resetcheck_lines)


def limit_config(label, text):
    return write_test_file("timeout-%s.cfg" % label, text)


def t_timeout(label, mode, how, limit=1, switches=""):
    """`forever mode=<mode>` stopped by a limit of `limit` s set by `how`
    ("config": a description's timeout =; "option": vm.timeout=), then
    resetcheck, which must start from the reset state and run normally;
    `switches`: more boot options. With "option", resetcheck comes from a
    description with `timeout = 0`: under vm.timeout=1 its checks would have
    to finish within 1 s of the host's time, which a busy host (and
    light=off, where every exit is heavy) does not promise."""
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
            nolimit = limit_config(label + "-next", "# lightpath vm\nname = next\nkernel = %s\n"
                                   "memory = 64\ntimeout = 0\n" % os.path.basename(module))
            b = Boot("timeout-" + label, ["%s mode=%s" % (FOREVER, mode), nolimit, module],
                     append=("vm.timeout=%d %s" % (limit, switches)).strip())
            first = forever_stopped(0, FOREVER, 64, mode, limit, r"time limit of %d s reached" % limit)
            rest = resetcheck_lines(b, 1, path, name)
            rest[0] = loaded(1, "next", 64, path)
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


def t_clock_under_load():
    """Under a host CPU hog (one busy process per core, started and stopped
    here, unless LP_HOG says `make stress` already runs one): (1) the TSC
    at the rate lightpath calibrated while the hog ran times tsc.check=5 s
    within 1% of the host's ACPI PM timer (under QEMU without icount both
    follow the host's clock, so a stall bends neither: only a wrong
    calibration separates them); (2) vm.timeout=5 stops `forever mode=busy`
    (it reads the PM timer, lightpath's, from the TSC, and reports every
    10 ms of it) at its first read at or past 5 s, however late the host's
    timer comes: no report past 1.01 x 5000 ms, and lightpath's `time
    limit:` row says the VM's clock had run at least 0.99 x 5000 ms (not
    early) and no less than the guest's last report. (How far below 5000
    the last report is says nothing: a host that does not run the guest
    for a while just before its limit leaves it there.) The hog must have
    had at least 10% of the CPUs it asked for (the machine is shared with
    other emulators), or the test proves nothing."""
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
    low = limit_ms * (1e6 - CLOCK_LOAD_PPM) / 1e6
    high = limit_ms * (1e6 + CLOCK_LOAD_PPM) / 1e6
    check(last <= high, "vm.timeout=%d: the guest's PM timer had counted %d ms when it was "
          "stopped (at most %.0f allowed)" % (CLOCK_LOAD_LIMIT_S, last, high))
    row = b.expect(r"^  time limit: reached (\d+) ms after the VM's start, at (\d+) ms of its "
                   r"clock\s*$", "the exit statistics' 'time limit:' row")
    at_host, at_clock = int(row.group(1)), int(row.group(2))
    check(at_host >= limit_ms and low <= at_clock <= at_host,
          "vm.timeout=%d: %r (wanted at least %d ms after the start, the VM's clock at least "
          "%.0f ms)" % (CLOCK_LOAD_LIMIT_S, row.group(0), limit_ms, low))
    check(last <= at_clock + 1, "the guest's last report (%d ms) is past the VM's clock at the "
          "stop (%d ms)" % (last, at_clock))
    b.expect(r"^\[vm1\] hello: exiting with status 3\s*$", "the healthy VM after it")
    b.expect_rc(225)
    if h is not None:   # this machine is shared: other emulators take their part too
        check(h.busy_fraction() >= 0.1, "the hog got only %.0f%% of its %d CPUs: no load to "
              "test under" % (h.busy_fraction() * 100, h.n))
    hog = "of make stress" if outer else "%.0f%% busy" % (h.busy_fraction() * 100)
    print("clock-under-load: TSC %s MHz (%s); TSC check %s%s ppm; vm.timeout at guest PM %d ms "
          "(VM clock %d ms); hog %s" % (cal.group(1), cal.group(2), m.group(5), m.group(6), last,
                                       at_clock, hog), flush=True)
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
