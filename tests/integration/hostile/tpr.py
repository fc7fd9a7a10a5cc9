"""docs/SECURITY.md, case 15: a guest that sends itself IPIs while raising and
lowering its TPR around `sti; nop` (guests/hostile/tpr64.c), through the
xAPIC TPR, CR8 and the x2APIC TPR MSR. Under QEMU 7.2 a MOV to CR8 while
lightpath waited for an interrupt window (V_IRQ set) aborted QEMU
(`tcg_handle_interrupt: assertion failed`), every VM with it; on VT-x the
guest's CR8 reached the CPU's own TPR. lightpath now intercepts CR8 on both
backends and makes it the emulated APIC's TPR, so the guest's self-test
passes, lightpath ends it normally, and resetcheck64 after it finds CR8 and
the local APIC (TPR, x2APIC mode, LVTs) in their reset state and runs
normally. docs/SECURITY.md, case 15."""

import re

import itest
import vmx_tests as vmx

GUEST = "tpr64"
# CR8 accesses tpr64 makes at least (its storm alone has more)
CR8_OPS = 100
TAP_LINE = re.compile(r"^\[vm0\] (not )?ok \d+ ")


def expect_tpr_then_healthy(b, name, healthy):
    """The guest's verdict, then every other line exactly: vm0 ends with 0,
    then resetcheck64 (`healthy`: itest.healthy()), every VM with 0."""
    itest.selftest_result(b, GUEST, 0)
    rest = itest.Boot.__new__(itest.Boot)
    rest.__dict__.update(b.__dict__)
    rest.lines = [l for l in b.lines if not TAP_LINE.match(l)]
    itest.expect_exact_lines(rest, [
        r"lightpath: vm0: loaded %s \(multiboot ELF64, entry 0x[0-9a-f]+\), 64 MiB, cmdline \"%s\""
        % (re.escape(name), re.escape(name)),
        r"\[vm0\] selftest %s: \d+ passed, 0 failed" % GUEST,
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) + [itest.FINAL_ALL_ZERO])
    b.expect_rc(1)


def t_qemu(switches):
    def run():
        label = "hostile-tpr" + ("-" + itest.HOSTILE_SWITCHES[0] if switches else "")
        healthy = itest.healthy(wide=True)
        b = itest.Boot(label, [itest.guest(GUEST), healthy[0]], append=switches)
        expect_tpr_then_healthy(b, itest.guest(GUEST), healthy)
        return b
    return run


# How lightpath's VT-x banner names the way CR8 goes (vmm/vmx/cpu.c).
CR8_WAY = {"": "TPR shadow", "vmx.tpr=exit": r"CR8 exiting \(vmx.tpr=exit\)"}


def cr8_exits(b):
    """vm0's 'other' exits: on VT-x the CR accesses (CR8's among them)."""
    rows, _ = itest.lpguest.exit_stats(b.text, 0)
    itest.check(rows, "no exit statistics for vm0")
    return rows.get("other", (0,))[0]


def t_vmx(switches, cr8=""):
    """With the TPR shadow (the default where the CPU has one) the guest's
    MOV to and from CR8 reach VTPR without an exit, and lowering it below
    an interrupt it held back exits (TPR below threshold) to deliver it;
    with vmx.tpr=exit (the fallback for a CPU without the shadow) every CR8
    access exits. tpr64 passes either way."""
    def run():
        label = "hostile-tpr" + ("-" + itest.HOSTILE_SWITCHES[0] if switches else "") + \
            ("-cr8-exits" if cr8 else "")
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx.BochsBoot(label, [itest.guest(GUEST), healthy[0]],
                          append=(switches + " " + cr8).strip())
        b.expect(r"^lightpath: Intel VMX with EPT .*, %s;" % CR8_WAY[cr8],
                 "the VT-x banner naming how CR8 is handled (%s)" % CR8_WAY[cr8])
        expect_tpr_then_healthy(b, GUEST + ".elf", healthy)
        n = cr8_exits(b)
        if cr8:
            itest.check(n >= CR8_OPS, "vmx.tpr=exit: %d 'other' exits, expected at least %d "
                        "(one per CR8 access)" % (n, CR8_OPS))
        else:
            itest.check(n < CR8_OPS, "TPR shadow: %d 'other' exits, expected fewer than %d "
                        "(CR8 accesses should not exit)" % (n, CR8_OPS))
        return b
    return run


def t_vmx_cr8_spin(switches):
    """VT-x only: `tpr64 mode=cr8-spin` sets CR8 = 15 and spins with IF=1
    under vm.timeout=1. Without CR8 exiting that was the CPU's own TPR, which
    blocked lightpath's timer (vector 0x20): the limit never fired and Bochs
    ran until the harness killed it. Now it is stopped at its limit and
    resetcheck64 runs (with the same limit) and finds CR8 0."""
    def run():
        label = "hostile-tpr-cr8-spin" + ("-" + itest.HOSTILE_SWITCHES[0] if switches else "")
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx.BochsBoot(label, [itest.guest(GUEST, "mode=cr8-spin"), healthy[0]],
                          append=("vm.timeout=1 " + switches).strip())
        itest.expect_exact_lines(b, [
            r"lightpath: vm0: loaded %s.elf \(multiboot ELF64, entry 0x[0-9a-f]+\), 64 MiB, "
            r"cmdline \"%s.elf mode=cr8-spin\"" % (GUEST, GUEST),
            r"lightpath: vm0: time limit 1 s",
            r"\[vm0\] tpr64: CR8 = 15, spinning with interrupts enabled",
            r"lightpath: vm0: stopped: time limit of 1 s reached",
            r"lightpath: vm0: exit statistics",
        ] + itest.resetcheck_lines(b, 1, healthy[1], healthy[2], 1) + [itest.FINAL_VM0_STOPPED_ONLY])
        b.expect_rc(225)
        return b
    return run


def qemu_tests():
    return [(1, "hostile-tpr", t_qemu("")),
            (1, "hostile-tpr-" + itest.HOSTILE_SWITCHES[0], t_qemu(itest.HOSTILE_SWITCHES[1]))]


def vmx_tests():
    return [(1, "vmx-hostile-tpr", t_vmx("")),
            (1, "vmx-hostile-tpr-" + itest.HOSTILE_SWITCHES[0], t_vmx(itest.HOSTILE_SWITCHES[1])),
            (1, "vmx-hostile-tpr-cr8-exits", t_vmx("", "vmx.tpr=exit")),
            (1, "vmx-hostile-tpr-cr8-spin", t_vmx_cr8_spin("")),
            (1, "vmx-hostile-tpr-cr8-spin-" + itest.HOSTILE_SWITCHES[0],
             t_vmx_cr8_spin(itest.HOSTILE_SWITCHES[1]))]
