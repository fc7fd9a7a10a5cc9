"""Host SMP (docs/SMP.md): the CPUs lightpath finds and starts, VMs side by
side on their own CPUs (pcpus =, cpus =), an AP's panic, and the SMP guest
with several vCPUs."""

import re

from .boot import Boot, check, guest, write_test_file
from .lines import (expect_error_line, expect_exact_lines, expect_first_nonzero,
                    expect_side_by_side, expect_smp_line, expect_vm_lines, FINAL_VM1_STOPPED_ONLY,
                    HELLO, HELLO3, hello_lines, loaded, RUNS_ON, selftest_result, SIDE, side_lines,
                    triple_side_lines)


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
