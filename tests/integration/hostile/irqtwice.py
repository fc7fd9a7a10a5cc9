"""Each injected interrupt arrives once, and only where the guest's IF is 1
(docs/SECURITY.md, case 24). guests/hostile/irqtwice64.c sends itself 300
self-IPIs and 300 TSC deadlines (a host timer's exit injects those), one
after the other; each handler spins with interrupts off before its EOI,
counts itself and checks the interrupted code's IF in its frame. QEMU's TCG
delivered an EVENTINJ interrupt a second time, IF or not, when its loop was
left before the guest's next exit (what hung make linux-report's Linux
guest in its UART handler); lightpath injects virtual interrupts (V_IRQ)
since. The build before that failed all six checks under QEMU -icount
(13 handlers run inside another, each over IF=0 code). resetcheck64 follows.

Under QEMU -icount (its deadlines leave the CPU loop at exact points; without
-icount the window is rarely hit in a short run), Bochs VT-x and Bochs
ryzen (SVM with NRIP save), each with the default switches and the heavy
paths forced."""

import itest

GUEST = "irqtwice64"


def guest_lines(vm):
    descs = []
    for what in ("self-IPI", "TSC deadline 20000 ticks ahead"):
        descs += ["%s: 300 sent, each handler ran once" % what,
                  "%s: no handler interrupted code with RFLAGS.IF=0" % what,
                  "%s: no handler ran inside another" % what]
    return itest.ok_lines(vm, GUEST, descs)


def qemu_tests():
    return itest.both_switch_sets(
        "", GUEST, itest.guest64_then_resetcheck(GUEST, guest_lines, icount=True))


def vmx_tests():
    return (itest.both_switch_sets("vmx-", GUEST,
                                   itest.guest64_then_resetcheck(GUEST, guest_lines, bochs=True)) +
            itest.both_switch_sets("bochs-svm-", GUEST,
                                   itest.guest64_then_resetcheck(GUEST, guest_lines, bochs=True,
                                                                 nrip=True)))
