#!/usr/bin/python3
"""lightpath against KVM on the same exits: `make compare`.

Runs lightpath's bench guests (build/guests/bench32.elf, bench64.elf) twice in
the same QEMU configuration (`-accel tcg -cpu EPYC,+svm
-icount shift=0,align=off,sleep=off`, where the guest's TSC advances by one
per executed instruction):
  1. under lightpath, all optimisations on (tools/bench.py's all-on config);
  2. under Linux KVM: Debian's kernel booted under the same QEMU, kvm_amd
     loaded, the guests run by tools/compare/kvmrun (tools/compare/kvmboot.py).
Prints one table (exit, lightpath, KVM, ratio), writes build/bench/compare.json
and the `<!-- compare -->` section of docs/BENCHMARKS.md.

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
    "kvm_amd": re.compile(r"^compare: init: kvm_amd (npt=\S* nrips=\S*)\s*$"),
}
_MITIGATION = re.compile(r"^compare: init: mitigation (\S+): (.*?)\s*$")
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
    "kvm_amd", "mitigations"}. Raises CompareError when a guest did not run
    with host=kvm, failed a check, ended with a non-zero status, or a line is
    missing."""
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
    env = {"mitigations": {}}
    for line in lines:
        for k, r in _ENV.items():
            m = r.match(line)
            if m and k not in env:
                env[k] = m.group(1)
        m = _MITIGATION.match(line)
        if m:
            env["mitigations"][m.group(1)] = m.group(2)
    for k in _ENV:
        if k not in env:
            raise CompareError("no '%s' line from /init" % k)
    return res, env


def rows(lp, kvm, mode):
    out = []
    for e in EXITS + tuple(x for x in LATE_EXITS if x in lp[mode] and x in kvm[mode]):
        out.append({"exit": e, "lightpath": lp[mode][e]["min"], "kvm": kvm[mode][e]["min"]})
    return out


def ratio(r):
    return "%.1fx" % (r["kvm"] / r["lightpath"]) if r["lightpath"] else "-"


def table(rs, fmt="text"):
    head = ("exit", "lightpath", "KVM", "KVM/lightpath")
    body = [(r["exit"], str(r["lightpath"]), str(r["kvm"]), ratio(r)) for r in rs]
    if fmt == "md":
        out = ["| " + " | ".join(head) + " |", "|---|---:|---:|---:|"]
        return "\n".join(out + ["| " + " | ".join(b) + " |" for b in body])
    ws = [max(len(x[i]) for x in [head] + body) for i in range(4)]
    fmtrow = lambda x: "  ".join([x[0].ljust(ws[0])] + [c.rjust(w) for c, w in zip(x[1:], ws[1:])])
    return "\n".join([fmtrow(head)] + [fmtrow(b) for b in body])


def json_doc(lp, kvm, env, meta):
    return {
        "unit": UNIT,
        "guest": "flat32",
        "results": rows(lp, kvm, "flat32"),
        "results_paged64": rows(lp, kvm, "paged64"),
        "lightpath_config": "all-on",
        "qemu": meta["qemu"],
        "qemu_args": "-accel tcg -cpu %s -icount %s" % (kvmboot.CPU, kvmboot.ICOUNT),
        "cpu_model": env["cpu_model"],
        "kvm_kernel": env["kernel"],
        "kvm_kernel_package": meta["kernel_deb"],
        "kvm_amd": env["kvm_amd"],
        "mitigations": {k: v for k, v in env["mitigations"].items() if v != "Not affected"},
        "n": meta["n"],
    }


def doc_section(doc, date):
    """The `<!-- compare -->` block of docs/BENCHMARKS.md."""
    mit = doc["mitigations"]
    mit_text = "; ".join("`%s` (%s)" % (k, re.sub(r"^Mitigation: ", "", v))
                         for k, v in sorted(mit.items())) or "none reported"
    paths = "\n".join("| %s | %s |" % (r["exit"], KVM_PATH[r["exit"]]) for r in doc["results"])
    return f"""{COMPARE_BEGIN}
## lightpath vs KVM

`make compare` runs the same bench guests, unchanged, under lightpath (all optimisations on)
and under Linux KVM, in the same QEMU configuration (`{doc["qemu_args"]}`), and
reports the same metric: **{UNIT}**, the minimum over n={doc["n"]} RDTSC-bracketed round
trips, bracket included (the empty bracket is 2). KVM runs inside Debian's kernel booted
under that QEMU, with `tools/compare/kvmrun` as its user space: a static /dev/kvm VMM just
big enough for the bench guest, starting it as lightpath does (multiboot, 32-bit protected
mode) and handling its exits where a real KVM-based VMM would:

| exit | KVM's path |
|---|---|
{paths}

Flat 32-bit guest (bench32, paging off):

{table(doc["results"], "md")}

Paged 64-bit guest (bench64, long mode, paging on):

{table(doc["results_paged64"], "md")}

Measured on {date} with {doc["qemu"]}, CPU model `{kvmboot.CPU}` ("{doc["cpu_model"]}"),
KVM from Debian's kernel {doc["kvm_kernel"]} (`{doc["kvm_kernel_package"]}`), kvm_amd
{doc["kvm_amd"]}. The Linux boot runs with a fixed RNG seed and RTC (`-seed 1 -rtc
base=...,clock=vm`), so KVM's figures, like lightpath's, are the same on every run.
Reproduce with `make compare` (under a minute here once the 70 MB kernel package is
downloaded; results also in `build/bench/compare.json`).

Read these numbers with their caveats:
- **No NRIP save under TCG.** QEMU's SVM has no next-RIP save, so after VMMCALL, CPUID,
  RDMSR and WRMSR KVM finds the next RIP by decoding the instruction with its emulator
  (`kvm_emulate_instruction(EMULTYPE_SKIP)`). On real AMD hardware, which has NRIP save,
  it would not, so those four rows overstate KVM's path by that decode. In the
  paged 64-bit guest the emulator also walks the guest page tables to fetch the
  instruction, which is most of the difference between the two tables. Port I/O takes its
  next RIP from EXITINFO2 and never goes through the emulator: the `pio_*` rows are like
  for like. lightpath lacks NRIP here too; it checks the bytes at RIP through a cached
  translation of the code page.
- **Instructions, not cycles.** Every instruction counts 1 (VMRUN, WRMSR and a syscall
  included) and the world switch counts 0. On silicon, VMRUN/#VMEXIT, VMLOAD/VMSAVE and
  MSR writes cost hundreds of cycles each; this metric shows software path length only.
- **The kernel and the CPU model.** Debian's kernel {doc["kvm_kernel"]} on QEMU's
  "{doc["cpu_model"]}" model reports these mitigations: {mit_text}. The retbleed and SRSO
  return thunks make every kernel `ret` longer: booting the same kernel with
  `retbleed=off spec_rstack_overflow=off` (`tools/compare/kvmboot.py --append ...`)
  measured 160 to 370 fewer instructions per row here (about 240 on the hypercall), and
  `-cpu qemu64,+svm,+npt`, which the kernel does not consider affected, came within a dozen
  instructions of that.
- **Cross-check.** A hand-written runner measured, under the same QEMU with `-cpu
  qemu64,+svm,+npt` and a paged 64-bit guest, 3047 (VMMCALL), 2813 (CPUID) and 1458 (port
  write to an ioeventfd); `tools/compare/kvmboot.py --cpu qemu64,+svm,+npt` gives 3046, 2809
  and 1453 for bench64. The EPYC flat 32-bit figures above differ from those by the two
  effects described above: the mitigations (160 to 370 more) and the emulator's guest page
  walk, which a flat guest does not need (460 to 570 fewer on the four decoded rows).
- **timer_irq is a latency**, not a round trip: from the TSC-deadline expiry the guest armed
  (x2APIC, IA32_TSC_DEADLINE = RDTSC + 4000, then PAUSE with IF=1) to the RDTSC that is its
  handler's first instruction, at the vector's IDT entry.
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
    print("lightpath compare: lightpath vs KVM, n=%d, %s, -cpu %s -icount %s"
          % (args.n, qemu, kvmboot.CPU, kvmboot.ICOUNT), flush=True)

    print("compare: [1/2] lightpath, all optimisations on ... ", end="", flush=True)
    try:
        lp, secs = bench.run_config("all-on", "", args.n, args.timeout, kvmboot.OUT)
    except bench.BenchError as e:
        print("FAILED")
        print("compare: error: %s" % e, file=sys.stderr)
        return 1
    print("ok (%.1f s)" % secs, flush=True)

    print("compare: [2/2] KVM in Debian's Linux under the same QEMU", flush=True)
    try:
        k = kvmboot.run(args.n, args.timeout)
        kvm, env = parse_kvm(k["text"], n=args.n)
    except (kvmboot.BootError, CompareError) as e:
        print("compare: error: %s" % e, file=sys.stderr)
        return 1
    for e in LATE_EXITS:
        for side, res in (("lightpath", lp), ("KVM", kvm)):
            missing = [m for m in MODES if e not in res.get(m, {})]
            if missing:
                print("compare: error: no %s result from %s (mode %s)" % (e, side, ", ".join(missing)),
                      file=sys.stderr)
                return 1

    meta = {"qemu": qemu, "kernel_deb": "linux-image-%s %s" % (env["kernel"], k["kernel_version"]),
            "n": args.n}
    doc = json_doc(lp, kvm, env, meta)
    outdir = os.path.join(ROOT, "build", "bench")
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "compare.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)

    print()
    print("%s, min of n=%d, flat 32-bit guest:" % (UNIT, args.n))
    print(table(doc["results"]))
    print()
    print("paged 64-bit guest:")
    print(table(doc["results_paged64"]))
    print()
    print("KVM: Debian kernel %s, %s, kvm_amd %s (no NRIP: KVM decodes VMMCALL/CPUID/"
          "RDMSR/WRMSR to skip them)" % (env["kernel"], env["cpu_model"], env["kvm_amd"]))
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
