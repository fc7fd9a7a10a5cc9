"""docs/SECURITY.md, case 6 and "What a guest can execute": hardware
task switches. guests/hostile/taskswitch.c far-jumps to a TSS selector and
back. SVM lets the CPU switch tasks inside the guest: the guest checks it
worked, as on a CPU. VT-x exits on every task switch and lightpath does not
emulate them: the VM is stopped with a line that says so (before: "unexpected
VM exit, reason 9, qualification 0x80000030"). resetcheck runs after it."""

import itest
import vmx_tests as vmx

GUEST = "taskswitch"
SWITCHING = r"\[vm0\] taskswitch: switching to the TSS at 0x30"


def loaded(name):
    return (r"lightpath: vm0: loaded %s \(multiboot ELF32, entry 0x[0-9a-f]+\), 64 MiB, "
            r"cmdline \"%s\"" % (itest.re.escape(name), itest.re.escape(name)))


def t_qemu(label, switches):
    def run():
        healthy = itest.healthy()
        b = itest.Boot(label, [itest.guest(GUEST), healthy[0]], append=switches)
        descs = ["the second task ran and switched back", "TR is the first task's again",
                 "the second task's state was saved in its TSS"]
        itest.expect_exact_lines(b, [loaded(itest.guest(GUEST)), SWITCHING] +
                                 [r"\[vm0\] ok %d - %s" % (i + 1, itest.re.escape(d))
                                  for i, d in enumerate(descs)] +
                                 [r"\[vm0\] selftest taskswitch: 3 passed, 0 failed",
                                  r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
                                  r"lightpath: vm0: exit statistics"] +
                                 itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) +
                                 [itest.FINAL_ALL_ZERO])
        b.expect_rc(1)
        return b
    return run


def t_vmx(label, switches):
    def run():
        healthy = itest.healthy(bochs=True)
        b = vmx.BochsBoot(label, [itest.guest(GUEST), healthy[0]], append=switches)
        itest.expect_exact_lines(b, [loaded(GUEST + ".elf"), SWITCHING,
                                     r"lightpath: vm0: stopped: hardware task switch \(JMP to TSS "
                                     r"selector 0x30\) at rip 0x[0-9a-f]+: not emulated on VT-x",
                                     r"lightpath: vm0: exit statistics"] +
                                 itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) +
                                 [itest.FINAL_VM0_STOPPED_ONLY])
        b.expect_rc(225)
        return b
    return run


def qemu_tests():
    return itest.both_switch_sets("", GUEST, t_qemu)


def vmx_tests():
    return itest.both_switch_sets("vmx-", GUEST, t_vmx)
