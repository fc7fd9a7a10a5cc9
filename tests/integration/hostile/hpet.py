"""The HPET attacked (guests/hostile/hpetwild.c, dev/hpet.c; docs/SECURITY.md).

vm0 runs periodic timer 0 every tick (10 ns) edge- and level-triggered (the
level one left set for 1000 deliveries, so the I/O APIC delivers it at
every EOI) and with a period of 0, routes timers to pins outside the capability, makes
byte, word and misaligned accesses to the whole register block, writes the
read-only registers, writes the counter while it runs, wraps the counter
past 2^64, writes 2000 random values to random registers, and leaves the
HPET counting with the legacy route on and a timer every tick. Every wait
with interrupts on must end (the VM keeps running; the handler turns a
1-tick timer off after 1000 interrupts). vm1 (mode=storm) leaves a 1-tick
timer and a level interrupt it never clears running with interrupts on, so
that it never leaves its handlers (a PC would not either): the time limit
(vm.timeout=6) stops it. vm2 (mode=check) must find the HPET as at reset
and the PIT's IRQ0 not cut off; resetcheck runs last. Under the default switches and itest.HOSTILE_SWITCHES, on QEMU and
on Bochs VT-x."""

import itest
import vmx_tests as vmx

GUEST = "hpetwild"
LIMIT = 6   # host time: vm1 storms until it; the others take 1-3 s

STORM = ["periodic timer 0 every tick (10 ns), edge, 50 ms with interrupts on: the VM goes on",
         "periodic timer 0 with a period of 0: one match, no loop",
         "level, every tick, the status left set: delivered at every EOI, 1000 times",
         "routes outside the capability are not taken",
         "a timer with no valid route interrupts no pin",
         "byte, word and misaligned reads of every register read 0",
         "byte, word and misaligned writes change nothing",
         "writes to read-only and reserved registers change nothing",
         "the counter written while it runs: ignored",
         "the counter wraps past 2^64 and a comparator after the wrap matches once",
         "2000 random writes to the HPET's registers: the VM runs"]
CHECK = ["the HPET is halted, its counter 0, no status, no legacy route",
         "the timers are as at reset",
         "the PIT's IRQ0 reaches the I/O APIC (no legacy route left behind)"]


def suffix(switches):
    return "-" + itest.HOSTILE_SWITCHES[0] if switches else ""


def expected(b, path, reset_path):
    g = lambda vm, args="": itest.loaded(vm, path, 64, (path + " " + args).strip())
    limit = lambda vm: r"lightpath: vm%d: time limit %d s" % (vm, LIMIT)
    end = lambda vm: [r"lightpath: vm%d: ended with status 0 \(isa-debug-exit\)" % vm,
                      r"lightpath: vm%d: exit statistics" % vm]
    return ([g(0), limit(0)] + itest.ok_lines(0, GUEST, STORM) +
            [r"\[vm0\] hpetwild: leaving the HPET counting, legacy route on, timer 0 every tick"] +
            end(0) +
            [g(1, "mode=storm"), limit(1),
             r"\[vm1\] hpetwild: timer 0 every tick and a level interrupt never cleared, "
             r"interrupts on, forever",
             r"lightpath: vm1: stopped: time limit of %d s reached" % LIMIT,
             r"lightpath: vm1: exit statistics"] +
            [g(2, "mode=check"), limit(2)] + itest.ok_lines(2, GUEST, CHECK) + end(2) +
            itest.resetcheck_lines(b, 3, reset_path, limit=LIMIT) +
            [r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero status, "
             r"vm1's; VMs that did not end with 0: 1 of 4\)"])


def modules():
    return [itest.guest(GUEST), itest.guest(GUEST, "mode=storm"), itest.guest(GUEST, "mode=check")]


def t_qemu(switches):
    def run():
        hc = itest.healthy()
        b = itest.Boot("hostile-hpet" + suffix(switches), modules() + [hc[0]],
                       append=("vm.timeout=%d %s" % (LIMIT, switches)).strip())
        itest.expect_exact_lines(b, expected(b, itest.guest(GUEST), hc[1]))
        b.expect_rc(225)
        return b
    return run


def t_bochs(label, switches):
    def run():
        hc = itest.healthy(bochs=True)
        b = vmx.BochsBoot(label, modules() + [hc[0]],
                          append=("vm.timeout=%d %s" % (LIMIT, switches)).strip())
        itest.expect_exact_lines(b, expected(b, GUEST + ".elf", hc[1]))
        b.expect_rc(225)
        return b
    return run


def qemu_tests():
    return [(1, "hostile-hpet" + suffix(sw), t_qemu(sw)) for sw in ("", itest.HOSTILE_SWITCHES[1])]


def vmx_tests():
    opts = itest.HOSTILE_SWITCHES[1]
    return [(1, "vmx-hostile-hpet", t_bochs("vmx-hostile-hpet", "")),
            (1, "vmx-hostile-hpet" + suffix(opts), t_bochs("vmx-hostile-hpet" + suffix(opts), opts))]
