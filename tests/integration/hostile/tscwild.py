"""The CPU state docs/CPUID.md gives VMs, attacked
(guests/hostile/tscwild64.c; docs/SECURITY.md, case 16).

vm0 writes IA32_TSC with absurd values (0, ~0, 2^63, random) around TSC
deadlines armed at absurd places, IA32_TSC_ADJUST where CPUID shows it,
random values to every counter MSR and RDPMC with random ECX, flips
CR4.OSXSAVE and the APIC enable with CPUID after each flip, checks that
lightpath's own timer still fires with its TSC at 2^64 - 5000, and leaves its
TSC at 2^62 with a deadline armed, OSXSAVE on and the APIC off. vm1
(mode=check) must find the host's TSC, IA32_TSC_ADJUST 0, CPUID.1 as at
reset and no stray timer interrupt. vm2 (mode=spin) rewrites its TSC in a
loop with interrupts on and a deadline past the wrap: the time limit
(vm.timeout=4) stops it. hello runs last. Under the default switches and
itest.HOSTILE_SWITCHES on QEMU, on VT-x and on the SVM image under Bochs'
ryzen (NRIP save, TSC_OFFSET written by Bochs' VMRUN).

Before docs/CPUID.md's CPU model, IA32_TSC and the counters raised #GP, so vm0 failed
its first three checks and its TSC never moved."""

import itest
import vmx_tests as vmx

GUEST = "tscwild64"
LIMIT = 4   # host time: vm0's storms take under 1 s, but a loaded host stretches them


def suffix(switches):
    return "-" + itest.HOSTILE_SWITCHES[0] if switches else ""


def expected(path, hello):
    g = lambda vm, args="": itest.loaded(vm, path, 64, (path + " " + args).strip(), "ELF64")
    limit = lambda vm: r"lightpath: vm%d: time limit %d s" % (vm, LIMIT)
    ok = lambda vm, texts: [r"\[vm%d\] ok %d - %s" % (vm, i + 1, itest.re.escape(t))
                            for i, t in enumerate(texts)]
    storm = ["2000 absurd IA32_TSC writes around absurd TSC deadlines: RDTSC and IA32_TSC "
             "follow each",
             "IA32_TSC_ADJUST takes absurd values where CPUID shows it",
             "2000 random counter writes and RDPMCs: counters read 0, RDPMC 0 or #GP(0)",
             "2000 random flips of CR4.OSXSAVE and the APIC enable: CPUID.1 follows each",
             "with the TSC at 2^64 - 5000, LP_HC_TIMER(20 ms) still fires"]
    check = ["the TSC is the host's, not the 2^62 the last VM left",
             "IA32_TSC_ADJUST is 0 (or #GP where CPUID hides it)",
             "CPUID.1:ECX.OSXSAVE is clear (CR4 as at reset)",
             "CPUID.1:EDX.APIC is set (the APIC enabled, as at reset)",
             "LP_HC_TIMER(20 ms) fires",
             "and no deadline interrupt of the last VM's comes"]
    return ([g(0), limit(0)] + ok(0, storm) +
            [r"\[vm0\] tscwild64: leaving TSC 2\^62, a deadline armed, OSXSAVE on, the APIC off",
             r"\[vm0\] selftest tscwild64: 5 passed, 0 failed",
             r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
             r"lightpath: vm0: exit statistics",
             g(1, "mode=check"), limit(1)] + ok(1, check) +
            [r"\[vm1\] selftest tscwild64: 6 passed, 0 failed",
             r"lightpath: vm1: ended with status 0 \(isa-debug-exit\)",
             r"lightpath: vm1: exit statistics",
             g(2, "mode=spin"), limit(2),
             r"\[vm2\] tscwild64: TSC ~0 and a deadline past the wrap, spinning with interrupts on",
             r"lightpath: vm2: stopped: time limit of %d s reached" % LIMIT,
             r"lightpath: vm2: exit statistics"] +
            [l.replace("vm1", "vm3") for l in itest.hello_lines(1, LIMIT, hello=hello)] +
            [r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero status, "
             r"vm2's; VMs that did not end with 0: 2 of 4\)"])


def modules():
    return [itest.guest(GUEST), itest.guest(GUEST, "mode=check"), itest.guest(GUEST, "mode=spin"),
            itest.HELLO3]


def t_qemu(switches):
    def run():
        b = itest.Boot("hostile-tscwild" + suffix(switches), modules(),
                       append=("vm.timeout=%d %s" % (LIMIT, switches)).strip())
        itest.expect_exact_lines(b, expected(itest.guest(GUEST), itest.HELLO))
        b.expect_rc(225)
        return b
    return run


def t_bochs(label, switches, svm=False):
    def run():
        b = vmx.BochsBoot(label, [itest.guest(GUEST), itest.guest(GUEST, "mode=check"),
                                  itest.guest(GUEST, "mode=spin"),
                                  itest.guest("hello", "status=3")],
                          append=("vm.timeout=%d %s" % (LIMIT, switches)).strip(),
                          cpu="ryzen" if svm else None,
                          kernel="build/lightpath.elf" if svm else None)
        itest.expect_exact_lines(b, expected(GUEST + ".elf", "hello.elf"))
        b.expect_rc(225)
        return b
    return run


def qemu_tests():
    return [(1, "hostile-tscwild" + suffix(sw), t_qemu(sw)) for sw in ("", itest.HOSTILE_SWITCHES[1])]


def vmx_tests():
    opts = itest.HOSTILE_SWITCHES[1]
    return [(1, "vmx-hostile-tscwild", t_bochs("hostile-tscwild", "")),
            (1, "vmx-hostile-tscwild" + suffix(opts), t_bochs("hostile-tscwild" + suffix(opts), opts)),
            (1, "svm-bochs-hostile-tscwild", t_bochs("svm-hostile-tscwild", "", svm=True))]
