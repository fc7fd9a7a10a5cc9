"""docs/SECURITY.md, case 3: exceptions whose delivery can loop inside the CPU (#DB,
#AC). Both are intercepted and reflected, so a guest that makes their
delivery fault again forever makes a VM exit each round, and its time limit
stops it; ordinary #DB and #AC still reach the guest as the CPU delivers
them.

  dbloop64  #DB through an IST stack whose frame slot a data breakpoint
            watches (guests/hostile/dbloop64.c). Before: QEMU 7.2 aborted
            (qemu_mutex_lock_iothread_impl assertion), Bochs looped without
            an exit (timeout).
  acloop    #AC delivered at CPL 3 on a misaligned stack (acloop.c). Before:
            Bochs crashed (segmentation fault) under both backends. QEMU
            7.2 checks no alignment, so this one runs under Bochs only (VT-x,
            and SVM with the `ryzen` model).
  dbac      single step, code and data breakpoints, and #AC at CPL 3 reach
            the guest with the right DR6, return address and error code
            (a regression check: they did before too).

Each runs under the default switches and under itest.HOSTILE_SWITCHES,
followed by resetcheck (resetcheck64 after dbloop64), which must find the
reset state (no debug register, no XCR0 or x87 state left) and run
normally; every line is checked."""

import re

import itest
from itest import Boot, check, expect_exact_lines, HOSTILE_SWITCHES, GUESTS

LIMIT = 1   # seconds: the loop VM's time limit (its description's timeout =)
LOOP_VM = "loop"   # the loop VM's name in its description
# A loop is many exits; one reflected exception would be a handful.
MIN_LOOP_EXITS = 100


def loaded64(vm, name, cmdline):
    return (r"lightpath: vm%d: loaded %s \(multiboot ELF(32|64), entry 0x[0-9a-f]+\), 64 MiB, "
            r"cmdline \"%s\"" % (vm, re.escape(name), re.escape(cmdline)))


def exception_exits(b, vm):
    """The exception row of vm's exit statistics (0 if it has none)."""
    start = None
    for i, l in enumerate(b.lines):
        if l.rstrip() == "lightpath: vm%d: exit statistics" % vm:
            start = i
    check(start is not None, "no exit statistics for vm%d" % vm)
    for l in b.lines[start + 1:]:
        m = itest.STATS_ROW.match(l)
        if not m:
            if l.startswith("lightpath:"):
                break
            continue
        if m.group(1) == "exception":
            return int(m.group(2))
    return 0


def loop_modules(label, guest_file, healthy):
    """The loop VM by a description with `timeout = LIMIT`, then the healthy
    VM, which has no limit: a loaded host may take more than LIMIT seconds
    to run resetcheck64 (it did, beside `make stress`, under vm.timeout=1)."""
    cfg = itest.write_test_file("hostile-%s.cfg" % label,
                                "# lightpath vm\nname = %s\nkernel = %s\nmemory = 64\n"
                                "timeout = %d\n" % (LOOP_VM, basename(guest_file), LIMIT))
    return [cfg, guest_file, healthy[0]]


def check_loop(b, guest_file, line, shown, healthy):
    """vm0 `guest_file` prints `line` and loops until its time limit, making
    exception exits; the healthy VM (`healthy`: itest.healthy()) runs as
    vm1 without a limit (loop_modules). `shown`: how lightpath names the
    modules (QEMU: the path; Bochs: the basename)."""
    _, path, name = healthy
    expect_exact_lines(b, [
        loaded64(0, LOOP_VM, shown(guest_file)),
        r"lightpath: vm0: time limit %d s" % LIMIT,
        r"\[vm0\] " + re.escape(line),
        r"lightpath: vm0: stopped: time limit of %d s reached" % LIMIT,
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, path, name) + [itest.FINAL_VM0_STOPPED_ONLY])
    b.expect_rc(225)
    n = exception_exits(b, 0)
    check(n >= MIN_LOOP_EXITS, "vm0 made %d exception exits: no delivery loop of exits" % n)
    check(b.secs >= LIMIT, "the run took %.1f s, less than the %d s limit" % (b.secs, LIMIT))


DBLOOP = GUESTS + "/dbloop64.elf"
DBLOOP_LINE = "dbloop64: a data breakpoint on the #DB stack, then writes to it; never ends"
ACLOOP = GUESTS + "/acloop.elf"
ACLOOP_LINE = "acloop: #AC at CPL 3 on a misaligned stack, delivered on it; never ends"
DBAC = GUESTS + "/dbac.elf"


def t_dbloop(label, switches):
    def run():
        healthy = itest.healthy(wide=True)
        b = Boot("hostile-" + label, loop_modules(label, DBLOOP, healthy), append=switches)
        check_loop(b, DBLOOP, DBLOOP_LINE, lambda p: p, healthy)
        return b
    return run


def check_dbac(b, dbac, cmdline, healthy, with_ac):
    """dbac (`dbac`: as lightpath names it, with `cmdline`) passes with its
    #AC tests, or the check that none comes; then resetcheck (`healthy`:
    itest.healthy()) finds the reset state and runs; every VM ends with 0."""
    _, path, name = healthy
    itest.expect_exact_lines(b, [itest.loaded(0, dbac, 64, cmdline)] +
                             itest.selftest_lines(b, 0, "dbac", (), 3) +
                             [r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
                              r"lightpath: vm0: exit statistics"] +
                             itest.resetcheck_lines(b, 1, path, name) + [itest.FINAL_ALL_ZERO])
    want_ac = r"\[vm0\] ok \d+ - #AC: " + ("one, " if with_ac else r"none \(")
    check(b.find(want_ac), "no #AC result line matching /%s/" % want_ac)
    b.expect_rc(1)


def t_dbac(label, switches):
    """Under QEMU: `ac=none`, as QEMU 7.2 raises no #AC (the guest checks
    that none comes, so a QEMU that starts checking alignment shows here)."""
    def run():
        healthy = itest.healthy()
        b = Boot("hostile-" + label, [DBAC + " ac=none", healthy[0]], append=switches)
        check_dbac(b, DBAC, DBAC + " ac=none", healthy, False)
        return b
    return run


def qemu_tests():
    cfg, opts = HOSTILE_SWITCHES
    return [
        (1, "hostile-db-loop", t_dbloop("db-loop", "")),
        (1, "hostile-db-loop-" + cfg, t_dbloop("db-loop-" + cfg, opts)),
        (1, "hostile-dbac", t_dbac("dbac", "")),
        (1, "hostile-dbac-" + cfg, t_dbac("dbac-" + cfg, opts)),
    ]


# ---- Bochs: VT-x, and SVM with the `ryzen` model (which has #AC) ----

def basename(p):
    return p.rsplit("/", 1)[-1].split(" ")[0] + (p[p.index(" "):] if " " in p else "")


def t_bochs_loop(label, guest_file, line, switches, svm=False):
    def run():
        import vmx_tests
        healthy = itest.healthy(bochs=True, wide=guest_file.endswith("64.elf"))
        b = vmx_tests.BochsBoot("hostile-" + label, loop_modules(label, guest_file, healthy),
                                append=switches,
                                **(dict(cpu="ryzen", kernel="build/lightpath.elf") if svm else {}))
        check_loop(b, guest_file, line, basename, healthy)
        return b
    return run


def t_bochs_dbac(label, args, switches, svm=False):
    def run():
        import vmx_tests
        healthy = itest.healthy(bochs=True)
        b = vmx_tests.BochsBoot("hostile-" + label, [(DBAC + " " + args).strip(), healthy[0]],
                                append=switches,
                                **(dict(cpu="ryzen", kernel="build/lightpath.elf") if svm else {}))
        check_dbac(b, "dbac.elf", ("dbac.elf " + args).strip(), healthy, True)
        return b
    return run


def vmx_tests():
    cfg, opts = HOSTILE_SWITCHES
    t = []
    for suffix, sw in (("", ""), ("-" + cfg, opts)):
        t.append((1, "vmx-hostile-db-loop" + suffix,
                  t_bochs_loop("db-loop" + suffix, DBLOOP, DBLOOP_LINE, sw)))
        t.append((1, "vmx-hostile-ac-loop" + suffix,
                  t_bochs_loop("ac-loop" + suffix, ACLOOP, ACLOOP_LINE, sw)))
        t.append((1, "vmx-hostile-dbac" + suffix, t_bochs_dbac("dbac" + suffix, "", sw)))
    # #AC on SVM: Bochs' AMD model checks alignment (QEMU does not). Its #DB
    # intercept leaves DR6 out of the VMCB (AMD's CPUs and QEMU write it),
    # so dbac runs its #AC test alone there.
    t.append((1, "svm-bochs-hostile-ac-loop",
              t_bochs_loop("svm-ac-loop", ACLOOP, ACLOOP_LINE, "", svm=True)))
    t.append((1, "svm-bochs-hostile-dbac-ac", t_bochs_dbac("svm-dbac-ac", "only=ac", "", svm=True)))
    return t
