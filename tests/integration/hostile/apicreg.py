"""Case 19 (docs/SECURITY.md): a guest that attacks the local APIC's
register interfaces (guests/hostile/apicreg64.c) and checks every answer
against the Intel SDM vol. 3 ch. 11: all-ones to the read-only registers and
the reserved offsets of the xAPIC page, odd-sized writes, EOI storms, the
x2APIC MSR range read and written (#GP exactly where the SDM and
dev/lapic_msr.c's x2apic_access put it), the current count, ICR read-back; and
IF=0: a self-IPI made pending with IF=0 in each way a guest has must arrive
once, after STI, never into code with IF=0, while the guest busy-waits with
IF=0 through several host interrupts. Then resetcheck64 runs normally.

The same expectations on every backend: QEMU's SVM (`hostile-apicreg`),
VT-x under Bochs with APIC virtualization (`vmx-hostile-apicreg`: the EOI
storms must make no exit) and with vmx.apicv=off (`-apicv-off`: they exit,
one per EOI). The IF=0 checks caught a Bochs 2.7 defect: it delivers a
pending virtual interrupt into code with RFLAGS.IF=0 when a host interrupt
arrives (cpu/event.cc: with external-interrupt exiting a guest's CLI leaves
host interrupts unmasked, and InterruptAcknowledge prefers the virtual
interrupt to the exit). Where lightpath detects Bochs it holds the host
timer's interrupt out of VT-x guests (vmm/vmx/bochs.c, docs/VMX.md "A
Bochs 2.7 bug, worked around on Bochs only"), so on VT-x too, with the
default options, every check must pass."""

import re

import itest
import vmx_tests as vmx

GUEST = "apicreg64"
STORM = 5000             # EOI writes per storm (apicreg64.c, STORM)
# IF=0 waits that saw a host interrupt, in xAPIC and in x2APIC mode: 3 per
# form (3 forms in xAPIC mode, 4 in x2APIC mode)
TESTED = (9, 12)
TAP_LINE = re.compile(r"^\[vm0\] (not )?ok \d+ ")

INFO = [r"\[vm0\] apicreg64: xAPIC EOI storm: %d EOI writes with ISR empty made (\d+) MMIO exits" % STORM,
        r"\[vm0\] apicreg64: IF=0 waits in xAPIC mode: (\d+) of 15 ms or more, (\d+) of them "
        r"with host interrupts \((\d+) host-interrupt exits\), (\d+) RDTSC exits",
        r"\[vm0\] apicreg64: x2APIC EOI storm: %d EOI writes with ISR empty made (\d+) MSR-write "
        r"exits" % STORM,
        r"\[vm0\] apicreg64: IF=0 waits in x2APIC mode: (\d+) of 15 ms or more, (\d+) of them "
        r"with host interrupts \((\d+) host-interrupt exits\), (\d+) RDTSC exits"]


def verdict(b):
    """The guest's verdict: every check passed."""
    oks = [l.rstrip() for l in b.lines if TAP_LINE.match(l)]
    bad = [re.sub(r"^\[vm0\] not ok \d+ - ", "", l) for l in oks if l.startswith("[vm0] not ok")]
    m = b.find(r"\[vm0\] selftest %s: (\d+) passed, (\d+) failed\s*$" % GUEST)
    itest.check(m is not None, "%s; no 'selftest %s' verdict%s" % (b.why_rc(), GUEST,
                "; failing: " + "; ".join(bad[:3]) if bad else ""))
    passed, failed = int(m.group(1)), int(m.group(2))
    itest.check(not bad and not failed, "selftest %s: %d failed: %s" % (GUEST, failed, "; ".join(bad)))
    itest.check(len(oks) == passed, "verdict says %d passed but %d 'ok N' lines were printed"
                % (passed, len(oks)))


def expect_apicreg_then_healthy(b, path, healthy):
    """The guest's checks, then every other line exactly: vm0 ends with 0,
    then resetcheck64 with 0. Returns the numbers of the guest's info
    lines: storm exits and host interrupts during the IF=0 waits, xAPIC
    then x2APIC."""
    verdict(b)
    rest = itest.Boot.__new__(itest.Boot)
    rest.__dict__.update(b.__dict__)
    rest.lines = [l for l in b.lines if not TAP_LINE.match(l)]
    itest.expect_exact_lines(rest, [itest.loaded(0, path, 64, path, "ELF64")] + INFO + [
        r"\[vm0\] selftest %s: \d+ passed, 0 failed" % GUEST,
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) + [itest.FINAL_ALL_ZERO])
    b.expect_rc(1)
    nums = [int(b.expect(r).group(1)) for r in INFO]
    for mode, r, want in (("xAPIC", INFO[1], TESTED[0]), ("x2APIC", INFO[3], TESTED[1])):
        waits, tested, _, rdtsc = map(int, b.expect(r).groups())
        itest.check(tested == want, "%s mode: %d of %d IF=0 waits saw a host interrupt, %d wanted: "
                    "IF=0 was not put to the test" % (mode, tested, waits, want))
        itest.check(rdtsc == 0, "%s mode: the IF=0 waits made %d RDTSC exits: an exit with IF=0 "
                    "would let lightpath see what a kernel's CLI hides" % (mode, rdtsc))
    return nums


def expect_storms(b, nums, exit):
    """The EOI storms: no exit (`exit` False: the CPU performs the EOIs) or
    one per EOI, by the guest's count and by vm0's exit statistics."""
    mmio, msrw = nums[0], nums[2]
    rows, _ = itest.lpguest.exit_stats(b.text, 0)
    itest.check(rows, "no exit statistics for vm0")
    table = rows.get("msr_write", (0,))[0]
    if exit:
        itest.check(mmio >= STORM and msrw >= STORM, "EOI storms exited %d (MMIO) and %d (MSR) times, "
                    "expected one exit per EOI (%d)" % (mmio, msrw, STORM))
        itest.check(table >= STORM, "vm0 made %d msr_write exits, fewer than its %d x2APIC EOIs"
                    % (table, STORM))
    else:
        itest.check(mmio == 0 and msrw == 0, "EOI storms exited %d (MMIO) and %d (MSR) times: with "
                    "APIC virtualization the CPU performs EOIs without an exit" % (mmio, msrw))
        itest.check(table < STORM // 10, "vm0 made %d msr_write exits, its x2APIC EOI storm alone %d "
                    "EOIs: they exited" % (table, STORM))


def t_qemu():
    def run():
        healthy = itest.healthy(wide=True)
        b = itest.Boot("hostile-apicreg", [itest.guest(GUEST), healthy[0]])
        nums = expect_apicreg_then_healthy(b, itest.guest(GUEST), healthy)
        expect_storms(b, nums, exit=True)
        return b
    return run


# How lightpath's VT-x banner names the way the local APIC goes (vmm/vmx/cpu.c).
APIC_WAY = {
    "": r"APIC virtualization \(APIC-access page, x2APIC and register virtualization, "
        r"virtual-interrupt delivery\)",
    "vmx.apicv=off": r"interrupts injected, the APIC emulated on exits \(vmx.apicv=off\)",
}


def t_vmx(apicv):
    def run():
        label = "hostile-apicreg" + ("-apicv-off" if apicv else "")
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx.BochsBoot(label, [itest.guest(GUEST), healthy[0]], append=apicv)
        b.expect(r"^lightpath: VMX local APIC: %s$" % APIC_WAY[apicv],
                 "the VT-x banner's local APIC line (%s)" % APIC_WAY[apicv])
        nums = expect_apicreg_then_healthy(b, GUEST + ".elf", healthy)
        expect_storms(b, nums, exit=bool(apicv))
        return b
    return run


def qemu_tests():
    return [(1, "hostile-apicreg", t_qemu())]


def vmx_tests():
    return [(1, "vmx-hostile-apicreg", t_vmx("")),
            (1, "vmx-hostile-apicreg-apicv-off", t_vmx("vmx.apicv=off"))]
