"""The hypercall interface, fuzzed (guests/hostile/hcfuzz64.c;
docs/SECURITY.md, case 25): 20000 random hypercall numbers with random
64-bit arguments, the test timer's interrupt awaited behind a queued
RAISE_IRQ, 600 LP_HC_RAISE_IRQs, LP_HC_TIMER on a grid of vectors and delays
(only vectors 32..255 with 1..10^7 us taken), then the VM ends with a 10 s
test timer armed. The VM must end and be reported, and resetcheck64
must run after it. Before the test timer was re-armed in place, the grid
put it in the VM's timer list several times and lightpath hung at the VM's
end (no `ended` line, no next VM, and vm.timeout did not help); before
the timer waited for the vCPU's one test-vector slot, its interrupt was
dropped behind a queued RAISE_IRQ and the guest's HLT never woke. Under QEMU,
Bochs VT-x and Bochs ryzen, each with the default switches and with the
heavy paths forced."""

import itest

GUEST = "hcfuzz64"


def guest_lines(vm):
    descs = ["20000 random hypercalls (interrupts on) all return",
             "each returns 0, -LP_EINVAL or -LP_ENOSYS (a count for STATS/CONFIG)",
             "LP_HC_TIMER(1 us, 254) re-arms the test timer",
             "its interrupt comes once",
             "600 LP_HC_RAISE_IRQs on vectors 32..255 are taken",
             "and each is delivered once",
             "LP_HC_STATS: exits = light + heavy after the storm",
             "LP_HC_TIMER grid: the 8 valid (vector, delay) pairs are taken",
             "LP_HC_TIMER grid: every other pair returns -LP_EINVAL"]
    lines = itest.ok_lines(vm, GUEST, descs)
    # its last line before the verdict
    return (lines[:-1] + [r"\[vm%d\] hcfuzz64: ending with a 10 s test timer armed" % vm] +
            lines[-1:])


def qemu_tests():
    return itest.both_switch_sets("", GUEST, itest.guest64_then_resetcheck(GUEST, guest_lines))


def vmx_tests():
    return itest.bochs_vmx_and_svm(GUEST, guest_lines)
