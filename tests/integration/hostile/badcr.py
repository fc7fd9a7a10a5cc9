"""Exit codes, VMEXIT_INVALID and failed VM entries
(docs/SECURITY.md, case 12).

guests/hostile/badcr64.c writes CR3/CR4 values with reserved bits (#GP, as a
CPU raises: QEMU 7.2 reported each as VMEXIT_INVALID and lightpath stopped the
VM with "VMRUN refused the guest state" and a state VMRUN never refused), leaves
and re-enters long mode by CR0 writes that also change CR0.NE (on VT-x
lightpath emulates them: leaving kept EFER.LMA=1, entering failed the next VM
entry: "field GUEST_EFER (0x2806) = 0x100: LME differs from LMA with paging
on"), and then ends with one state only VMRUN refuses under QEMU:
end=nw (CR0.NW=1 with CR0.CD=0; QEMU then writes the host's state over the
VMCB, which lightpath used to print as the guest's) or end=csld (a code
segment with L=1 and D=1 in long mode: the report names the check). A CPU,
and Bochs, raise #GP for both instead, and the guest goes on. resetcheck64
runs after them: CR4, EFER and the rest at their reset values."""

import itest
import vmx_tests as vmx

GUEST = "badcr64"

COMMON = ["MOV CR4 with reserved bit 15 raises #GP", "with error code 0", "CR4 is unchanged",
          "MOV CR4 with VMXE (VMX is not offered) raises #GP", "CR4 is unchanged",
          "MOV CR3 with reserved bit 62 raises #GP", "CR3 is unchanged", "LP_HC_NULL returns 0"]
for how, ne in (("left by a CR0 write with NE=1", 1), ("left by a plain CR0 write", 0)):
    COMMON += ["%s: paging off, CR0.NE %d" % (how, ne), "%s: paging off, EFER.LMA is 0" % how,
               "%s: an exit with paging off works" % how,
               "%s: CR0 write PG=1 NE=1: back in long mode" % how,
               "%s: CR0.NE written back to 0" % how]
NEXT = {"nw": "badcr64: CR0.NW=1 with CR0.CD=0 next", "csld": "badcr64: CS with L=1 and D=1 next"}
GP_LINES = {"nw": ["MOV CR0 NW=1 CD=0 raises #GP", "MOV CR0 NW=1 CD=0 with NE changed raises #GP",
                   "CR0 is unchanged"],
            "csld": ["a far return to a code segment with L=1 and D=1 raises #GP"]}
STOPPED = {
    "nw": r"VMRUN refused the guest state \(VMEXIT_INVALID\) and left the host's state in the VMCB "
          r"\(QEMU 7\.2\): the refused values are lost; the one check made before loading them "
          r"that a guest can fail is CR0\.NW=1 with CR0\.CD=0",
    "csld": r"VMRUN refused the guest state \(VMEXIT_INVALID\): long mode with CS\.L=1 and CS\.D=1; "
            r"rip 0x[0-9a-f]+ cs 0x20/0xe9a rflags 0x[0-9a-f]+ cr0 0x[0-9a-f]+ cr3 0x[0-9a-f]+ "
            r"cr4 0x[0-9a-f]+ efer 0x[0-9a-f]+ dr6 0x[0-9a-f]+ dr7 0x[0-9a-f]+ eventinj 0x0",
}


def ok_lines(vm, descs, first=1):
    return [r"\[vm%d\] ok %d - %s" % (vm, first + i, itest.re.escape(d)) for i, d in enumerate(descs)]


def vm_lines(vm, name, end, intel):
    lines = [r"lightpath: vm%d: loaded %s \(multiboot ELF64, entry 0x[0-9a-f]+\), 64 MiB, "
             r"cmdline \"%s end=%s\"" % (vm, itest.re.escape(name), itest.re.escape(name), end)]
    lines += ok_lines(vm, COMMON) + [r"\[vm%d\] %s" % (vm, itest.re.escape(NEXT[end]))]
    if intel:   # the CPU's #GP, and the guest goes on
        n = len(COMMON) + len(GP_LINES[end])
        lines += ok_lines(vm, GP_LINES[end], len(COMMON) + 1)
        lines += [r"\[vm%d\] selftest %s: %d passed, 0 failed" % (vm, GUEST, n),
                  r"lightpath: vm%d: ended with status 0 \(isa-debug-exit\)" % vm]
    else:       # QEMU lets the state through; the next VMRUN refuses it
        lines += [r"lightpath: vm%d: stopped: %s" % (vm, STOPPED[end])]
    return lines + [r"lightpath: vm%d: exit statistics" % vm]


def expected(b, name, healthy, intel):
    # Intel: every VM ends with 0; QEMU: both badcr64 VMs are stopped
    final = (itest.FINAL_ALL_ZERO if intel else
             itest.re.escape("lightpath: all VMs ended; powering off with status 112 (the first "
                             "non-zero status, vm0's; VMs that did not end with 0: 2 of 3)"))
    return (vm_lines(0, name, "nw", intel) + vm_lines(1, name, "csld", intel) +
            itest.resetcheck_lines(b, 2, healthy[1], healthy[2]) + [final])


def modules(healthy):
    g = itest.guest(GUEST)
    return [g + " end=nw", g + " end=csld", healthy[0]]


def t_qemu(label, switches):
    def run():
        healthy = itest.healthy(wide=True)
        b = itest.Boot(label, modules(healthy), append=switches)
        itest.expect_exact_lines(b, expected(b, itest.guest(GUEST), healthy, False))
        b.expect_rc(225)
        return b
    return run


def t_vmx(label, switches):
    def run():
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx.BochsBoot(label, modules(healthy), append=switches)
        itest.expect_exact_lines(b, expected(b, GUEST + ".elf", healthy, True))
        b.expect_rc(1)
        return b
    return run


def qemu_tests():
    return itest.both_switch_sets("", GUEST, t_qemu)


def vmx_tests():
    return itest.both_switch_sets("vmx-", GUEST, t_vmx)
