"""Each injected interrupt arrives once, and only where the guest's IF is 1
(docs/SECURITY.md, case 24). guests/hostile/irqtwice64.c sends itself 300
self-IPIs and 300 TSC deadlines (a host timer's exit injects those), one
after the other; each handler spins with interrupts off before its EOI,
counts itself and checks the interrupted code's IF in its frame. Then 300
self-IPIs whose delivery writes a stack slot a data breakpoint watches.
QEMU's TCG delivered an EVENTINJ interrupt a second time, IF or not, when
its loop was left before the guest's next exit (what hung make
linux-report's Linux guest in its UART handler); lightpath injects virtual
interrupts (V_IRQ) there since, and says so (checked). The build before
that failed the first six checks under QEMU -icount (13 handlers run
inside another, each over IF=0 code); its first V_IRQ build, which left
data breakpoints armed over a V_IRQ's delivery, aborted QEMU in the
watched rounds. resetcheck64 follows.

Under QEMU -icount (its deadlines leave the CPU loop at exact points; without
-icount the window is rarely hit in a short run), Bochs VT-x and Bochs
ryzen (SVM with NRIP save), each with the default switches and the heavy
paths forced."""

import itest

GUEST = "irqtwice64"


def guest_lines(vm):
    descs = []
    for what in ("self-IPI", "TSC deadline 20000 ticks ahead",
                 "self-IPI, its frame's first slot watched"):
        descs += ["%s: 300 sent, each handler ran once" % what,
                  "%s: no handler interrupted code with RFLAGS.IF=0" % what,
                  "%s: no handler ran inside another" % what]
    return itest.ok_lines(vm, GUEST, descs)


VIRQ_LINE = r"lightpath: AMD SVM with nested paging; .*; QEMU's TCG: interrupts go in as virtual interrupts$"


def says_virq(make_case):
    """make_case, and lightpath's line that it injects virtual interrupts
    (else the QEMU cases would test the EVENTINJ path and rely on a race)."""
    def case(label, switches):
        inner = make_case(label, switches)

        def run():
            b = inner()
            b.expect(VIRQ_LINE, "lightpath's line that interrupts go in as virtual interrupts")
            return b
        return run
    return case


def qemu_tests():
    return itest.both_switch_sets(
        "", GUEST, says_virq(itest.guest64_then_resetcheck(GUEST, guest_lines, icount=True)))


def vmx_tests():
    return itest.bochs_vmx_and_svm(GUEST, guest_lines)
