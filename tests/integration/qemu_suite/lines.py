"""The lines a boot must print, shared by the suites: a self-test's verdict
(selftest_result, selftest_lines), exact comparisons (expect_exact_lines,
expect_vm_lines for VMs side by side), the lines of the usual guests (hello,
resetcheck, forever, side, triple), the final power-off lines, and the
hostile-guest cases' frame (both_switch_sets, guest64_then_resetcheck)."""

import os
import re

from .boot import Boot, check, Fail, guest, GUESTS, norm, PREFIX


# The hostile-guest cases (docs/SECURITY.md) also run with the heavy paths forced.
HOSTILE_SWITCHES = ("hostile-opts", "light=off io=emulate dr=always")


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


def expect_error_line(b, *needles):
    errs = b.findall(r"^lightpath: error: (.*)$")
    check(len(errs) == 1, "expected exactly one 'lightpath: error:' line, got %d" % len(errs))
    text = errs[0].group(1)
    for n in needles:
        check(n in text, "error line does not name '%s': %s" % (n, errs[0].group(0).strip()))
    b.expect_rc(255)
    b.expect_not(r"^lightpath: vm\d+: loaded .*")


# lightpath's usual lines: any other is an error or a report (config.odd_lines).
NORMAL_LINE = re.compile(r"^lightpath: (lightweight-exit hypervisor|options: |AMD SVM with nested paging|"
                         r"Intel VMX with EPT |VMX local APIC: |VMX: (no )?Bochs detected \(|spec=(on|off): |\d+ CPUs? found \(ACPI MADT|"
                         r"TSC \d+\.\d{3} MHz \(|TSC check: |"
                         r"vm\d+: loaded |vm\d+: ended with status |vm\d+: exit statistics\s*$|"
                         r"all VMs ended; powering off )")
HELLO = GUESTS + "/hello.elf"
# The rows of the exit statistics table (lightpath's, without a prefix).
STATS_LINE = re.compile(r"^  (reason|denied:|emulated:|clock:|vCPU \d+ +\d+ exits, |VM lock: taken \d+ times, |\S.*\s\d+\s+\d+(\.\d+)?%)")


# A VM that never ends by itself (guests/selftest/forever.c; docs/SECURITY.md,
# case 9), stopped by its time limit or by Ctrl-^ (timeouts.py, console.py).
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


FINAL_VM1_STOPPED_ONLY = (r"lightpath: all VMs ended; powering off with status 112 \(the first "
                          r"non-zero status, vm1's; VMs that did not end with 0: 1 of 2\)")
