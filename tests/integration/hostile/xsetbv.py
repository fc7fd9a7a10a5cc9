"""docs/SECURITY.md, case 2: XSETBV.

guests/hostile/xsetbv64.c tries the XCR0 values XSETBV must refuse (#GP(0),
or #UD without CR4.OSXSAVE, and XCR0 unchanged each time), XSETBV at CPL 3,
then turns AVX on and uses it; resetcheck64 after it (xsetbv64 runs in long
mode) must find XCR0 back at 1 and the YMM registers it used zero. On VT-x (Bochs) every XSETBV exits and
the VT-x backend used to stop the VM there ("unexpected VM exit, reason 55").
On SVM the XSETBV intercept is checked with Bochs' `ryzen`, which implements
it; Debian's QEMU 7.2 does not (QEMU added it in 8.2), so under QEMU the
guest's XSETBV goes straight to the emulated CPU and only the reset of XCR0
between VMs is lightpath's. `intercept=1` makes the guest check that its
valid XSETBV was one VM exit."""

import itest

ALL_ZERO = itest.FINAL_ALL_ZERO
# the refused values every CPU with XSAVE gets, the CPL-3 try, the AVX enable
XSETBV_MIN_CHECKS = 30


def check_xsetbv(b, path, args, rc):
    cmdline = ("%s %s" % (path, args)).strip()
    itest.expect_exact_lines(b, [itest.loaded(0, path, 64, cmdline, "ELF64")] +
                             itest.selftest_lines(b, 0, "xsetbv64",
                                                  [r"xsetbv64: XCR0 components offered 0x[0-9a-f]+"],
                                                  XSETBV_MIN_CHECKS) +
                             [r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
                              r"lightpath: vm0: exit statistics"] +
                             itest.resetcheck_lines(b, 1, rc, "resetcheck64") + [ALL_ZERO])
    if "intercept=1" in args:
        b.expect(r"\[vm0\] ok \d+ - lightpath intercepted it", "the check that XSETBV exited")
    b.expect_rc(1)


def qemu_case(label, switches):
    def run():
        b = itest.Boot(label, [itest.guest("xsetbv64"), itest.RESETCHECK64], append=switches)
        check_xsetbv(b, itest.guest("xsetbv64"), "", itest.RESETCHECK64)
        return b
    return run


def qemu_tests():
    return itest.both_switch_sets("", "xsetbv", qemu_case)


def bochs_case(label, switches, svm=False):
    import vmx_tests
    def run():
        b = vmx_tests.BochsBoot(label, [itest.guest("xsetbv64", "intercept=1"),
                                        itest.RESETCHECK64], append=switches,
                                cpu="ryzen" if svm else None,
                                kernel="build/lightpath.elf" if svm else None)
        check_xsetbv(b, "xsetbv64.elf", "intercept=1", "resetcheck64.elf")
        return b
    return run


def vmx_tests():
    cfg, opts = itest.HOSTILE_SWITCHES
    # and the SVM backend's XSETBV intercept, with NRIP save, under Bochs
    return itest.both_switch_sets("vmx-", "xsetbv", bochs_case) + [
        (1, "bochs-svm-xsetbv", bochs_case("svm-xsetbv", "", svm=True)),
        (1, "bochs-svm-xsetbv-" + cfg, bochs_case("svm-xsetbv-" + cfg, opts, svm=True))]
