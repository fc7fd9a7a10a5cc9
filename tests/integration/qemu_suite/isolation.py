"""How VMs end and stay apart: the final status (the first non-zero), a
VM stopped or broken while the next one runs, a guest forging lightpath's
lines, a guest leaving the interrupt controllers programmed for the next."""

import re

import lpguest  # tools/linux/lpguest.py: its exit-statistics parser
import serial_log  # tools/serial_log.py: lines a guest cannot forge

from .boot import Boot, check, guest, norm, PREFIX
from .lines import (expect_exact_lines, expect_first_nonzero, expect_lines_from, FINAL_ALL_ZERO,
                    FINAL_VM0_STOPPED_ONLY, healthy, loaded, NORMAL_LINE, resetcheck_lines,
                    selftest_lines, selftest_result, STATS_LINE, triple_lines)
from .selftests import BASELINE, BASELINE_LOCK


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
