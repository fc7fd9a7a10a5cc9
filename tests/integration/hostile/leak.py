"""docs/SECURITY.md, case 1: state left by the previous VM.

guests/hostile/leak64.c leaves a marker in everything a guest can write and
the next VM could read (x87, SSE, XCR0 and the XSAVE components, TSC_AUX,
debug registers, CR2, CR8, MSRs, two device registers, a page at every MiB
of its 64 MiB of RAM from 2 MiB: 62 pages), reads a sample back and
ends with status 0; the syscall, SYSENTER and FS/GS.base MSRs, which
lightpath passes through, it writes without an exit and finds kept across a
heavy exit. Then resetcheck (32-bit) and resetcheck64 must find all
of it in its reset state; resetcheck64 runs after resetcheck, which itself
leaves XCR0 with every component on. On SVM (QEMU, and Bochs' `ryzen` with
NRIP) and VT-x (Bochs)."""

import re

import itest
from itest import check

LEAK_LINE = (r"leak64: markers left in x87, SSE, XSAVE components \(XCR0 (0x[0-9a-f]+)\), "
             r"TSC_AUX, DR0-7, CR2, CR8, MSRs, devices and 62 pages of RAM")
READ_BACK = r"leak64: 10 of 10 markers read back"
# The guest-owned MSRs are passed through under both switch sets (msr=lazy):
# written without an exit, kept across a heavy exit by the lazy switch. Under
# msr=always the five syscall MSRs stay intercepted: a write and a read each.
OWNED = (r"leak64: 10 of 10 guest-owned MSRs kept across a heavy exit; their writes and "
         r"reads made %d MSR exits")
# The "always" switches that touch these MSRs (docs/SECURITY.md, case 18).
MSR_ALWAYS = "msr=always svm.vmload=always"
ALL_ZERO = itest.FINAL_ALL_ZERO


def check_leak(b, leak, rc, rc64, owned_exits=0):
    """leak64 (`leak`: its path as lightpath names it), then resetcheck at
    `rc` and resetcheck64 at `rc64`; leak64's guest-owned MSRs took
    `owned_exits` MSR exits."""
    itest.expect_exact_lines(b, [
        itest.loaded(0, leak, 64, leak, "ELF64"),
        r"\[vm0\] " + LEAK_LINE,
        r"\[vm0\] " + READ_BACK,
        r"\[vm0\] " + OWNED % owned_exits,
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, rc) + itest.resetcheck_lines(b, 2, rc64, "resetcheck64") +
        [ALL_ZERO])
    # the leak was real: where the CPU has AVX, leak64 turned it on
    xcr0 = int(b.find(r"\[vm0\] " + LEAK_LINE).group(1), 16)
    if b.find(r"\[vm1\] resetcheck: XSAVE yes, AVX yes"):
        check(xcr0 & 0x7 == 0x7, "leak64 left XCR0 0x%x: AVX not on, nothing to leak there" % xcr0)
    b.expect_rc(1)


def owned_exits(switches):
    return 10 if "msr=always" in switches else 0


def qemu_case(label, switches):
    def run():
        b = itest.Boot(label, [itest.guest("leak64"), itest.guest("resetcheck"),
                               itest.guest("resetcheck64")], append=switches)
        check_leak(b, itest.guest("leak64"), itest.guest("resetcheck"), itest.guest("resetcheck64"),
                   owned_exits(switches))
        return b
    return run


def qemu_tests():
    return itest.both_switch_sets("", "leak", qemu_case) + [
        (1, "leak-msr-always", qemu_case("leak-msr-always", MSR_ALWAYS))]


def bochs_case(label, switches, svm=False):
    import vmx_tests
    def run():
        b = vmx_tests.BochsBoot(label, [itest.guest("leak64"), itest.guest("resetcheck"),
                                        itest.guest("resetcheck64")], append=switches,
                                cpu="ryzen" if svm else None,
                                kernel="build/lightpath.elf" if svm else None)
        check_leak(b, "leak64.elf", "resetcheck.elf", "resetcheck64.elf", owned_exits(switches))
        return b
    return run


def vmx_tests():
    # and the SVM image with NRIP save, under Bochs
    return itest.both_switch_sets("vmx-", "leak", bochs_case) + [
        (1, "vmx-leak-msr-always", bochs_case("leak-msr-always", MSR_ALWAYS)),
        (1, "bochs-svm-leak", bochs_case("svm-leak", "", svm=True))]
