"""The guest clock's polling (vmm/guest_clock.h), attacked
(guests/hostile/clockpoll64.c; docs/SECURITY.md, case 17).

vm0 polls the PM timer, PIT channel 2 and RDTSC forever with interrupts off:
lightpath makes its RDTSC exit and hides the exits' cost from its clocks
until the lag cap (10 s, vmm/guest_clock.h), then lets its time run with the
host's. Its time limit (vm.timeout=12, host time, past the cap) must stop it;
its clocks must never go back (it would end itself with status 1); its
statistics must say the cap was reached. vm1, the timers self-test, must
then pass every check: its calibrations need a fresh clock (a lag budget
carried over from vm0 would fail them). hello runs last. Under the default
switches and itest.HOSTILE_SWITCHES, on QEMU only: under Bochs exits cost
about as much as the step, so polling hides little and the cap is never
reached in a test's time (vmx-selftest-timers covers the clock there)."""

import re

import itest

GUEST = "clockpoll64"
LIMIT = 12
TIMERS = "timers"
CLOCK_LINE = re.compile(r"^  clock: the guest polled its clocks \d+ times \(\d+ without RDTSC\), \d+ exits \(\d+ RDTSC\); "
                        r"\d+ ms hidden, \d+ ms behind now( \(capped\))?$")


def suffix(switches):
    return "-" + itest.HOSTILE_SWITCHES[0] if switches else ""


def vm_block(b, vm):
    """The lines from vmN's `loaded` line to the next VM's (or the end)."""
    lines = [l.rstrip() for l in b.lines]
    start = next((i for i, l in enumerate(lines) if l.startswith("lightpath: vm%d: loaded" % vm)), None)
    itest.check(start is not None, "vm%d never loaded; %s" % (vm, b.why_rc()))
    end = next((i for i in range(start + 1, len(lines))
                if re.match(r"lightpath: (vm%d: loaded|all VMs ended)" % (vm + 1), lines[i])), len(lines))
    return lines[start:end]


def t_qemu(switches):
    def run():
        path = itest.guest(GUEST)
        timers = itest.guest(TIMERS)
        b = itest.Boot("hostile-clockpoll" + suffix(switches), [path, timers, itest.HELLO3],
                       append=("vm.timeout=%d %s" % (LIMIT, switches)).strip())
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        vm0 = vm_block(b, 0)
        own = [l for l in vm0 if re.match(r"(lightpath: |\[vm0\] )", l)]
        want = [itest.loaded(0, path, 64, path, "ELF64"),
                r"lightpath: vm0: time limit %d s" % LIMIT,
                r"\[vm0\] clockpoll64: polling the PM timer, PIT channel 2 and RDTSC with "
                r"interrupts off, forever",
                r"lightpath: vm0: stopped: time limit of %d s reached" % LIMIT,
                r"lightpath: vm0: exit statistics"]
        itest.check(len(own) == len(want) and all(re.fullmatch(w, g) for w, g in zip(want, own)),
                    "vm0's lines are %r, wanted %r (a clock that went back ends it early)"
                    % (own, want))
        clock0 = [l for l in vm0 if CLOCK_LINE.match(l)]
        itest.check(clock0 and clock0[0].endswith("(capped)"),
                    "vm0's statistics do not say the lag cap was reached: %r" % clock0)
        vm1 = vm_block(b, 1)
        itest.check(any(re.fullmatch(r"\[vm1\] selftest timers: (\d+) passed, 0 failed", l) for l in vm1),
                    "the timers self-test after it failed: %s" %
                    " | ".join(l for l in vm1 if "not ok" in l or "selftest timers" in l))
        itest.check("lightpath: vm1: ended with status 0 (isa-debug-exit)" in vm1,
                    "vm1 (timers) did not end with status 0")
        clock1 = [l for l in vm1 if CLOCK_LINE.match(l)]
        itest.check(clock1 and not clock1[0].endswith("(capped)"),
                    "vm1 did not start with a fresh clock: %r" % clock1)
        vm2 = [l.rstrip() for l in b.lines if re.match(r"(lightpath: vm2|\[vm2\] |lightpath: all VMs)", l)]
        want2 = [l.replace("vm1", "vm2") for l in itest.hello_lines(1, LIMIT)] + \
            [r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero status, "
             r"vm0's; VMs that did not end with 0: 2 of 3\)"]
        itest.check(len(vm2) == len(want2) and all(re.fullmatch(w, g) for w, g in zip(want2, vm2)),
                    "hello's lines are %r, wanted %r" % (vm2, want2))
        b.expect_rc(225)
        return b
    return run


def t_clock_host():
    """clock=host turns polling off: the same guest polls without lightpath
    ever hiding time (no clock statistics line, which the default run above
    must print), and is stopped at its limit; hello runs."""
    path = itest.guest(GUEST)
    limit = 2
    b = itest.Boot("clock-host-option", [path, itest.HELLO3],
                   append="vm.timeout=%d clock=host" % limit)
    b.expect_options("clock=host")
    vm0 = vm_block(b, 0)
    itest.check(not [l for l in vm0 if CLOCK_LINE.match(l) or l.startswith("  clock:")],
                "with clock=host vm0 still polled: %r" % [l for l in vm0 if "clock:" in l])
    itest.check("lightpath: vm0: stopped: time limit of %d s reached" % limit in vm0,
                "vm0 was not stopped at its time limit")
    b.expect(r"^\[vm1\] hello: exiting with status 3$", "hello after it")
    b.expect_rc(225)
    return b


def qemu_tests():
    return [(1, "hostile-clockpoll" + suffix(sw), t_qemu(sw)) for sw in ("", itest.HOSTILE_SWITCHES[1])] + \
        [(1, "clock-host-option", t_clock_host)]
