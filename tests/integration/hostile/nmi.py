"""docs/SECURITY.md, case 7: NMIs are delivered (guests/hostile/nmi.c). Before,
ICR writes with delivery mode NMI and I/O APIC pins in NMI mode set the
local APIC's nmi_pending and nothing read it: no NMI ever arrived.

`hostile-nmi*`: the self-test (an NMI through the xAPIC and the x2APIC ICR,
by shorthand and by APIC ID, with IF=0, once per NMI; one sent inside the
handler arrives right after its IRET and not before; three sent there arrive
as one; an I/O APIC pin in NMI mode; the PIT on a pin in NMI mode wakes
`cli; hlt`), then `mode=storm` (each handler sends the next NMI: 1000 NMIs,
none nested, the guest ends itself), then `mode=fault` (the NMI gate points
outside guest RAM: lightpath stops that VM), then resetcheck, which must
find no NMI blocking or pending NMI left (its own NMI arrives once, right
after its ICR write) and everything else in its reset state.
`hostile-nmi-noiret*`: the handler never returns and sends NMIs in a tight
loop with IF=1; the 1 s time limit stops it inside its NMI handler, with
NMIs blocked and one waiting, and resetcheck runs after it.
Each under the default switches and itest.HOSTILE_SWITCHES, on SVM (QEMU)
and VT-x (Bochs); `vmx-hostile-nmi-svm-ryzen` runs the first on the SVM image
under Bochs' AMD model (NRIP save). docs/SECURITY.md, case 7."""

import re

import itest
import vmx_tests as vmx

GUEST = "nmi"
TAP_LINE = re.compile(r"^\[vm0\] (not )?ok \d+ ")


def suffix(switches):
    return "-" + itest.HOSTILE_SWITCHES[0] if switches else ""


def without_tap_lines(b):
    rest = itest.Boot.__new__(itest.Boot)
    rest.__dict__.update(b.__dict__)
    rest.lines = [l for l in b.lines if not TAP_LINE.match(l)]
    return rest


def expect_all(b, path, healthy):
    """The self-test's verdict, then every other line exactly."""
    itest.selftest_result(b, GUEST, 0)
    g = lambda args="": (path + " " + args).strip()
    itest.expect_exact_lines(without_tap_lines(b), [
        itest.loaded(0, path, 64, g()),
        r"\[vm0\] selftest nmi: 19 passed, 0 failed",
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
        itest.loaded(1, path, 64, g("mode=storm")),
        r"\[vm1\] nmi: storm of 1000 NMIs, each handler sending the next",
        r"\[vm1\] nmi: storm done: no NMI nested",
        r"lightpath: vm1: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm1: exit statistics",
        itest.loaded(2, path, 64, g("mode=fault")),
        r"\[vm2\] nmi: NMI gate at 0xfff00000, outside RAM; sending an NMI",
        r"lightpath: vm2: stopped: executing code at guest-physical 0xfff00000, outside its RAM "
        r"and devices, at rip 0xfff00000",
        r"lightpath: vm2: exit statistics",
    ] + itest.resetcheck_lines(b, 3, healthy[1], healthy[2]) + [
        r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero status, vm2's; "
        r"VMs that did not end with 0: 1 of 4\)"])
    b.expect_rc(225)


def expect_noiret(b, path, healthy, limit):
    cmd = path + " mode=noiret"
    itest.expect_exact_lines(b, [
        itest.loaded(0, path, 64, cmd),
        r"lightpath: vm0: time limit %d s" % limit,
        r"\[vm0\] nmi: in the NMI handler, sending NMIs for ever",
        r"lightpath: vm0: stopped: time limit of %d s reached" % limit,
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, healthy[1], healthy[2], limit) +
        [itest.FINAL_VM0_STOPPED_ONLY])
    b.expect_rc(225)


def modules(healthy):
    return [itest.guest(GUEST), itest.guest(GUEST, "mode=storm"), itest.guest(GUEST, "mode=fault"),
            healthy[0]]


def t_qemu(switches):
    def run():
        healthy = itest.healthy()
        b = itest.Boot("hostile-nmi" + suffix(switches), modules(healthy), append=switches)
        expect_all(b, itest.guest(GUEST), healthy)
        return b
    return run


# vm.timeout= limits both VMs: resetcheck, which runs after the NMI guest,
# was stopped at 1 s once under QEMU while the machine was loaded (a
# parallel test suite and Bochs runs); Bochs counts instructions: 1 s there.
QEMU_NOIRET_LIMIT_S = 3


def t_qemu_noiret(switches):
    def run():
        healthy = itest.healthy()
        b = itest.Boot("hostile-nmi-noiret" + suffix(switches),
                       [itest.guest(GUEST, "mode=noiret"), healthy[0]],
                       append=("vm.timeout=%d " % QEMU_NOIRET_LIMIT_S + switches).strip())
        expect_noiret(b, itest.guest(GUEST), healthy, QEMU_NOIRET_LIMIT_S)
        return b
    return run


def t_vmx(switches):
    def run():
        healthy = itest.healthy(bochs=True)
        b = vmx.BochsBoot("hostile-nmi" + suffix(switches), modules(healthy), append=switches)
        expect_all(b, GUEST + ".elf", healthy)
        return b
    return run


def t_svm_ryzen():
    """The SVM image under Bochs' AMD model (NRIP save, no vNMI): the path real
    AMD CPUs before Zen 4 take. Bochs sets no DR6.BS for the single step that
    ends an NMI's blocking, which QEMU does."""
    healthy = itest.healthy(bochs=True)
    b = vmx.BochsBoot("hostile-nmi-svm-ryzen", modules(healthy), cpu="ryzen",
                      kernel="build/lightpath.elf")
    expect_all(b, GUEST + ".elf", healthy)
    return b


def t_vmx_noiret(switches):
    def run():
        healthy = itest.healthy(bochs=True)
        b = vmx.BochsBoot("hostile-nmi-noiret" + suffix(switches),
                          [itest.guest(GUEST, "mode=noiret"), healthy[0]],
                          append=("vm.timeout=1 " + switches).strip())
        expect_noiret(b, GUEST + ".elf", healthy, 1)
        return b
    return run


def qemu_tests():
    t = []
    for sw in ("", itest.HOSTILE_SWITCHES[1]):
        t.append((1, "hostile-nmi" + suffix(sw), t_qemu(sw)))
        t.append((1, "hostile-nmi-noiret" + suffix(sw), t_qemu_noiret(sw)))
    return t


def vmx_tests():
    t = []
    for sw in ("", itest.HOSTILE_SWITCHES[1]):
        t.append((1, "vmx-hostile-nmi" + suffix(sw), t_vmx(sw)))
        t.append((1, "vmx-hostile-nmi-noiret" + suffix(sw), t_vmx_noiret(sw)))
    t.append((1, "vmx-hostile-nmi-svm-ryzen", t_svm_ryzen))
    return t
