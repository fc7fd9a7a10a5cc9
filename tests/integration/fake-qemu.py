#!/usr/bin/python3
"""A stand-in for qemu-system-x86_64 that imitates lightpath's serial output.

Only for checking the test harness itself (tools/test.sh, tools/bench.py)
while the hypervisor cannot boot; never used by `make test`:

    LP_QEMU=tests/integration/fake-qemu.py tools/test.sh

FAKE_BREAK=<word> makes it misbehave in one way (see BREAKS) so that one can
see the harness report a failure.
"""
import os
import re
import sys

BREAKS = ("hang", "selftest", "options", "bench", "stats", "isolation", "nosvm")
brk = os.environ.get("FAKE_BREAK", "")

args = sys.argv[1:]
if args and args[0] == "--version":
    print("QEMU emulator version 7.2.99 (fake-qemu)")
    sys.exit(0)


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default


append = opt("-append", "")
initrd = opt("-initrd", "")
serial = opt("-serial", "stdio")
cpu = opt("-cpu", "")
out = open(serial[5:], "w") if serial.startswith("file:") else sys.stdout
if brk == "hang":
    import time
    time.sleep(3600)


def p(s):
    out.write(s + "\n")


def end(status):
    out.flush()
    sys.exit((status << 1) | 1)


p("lightpath: lightweight-exit hypervisor, AMD SVM backend (fake)")
if "svm" not in cpu or brk == "nosvm":
    p("lightpath: this CPU has no AMD SVM with nested paging")
    end(0x7f)
o = {"light": "on", "svm.vmload": "lazy", "dr": "lazy", "pmu": "lazy", "msr": "lazy",
     "io": "fast", "mem": "64", "stats": "on"}
ok = {"light": ("on", "off"), "svm.vmload": ("lazy", "always"), "dr": ("lazy", "always"),
      "pmu": ("lazy", "always"), "msr": ("lazy", "always"), "io": ("fast", "emulate"),
      "stats": ("on", "off")}
for w in append.split():
    k, _, v = w.partition("=")
    if k == "cpus":   # not in the options line: the CPU line below says it
        continue
    if k not in o:
        p("lightpath: error: unknown boot option '%s' (accepted: %s mem stats)" % (w, " ".join(ok)))
        end(0x7f)
    if k in ok and v not in ok[k]:
        p("lightpath: error: bad value in '%s' (accepted: %s)" % (w, "|".join(ok[k])))
        end(0x7f)
    if brk != "options":
        o[k] = v
p("lightpath: options: " + " ".join("%s=%s" % kv for kv in o.items()))
# the CPU line (docs/SMP.md): -smp N[,maxcpus=M], at most cpus=K started
smp = opt("-smp", "1").split(",")
ncpu = int(smp[0])
maxc = next((int(w[8:]) for w in smp[1:] if w.startswith("maxcpus=")), ncpu)
lim = next((int(w[5:]) for w in append.split() if w.startswith("cpus=") and w[5:].isdigit()), 0)
started = min(ncpu, lim) if lim else ncpu
p("lightpath: %d CPU%s found (ACPI MADT%s), %d started%s" % (
    ncpu, "" if ncpu == 1 else "s",
    "; %d more listed, not enabled" % (maxc - ncpu) if maxc > ncpu else "", started,
    " (cpus=%d)" % lim if started < ncpu else ""))
mods = [m for m in initrd.split(",") if m]
if not mods:
    p("lightpath: error: no guest modules given (add multiboot modules)")
    end(0x7f)

statuses = []   # per VM, in order: the first non-zero is the final status
for i, m in enumerate(mods):
    path = m.split(" ")[0]
    margs = dict(w.split("=", 1) for w in m.split()[1:] if "=" in w)
    data = open(path, "rb").read(8192)
    if not data.startswith(b"\x7fELF"):
        p("lightpath: vm%d: cannot load guest image '%s': not an ELF file" % (i, path))
        statuses.append(0x70)
        continue
    if b"\x02\xb0\xad\x1b" not in data and b"\xd6\x50\x52\xe8" not in data:
        p("lightpath: vm%d: cannot load guest image '%s': no multiboot header" % (i, path))
        statuses.append(0x70)
        continue
    p('lightpath: vm%d: loaded %s (multiboot ELF32, entry 0x100000), %s MiB, cmdline "%s"'
      % (i, path, o["mem"], m))
    pre = "[vm%d] " % i
    name = os.path.basename(path)[:-4]
    st = 0
    if name == "hello":
        p(pre + "hello from lightpath guest")
        st = int(margs.get("status", "0"))
    elif name == "triple":
        p(pre + "triple: about to triple fault")
        p("lightpath: vm%d: stopped: triple fault (SHUTDOWN exit) at rip 0x100234" % i)
        statuses.append(0x70)
        continue
    elif name.startswith("bench"):
        mode = "flat32" if name == "bench32" else "paged64"
        n = int(margs.get("n", "1000"))
        bits = sum(1 << i for i, k in enumerate(("light", "svm.vmload", "dr", "pmu", "msr", "io"))
                   if o[k] in ("on", "lazy", "fast"))
        p(pre + "bench: mode=%s config=%#x" % (mode, bits))
        for e, v in (("none", 2), ("hypercall", 48), ("cpuid", 60), ("pio_in_pmtimer", 70),
                     ("pio_out", 66), ("rdmsr", 62), ("wrmsr", 64), ("hypercall_heavy", 300)):
            if brk == "bench" and e == "cpuid" and o["io"] == "emulate":
                p(pre + "bench: check FAILED: cpuid leaf 0x40000000 signature")
                continue
            v += 100 * (o["light"] == "off") + 2 * (o["svm.vmload"] == "always")
            p(pre + "bench: mode=%s exit=%s n=%d min=%d mean=%.2f" % (mode, e, n, v, v + 0.5))
        p(pre + "bench: mode=%s done" % mode)
    else:
        np = {"cpuid": 12, "ports": 9, "msrs": 14, "virtinsn": 8, "stats": 6, "dr": 10,
              "hlt": 4, "nextrip64": 20}.get(name, 3)
        nf = 1 if (brk == "selftest" and name == "msrs" and o["msr"] == "always") else 0
        for t in range(1, np + 1):
            p(pre + "ok %d - %s check %d took 1%d ticks" % (t, name, t, t))
        for t in range(nf):
            p(pre + "not ok %d - %s broken" % (np + t + 1, name))
        p(pre + "selftest %s: %d passed, %d failed" % (name, np, nf))
        st = 1 if nf else 0
    p("lightpath: vm%d: ended with status %d (isa-debug-exit)" % (i, st))
    statuses.append(st)
    if o["stats"] == "on":
        hc = 40 if brk == "stats" else 1001
        p("lightpath: vm%d: exit statistics" % i)
        p("  reason            exits   share      light      heavy")
        p("  hypercall      %10d   45.1%%  %9d  %9d" % (hc, hc - 1, 1))
        p("  cpuid                 19    0.9%          19          0")
        p("  total          %10d  100.0%%  %9d  %9d   light 99.1%%" % (hc + 19, hc + 18, 1 + (brk == "stats")))
        p("  denied: 3 port reads, 2 port writes, 1 MSR accesses")
bad = [(i, v) for i, v in enumerate(statuses) if v]
if brk == "isolation":
    bad = bad[-1:]   # the old rule: the last VM's status
if bad:
    status = bad[0][1]
    why = "the first non-zero status, vm%d's; VMs that did not end with 0: %d of %d" % (
        bad[0][0], len(bad), len(statuses))
else:
    status, why = 0, "every VM ended with status 0"
if status > 127:
    why += "; passed on as 127, the largest QEMU's exit code carries"
p("lightpath: all VMs ended; powering off with status %d (%s)" % (status, why))
end(min(status, 127))
