"""Issue 10, item 6: instructions that would reach the physical CPU
(docs/SECURITY.md, "What a guest can execute", case 6).

guests/hostile/insns64.c executes MONITOR/MWAIT(X) (#UD: CPUID does not offer
them; MWAIT with interrupts off would park the CPU), RDPRU (#UD), RDPMC
(counter 0 reads 0: the VM's counters never count, issue 11 item 1; a fixed
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
import vmx_tests as vmx

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
