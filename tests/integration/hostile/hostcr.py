"""Issue 10, item 5: the host's control registers after #VMEXIT
(docs/SECURITY.md, case 5).

guests/hostile/hostcr64.c leaves long mode the legal way into EFER.LME=1
with CR0.PG=0 and CR4.PAE=0, makes light and heavy exits there (also after
clearing and setting EFER.LME by WRMSR), goes back to long mode, twice. Under
QEMU 7.2 the #VMEXIT of such a guest left the host with the guest's CR0
(paging off) and the VM went astray (the boot timed out after "ok 1");
lightpath now reloads the host's CR0/CR3/CR4/EFER itself while a guest is in
that state. On VT-x the VM exit loads them from the VMCS host-state area:
the same guest checks that Bochs does (no VT-x code is involved).
resetcheck64 runs after it: EFER, CR4 and the rest at their reset values."""

import itest
import vmx_tests as vmx

GUEST = "hostcr64"


def guest_lines(vm):
    """The guest's TAP lines, in order (guests/hostile/hostcr64.c)."""
    descs = ["MTRR_DEF_TYPE written in long mode"]
    for trip in (1, 2):
        descs += ["trip %d: CR0.PG was 0" % trip, "trip %d: CR4.PAE was 0" % trip,
                  "trip %d: EFER.LME was 1 and EFER.LMA 0" % trip]
        for how in ("left by CR0", "LME set by WRMSR"):
            p = "trip %d, %s: " % (trip, how)
            descs += [p + "CPUID 0x40000000 EBX is lightpath's",
                      p + "CPUID 0x40000000 ECX is lightpath's",
                      p + "CPUID 0x40000000 EDX is lightpath's",
                      p + "LP_HC_NULL returns 0", p + "LP_HC_NULL_HEAVY returns 0",
                      p + "the PM timer reads 24 bits", p + "the PM timer advances",
                      p + "MTRR_DEF_TYPE reads back"]
        descs.append("trip %d: back in long mode" % trip)
    lines = [r"\[vm%d\] ok %d - %s" % (vm, i + 1, itest.re.escape(d)) for i, d in enumerate(descs)]
    return lines + [r"\[vm%d\] selftest %s: %d passed, 0 failed" % (vm, GUEST, len(descs))]


def expected(b, name, healthy):
    return ([r"lightpath: vm0: loaded %s \(multiboot ELF64, entry 0x[0-9a-f]+\), 64 MiB, "
             r"cmdline \"%s\"" % (itest.re.escape(name), itest.re.escape(name))] +
            guest_lines(0) +
            [r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
             r"lightpath: vm0: exit statistics"] +
            itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) + [itest.FINAL_ALL_ZERO])


def t_qemu(label, switches):
    def run():
        healthy = itest.healthy(wide=True)
        b = itest.Boot(label, [itest.guest(GUEST), healthy[0]], append=switches)
        itest.expect_exact_lines(b, expected(b, itest.guest(GUEST), healthy))
        b.expect_rc(1)
        return b
    return run


def t_vmx(label, switches):
    def run():
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx.BochsBoot(label, [itest.guest(GUEST), healthy[0]], append=switches)
        itest.expect_exact_lines(b, expected(b, GUEST + ".elf", healthy))
        b.expect_rc(1)
        return b
    return run


def qemu_tests():
    cfg, opts = itest.HOSTILE_SWITCHES
    return [(1, GUEST, t_qemu(GUEST, "")),
            (1, "%s-%s" % (GUEST, cfg), t_qemu("%s-%s" % (GUEST, cfg), opts))]


def vmx_tests():
    cfg, opts = itest.HOSTILE_SWITCHES
    return [(1, "vmx-" + GUEST, t_vmx(GUEST, "")),
            (1, "vmx-%s-%s" % (GUEST, cfg), t_vmx("%s-%s" % (GUEST, cfg), opts))]
