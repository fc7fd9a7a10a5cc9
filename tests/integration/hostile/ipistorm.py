"""docs/SMP.md, "Static partitioning"; docs/SECURITY.md: a VM
must not reach a VM on another CPU. guests/hostile/ipistorm.c sends IPIs
and NMIs (fixed, NMI, INIT, STARTUP) to every physical destination 0..255,
every logical pattern, the x2APIC broadcast and the three shorthands, in
xAPIC and x2APIC mode, while the side guest runs next to it on the other
CPU with every vector and the NMI taken: side must see none of them, every
one of its lines exact; lightpath survives, and both VMs end with 0.
The same with ipistorm in a VM of 2 vCPUs (docs/SMP.md, "Several vCPUs per VM"): its INITs and
STARTUPs now also start its own second vCPU (parked by ipistorm in real
mode), and still nothing reaches the VM beside it."""

import os

import itest
import vmx_tests as vmx

STORM = (r"\[vm0\] ipistorm: sent 6180 IPIs in xAPIC mode and 6192 in x2APIC mode; "
         r"got \d+ fixed, \d+ NMIs")


def vm0_lines(path, cpu, cfg=None):
    """ipistorm's lines as vm0 on `cpu` (a list: its vCPUs' CPUs, for a VM
    of several from the description `cfg`)."""
    where = (itest.RUNS_ON % (0, cpu) if cfg is None else
             r"lightpath: vm0: %d vCPUs on CPUs %s \(vCPU i on the i-th\)"
             % (len(cpu), ",".join(map(str, cpu))))
    return [itest.loaded(0, cfg or path, 64, path), where, STORM,
            r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
            r"lightpath: vm0: exit statistics"]


# ipistorm as a VM of 2 vCPUs (a description names it: lightpath loads it)
SMP_CFG = "# lightpath vm\nkernel = ipistorm.elf\ncpus = 2\nmemory = 64\n"


def t_qemu_smp_vm(label):
    """3 CPUs: ipistorm's 2 vCPUs on CPUs 1 and 2, side on CPU 0."""
    def run():
        cfg = itest.write_test_file(label + ".cfg", SMP_CFG)
        b = itest.Boot(label, [cfg, itest.guest("ipistorm"), itest.guest("side", "lines=20 ms=20")],
                       smp="3")
        itest.expect_vm_lines(b, 0, vm0_lines(itest.guest("ipistorm"), [1, 2], cfg=cfg))
        itest.expect_vm_lines(b, 1, itest.side_lines(1, 20, 0))
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=2)
        b.expect_rc(1)
        return b
    return run


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


def t_vmx_smp_vm(label):
    """t_qemu_smp_vm on VT-x (Bochs, 3 CPUs): the second vCPU starts in real
    mode under unrestricted guest and takes its NMIs there."""
    def run():
        cfg = itest.write_test_file(label + ".cfg", SMP_CFG)
        b = vmx.BochsBoot(label, [cfg, itest.guest("ipistorm"),
                                  "%s/side.elf lines=20 ms=20" % itest.GUESTS], cpus=3)
        itest.expect_vm_lines(b, 0, vm0_lines("ipistorm.elf", [1, 2], cfg=os.path.basename(cfg)))
        itest.expect_vm_lines(b, 1, itest.side_lines(1, 20, 0, path="side.elf"))
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=2)
        b.expect_rc(1)
        return b
    return run


def qemu_tests():
    return [(1, "hostile-ipistorm-smp2", t_qemu("hostile-ipistorm-smp2", "2")),
            (1, "hostile-ipistorm-smp3", t_qemu("hostile-ipistorm-smp3", "3")),
            (1, "hostile-ipistorm-smp-vm", t_qemu_smp_vm("hostile-ipistorm-smp-vm"))]


def vmx_tests():
    return [(1, "vmx-hostile-ipistorm", t_vmx("vmx-hostile-ipistorm")),
            (1, "vmx-hostile-ipistorm-smp-vm", t_vmx_smp_vm("vmx-hostile-ipistorm-smp-vm"))]
