"""The host's control registers after #VMEXIT
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
    return itest.ok_lines(vm, GUEST, descs)


def qemu_tests():
    return itest.both_switch_sets("", GUEST, itest.guest64_then_resetcheck(GUEST, guest_lines))


def vmx_tests():
    return itest.both_switch_sets("vmx-", GUEST,
                                  itest.guest64_then_resetcheck(GUEST, guest_lines, bochs=True))
