#!/usr/bin/python3
"""lightpath exit benchmark: `make bench`.

Boots lightpath once per configuration under QEMU TCG with
`-icount shift=0,align=off,sleep=off`, where the guest's TSC advances by one
per executed instruction (guest and hypervisor alike). The bench guests
(build/guests/bench32.elf, bench64.elf) bracket each exiting instruction with
RDTSC and print lines such as

    bench: mode=flat32 exit=hypercall n=1000 min=48 mean=48.25

This script collects them into build/bench/exits.json, prints a table and
regenerates docs/BENCHMARKS.md (keeping its hand-written analysis section).

    tools/bench.py [--n N] [--jobs J] [--no-docs] [--backend svm|vmx]
    tools/bench.py --parse LOG     parse one serial log, print JSON (self-check)

--backend vmx (`make bench BACKEND=vmx`) runs the Intel VT-x image under
Bochs instead (tools/lp-bochs, `clock: sync=none`, where the guest TSC also
counts executed instructions), without the SVM-only vmload-off config, and
writes build/bench/exits-vmx.json and the VMX section of docs/BENCHMARKS.md
(between <!-- vmx --> markers; the rest of the file is left alone).

Each backend also draws its flat 32-bit table with matplotlib (draw()) as
docs/img/bench-qemu.svg, bench-vmx.svg or bench-nrip.svg, linked from its
section of docs/BENCHMARKS.md; without matplotlib it says so and writes the
rest. --no-docs writes neither.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serial_log  # noqa: E402  (tools/serial_log.py)
import plots  # noqa: E402  (tools/plots.py: the pictures' common part)
from plots import write_atomic  # noqa: E402
LP_QEMU = os.path.join(ROOT, "tools", "lp-qemu")
LP_BOCHS = os.path.join(ROOT, "tools", "lp-bochs")

MODES = ("flat32", "paged64")
# The exits every bench guest must report, in table order. The first seven
# are the headline set; hypercall_heavy (LP_HC_NULL_HEAVY) is the extra that
# shows the cost of the heavy path itself.
EXITS = ("none", "hypercall", "cpuid", "pio_in_pmtimer", "pio_out", "rdmsr",
         "wrmsr", "hypercall_heavy", "mmio_read", "mmio_write", "pio_rep_outsb")
# The local APIC rows (MSRs registered late cost what early ones do): every
# lightpath run reports them (tools/bench.py requires them), logs from
# before they existed and other hosts need not.
# timer_irq is no round trip but a latency: from the TSC-deadline expiry the
# guest armed to the RDTSC that is its handler's first instruction.
APIC_EXITS = ("wrmsr_tsc_deadline", "x2apic_eoi", "xapic_eoi", "self_ipi", "timer_irq")
# A guest-owned MSR's write (docs/SECURITY.md, case 18): where lightpath
# passes the MSR through (msr=lazy, the default) it is no exit and the row
# measures the WRMSR instruction itself; under msr=always it exits. Required
# like the APIC rows.
GUEST_MSR_EXITS = ("wrmsr_kernel_gs_base",)
LP_EXITS = EXITS + APIC_EXITS + GUEST_MSR_EXITS
# The IPI round trip (docs/SMP.md): a second boot per configuration, QEMU
# -smp 2, one VM of two vCPUs (SMP_CFG) running bench32 with ipi=1, which
# reports mode=flat32-smp2. Its TSC counts the instructions of both CPUs
# (guests/bench/bench.c, ipi_main, says what the row includes).
SMP_MODE = "flat32-smp2"
SMP_EXITS = ("ipi_roundtrip",)
SMP_QEMU_CPUS = 2
SMP_CFG = "# lightpath vm\nname = ipi\nkernel = bench32.elf\ncpus = 2\nmemory = 64\n"

# The virtio rows (docs/VIRTIO.md): a third boot for some configurations, QEMU
# -icount -smp 2, two VMs side by side (VIRTIO_CFGS): guests/bench/vbench.c
# as `main` (a disk and a network link) and `echo` (the link's other end),
# reporting mode=virtio. Its TSC counts both CPUs' instructions.
VIRTIO_MODE = "virtio"
VIRTIO_EXITS = ("virtio_notify", "virtio_notify16", "blk_read_4k", "net_rtt_1514")
VIRTIO_CONFIGS = ("all-on", "light-off", "spec-off")
VIRTIO_CFGS = (("vmain", "# lightpath vm\nname = vmain\nkernel = vbench-main.elf\nmemory = 32\n"
                "disk = vbench.img\nnet = bench\n", "role=main"),
               ("vecho", "# lightpath vm\nname = vecho\nkernel = vbench-echo.elf\nmemory = 32\n"
                "net = bench\n", "role=echo"))
VIRTIO_DISK_SECTORS = 64

# (name, boot options). Each "-off" config turns one optimisation off.
SWITCHES = (
    ("light", "on", "off"),
    ("svm.vmload", "lazy", "always"),
    ("dr", "lazy", "always"),
    ("pmu", "lazy", "always"),
    ("msr", "lazy", "always"),
    ("io", "fast", "emulate"),
)
CONFIGS = (
    ("all-on", ""),
    ("light-off", "light=off"),
    ("vmload-off", "svm.vmload=always"),
    ("dr-off", "dr=always"),
    ("pmu-off", "pmu=always"),
    ("msr-off", "msr=always"),
    ("io-off", "io=emulate"),
    ("lead-off", "timer=exact"),   # not a seed switch: all-off keeps timer=lead
    ("spec-off", "spec=off"),
    ("all-off", " ".join("%s=%s" % (k, off) for k, _, off in SWITCHES)),
)

# Added to every configuration: the bench guests time exits with RDTSC, and
# a guest that reads a clock device (the PM-timer row) in a loop would start
# the guest clock's polling, which makes RDTSC exit and step the guest's time
# (vmm/guest_clock.h); under Bochs, whose TSC runs at its instruction rate,
# the loop's reads are far enough apart for that. clock=host keeps RDTSC the
# instruction count; the PM-timer read still pays the polling test.
BENCH_OPTS = "clock=host"

CPU = "EPYC,+svm"
ANALYSIS_BEGIN = "<!-- analysis -->"
ANALYSIS_END = "<!-- /analysis -->"

# The pictures (draw()): one per backend, linked from BENCHMARKS.md as img/NAME.
QEMU_IMG = "bench-qemu.svg"
QEMU_XLABEL = "instructions per exit (QEMU -icount)"
BOCHS_XLABEL = "instructions per exit (Bochs, TSC counts instructions)"

# Intel VT-x under Bochs: svm.vmload has no VMX meaning (the VMX backend
# ignores it), so its config is left out; apicv-off is VT-x's own: the
# guest's local APIC emulated on exits and interrupts injected instead of
# the CPU's APIC virtualization (docs/VMX.md).
APICV_OFF = ("apicv-off", "vmx.apicv=off")
VMX_CONFIGS = tuple(c for c in CONFIGS if c[0] != "vmload-off") + (APICV_OFF,)
VMX_CPU = "corei7_skylake_x"
VMX_BEGIN = "<!-- vmx -->"
VMX_END = "<!-- /vmx -->"

# AMD SVM with NRIP save, the path every AMD CPU since 2009 takes: the SVM
# image under Bochs' ryzen model (QEMU's SVM has no NRIP save).
NRIP_CPU = "ryzen"
NRIP_BEGIN = "<!-- nrip -->"
NRIP_END = "<!-- /nrip -->"

# The Bochs backends: what to boot and where the results go.
BOCHS_BACKENDS = {
    # vmx.bochs_quirk=off: the exit path real CPUs run, not the Bochs twin
    # that holds the host timer out of guests there (vmm/vmx/bochs.c)
    "vmx": {"cpu": VMX_CPU, "kernel": None, "configs": VMX_CONFIGS, "json": "exits-vmx.json",
            "opts": "vmx.bochs_quirk=off",
            "log": "vmx-", "title": "VMX", "img": "bench-vmx.svg",
            "picture": "Intel VT-x under Bochs (%s)" % VMX_CPU},
    "svm-nrip": {"cpu": NRIP_CPU, "kernel": "build/lightpath.elf", "configs": CONFIGS,
                 "json": "exits-nrip.json", "log": "nrip-", "title": "SVM with NRIP save",
                 "img": "bench-nrip.svg",
                 "picture": "AMD SVM with NRIP save under Bochs (%s)" % NRIP_CPU},
}

# Bench lines count only at the start of a line of guest output: behind
# lightpath's "[vmN] " prefix (or, for tools/compare's KVM log, kvmrun's
# "[guest] "). Anything else, e.g. a bench line a guest printed after a '\r'
# or inside another line, is not a result.
LP_PREFIX = r"\[vm(?P<vm>\d+)\] "
_LINE = r"bench: mode=(?P<mode>\S+) exit=(?P<exit>\S+) n=(?P<n>\d+) min=(?P<min>\d+) " \
        r"mean=(?P<mean>\d+(?:\.\d+)?)\s*$"
_DONE = r"bench: mode=(?P<mode>\S+) done\s*$"
_FAILED = re.compile(r"bench: check FAILED")
_NOTE = re.compile(r"bench: note: .*")
_OPTIONS = re.compile(r"^lightpath: options: (?P<opts>.*?)\s*$")


class BenchError(Exception):
    pass


def parse_bench(text, n=None, modes=MODES, exits=EXITS, prefix=LP_PREFIX):
    """Parses a serial log. Returns {mode: {exit: {"min": int, "mean": float}}}.

    Only lines starting with `prefix` count (see LP_PREFIX). Raises BenchError
    when a bench guest reported a failed check, a mode did not finish, a
    required line is missing or duplicated, n differs, or one mode's lines
    come from two VMs."""
    line_re, done_re = re.compile("^" + prefix + _LINE), re.compile("^" + prefix + _DONE)
    results = {}
    done = set()
    source = {}   # mode -> the VM that reports it

    def same_vm(m):
        vm, mode = m.groupdict().get("vm"), m.group("mode")
        if source.setdefault(mode, vm) != vm:
            raise BenchError("mode=%s is reported by vm%s and vm%s" % (mode, source[mode], vm))

    for line in serial_log.lines(text):
        if _FAILED.search(line):
            raise BenchError("bench guest reported: " + line.strip())
        m = line_re.match(line)
        if m:
            same_vm(m)
            mode, exit_ = m.group("mode"), m.group("exit")
            if n is not None and int(m.group("n")) != n:
                raise BenchError("mode=%s exit=%s ran n=%s, expected n=%d"
                                 % (mode, exit_, m.group("n"), n))
            per = results.setdefault(mode, {})
            if exit_ in per:
                raise BenchError("mode=%s exit=%s reported twice" % (mode, exit_))
            per[exit_] = {"min": int(m.group("min")),
                          "mean": float(m.group("mean"))}
            continue
        m = done_re.match(line)
        if m:
            same_vm(m)
            done.add(m.group("mode"))
    for mode in modes:
        if mode not in done:
            raise BenchError("no 'bench: mode=%s done' line" % mode)
        missing = [e for e in exits if e not in results.get(mode, {})]
        if missing:
            raise BenchError("mode=%s: no result for exit %s"
                             % (mode, ", ".join(missing)))
    return results


_CONFIG = re.compile(r"^" + LP_PREFIX + r"bench: mode=(?P<mode>\S+) config=(?P<bits>0x[0-9a-fA-F]+)\s*$")


def config_bits(opts):
    """The LP_CONFIG_* bits (abi.h) that boot options `opts` should give:
    bit i set = switch i of SWITCHES is on (lazy/fast); bit 6 = spec=on."""
    words = dict(w.split("=", 1) for w in opts.split())
    bits = 0
    for i, (k, on, _) in enumerate(SWITCHES):
        if words.get(k, on) == on:
            bits |= 1 << i
    if words.get("spec", "on") == "on":
        bits |= 1 << len(SWITCHES)
    return bits


def check_config_bits(text, opts):
    """If the bench guests print 'bench: mode=M config=0x..' (LP_HC_CONFIG),
    it must match the boot options."""
    want = config_bits(opts)
    for line in serial_log.lines(text):
        m = _CONFIG.match(line)
        if m and int(m.group("bits"), 16) != want:
            raise BenchError("mode=%s: guest sees config=%s, expected %#x for '%s'"
                             % (m.group("mode"), m.group("bits"), want, opts or "defaults"))


def parse_options(text):
    """The key=value words of the 'lightpath: options:' line, or None."""
    for line in serial_log.lines(text):
        m = _OPTIONS.match(line)
        if m:
            return dict(w.split("=", 1) for w in m.group("opts").split() if "=" in w)
    return None


def qemu_version():
    try:
        out = subprocess.run([os.environ.get("LP_QEMU", "qemu-system-x86_64"), "--version"], check=True,
                             capture_output=True, text=True).stdout
        return out.splitlines()[0].strip()
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def bochs_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bochs"], check=True,
                             capture_output=True, text=True).stdout.strip()
        return "Bochs %s (Debian bochs)" % out if out else "Bochs (unknown version)"
    except (OSError, subprocess.CalledProcessError):
        return "Bochs (unknown version)"


def run_config(name, opts, n, timeout, outdir, backend="svm"):
    opts = (BENCH_OPTS + " " + opts).strip()
    guests = ["build/guests/bench32.elf n=%d" % n, "build/guests/bench64.elf n=%d" % n]
    if backend in BOCHS_BACKENDS:
        be = BOCHS_BACKENDS[backend]
        opts = (opts + " " + be.get("opts", "")).strip()
        log = os.path.join(outdir, be["log"] + name + ".log")
        cmd = [LP_BOCHS, "--timeout", str(timeout), "--log", log,
               "--name", "bench-" + be["log"] + name, "--cpu", be["cpu"], "--append", opts]
        if be["kernel"]:
            cmd += ["--kernel", be["kernel"]]
        cmd += guests
    else:
        log = os.path.join(outdir, name + ".log")
        cmd = [LP_QEMU, "--icount", "--timeout", str(timeout), "--log", log,
               "--append", opts] + guests
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    text = ""
    if os.path.exists(log):
        text = serial_log.read(log)
    rc = proc.returncode
    emu = "lp-bochs" if backend in BOCHS_BACKENDS else "QEMU"
    if rc != 1:
        if rc == 124:
            why = "timed out after %d s" % timeout
        elif rc == 2 and proc.stderr.startswith(("lp-qemu:", "lp-bochs:")):
            why = proc.stderr.strip()
        elif rc % 2 == 1:
            why = "%s exit %d (status %#x)" % (emu, rc, rc >> 1)
        else:
            why = "%s exit %d" % (emu, rc)
        err = [l for l in proc.stderr.splitlines()
               if l.strip() and "TCG doesn't support requested feature" not in l]
        if err and not why.startswith(("lp-qemu", "lp-bochs")):
            why += "; stderr: " + err[-1]
        raise BenchError("%s: %s (serial log %s)" % (name, why, os.path.relpath(log, ROOT)))
    res = check_log(name, text, log, opts, n, MODES, LP_EXITS)
    if backend == "svm":
        smp, smp_secs = run_smp(name, opts, n, timeout, outdir)
        res.update(smp)
        secs += smp_secs
    if backend == "svm" and name in VIRTIO_CONFIGS:
        vio, vio_secs = run_virtio(name, opts, n, timeout, outdir)
        res.update(vio)
        secs += vio_secs
    return res, secs


def check_log(name, text, log, opts, n, modes, exits):
    """The results of one boot's serial log, checked (bench lines, config
    bits, the options lightpath echoes)."""
    try:
        res = parse_bench(text, n=n, modes=modes, exits=exits)
    except BenchError as e:
        raise BenchError("%s: %s (serial log %s)" % (name, e, os.path.relpath(log, ROOT)))
    # what the guests noticed without failing (an interrupt delivered twice)
    for line in serial_log.lines(text):
        m = _NOTE.search(line)
        if m:
            print("  %s: %s" % (name, m.group(0)), flush=True)
    try:
        check_config_bits(text, opts)
    except BenchError as e:
        raise BenchError("%s: %s (serial log %s)" % (name, e, os.path.relpath(log, ROOT)))
    # The hypervisor echoes its options: make sure the config was applied.
    seen = parse_options(text)
    if seen is None:
        raise BenchError("%s: no 'lightpath: options:' line (serial log %s)"
                         % (name, os.path.relpath(log, ROOT)))
    for word in opts.split():
        k, v = word.split("=", 1)
        if seen.get(k) != v:
            raise BenchError("%s: asked for %s but lightpath reports %s=%s"
                             % (name, word, k, seen.get(k, "(absent)")))
    return res


def run_qemu_smp(name, what, cmd, log, timeout):
    """One -icount boot of several CPUs (the IPI and virtio rows): its serial
    log's text and the seconds it took; BenchError unless QEMU exited 1."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    text = serial_log.read(log) if os.path.exists(log) else ""
    if proc.returncode != 1:
        why = "timed out after %d s" % timeout if proc.returncode == 124 else \
            "QEMU exit %d" % proc.returncode
        raise BenchError("%s (%s): %s (serial log %s)" % (name, what, why,
                                                         os.path.relpath(log, ROOT)))
    return text, secs


def run_smp(name, opts, n, timeout, outdir):
    """The IPI round trip: QEMU -icount -smp 2, one VM of two vCPUs (opts
    already has BENCH_OPTS)."""
    cfg = os.path.join(outdir, "ipi.cfg")
    with open(cfg, "w") as f:
        f.write(SMP_CFG)
    log = os.path.join(outdir, name + "-smp2.log")
    cmd = [LP_QEMU, "--icount", "--smp", str(SMP_QEMU_CPUS), "--timeout", str(timeout),
           "--log", log, "--append", opts, os.path.relpath(cfg, ROOT),
           "build/guests/bench32.elf n=%d ipi=1" % n]
    text, secs = run_qemu_smp(name, "-smp %d" % SMP_QEMU_CPUS, cmd, log, timeout)
    return check_log(name + " (-smp %d)" % SMP_QEMU_CPUS, text, log, opts, n, (SMP_MODE,),
                     SMP_EXITS), secs


def virtio_modules(outdir, n):
    """The boot modules of the virtio rows' boot (the descriptions, the two
    vbench images, the disk), written into outdir."""
    with open(os.path.join(outdir, "vbench.img"), "wb") as f:
        f.write(bytes(VIRTIO_DISK_SECTORS * 512))
    mods = []
    for vm, text, args in VIRTIO_CFGS:
        cfg = os.path.join(outdir, vm + ".cfg")
        with open(cfg, "w") as f:
            f.write(text)
        # the same image twice: each VM's module has its own arguments
        elf = os.path.join(outdir, "vbench-%s.elf" % vm[1:])
        shutil.copyfile(os.path.join(ROOT, "build", "guests", "vbench.elf"), elf)
        mods += [os.path.relpath(cfg, ROOT), "%s %s n=%d" % (os.path.relpath(elf, ROOT), args, n)]
    mods.append(os.path.relpath(os.path.join(outdir, "vbench.img"), ROOT))
    return mods


def run_virtio(name, opts, n, timeout, outdir):
    """The virtio rows: QEMU -icount -smp 2, vbench as two VMs side by side
    on one link, the first with a disk too (opts already has BENCH_OPTS)."""
    mods = virtio_modules(outdir, n)
    log = os.path.join(outdir, name + "-virtio.log")
    cmd = [LP_QEMU, "--icount", "--smp", "2", "--timeout", str(timeout), "--log", log,
           "--append", opts] + mods
    text, secs = run_qemu_smp(name, "virtio, -smp 2", cmd, log, timeout)
    return check_log(name + " (virtio)", text, log, opts, n, (VIRTIO_MODE,), VIRTIO_EXITS), secs


def virtio_section(results, configs):
    """The virtio rows' explanation and table (markdown)."""
    cfgs = [c for c in configs if c[0] in VIRTIO_CONFIGS]
    return f"""## virtio

The virtio rows come from a third boot for the configurations below: QEMU
`-icount ... -smp 2` with two VMs side by side, guests/bench/vbench.c as `vmain` (a
virtio-blk disk, `disk =`, and a virtio-net device on the link `bench`, `net =`) and as
`vecho` (the link's other end, which sends back every frame it gets). As in the IPI row,
the TSC counts the instructions of both CPUs. Each cell is the minimum over the same n.

- `virtio_notify`: a 32-bit MOV to virtio-blk's queue-0 doorbell with nothing new on the
  ring: the exit, the light MMIO decode, the transport, the device's look at the ring
  (empty), its request for the next kick, and back. Nothing is emulated.
- `virtio_notify16`: the same doorbell written with a 16-bit MOV, as Linux's `iowrite16`
  does (the light path decodes the 0x66 prefix too).
- `blk_read_4k`: one 4 KiB read request, from the guest's descriptors and avail index to
  the used index moving: the doorbell exit, the device's walk of the chain, its 4 KiB
  copy, the status and the used element. No interrupt (the driver polls and asked for
  none, NO_INTERRUPT), so this is the device's work per request.
- `net_rtt_1514`: two 1514-byte frames, one each way: `vmain` sends a frame and halts;
  lightpath copies it into the link and kicks `vecho`'s CPU, whose HLT ends with the
  frame in its receive buffer and an MSI-X interrupt; `vecho` sends it back the same way;
  the bracket ends when `vmain`'s HLT has returned with the echo. Both guests' drivers
  (a few dozen instructions each) and both VMs' exits are in it; halved, it is the
  cost of one 1514-byte frame across the link.

{table(results, cfgs, VIRTIO_MODE, "md", VIRTIO_EXITS)}"""


def table(results, configs, mode, fmt="text", exits=LP_EXITS):
    """Rows = exits, columns = configs, cells = min."""
    names = [c for c, _ in configs]
    rows = []
    for e in exits:
        row = [e]
        for c in names:
            v = results.get(c, {}).get(mode, {}).get(e)
            row.append("-" if v is None else str(v["min"]))
        rows.append(row)
    head = ["exit"] + names
    if fmt == "md":
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join(["---"] + ["---:"] * len(names)) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(out)
    w0 = max(len(h) for h in [head[0]] + [r[0] for r in rows])
    ws = [max(len(head[i]), max(len(r[i]) for r in rows)) for i in range(1, len(head))]
    out = [head[0].ljust(w0) + "  " + "  ".join(h.rjust(w) for h, w in zip(head[1:], ws))]
    for r in rows:
        out.append(r[0].ljust(w0) + "  " + "  ".join(c.rjust(w) for c, w in zip(r[1:], ws)))
    return "\n".join(out)


def config_color(name):
    """A config's bar colour, the same in every backend's picture: matplotlib's
    default cycle without its grey, and all-off near black."""
    palette = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "gold", "C9", "0.15", "C8")
    return palette[[c for c, _ in CONFIGS + (APICV_OFF,)].index(name)]


def draw(results, configs, title, xlabel, name):
    """Draws the flat 32-bit table (min per exit and config) as a grouped
    horizontal bar chart into docs/img/NAME: one group per exit row, one bar
    per configuration, log x axis (the rows span 2..5000 instructions).
    Returns the markdown image link for BENCHMARKS.md, or "" after printing
    one line saying why the picture was not drawn."""
    plt = plots.pyplot("bench", "picture " + plots.img(name), "make bench")
    if not plt:
        return ""
    names = [c for c, _ in configs]
    rows = [e for e in LP_EXITS
            if any(e in results.get(c, {}).get("flat32", {}) for c in names)]
    series = [(c, config_color(c), {e: v["min"] for e, v in results.get(c, {}).get("flat32", {}).items()})
              for c in names]
    with plots.svg(plt, name, (8, 1.6 + 0.62 * len(rows))) as (fig, ax):
        plots.grouped_barh(ax, rows, series, xlabel)
        ax.set_title("%s: flat 32-bit guest, min of n per exit" % title)
        ax.legend(loc="lower right", fontsize=7, title="config")
    return "\n![%s, flat 32-bit guest: instructions per exit by configuration](img/%s)\n" \
        % (title, name)


def json_doc_bochs(results, configs, bochs, backend):
    doc = json_doc(results, configs, bochs)
    del doc["qemu"]
    doc.update({"backend": backend, "environment": "bochs-icount", "bochs": bochs,
                "cpu": BOCHS_BACKENDS[backend]["cpu"],
                "note": ("hypercall measured with VMCALL; " if backend == "vmx" else
                         "the SVM image with NRIP save; ") +
                        "guest TSC = instructions (Bochs clock: sync=none)"})
    return doc


def json_doc(results, configs, qemu):
    def rows(mode, exits=LP_EXITS):
        out = []
        for c, _ in configs:
            for e in exits:
                v = results[c].get(mode, {}).get(e)
                if v is None:   # a row a log from before it lacks
                    continue
                out.append({"config": c, "exit": e, "min": v["min"], "mean": v["mean"]})
        return out
    return {
        "backend": "svm",
        "environment": "qemu-tcg-icount",
        "unit": "instructions per exit (icount)",
        "guest": "flat32",
        "results": rows("flat32"),
        "results_paged64": rows("paged64"),
        "results_smp2": rows(SMP_MODE, SMP_EXITS),
        "results_virtio": rows(VIRTIO_MODE, VIRTIO_EXITS),
        "virtio": "guests/bench/vbench.c as two VMs side by side under QEMU -smp 2 (a disk "
                  "and a network link): the TSC counts the instructions of both CPUs; "
                  "configurations " + ", ".join(VIRTIO_CONFIGS),
        "smp2": "bench32 ipi=1 in a VM of 2 vCPUs under QEMU -smp %d: the TSC counts the "
                "instructions of both CPUs" % SMP_QEMU_CPUS,
        "qemu": qemu,
        "cpu": CPU,
    }


def read_analysis(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    a = text.find(ANALYSIS_BEGIN)
    b = text.find(ANALYSIS_END, a + 1) if a >= 0 else -1
    if a < 0 or b < 0:
        return None
    return text[a:b + len(ANALYSIS_END)]


def read_blocks(path, skip=(ANALYSIS_BEGIN,)):
    """Every <!-- NAME --> ... <!-- /NAME --> block in the file at path except
    those whose opening marker is in skip, in file order (kept verbatim when
    the SVM tables are regenerated: the VMX section, a comparison...)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return []
    out = []
    for m in re.finditer(r"<!-- ([A-Za-z0-9_-]+) -->", text):
        begin = m.group(0)
        if begin in skip:
            continue
        end = "<!-- /%s -->" % m.group(1)
        b = text.find(end, m.end())
        if b >= 0:
            out.append(text[m.start():b + len(end)])
    return out


def vmx_block(results, n, bochs, img=""):
    today = datetime.date.today().isoformat()
    cfg = ", ".join("`%s`" % c for c, _ in VMX_CONFIGS)
    return f"""{VMX_BEGIN}
## Intel VT-x under Bochs (VMX backend)

`make bench BACKEND=vmx` boots `build/lightpath-vmx.elf` under Bochs (`cpu:
model={VMX_CPU}`) with `clock: sync=none`, where the guest's TSC counts executed
instructions, guest and hypervisor alike: the same metric as QEMU's icount above
(VMCALL and VMRESUME count 1 each, the VM exit and entry themselves 0). The
`hypercall` rows use VMCALL. Configs: {cfg}; `svm.vmload` has no VMX meaning and is
ignored by the VMX backend, so there is no `vmload-off` column, and `apicv-off` is
VT-x's own: `vmx.apicv=off`, the guest's local APIC emulated on exits and its
interrupts injected instead of the CPU's APIC virtualization (docs/VMX.md). With it
on (every other column), an EOI, a TPR write or a self-IPI by the SELF IPI MSR does
not exit at all, so those rows measure the CPU's virtualization, not an exit. Every
config adds `vmx.bochs_quirk=off`: the exit path real CPUs run, not the twin that works
around Bochs's virtual-interrupt defect there (docs/VMX.md). Cells are the minimum
over n={n} iterations (`mean` in `build/bench/exits-vmx.json`).

### Flat 32-bit guest (bench32), VMX

{table(results, VMX_CONFIGS, "flat32", "md")}
{img}
### Paged 64-bit guest (bench64), VMX

{table(results, VMX_CONFIGS, "paged64", "md")}

Measured on {today} with {bochs}. Reproduce with `make bench BACKEND=vmx`.
{VMX_END}"""


def nrip_block(results, n, bochs, img=""):
    today = datetime.date.today().isoformat()
    return f"""{NRIP_BEGIN}
## AMD SVM with NRIP save (the hardware path), under Bochs

Every AMD CPU since 2009 saves the next RIP at an exit (NRIP save); QEMU's SVM does not, so
the QEMU tables below measure lightpath's fallback (the bytes at RIP checked through a cached
translation of the code page). `make bench BACKEND=svm-nrip` boots the same SVM image,
`build/lightpath.elf`, under Bochs (`cpu: model={NRIP_CPU}`, an AMD model with nested paging
and NRIP save) with `clock: sync=none`, where the guest's TSC counts executed instructions,
guest and hypervisor alike: the same metric as QEMU's icount (VMRUN counts 1, the world
switch 0). These are the figures of the path real AMD hardware takes. Cells are the minimum
over n={n} iterations (`mean` in `build/bench/exits-nrip.json`).

### Flat 32-bit guest (bench32), SVM with NRIP save

{table(results, CONFIGS, "flat32", "md")}
{img}
### Paged 64-bit guest (bench64), SVM with NRIP save

{table(results, CONFIGS, "paged64", "md")}

Measured on {today} with {bochs}. Reproduce with `make bench BACKEND=svm-nrip`.
{NRIP_END}"""


def replace_block(text, begin, end, block, before="## Analysis"):
    """text with the begin..end block replaced by block (inserted before the
    `before` heading, or at the end, when absent)."""
    a = text.find(begin)
    b = text.find(end, a + 1) if a >= 0 else -1
    if a >= 0 and b >= 0:
        return text[:a] + block + text[b + len(end):]
    i = text.find(before)
    if i < 0:
        return text.rstrip("\n") + "\n\n" + block + "\n"
    return text[:i] + block + "\n\n" + text[i:]


def smp_section(results, configs):
    """The IPI rows' explanation and the round-trip table (markdown)."""
    return f"""## IPIs

`self_ipi` (in the tables above) is a WRMSR to the x2APIC SELF IPI register
(0x83F) with IF=1, so the bracket holds more than the exit: lightpath injects the
interrupt on the way back, the guest's interrupt stub and handler run (guests/rt's
common stub, which saves every register, and a C handler), the handler's x2APIC
EOI exits too, and IRET returns before the second RDTSC.

`ipi_roundtrip` needs a second vCPU, so it comes from a second boot per
configuration: QEMU `-icount ... -smp {SMP_QEMU_CPUS}`, one VM of two vCPUs (`cpus = 2`,
vCPU i on host CPU i) running bench32 with `ipi=1` (guests/bench/bench.c,
`ipi_main`). vCPU 0 brackets: a fixed x2APIC IPI to vCPU 1 (WRMSR 0x830), then
PAUSE until its handler has seen vCPU 1's answer; vCPU 1, spinning on PAUSE with IF=1,
answers each IPI from its handler with a fixed IPI back, then EOI. Under `-icount` the
TSC is one clock for both CPUs and counts **the instructions of both**, and QEMU runs
one CPU at a time, switching at PAUSE (or HLT). So the figure is the sum of: vCPU 0's
ICR exit (the IPI posted to vCPU 1 and CPU 1 kicked by a host IPI), the exit the kick
forces on CPU 1, the injection there, vCPU 1's handler with its own ICR exit (posting
back and kicking CPU 0) and EOI exit, and the same injection, handler and EOI exit on
CPU 0, plus a few guest instructions (the PAUSE loops, IRET). On hardware the two CPUs
would run in parallel: this is total path length, not latency. Nothing is subtracted.
Per round trip lightpath counts six exits: on each vCPU an ICR write (light: the IPI is
posted), an INTR exit (the kick; heavy: the posted vector is taken and injected) and the
handler's EOI (light: an edge-triggered vector's EOI changes only the vCPU's own ISR).
The figure depends on the guest's code layout: in this bench32 image vCPU 0's bracket
and its handler are on different code pages; a one-off build with both on one page gave
a lower figure (not measured by a command in the repo; the likely cause, not traced, is
lightpath's one-page code cache for the next RIP without NRIP).

{table(results, configs, SMP_MODE, "md", SMP_EXITS)}"""


def markdown(results, configs, qemu, n, analysis, kept=(), img=""):
    today = datetime.date.today().isoformat()
    cfg_lines = "\n".join("| `%s` | %s |" % (c, "`%s`" % o if o else "(defaults)")
                          for c, o in configs)
    # the NRIP tables (the hardware path) lead; the other kept blocks follow
    lead_text = "".join(k + "\n\n" for k in kept if k.startswith(NRIP_BEGIN))
    kept_text = "".join("\n" + k + "\n" for k in kept if not k.startswith(NRIP_BEGIN))
    if analysis is None:
        analysis = (ANALYSIS_BEGIN + "\n*(No analysis yet. Text between these markers is kept "
                    "when `make bench` regenerates this file.)*\n" + ANALYSIS_END)
    return f"""# lightpath exit benchmarks

**Metric: instructions per exit (icount), not cycles.** `make bench` boots lightpath
under QEMU's software emulation (TCG, `-cpu {CPU}`) with `-icount shift=0,align=off,sleep=off`.
In that mode the guest's TSC advances by exactly one per instruction the emulated CPU
executes, guest and hypervisor alike. The bench guests bracket each exiting instruction with
two RDTSCs, so each number is the **software path length** of one exit round trip: guest
and hypervisor instructions between the two RDTSCs, with nothing subtracted. The `none`
row is the empty bracket (RDTSC to RDTSC with no exiting instruction between them).
`wrmsr_kernel_gs_base` is a guest-owned MSR, which lightpath passes through unless
`msr=always` (docs/SECURITY.md, case 18): there it is no exit, and the row
measures the WRMSR instruction itself, as on bare metal.
`timer_irq` is no round trip but an interrupt latency: the guest arms its TSC-deadline
timer (x2APIC, IA32_TSC_DEADLINE = RDTSC + 4000) and spins on PAUSE with IF=1; the
handler's first instruction, at the vector's IDT entry, is RDTSC, and the row is that TSC
minus the deadline: lightpath noticing the expiry (its host timer's interrupt and the exit
it causes), delivering the vector and entering the guest, plus the guest's interrupt
delivery, in instructions. With `timer=lead`, the default, the host timer comes a lead
before the deadline and lightpath does that work then, waiting for the deadline before it
enters the guest: the row is what remains after the wait. `lead-off` (`timer=exact`) is
the whole path after the deadline.

The world switch itself counts 0, and VMRUN, VMLOAD and VMSAVE count 1 each, like any
other instruction, however expensive they are on silicon. So these figures compare code
paths exactly and repeatably; they say nothing about cycles. Absolute cycle costs need
real AMD hardware.

Each cell is the minimum over n={n} iterations (`mean` is in `build/bench/exits.json`).
Columns are configurations (boot options); each `-off` column turns one optimisation off.
Every configuration also has `clock=host`: the bench guests time exits with RDTSC, which
the guest clock's polling (docs/USAGE.md, "Guest time while polling") would make
exit; the PM-timer read still runs the polling test:

| config | boot options |
|---|---|
{cfg_lines}

{lead_text}## Flat 32-bit guest (bench32)

{table(results, configs, "flat32", "md")}
{img}
## Paged 64-bit guest (bench64)

{table(results, configs, "paged64", "md")}

{smp_section(results, configs)}

{virtio_section(results, configs)}

Measured on {today} with {qemu}.
Reproduce with `make bench` (results also in `build/bench/exits.json`).
{kept_text}
## Analysis

{analysis}
"""


def main():
    ap = argparse.ArgumentParser(description="lightpath exit benchmark (make bench)")
    ap.add_argument("--n", type=int, default=1000, help="iterations per exit (default 1000)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per boot (default 300)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/BENCHMARKS.md or docs/img")
    ap.add_argument("--parse", metavar="LOG", help="only parse LOG and print the results as JSON")
    ap.add_argument("--n-expected", type=int, help="with --parse: require this n")
    ap.add_argument("--backend", choices=("svm", "vmx", "svm-nrip"), default="svm",
                    help="svm: QEMU TCG (default); vmx: Intel VT-x under Bochs; svm-nrip: "
                         "the SVM image with NRIP save under Bochs (cpu ryzen)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("LP_JOBS", "2")),
                    help="boots at a time for the Bochs backends (default 2)")
    args = ap.parse_args()

    if args.parse:
        text = serial_log.read(args.parse)
        try:
            res = parse_bench(text, n=args.n_expected)
        except BenchError as e:
            print("bench: %s: %s" % (args.parse, e), file=sys.stderr)
            return 1
        json.dump(res, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0

    outdir = os.path.join(ROOT, "build", "bench")
    os.makedirs(outdir, exist_ok=True)
    if args.backend in BOCHS_BACKENDS:
        return main_bochs(args, outdir)
    qemu = qemu_version()
    print("lightpath bench: %d configurations, n=%d, %s, -icount shift=0"
          % (len(CONFIGS), args.n, qemu), flush=True)
    results = {}
    for i, (name, opts) in enumerate(CONFIGS, 1):
        print("[%d/%d] %-10s %s ... " % (i, len(CONFIGS), name, opts or "(defaults)"),
              end="", flush=True)
        try:
            results[name], secs = run_config(name, opts, args.n, args.timeout, outdir)
        except BenchError as e:
            print("FAILED")
            print("bench: error: %s" % e, file=sys.stderr)
            return 1
        print("ok (%.1f s)" % secs, flush=True)

    path = os.path.join(outdir, "exits.json")
    write_atomic(path, json.dumps(json_doc(results, CONFIGS, qemu), indent=2) + "\n")
    print_tables(results, CONFIGS, "icount, min of n=%d" % args.n,
                 "software path length under QEMU -icount shift=0, not cycles")
    print("wrote %s" % os.path.relpath(path, ROOT))

    if not args.no_docs:
        img = draw(results, CONFIGS, "lightpath under QEMU TCG (%s)" % CPU, QEMU_XLABEL, QEMU_IMG)
        md = os.path.join(ROOT, "docs", "BENCHMARKS.md")
        write_atomic(md, markdown(results, CONFIGS, qemu, args.n, read_analysis(md), read_blocks(md),
                                  img))
        print("wrote %s" % os.path.relpath(md, ROOT))
    return 0


def print_tables(results, configs, what, footer, backend=""):
    """The flat and paged tables on the terminal."""
    for mode, guest in (("flat32", "flat 32-bit"), ("paged64", "paged 64-bit")):
        print()
        print("instructions per exit (%s), %s%s guest:" % (what, backend, guest))
        print(table(results, configs, mode))
    if not backend:   # QEMU: the IPI round trip of its -smp 2 boots
        print()
        print("IPI round trip (%s), flat 32-bit guest, VM of 2 vCPUs, QEMU -smp %d "
              "(instructions of both CPUs):" % (what, SMP_QEMU_CPUS))
        print(table(results, configs, SMP_MODE, exits=SMP_EXITS))
        print()
        print("virtio (%s), two VMs side by side, QEMU -smp 2 (instructions of both CPUs):"
              % what)
        print(table(results, [c for c in configs if c[0] in VIRTIO_CONFIGS], VIRTIO_MODE,
                    exits=VIRTIO_EXITS))
    print()
    print("(%s)" % footer)


def main_bochs(args, outdir):
    import concurrent.futures
    be = BOCHS_BACKENDS[args.backend]
    configs = be["configs"]
    bochs = bochs_version()
    print("lightpath bench (%s): %d configurations, n=%d, %s, cpu %s, clock sync=none"
          % (be["title"], len(configs), args.n, bochs, be["cpu"]), flush=True)
    results = {}
    failed = []

    def one(item):
        name, opts = item
        return name, run_config(name, opts, args.n, args.timeout, outdir, backend=args.backend)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = [pool.submit(one, c) for c in configs]
        for fut in concurrent.futures.as_completed(futs):
            try:
                name, (res, secs) = fut.result()
            except BenchError as e:
                failed.append(str(e))
                print("FAILED: %s" % e, flush=True)
                continue
            results[name] = res
            print("%-10s ok (%.1f s)" % (name, secs), flush=True)
    if failed:
        for e in failed:
            print("bench: error: %s" % e, file=sys.stderr)
        return 1

    path = os.path.join(outdir, be["json"])
    write_atomic(path, json.dumps(json_doc_bochs(results, configs, bochs, args.backend),
                                  indent=2) + "\n")
    print_tables(results, configs, "Bochs, sync=none, min of n=%d" % args.n,
                 "software path length, not cycles", backend=be["title"] + ", ")
    print("wrote %s" % os.path.relpath(path, ROOT))
    if not args.no_docs:
        img = draw(results, configs, "lightpath, " + be["picture"], BOCHS_XLABEL, be["img"])
        md = os.path.join(ROOT, "docs", "BENCHMARKS.md")
        try:
            with open(md) as f:
                text = f.read()
        except OSError:
            text = "# lightpath exit benchmarks\n\n## Analysis\n"
        if args.backend == "vmx":
            text = replace_block(text, VMX_BEGIN, VMX_END, vmx_block(results, args.n, bochs, img))
        else:   # the hardware path leads the page
            text = replace_block(text, NRIP_BEGIN, NRIP_END,
                                 nrip_block(results, args.n, bochs, img),
                                 before="## Flat 32-bit guest (bench32)")
        write_atomic(md, text)
        print("wrote %s" % os.path.relpath(md, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
