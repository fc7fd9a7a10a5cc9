#!/usr/bin/python3
"""lightpath against KVM on the same exits: `make compare`.

Runs lightpath's bench guests (build/guests/bench32.elf, bench64.elf) in the
same QEMU configuration (`-accel tcg -cpu EPYC,+svm
-icount shift=0,align=off,sleep=off`, where the guest's TSC advances by one
per executed instruction) under lightpath (tools/bench.py's configs) and under
Linux KVM (Debian's kernel booted under the same QEMU, kvm_amd loaded, the
guests run by tools/compare/kvmrun: tools/compare/kvmboot.py), in two pairs
(PAIRS):
  unmitigated: lightpath spec=off against KVM in a Linux booted with
               mitigations=off;
  defaults:    lightpath's defaults against KVM's (the kernel's default
               mitigations).
Each KVM boot must report the mitigations its pair claims (check_pair).
Prints a table per pair (exit, lightpath, KVM, ratio, the pair's bar), writes
build/bench/compare.json and the `<!-- compare -->` section of
docs/BENCHMARKS.md.

    tools/compare/compare.py [--n N] [--no-docs]
    tools/compare/compare.py --parse-kvm LOG [--n-expected N]   (self-check)
"""

import argparse
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, HERE)
import bench  # noqa: E402
import kvmboot  # noqa: E402

UNIT = "instructions per exit (icount)"
# The compared exits, in table order (bench.py's names).
EXITS = ("hypercall", "cpuid", "pio_in_pmtimer", "pio_out", "rdmsr", "wrmsr")
# What the bench guest reports under KVM (host=kvm: no LP_HC_NULL_HEAVY row).
KVM_EXITS = ("none",) + EXITS
# Compared too, but not required of a log by parse_kvm (logs from before the
# row, e.g. tests/integration's samples, have none); main() requires it of
# both sides of a run. Interrupt latency, not an exit's round trip; under KVM
# from a second kvmrun per guest (kvmboot.py: --irqchip, timer=1).
LATE_EXITS = ("timer_irq",)
MODES = bench.MODES
COMPARE_BEGIN = "<!-- compare -->"
COMPARE_END = "<!-- /compare -->"
MSR = "0x2ff (IA32_MTRR_DEF_TYPE)"

# The compared pairs: each sets both sides the same way. "bar" is the
# project's target: every row's KVM path at least that many times longer.
# "config" is a tools/bench.py config; "append" goes after kvmboot's
# KERNEL_APPEND on the KVM side's kernel command line.
PAIRS = (
    {"pair": "unmitigated", "config": "spec-off", "append": "mitigations=off", "bar": 25,
     "lightpath_says": "`spec=off` (no speculation hygiene on its exit path)",
     "kvm_says": "mitigations=off on the kernel command line"},
    {"pair": "defaults", "config": "all-on", "append": "", "bar": 12,
     "lightpath_says": "its defaults, `spec=on` included",
     "kvm_says": "the kernel's default mitigations"},
)

# How KVM (with kvmrun as its user space) handles each exit.
KVM_PATH = {
    "hypercall": "VMMCALL, RAX=0: kvm_emulate_hypercall in the kernel (returns -KVM_ENOSYS)",
    "cpuid": "CPUID leaf 0: in the kernel, from the table set with KVM_SET_CPUID2",
    "pio_in_pmtimer": "IN from 0x608: KVM_EXIT_IO to kvmrun in user space, as QEMU does it",
    "pio_out": "OUT to 0x80: a KVM ioeventfd, completed in the kernel",
    "rdmsr": "RDMSR 0x2ff: KVM's MTRR emulation in the kernel",
    "wrmsr": "WRMSR 0x2ff: KVM's MTRR emulation in the kernel",
    "timer_irq": "TSC-deadline expiry to the handler's first instruction: KVM's in-kernel "
                 "local APIC (a second kvmrun per guest, with --irqchip), its timer an "
                 "hrtimer on the host (no preemption timer on SVM)",
}

_ENV = {
    "kernel": re.compile(r"^compare: init: kernel (\S+)\s*$"),
    "cpu_model": re.compile(r"^compare: init: cpu\s*(.*?)\s*$"),
    "kvm_amd": re.compile(r"^compare: init: kvm_amd (npt=\S* nrips=\S*"
                          r"(?: kvm\.lapic_timer_advance_ns=\S*)?)\s*$"),
}
_MITIGATION = re.compile(r"^compare: init: mitigation (\S+): (.*?)\s*$")
# Optional in parse_kvm (logs from before /init printed them); check_pair
# requires the command line.
_CMDLINE = re.compile(r"^compare: init: cmdline (.*?)\s*$")
_DMESG = re.compile(r"^compare: init: dmesg: (?:\[[ 0-9.]+\] )?(.*?)\s*$")
# lightpath's own line about its exit-path speculation hygiene (vmm/spec_ctrl.c).
_LP_SPEC = re.compile(r"^lightpath: (spec=\S+: .*?)\s*$")
_STATUS = re.compile(r"^compare: init: kvmrun (\S+) status (\d+)\s*$")
_TIMER_RUN = re.compile(r"^compare: init: running \S+ timer=1 ")
# kvmrun prints each line of the guest's output behind this (kvmrun.c's
# GUEST_PREFIX): /init's lines above are the unprefixed ones, the bench
# results the prefixed ones, so the guest cannot pass for /init.
KVMRUN_PREFIX = r"\[guest\] "
_HOST_KVM = re.compile(r"^" + KVMRUN_PREFIX + r"bench: mode=(\S+) host=kvm\s*$")


class CompareError(Exception):
    pass


def parse_kvm(text, n=None):
    """Parses the serial log of the KVM boot (build/compare/kvm.log).

    Returns (results, env): results as bench.parse_bench gives them
    ({mode: {exit: {"min", "mean"}}}); env = {"kernel", "cpu_model",
    "kvm_amd", "mitigations", "dmesg", and "cmdline" if /init printed it}.
    Raises CompareError when a guest did not run with host=kvm, failed a
    check, ended with a non-zero status, or a line is missing."""
    lines = bench.serial_log.lines(text)   # split at '\n' only
    # The timer=1 runs (between /init's "running G timer=1" and "kvmrun
    # G-timer status" lines) report every row again, under KVM's in-kernel
    # irqchip: only their timer_irq counts; the other rows are the first runs'.
    first, timer, cur = [], [], None
    for line in lines:
        if _TIMER_RUN.match(line):
            cur = timer
        elif cur is timer and _STATUS.match(line):
            cur = None
        (first if cur is None else timer).append(line)
    try:
        res = bench.parse_bench("\n".join(first), n=n, modes=MODES, exits=KVM_EXITS,
                                prefix=KVMRUN_PREFIX)
        if timer:
            late = bench.parse_bench("\n".join(timer), n=n, modes=MODES, exits=LATE_EXITS,
                                     prefix=KVMRUN_PREFIX)
            for mode in MODES:
                for e in LATE_EXITS:
                    res[mode][e] = late[mode][e]
    except bench.BenchError as e:
        raise CompareError(str(e))
    for mode in MODES:
        if not any(m and m.group(1) == mode for m in map(_HOST_KVM.match, lines)):
            raise CompareError("mode=%s did not run with host=kvm (no 'bench: mode=%s host=kvm' line)"
                               % (mode, mode))
    status = {}
    for m in filter(None, map(_STATUS.match, lines)):
        status[m.group(1)] = int(m.group(2))
    for g in kvmboot.GUESTS:
        if g not in status:
            raise CompareError("no 'kvmrun %s status' line" % g)
    for g, st in status.items():   # the timer=1 runs' ("bench32-timer") too
        if st != 0:
            raise CompareError("kvmrun %s ended with status %d" % (g, st))
    env = {"mitigations": {}, "dmesg": []}
    for line in lines:
        for k, r in dict(_ENV, cmdline=_CMDLINE).items():
            m = r.match(line)
            if m and k not in env:
                env[k] = m.group(1)
        m = _MITIGATION.match(line)
        if m:
            env["mitigations"][m.group(1)] = m.group(2)
        m = _DMESG.match(line)
        if m:
            env["dmesg"].append(m.group(1))
    for k in _ENV:
        if k not in env:
            raise CompareError("no '%s' line from /init" % k)
    return res, env


def check_pair(pair, env):
    """Raises CompareError unless the KVM boot is what its pair claims: the
    kernel ran with exactly kvmboot's command line plus the pair's words (so
    the defaults pair has no mitigation option), and with mitigations=off no
    vulnerability file reports a mitigation."""
    want = (kvmboot.KERNEL_APPEND + " " + pair["append"]).split()
    if "cmdline" not in env:
        raise CompareError("pair %s: /init printed no kernel command line" % pair["pair"])
    if env["cmdline"].split() != want:
        raise CompareError("pair %s: the kernel ran with '%s', expected '%s'"
                           % (pair["pair"], env["cmdline"], " ".join(want)))
    if not env["mitigations"]:
        raise CompareError("pair %s: no mitigation lines from /init" % pair["pair"])
    if "mitigations=off" in want:
        on = ["%s (%s)" % kv for kv in sorted(env["mitigations"].items())
              if kv[1].startswith("Mitigation")]
        if on:
            raise CompareError("pair %s: mitigations=off, yet Linux reports %s"
                               % (pair["pair"], "; ".join(on)))


def rows(lp, kvm, mode, pair):
    """One pair's rows of a guest: EXITS, then the late rows both sides ran."""
    exits = EXITS + tuple(x for x in LATE_EXITS if x in lp[mode] and x in kvm[mode])
    return [{"pair": pair, "exit": e, "lightpath": lp[mode][e]["min"], "kvm": kvm[mode][e]["min"]}
            for e in exits]


def ratio(r):
    return "%.1fx" % (r["kvm"] / r["lightpath"]) if r["lightpath"] else "-"


def meets(r, bar):
    # In integers: a ratio printed as 25.0x may still be below 25.
    return r["lightpath"] > 0 and r["kvm"] >= bar * r["lightpath"]


def table(rs, fmt="text", bar=None):
    """rows as a table; with bar, a last column says whether each row's KVM
    path is at least bar times lightpath's."""
    head = ("exit", "lightpath", "KVM", "KVM/lightpath") + (("at least %dx" % bar,) if bar else ())
    body = [(r["exit"], str(r["lightpath"]), str(r["kvm"]), ratio(r)) +
            ((("yes" if meets(r, bar) else "no"),) if bar else ()) for r in rs]
    if fmt == "md":
        out = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        return "\n".join(out + ["| " + " | ".join(b) + " |" for b in body])
    ws = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    fmtrow = lambda x: "  ".join([x[0].ljust(ws[0])] + [c.rjust(w) for c, w in zip(x[1:], ws[1:])])
    return "\n".join([fmtrow(head)] + [fmtrow(b) for b in body])


def pair_rows(doc, pair, key):
    return [r for r in doc[key] if r["pair"] == pair["pair"]]


def verdict(doc, pair):
    """'all N rows meet the bar' or which rows miss it, both guests."""
    miss = ["%s %s" % (r["exit"], g) for key, g in (("results", "flat32"), ("results_paged64", "paged64"))
            for r in pair_rows(doc, pair, key) if not meets(r, pair["bar"])]
    n = len(pair_rows(doc, pair, "results")) + len(pair_rows(doc, pair, "results_paged64"))
    if not miss:
        return "all %d rows meet the %dx bar" % (n, pair["bar"])
    return "%d of %d rows meet the %dx bar; below it: %s" % (n - len(miss), n, pair["bar"], ", ".join(miss))


def mitigation_text(mit):
    return "; ".join("`%s`: %s" % (k, v) for k, v in sorted(mit.items())) or "none reported"


def json_doc(runs, meta):
    """runs: [(pair, lightpath results, KVM results, KVM env, lightpath's
    spec line)], one per pair of PAIRS, in that order."""
    env = runs[0][3]
    return {
        "unit": UNIT,
        "guest": "flat32",
        "results": [r for p, lp, kvm, _, _ in runs for r in rows(lp, kvm, "flat32", p["pair"])],
        "results_paged64": [r for p, lp, kvm, _, _ in runs for r in rows(lp, kvm, "paged64", p["pair"])],
        "pairs": {p["pair"]: {
            "bar": p["bar"],
            "lightpath_config": p["config"],
            "lightpath_options": dict(bench.CONFIGS)[p["config"]] or "(defaults)",
            "lightpath_spec": spec,
            "kvm_cmdline": e.get("cmdline"),
            "mitigations": {k: v for k, v in e["mitigations"].items() if v != "Not affected"},
            "dmesg": e["dmesg"],
        } for p, _, _, e, spec in runs},
        "qemu": meta["qemu"],
        "qemu_args": "-accel tcg -cpu %s -icount %s" % (kvmboot.CPU, kvmboot.ICOUNT),
        "cpu_model": env["cpu_model"],
        "kvm_kernel": env["kernel"],
        "kvm_kernel_package": meta["kernel_deb"],
        "kvm_amd": env["kvm_amd"],
        "n": meta["n"],
    }


def cost_range(doc, key, side):
    """'lo to hi' (or 'n' when equal) over a guest's rows of (defaults -
    unmitigated) on one side: what the mitigations cost that side."""
    d, u = (pair_rows(doc, p, key) for p in (PAIRS[1], PAIRS[0]))
    diff = [a[side] - b[side] for a, b in zip(d, u)]
    return "%d" % diff[0] if min(diff) == max(diff) else "%d to %d" % (min(diff), max(diff))


def pair_section(doc, pair, num):
    info = doc["pairs"][pair["pair"]]
    dmesg = "; ".join("`%s`" % l for l in info["dmesg"]) or "nothing matching"
    return f"""### Pair {num}: {pair["pair"]}

lightpath with {pair["lightpath_says"]}, `make bench`'s `{info["lightpath_config"]}`
config, against KVM with {pair["kvm_says"]}.
**Bar: every row at least {pair["bar"]}x shorter than KVM's path; {verdict(doc, pair)}.**

What each side reported in this run:
- lightpath: `{info["lightpath_spec"] or "(no spec line)"}`
- KVM's Linux, `/proc/cmdline`: `{info["kvm_cmdline"]}`; `/sys/devices/system/cpu/vulnerabilities/`
  (entries other than "Not affected"): {mitigation_text(info["mitigations"])}
- its dmesg about them: {dmesg}

Flat 32-bit guest (bench32, paging off):

{table(pair_rows(doc, pair, "results"), "md", pair["bar"])}

Paged 64-bit guest (bench64, long mode, paging on):

{table(pair_rows(doc, pair, "results_paged64"), "md", pair["bar"])}
"""


def doc_section(doc, date):
    """The `<!-- compare -->` block of docs/BENCHMARKS.md."""
    exits = list(dict.fromkeys(r["exit"] for r in doc["results"]))   # each once, in order
    paths = "\n".join("| %s | %s |" % (e, KVM_PATH[e]) for e in exits)
    pairs = "\n".join(pair_section(doc, p, i) for i, p in enumerate(PAIRS, 1))
    return f"""{COMPARE_BEGIN}
## lightpath vs KVM

`make compare` runs the same bench guests, unchanged, under lightpath and under Linux KVM, in
the same QEMU configuration (`{doc["qemu_args"]}`), and
reports the same metric: **{UNIT}**, the minimum over n={doc["n"]} RDTSC-bracketed round
trips, bracket included (the empty bracket is 2). KVM runs inside Debian's kernel booted
under that QEMU, with `tools/compare/kvmrun` as its user space: a static /dev/kvm VMM just
big enough for the bench guest, starting it as lightpath does (multiboot, 32-bit protected
mode) and handling its exits where a real KVM-based VMM would:

| exit | KVM's path |
|---|---|
{paths}

It compares like with like in two pairs, one Linux boot each: both sides without their
speculation mitigations, and both sides as they come. KVM pays for the host kernel's
mitigations on its exit path (return thunks on every kernel `ret`, retpolines, RSB filling
after VMRUN); lightpath's `spec=on` overwrites the return stack after each exit
(docs/SECURITY.md). Each KVM boot prints its kernel command line and its
`/sys/devices/system/cpu/vulnerabilities/*` and dmesg lines into its serial log
(`build/compare/kvm-PAIR.log`), and `make compare` stops if a boot is not what its pair
claims (another command line, or a vulnerabilities file that reports a mitigation under
`mitigations=off`). The dmesg lines are listed below as the kernel printed them, including
any mitigation it enables even under `mitigations=off`.

{pairs}
Measured on {date} with {doc["qemu"]}, CPU model `{kvmboot.CPU}` ("{doc["cpu_model"]}"),
KVM from Debian's kernel {doc["kvm_kernel"]} (`{doc["kvm_kernel_package"]}`), kvm_amd
{doc["kvm_amd"]}. The Linux boots run with a fixed RNG seed (QEMU's `-seed`) and RTC
(`-rtc base=...,clock=vm`), so KVM's figures, like lightpath's, are the same on every run.
Reproduce with `make compare` (a few minutes here once the 70 MB kernel package is
downloaded; results, each row with its `pair`, also in `build/bench/compare.json`).

Read these numbers with their caveats:
- **No NRIP save under TCG.** QEMU's SVM has no next-RIP save, so after VMMCALL, CPUID,
  RDMSR and WRMSR KVM finds the next RIP by decoding the instruction with its emulator
  (`kvm_emulate_instruction(EMULTYPE_SKIP)`). On real AMD hardware, which has NRIP save,
  it would not, so those four rows overstate KVM's path by that decode. In the
  paged 64-bit guest the emulator also walks the guest page tables to fetch the
  instruction, which is most of the difference between the flat and paged tables. Port I/O
  takes its next RIP from EXITINFO2 and never goes through the emulator: the `pio_*` rows
  are like for like. lightpath lacks NRIP here too; it checks the bytes at RIP through a
  cached translation of the code page.
- **Instructions, not cycles.** Every instruction counts 1 (VMRUN, WRMSR and a syscall
  included) and the world switch counts 0. On silicon, VMRUN/#VMEXIT, VMLOAD/VMSAVE and
  MSR writes cost hundreds of cycles each, and so do the mitigations' barriers; this metric
  shows software path length only.
- **What the mitigations cost each side here** (flat 32-bit guest, defaults pair minus
  unmitigated pair): KVM {cost_range(doc, "results", "kvm")} instructions per row, lightpath
  {cost_range(doc, "results", "lightpath")}.
  Which mitigations Linux picks depends on the CPU model: on QEMU's "{doc["cpu_model"]}"
  it reports the ones listed under pair 2; `-cpu qemu64,+svm,+npt`, which the kernel does
  not consider affected by retbleed or SRSO, measured earlier within a dozen instructions of
  a boot with `retbleed=off spec_rstack_overflow=off`.
- **Cross-check.** A hand-written runner measured, under the same QEMU with `-cpu
  qemu64,+svm,+npt` and a paged 64-bit guest, 3047 (VMMCALL), 2813 (CPUID) and 1458 (port
  write to an ioeventfd); `tools/compare/kvmboot.py --cpu qemu64,+svm,+npt` gives 3046, 2809
  and 1453 for bench64. The defaults pair's EPYC flat 32-bit figures differ from those by
  the two effects described above: the mitigations and the emulator's guest page walk,
  which a flat guest does not need (460 to 570 fewer on the four decoded rows).
- **timer_irq is a latency**, not a round trip: from the TSC-deadline expiry the guest armed
  (x2APIC, IA32_TSC_DEADLINE = RDTSC + 4000, then PAUSE with IF=1) to the RDTSC that is its
  handler's first instruction, at the vector's IDT entry. Both sides fire the timer ahead
  of the deadline and wait for it before entering the guest: KVM by its
  `kvm.lapic_timer_advance_ns` (the value above; -1 is its default, a per-vCPU lead it tunes
  itself), lightpath by `timer=lead`, its default (docs/USAGE.md, "Boot options"). lightpath's
  `lead-off` column (`timer=exact`) in the tables above is the same latency with the
  host timer at the deadline.
- **A minimal VMM.** kvmrun has no in-kernel irqchip, no timers and one vCPU, except
  for `timer_irq`: that row comes from a second run of each guest (`timer=1`; only its
  `timer_irq` counts) with `kvmrun --irqchip`, KVM's in-kernel local APIC and its
  TSC-deadline timer, as QEMU uses them. The PM timer read is answered by a `switch` on the port and an
  RDTSC-based timer (like lightpath's); QEMU adds its memory-region dispatch on top. Nobody reads the port-0x80 ioeventfd, so no
  thread wakes up inside a measurement.
- **Correctness checks differ, measurements do not.** The guest runs with `host=kvm`, which
  only changes what it checks (KVM's signature, `-KVM_ENOSYS` from the null hypercall); the
  measured brackets are the same instructions.
{COMPARE_END}"""


def replace_block(text, block):
    """Puts block (COMPARE_BEGIN..COMPARE_END) into a BENCHMARKS.md text: in
    place of the old block, else before '## Analysis', else at the end."""
    a = text.find(COMPARE_BEGIN)
    b = text.find(COMPARE_END, a + 1) if a >= 0 else -1
    if a >= 0 and b >= 0:
        return text[:a] + block + text[b + len(COMPARE_END):]
    i = text.find("\n## Analysis\n")
    if i >= 0:
        return text[:i + 1] + block + "\n\n" + text[i + 1:]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def lightpath_spec(config, opts):
    """lightpath's spec= line from its bench log; it must say the spec= the
    pair asked for."""
    log = os.path.join(kvmboot.OUT, config + ".log")
    want = dict(w.split("=", 1) for w in opts.split()).get("spec", "on")
    for line in bench.serial_log.lines(bench.serial_log.read(log)):
        m = _LP_SPEC.match(line)
        if m:
            if not m.group(1).startswith("spec=%s:" % want):
                raise CompareError("%s: lightpath says '%s', expected spec=%s" % (config, m.group(1), want))
            return m.group(1)
    raise CompareError("%s: no 'lightpath: spec=' line in %s" % (config, os.path.relpath(log, ROOT)))


def run_pair(pair, args, prep, step):
    """Both sides of one pair: (lightpath results, KVM results, KVM env,
    lightpath's spec line). Raises BenchError, BootError or CompareError."""
    steps = 2 * len(PAIRS)
    opts = dict(bench.CONFIGS)[pair["config"]]
    print("compare: [%d/%d] pair %s: lightpath, %s (%s) ... "
          % (step, steps, pair["pair"], pair["config"], opts or "defaults"), end="", flush=True)
    try:
        lp, secs = bench.run_config(pair["config"], opts, args.n, args.timeout, kvmboot.OUT)
    except bench.BenchError:
        print("FAILED")
        raise
    print("ok (%.1f s)" % secs, flush=True)
    spec = lightpath_spec(pair["config"], opts)
    print("compare: pair %s: lightpath: %s" % (pair["pair"], spec), flush=True)

    append = (kvmboot.KERNEL_APPEND + " " + pair["append"]).strip()
    print("compare: [%d/%d] pair %s: KVM in Debian's Linux under the same QEMU, kernel "
          "command line '%s'" % (step + 1, steps, pair["pair"], append), flush=True)
    k = kvmboot.run(args.n, args.timeout, append=append, log_name=pair["pair"], prep=prep)
    kvm, env = parse_kvm(k["text"], n=args.n)
    check_pair(pair, env)
    print("compare: pair %s: KVM's Linux reports %s" % (pair["pair"], mitigation_text(
        {m: v for m, v in env["mitigations"].items() if v != "Not affected"}).replace("`", "")),
        flush=True)
    return lp, kvm, env, spec


def main():
    ap = argparse.ArgumentParser(description="lightpath vs KVM exit costs (make compare)")
    ap.add_argument("--n", type=int, default=1000, help="iterations per exit (default 1000)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per boot (default 900)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/BENCHMARKS.md")
    ap.add_argument("--parse-kvm", metavar="LOG", help="only parse a KVM serial log, print JSON")
    ap.add_argument("--n-expected", type=int, help="with --parse-kvm: require this n")
    args = ap.parse_args()

    if args.parse_kvm:
        text = bench.serial_log.read(args.parse_kvm)
        try:
            res, env = parse_kvm(text, n=args.n_expected)
        except CompareError as e:
            print("compare: %s: %s" % (args.parse_kvm, e), file=sys.stderr)
            return 1
        json.dump({"results": res, "env": env}, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0

    t_start = time.monotonic()
    os.makedirs(kvmboot.OUT, exist_ok=True)
    qemu = bench.qemu_version()
    print("lightpath compare: lightpath vs KVM, pairs %s, n=%d, %s, -cpu %s -icount %s"
          % (", ".join(p["pair"] for p in PAIRS), args.n, qemu, kvmboot.CPU, kvmboot.ICOUNT),
          flush=True)
    runs = []
    try:
        prep = kvmboot.prepare(args.n)
        for i, pair in enumerate(PAIRS):
            runs.append((pair,) + run_pair(pair, args, prep, 2 * i + 1))
    except (bench.BenchError, kvmboot.BootError, CompareError) as e:
        print("compare: error: %s" % e, file=sys.stderr)
        return 1
    # the late rows come from a second run on each side: both must have them
    for pair, lp, kvm, _, _ in runs:
        for e in LATE_EXITS:
            for side, res in (("lightpath", lp), ("KVM", kvm)):
                missing = [m for m in MODES if e not in res.get(m, {})]
                if missing:
                    print("compare: error: pair %s: no %s result from %s (mode %s)"
                          % (pair["pair"], e, side, ", ".join(missing)), file=sys.stderr)
                    return 1

    meta = {"qemu": qemu, "kernel_deb": "linux-image-%s %s" % (runs[0][3]["kernel"], prep["kernel_version"]),
            "n": args.n}
    doc = json_doc(runs, meta)
    outdir = os.path.join(ROOT, "build", "bench")
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "compare.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)

    for pair in PAIRS:
        print()
        print("pair %s (lightpath %s, KVM with %s): %s" % (
            pair["pair"], pair["config"], pair["kvm_says"], verdict(doc, pair)))
        print("%s, min of n=%d, flat 32-bit guest:" % (UNIT, args.n))
        print(table(pair_rows(doc, pair, "results"), bar=pair["bar"]))
        print("paged 64-bit guest:")
        print(table(pair_rows(doc, pair, "results_paged64"), bar=pair["bar"]))
    print()
    print("mitigations' cost (defaults minus unmitigated, flat 32-bit): KVM %s, lightpath %s"
          % (cost_range(doc, "results", "kvm"), cost_range(doc, "results", "lightpath")))
    print("KVM: Debian kernel %s, %s, kvm_amd %s (no NRIP: KVM decodes VMMCALL/CPUID/"
          "RDMSR/WRMSR to skip them)" % (doc["kvm_kernel"], doc["cpu_model"], doc["kvm_amd"]))
    print("(software path length under QEMU -icount shift=0, not cycles)")
    print("wrote %s" % os.path.relpath(path, ROOT))
    if not args.no_docs:
        md = os.path.join(ROOT, "docs", "BENCHMARKS.md")
        try:
            with open(md) as f:
                text = f.read()
        except OSError:
            text = "# lightpath exit benchmarks\n"
        text = replace_block(text, doc_section(doc, datetime.date.today().isoformat()))
        with open(md + ".tmp", "w") as f:
            f.write(text)
        os.replace(md + ".tmp", md)
        print("wrote %s" % os.path.relpath(md, ROOT))
    print("compare: done in %.0f s" % (time.monotonic() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
