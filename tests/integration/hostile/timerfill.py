"""Every timer a VM has, armed at once by a VM of 10 vCPUs
(guests/hostile/timerfill.c; docs/SECURITY.md, case 28): each vCPU's local
APIC timer, the HPET's three comparators, the PIT, the test timer, and
lightpath's own console poll and the time limit's two (`timeout = 60` in
its description): 18 timers. Then it ends with all of them armed. The VM
must end and be reported, and resetcheck must run after it. With the
timer list's old 16 places lightpath panicked ("vm0: more than 16 timers
armed") before the guest's line. QEMU -smp 10 only (Bochs with ten CPUs
would take minutes); under the default switches and HOSTILE_SWITCHES."""

import itest

GUEST = "timerfill"
VCPUS = 10
LIMIT = 60
CFG = "# lightpath vm\nkernel = timerfill.elf\ncpus = %d\nmemory = 64\ntimeout = %d\n" % (VCPUS, LIMIT)
# a boot's bound, not a measurement: ten emulated CPUs on a loaded 2-core host
BOOT_TIMEOUT = 240


def make_case(label, append):
    def run():
        name = "hostile-" + label
        cfg = itest.write_test_file(name + ".cfg", CFG)
        path = itest.guest(GUEST)
        check, check_path, check_name = itest.healthy()
        b = itest.Boot(name, [cfg, path, check], append=append, smp=str(VCPUS),
                       timeout=BOOT_TIMEOUT)
        itest.expect_vm_lines(b, 0, [
            itest.loaded(0, cfg, 64, path),
            r"lightpath: vm0: %d vCPUs on CPUs %s \(vCPU i on the i-th\)"
            % (VCPUS, ",".join(str(i) for i in range(VCPUS))),
            r"lightpath: vm0: time limit %d s" % LIMIT,
            r"\[vm0\] timerfill: %d vCPUs armed their local APIC timers; HPET x3, PIT and the "
            r"test timer \(taken\) armed: ending with all of them armed" % VCPUS,
            r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
            r"lightpath: vm0: exit statistics"])
        healthy = itest.resetcheck_lines(b, 1, check_path, check_name)
        itest.expect_vm_lines(b, 1, healthy[:1] + [itest.RUNS_ON % (1, 1)] + healthy[1:])
        itest.expect_side_by_side(b, itest.FINAL_ALL_ZERO, aps=VCPUS - 1)
        b.expect_rc(1)
        return b
    return run


def qemu_tests():
    return itest.both_switch_sets("hostile-", GUEST + "-smp10", make_case)
