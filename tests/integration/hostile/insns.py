"""Instructions that would reach the physical CPU
(docs/SECURITY.md, "What a guest can execute", case 6).

guests/hostile/insns64.c executes MONITOR/MWAIT(X) (#UD: CPUID does not offer
them; MWAIT with interrupts off would park the CPU), RDPRU (#UD), RDPMC
(counter 0 reads 0: the VM's counters never count, docs/CPUID.md; a fixed
counter is #GP(0)), WBINVD/WBNOINVD/INVD (no-ops that must reach
lightpath, counted as exits), MOV CR8 (the VM's own priority: on VT-x it was
the physical TPR, and CR8=15 masked the host's timer, so the guest's timer
never came and the boot hung), INVPCID and RDTSCP (as CPUID says: VT-x has
to enable them), checks that CPUID offers none of the refused features, and
that PAUSE, INVLPG and RDTSC run. Then resetcheck64 must find CR8 (the TPR)
back at 0 and everything else in its reset state, and run normally.

Before this change: under QEMU (SVM) MONITOR and MWAIT ran natively, RDPMC was
QEMU's #UD, and no WBINVD/INVD reached lightpath (5 failures); under Bochs
(VT-x) CPUID leaf 0AH described the host's PMU, MONITOR/MWAIT/RDPMC/WBINVD ran
natively and the boot hung after MOV CR8 = 15."""

import itest

GUEST = "insns64"


def guest_lines(vm):
    descs = ["CPUID.1:ECX.MONITOR is clear", "CPUID.7:ECX.WAITPKG is clear",
             "CPUID.0AH:EAX (PMU version, counters) is 0", "CPUID.80000001H:ECX.MONITORX is clear",
             "CPUID.80000008H:EBX.RDPRU is clear",
             "MONITOR (0f 01 c8) raises #UD", "MWAIT (0f 01 c9) with interrupts off raises #UD",
             "MONITORX (0f 01 fa) raises #UD", "MWAITX (0f 01 fb) with interrupts off raises #UD",
             "RDPRU (0f 01 fd) raises #UD",
             "RDPMC counter 0 reads 0 (the VM's counters never count)",
             "RDPMC fixed counter 0 (0x40000000) raises #GP", "RDPMC fixed counter 0: error code 0",
             "WBINVD (0f 09) runs", "WBNOINVD (f3 0f 09) runs", "WBINVD with a prefix (2e 0f 09) runs",
             "INVD (0f 08) runs", "each of the four reached lightpath, not the caches",
             "MOV CR8 = 15 reads back 15", "MOV CR8 = 16 (a reserved bit) raises #GP",
             "CR8 is still 15"]
    descs += ["LP_HC_TIMER(2000 us) returns 0", "with CR8 = 15 the timer still wakes the guest",
              "MOV CR8 = 0 reads back 0", "INVPCID does what CPUID says", "RDTSCP does what CPUID says",
              "PAUSE runs", "INVLPG runs", "RDTSC runs and advances",
              "LP_HC_NULL still returns 0 afterwards"]
    return itest.ok_lines(vm, GUEST, descs)


def qemu_tests():
    return itest.both_switch_sets("", GUEST, itest.guest64_then_resetcheck(GUEST, guest_lines))


def vmx_tests():
    return itest.both_switch_sets("vmx-", GUEST,
                                  itest.guest64_then_resetcheck(GUEST, guest_lines, bochs=True))
