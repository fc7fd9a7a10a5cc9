"""Issue 12 (docs/SMP.md, "Static partitioning"; docs/SECURITY.md): a VM
must not reach a VM on another CPU. guests/hostile/ipistorm.c sends IPIs
and NMIs (fixed, NMI, INIT, STARTUP) to every physical destination 0..255,
every logical pattern, the x2APIC broadcast and the three shorthands, in
xAPIC and x2APIC mode, while the side guest runs next to it on the other
CPU with every vector and the NMI taken: side must see none of them, every
one of its lines exact; lightpath survives, and both VMs end with 0."""

import itest
import vmx_tests as vmx

STORM = (r"\[vm0\] ipistorm: sent 6180 IPIs in xAPIC mode and 6192 in x2APIC mode; "
         r"got \d+ fixed, \d+ NMIs")


def vm0_lines(path, cpu, runs_on=None):
    return [itest.loaded(0, path, 64, path), runs_on or itest.RUNS_ON % (0, cpu), STORM,
            r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
            r"lightpath: vm0: exit statistics"]


def t_qemu(label, smp):
    def run():
        b = itest.Boot(label, [itest.guest("ipistorm"), itest.guest("side", "lines=20 ms=20")],
                       smp=smp)
        itest.expect_vm_lines(b, 0, vm0_lines(itest.guest("ipistorm"), 1))
        itest.expect_vm_lines(b, 1, itest.side_lines(1, 20, 2 if smp != "2" else 0))
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=int(smp) - 1)
        b.expect_rc(1)
        return b
    return run


def t_qemu_smp_vm(label):
    """The storm from a VM of two vCPUs (CPUs 1 and 2), whose INITs and
    STARTUPs reset and start its own second vCPU over and over (real mode
    at 0x10000), beside side on CPU 0: side still sees nothing."""
    def run():
        cfg = itest.write_test_file("ipistorm-2.cfg", "# lightpath vm\nkernel = ipistorm.elf\n"
                                    "cpus = 2\nmemory = 64\n")
        b = itest.Boot(label, [cfg, itest.guest("ipistorm"),
                               itest.guest("side", "lines=20 ms=20")], smp="3")
        path = itest.guest("ipistorm")
        itest.expect_vm_lines(b, 0, [itest.loaded(0, cfg, 64, path),
                                     itest.VCPUS_ON % (0, 2, "1,2")] + vm0_lines(path, 0)[2:])
        itest.expect_vm_lines(b, 1, itest.side_lines(1, 20, 0))
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=2)
        b.expect_rc(1)
        return b
    return run


def t_vmx(label):
    def run():
        b = vmx.BochsBoot(label, [itest.guest("ipistorm"),
                                  "%s/side.elf lines=20 ms=20" % itest.GUESTS], cpus=2)
        itest.expect_vm_lines(b, 0, vm0_lines("ipistorm.elf", 1))
        itest.expect_vm_lines(b, 1, itest.side_lines(1, 20, 0, path="side.elf"))
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=1)
        b.expect_rc(1)
        return b
    return run


def qemu_tests():
    return [(1, "hostile-ipistorm-smp2", t_qemu("hostile-ipistorm-smp2", "2")),
            (1, "hostile-ipistorm-smp3", t_qemu("hostile-ipistorm-smp3", "3")),
            (1, "hostile-ipistorm-2vcpus", t_qemu_smp_vm("hostile-ipistorm-2vcpus"))]


def vmx_tests():
    return [(1, "vmx-hostile-ipistorm", t_vmx("vmx-hostile-ipistorm"))]
