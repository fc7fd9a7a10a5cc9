"""docs/SECURITY.md, case 4: guest breakpoints in the hypervisor. The guest
(guests/hostile/drhost64.c) arms instruction breakpoints on every byte of
lightpath's exit path and #DB handler, read/write breakpoints on all of its
data, and a targeted set (the instruction after VMRUN, the #DB handler) four
at a time, each across a VM exit, as an attacker who reads the code would;
the addresses come from the image's symbols. Before: QEMU 7.2 kept them
armed after #VMEXIT and lightpath stopped with "panic: host exception 1".
Now the hypervisor never runs with them armed (vmm/svm/debug.h), prints
nothing about them, and the guest's own breakpoints still work. Under
Bochs (VT-x) a VM exit loads DR7 = 0x400, as the SDM says: the case passes
there before and after, which is what it checks.

Runs under the default switches and under itest.HOSTILE_SWITCHES, followed
by resetcheck64, which must find DR0-3/DR6/DR7 (and everything else) in their
reset state and run normally."""

import re
import subprocess

import itest
from itest import Boot, check, expect_exact_lines, HOSTILE_SWITCHES, GUESTS

DRHOST = GUESTS + "/drhost64.elf"
SVM_IMAGE = "build/lightpath64.elf"     # the ELF64 the loaded image is made from
VMX_IMAGE = "build/lightpath-vmx64.elf"
# The light hypercall handler of the default switches (a compiled set) and
# of HOSTILE_SWITCHES (light=off dr=always io=emulate: no bench
# configuration, so the generic handler; vmm/light.h names them).
HANDLERS = ("light_all_on_hypercall", "light_generic_hypercall")


def symbols(elf):
    out = []
    for l in subprocess.run(["nm", "-n", elf], cwd=itest.ROOT, capture_output=True, text=True,
                            check=True).stdout.splitlines():
        p = l.split()
        if len(p) == 3:
            out.append((int(p[0], 16), p[2]))
    return out


def span(syms, name, end=None):
    """(address, length) of symbol `name`: up to `end`'s symbol or the next one."""
    addr = dict((n, a) for a, n in syms)
    a = addr[name]
    if end:
        return a, addr[end] - a
    return a, min(b for b, _ in syms if b > a) - a


def after(elf, addr, length, mnemonic):
    """The address of the instruction after the first `mnemonic` in the range."""
    d = subprocess.run(["objdump", "-d", "--start-address=%#x" % addr,
                        "--stop-address=%#x" % (addr + length), elf], cwd=itest.ROOT,
                       capture_output=True, text=True, check=True).stdout
    insns = [l for l in d.splitlines() if re.match(r"\s+[0-9a-f]+:\t", l)]
    for i, l in enumerate(insns[:-1]):
        if re.search(r"\t%s\b" % mnemonic, l):
            return int(insns[i + 1].split(":")[0], 16)
    raise itest.Fail("no %s in %s at %#x" % (mnemonic, elf, addr))


def sections(elf):
    out = {}
    for l in subprocess.run(["readelf", "-S", "-W", elf], cwd=itest.ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\.\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", l)
        if m:
            out[m.group(1)] = (int(m.group(2), 16), int(m.group(3), 16))
    return out


def guest_args(elf, vmx):
    """x= (code ranges), d= (data), t= (targeted) for drhost64, in hex."""
    s = symbols(elf)
    if vmx:
        loop = span(s, "vmx_light_loop")
        stub = span(s, "vmx_exit_stub")
        code = [(loop[0], stub[0] + stub[1] - loop[0])]
        first = stub[0]
        targets = [first, after(elf, first, stub[1], r"\S+")]
    else:
        # The loops the VM runs: spec=on under QEMU's EPYC is the variant that
        # overwrites the whole return stack (SPEC_ON_EPYC, checked in t_drhost),
        # plain and armed (vmm/svm/entry.S).
        names = dict((n, a) for a, n in s)
        if "svm_light_loop_rsb_full" in names:
            code = [span(s, "svm_light_loop_rsb_full", "svm_light_loop_rsb_full_spec_ctrl"),
                    span(s, "svm_light_loop_armed_rsb_full",
                         "svm_light_loop_armed_rsb_full_spec_ctrl")]
            targets = [names[n + "_vmrun"] + 3 for n in ("svm_light_loop_rsb_full",
                                                         "svm_light_loop_armed_rsb_full")]
        else:   # an image from before spec= and the armed loop
            loop = span(s, "svm_light_loop")
            code = [loop]
            targets = [after(elf, loop[0], loop[1], "vmrun")]
    common = span(s, "idt_common")
    stubs = span(s, "idt_stub_0", "idt_common")
    code.append((stubs[0], stubs[1] + common[1]))
    code += [span(s, h) for h in HANDLERS]
    targets += [dict((n, a) for a, n in s)["idt_stub_1"], common[0]]
    sec = sections(elf)
    ro, bss = sec[".rodata"], sec[".bss"]
    return "x=%s d=%x+%x t=%s" % ("/".join("%x+%x" % r for r in code), ro[0],
                                  bss[0] + bss[1] - ro[0], "/".join("%x" % t for t in targets[:4]))


def expected(b, name, cmdline, healthy, targets):
    return [
        (r"lightpath: vm0: loaded %s \(multiboot ELF64, entry 0x[0-9a-f]+\), 64 MiB, cmdline \"%s\""
         % (re.escape(name), re.escape(cmdline))),
        r"\[vm0\] drhost64: breakpoints on lightpath's code and data, four at a time, each armed "
        r"across a VM exit",
        r"\[vm0\] drhost64: (\d+) instruction breakpoints, (\d+) data breakpoints, %d together"
        % len(targets),
        r"\[vm0\] drhost64: DR0-DR3 and DR7 read back what was written: yes",
        r"\[vm0\] drhost64: #DB in the guest meanwhile: 0",
        r"\[vm0\] drhost64: a breakpoint on its own code still fires: yes",
        r"\[vm0\] drhost64: a breakpoint on its own data still fires: yes",
        r"lightpath: vm0: ended with status 0 \(isa-debug-exit\)",
        r"lightpath: vm0: exit statistics",
    ] + itest.resetcheck_lines(b, 1, healthy[1], healthy[2]) + [itest.FINAL_ALL_ZERO]


def targets_of(args):
    return args.split()[2][2:].split("/")


def check_counts(b, args):
    """The guest armed what it was given: every code byte, all the data."""
    m = b.find(r"\[vm0\] drhost64: (\d+) instruction breakpoints, (\d+) data breakpoints")
    code = sum(int(r.split("+")[1], 16) for r in args.split()[0][2:].split("/"))
    data = int(args.split()[1].split("+")[1], 16)
    check(int(m.group(1)) >= code - 64, "armed %s instruction breakpoints for %d code bytes"
          % (m.group(1), code))
    check(int(m.group(2)) * 8 >= data, "armed %s data breakpoints for %d data bytes"
          % (m.group(2), data))


def t_drhost(label, switches):
    def run():
        args = guest_args(SVM_IMAGE, False)
        module = "%s %s" % (DRHOST, args)
        healthy = itest.healthy(wide=True)
        b = Boot("hostile-" + label, [module, healthy[0]], append=switches)
        b.expect(r"^%s$" % re.escape(itest.SPEC_ON_EPYC), "the spec=on line whose loops are attacked")
        expect_exact_lines(b, expected(b, DRHOST, module, healthy, targets_of(args)))
        b.expect_rc(1)
        check_counts(b, args)
        return b
    return run


def qemu_tests():
    cfg, opts = HOSTILE_SWITCHES
    return [
        (1, "hostile-host-breakpoints", t_drhost("host-breakpoints", "")),
        (1, "hostile-host-breakpoints-" + cfg, t_drhost("host-breakpoints-" + cfg, opts)),
    ]


def t_vmx_drhost(label, switches):
    def run():
        import vmx_tests
        args = guest_args(VMX_IMAGE, True)
        healthy = itest.healthy(bochs=True, wide=True)
        b = vmx_tests.BochsBoot("hostile-" + label, ["%s %s" % (DRHOST, args), healthy[0]],
                                append=switches)
        expect_exact_lines(b, expected(b, "drhost64.elf", "drhost64.elf " + args, healthy,
                                       targets_of(args)))
        b.expect_rc(1)
        check_counts(b, args)
        return b
    return run


def vmx_tests():
    cfg, opts = HOSTILE_SWITCHES
    return [
        (1, "vmx-hostile-host-breakpoints", t_vmx_drhost("host-breakpoints", "")),
        (1, "vmx-hostile-host-breakpoints-" + cfg, t_vmx_drhost("host-breakpoints-" + cfg, opts)),
    ]
