"""Issue 10, item 3: exceptions whose delivery can loop inside the CPU (#DB,
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
followed by hello, whose lines are checked too."""

import re

import itest
from itest import Boot, check, expect_exact_lines, hello_lines, HOSTILE_SWITCHES, HELLO, GUESTS

LIMIT = 1   # seconds: vm.timeout= for the loops
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


def check_loop(b, guest_file, line, shown, hello):
    """vm0 `guest_file` prints `line` and loops until its time limit, making
    exception exits; hello runs as vm1. `shown`: how lightpath names the
    modules (QEMU: the path; Bochs: the basename)."""
    expect_exact_lines(b, [
        loaded64(0, shown(guest_file), shown(guest_file)),
        r"lightpath: vm0: time limit %d s" % LIMIT,
        r"\[vm0\] " + re.escape(line),
        r"lightpath: vm0: stopped: time limit of %d s reached" % LIMIT,
        r"lightpath: vm0: exit statistics",
    ] + hello_lines(1, LIMIT, hello=hello) + [itest.FINAL_VM0_STOPPED])
    b.expect_rc(225)
    n = exception_exits(b, 0)
    check(n >= MIN_LOOP_EXITS, "vm0 made %d exception exits: no delivery loop of exits" % n)
    check(b.secs >= LIMIT, "the run took %.1f s, less than the %d s limit" % (b.secs, LIMIT))


DBLOOP = GUESTS + "/dbloop64.elf"
DBLOOP_LINE = "dbloop64: a data breakpoint on the #DB stack, then writes to it; never ends"
ACLOOP = GUESTS + "/acloop.elf"
ACLOOP_LINE = "acloop: #AC at CPL 3 on a misaligned stack, delivered on it; never ends"
DBAC = GUESTS + "/dbac.elf"


def hello3():
    return HELLO + " status=3"


def t_dbloop(label, switches):
    def run():
        b = Boot("hostile-" + label, [DBLOOP, hello3()],
                 append=("vm.timeout=%d %s" % (LIMIT, switches)).strip())
        check_loop(b, DBLOOP, DBLOOP_LINE, lambda p: p, HELLO)
        return b
    return run


def check_dbac(b, hello, with_ac):
    """dbac passes (with its #AC tests, or the check that none comes), then
    hello runs and ends with 3."""
    itest.selftest_result(b, "dbac")
    want_ac = r"\[vm0\] ok \d+ - #AC: " + ("one, " if with_ac else r"none \(")
    check(b.find(want_ac), "no #AC result line matching /%s/" % want_ac)
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm0: ended with status 0 \(isa-debug-exit\)$",
             "'lightpath: vm0: ended with status 0 (isa-debug-exit)'")
    b.expect(r"^lightpath: vm1: ended with status 3 \(isa-debug-exit\)$",
             "'lightpath: vm1: ended with status 3 (isa-debug-exit)'")
    itest.expect_first_nonzero(b, 3, 1, 1, 2)


def t_dbac(label, switches):
    """Under QEMU: `ac=none`, as QEMU 7.2 raises no #AC (the guest checks
    that none comes, so a QEMU that starts checking alignment shows here)."""
    def run():
        b = Boot("hostile-" + label, [DBAC + " ac=none", hello3()], append=switches)
        check_dbac(b, HELLO, False)
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
        b = vmx_tests.BochsBoot("hostile-" + label, [guest_file, hello3()],
                                append=("vm.timeout=%d %s" % (LIMIT, switches)).strip(),
                                **(dict(cpu="ryzen", kernel="build/lightpath.elf") if svm else {}))
        check_loop(b, guest_file, line, basename, "hello.elf")
        return b
    return run


def t_bochs_dbac(label, args, switches, svm=False):
    def run():
        import vmx_tests
        b = vmx_tests.BochsBoot("hostile-" + label, [(DBAC + " " + args).strip(), hello3()],
                                append=switches,
                                **(dict(cpu="ryzen", kernel="build/lightpath.elf") if svm else {}))
        check_dbac(b, "hello.elf", True)
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
