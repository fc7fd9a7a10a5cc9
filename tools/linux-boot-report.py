#!/usr/bin/python3
"""Linux boot under lightpath vs the same kernel straight under QEMU
(`make linux-report`; not part of `make test`).

    tools/linux-boot-report.py [--backend svm|vmx] [--runs N] [--no-docs] [--timeout S]

Boots lightpath's Linux guest (tools/linux/build.sh: Debian's kernel, the
busybox initramfs, build/linux/linux.cfg) to the shell prompt and powers it
off, N times (default 3) under lightpath and N times directly under the same
QEMU (-kernel/-initrd/-append with linux.cfg's command line and memory), runs
alternating. Both: TCG, -cpu EPYC,+svm, no -icount. Measures the wall time to
the shell prompt and to QEMU's exit, and reads lightpath's exit statistics
(printed when the VM ends: boot, prompt and power-off). Writes
build/bench/linux-boot.json and the section between <!-- linux --> and
<!-- /linux --> in docs/BENCHMARKS.md (`make bench` keeps it). Serial logs:
build/bench/linux-boot-{lightpath,direct}-N.log.

--backend vmx (`make linux-report BACKEND=vmx`): the same guest on the Intel
VT-x image under Bochs (tools/lp-bochs, as the linux-vmx test), N times
(default 1: a boot takes minutes), with a progress line every 10 s; no
direct boot (lp-bochs boots only lightpath's image). Writes
build/bench/linux-boot-vmx.json and the <!-- linux-vmx --> section, right
after the <!-- linux --> one. Serial logs: build/bench/linux-boot-bochs-N.log.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools", "linux"))
import lpguest  # noqa: E402
import bench  # noqa: E402  (tools/bench.py, on the path through lpguest: bochs_version)

OUT = os.path.join(ROOT, "build", "bench")
DOC = os.path.join(ROOT, "docs", "BENCHMARKS.md")
BEGIN, END = "<!-- linux -->", "<!-- /linux -->"
VMX_BEGIN, VMX_END = "<!-- linux-vmx -->", "<!-- /linux-vmx -->"
# What ran the boot, as the messages name it.
RUNNER = {"lightpath": "QEMU", "direct": "QEMU", "bochs": "lp-bochs"}
# Per backend: the modes booted in turn (the first is lightpath's, whose exit
# statistics the section shows), the default runs and prompt timeout, and the
# extra seconds the emulator may live after the prompt (0: the prompt timeout
# is also the emulator's, as the SVM report has always run it).
BACKENDS = {
    "svm": {"modes": ("lightpath", "direct"), "runs": 3, "timeout": 300, "slack": 0,
            "json": "linux-boot.json", "progress": False},
    # the linux-vmx test's timeouts: the prompt after ~150-170 s, poweroff after it
    "vmx": {"modes": ("bochs",), "runs": 1, "timeout": 600, "slack": 300,
            "json": "linux-boot-vmx.json", "progress": True},
}
# Why the VT-x section has no wall-time ratio.
VMX_NO_DIRECT = ("tools/lp-bochs boots only lightpath's multiboot image (GRUB `multiboot` with "
                 "the guest as modules) and takes the run's status from lightpath's port-0xe9 "
                 "line; the kernel straight under Bochs needs another boot path (GRUB's "
                 "`linux`/`initrd` loader, with no hypervisor to report a status)")


def say(msg):
    print("linux-report: " + msg, flush=True)


def qemu_version():
    try:
        out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                             text=True).stdout
        m = re.search(r"version (\S+)", out)
        return "QEMU " + m.group(1) if m else "QEMU (unknown version)"
    except OSError:
        return "QEMU (not found)"


def kernel_package():
    """'linux-image-X version' of the .deb build.sh unpacked, or None."""
    try:
        with open(os.path.join(lpguest.LINUX_DIR, "root", ".unpacked")) as f:
            for name in f.read().split():
                if name.startswith("linux-image-"):
                    pkg, ver = name.split("_")[:2]
                    return "%s %s" % (pkg, ver.replace("%3a", ":"))
    except OSError:
        pass
    return None


def bochsrc_line(log, key):
    """The `key:` line of the bochsrc lp-bochs wrote for this boot (it names
    the run after the log), without the key, or None."""
    name = os.path.splitext(os.path.basename(log))[0]
    try:
        with open(os.path.join(ROOT, "build", "bochs", name, "bochsrc")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def one_boot(mode, i, timeout, slack=0, progress=False):
    log = os.path.join(OUT, "linux-boot-%s-%d.log" % (mode, i))
    note = (lambda m: say("%s run %d: %s" % (mode, i, m.strip()))) if progress else (lambda m: None)
    g = lpguest.Guest(mode, log, timeout=timeout + slack, say=note)
    note("starting: " + g.command_line())
    g.start()
    try:
        g.boot_to_shell(timeout)
        note("[%5.1f s] poweroff; waiting for %s to exit" % (g.elapsed(), RUNNER[mode]))
        rc = g.poweroff()
    except lpguest.GuestError as e:
        g.kill()
        # the runner's own complaint (lp-bochs: no grub-mkrescue...), if it said one
        err = [l for l in g.stderr_text().splitlines() if l.strip()]
        raise lpguest.GuestError("%s run %d: %s%s (serial log %s)"
                                 % (mode, i, e, "; stderr: " + err[-1] if err else "",
                                    lpguest.rel(log)))
    r = {"prompt_s": round(g.t_prompt, 2), "init_s": round(g.t_init, 2),
         "total_s": round(g.t_end, 2), "rc": rc, "log": lpguest.rel(log)}
    if mode != "direct":
        # lightpath's own line, at a line start (guest lines start "[vm0] ")
        ok = "lightpath: vm0: ended with status 0 (ACPI power-off)" in lpguest.serial_log.lines(g.text)
        if rc != 1 or not ok:
            raise lpguest.GuestError("%s run %d: %s exit %d, %s (serial log %s)"
                                     % (mode, i, RUNNER[mode], rc,
                                        "powered off" if ok else "no ACPI power-off line",
                                        lpguest.rel(log)))
        rows, table = lpguest.exit_stats(g.text)
        if not rows or "total" not in rows:
            raise lpguest.GuestError("%s run %d: no exit statistics table (serial log %s)"
                                     % (mode, i, lpguest.rel(log)))
        r["exits"] = {k: {"exits": v[0], "light": v[1], "heavy": v[2]} for k, v in rows.items()}
        r["light_share"] = round(lpguest.light_share(rows), 2)
        r["table"] = table
        r["cmd"] = g.command_line()
    else:
        if rc != 0:
            raise lpguest.GuestError("direct run %d: QEMU exit %d after poweroff (serial log %s)"
                                     % (i, rc, lpguest.rel(log)))
        r["cmd"] = g.command_line()
    if mode == "bochs":
        # the pty's name changes from run to run
        r["cmd"] = re.sub(r"(--serial-tty )\S+", r"\1PTY", r["cmd"])
        r["bochs_cpu"] = bochsrc_line(log, "cpu")
        r["bochs_clock"] = bochsrc_line(log, "clock")
        r["bochs_megs"] = bochsrc_line(log, "megs")
        # the kernel's own clock at its last line: under Bochs (sync=none)
        # it counts instructions, not the wall time measured here
        m = re.findall(r"\[\s*(\d+\.\d+)\] reboot: Power down", g.text)
        r["guest_uptime_s"] = float(m[-1]) if m else None
    say("%-9s run %d: shell prompt after %5.1f s, %s exit %d after %5.1f s%s"
        % (mode, i, g.t_prompt, RUNNER[mode], rc, g.t_end,
           ", %d exits, light %.1f%%" % (r["exits"]["total"]["exits"], r["light_share"])
           if mode != "direct" else ""))
    return r


def fmt_runs(rs, key):
    vals = [r[key] for r in rs]
    return "%s (median **%.1f**)" % (", ".join("%.1f" % v for v in vals), statistics.median(vals))


def exit_mix(lp):
    """The exit-mix table of run 1 (markdown lines, by exits) and its note
    lines (denied, emulated, clock), shared by both backends' sections."""
    first = lp[0]
    rows = first["exits"]
    total = rows["total"]["exits"]
    table = ["| reason | exits | share | light | heavy |", "|---|---:|---:|---:|---:|"]
    for k, v in sorted(((k, v) for k, v in rows.items() if k != "total"),
                       key=lambda kv: -kv[1]["exits"]):
        table.append("| %s | %d | %.1f%% | %d | %d |" % (k, v["exits"], 100.0 * v["exits"] / total,
                                                        v["light"], v["heavy"]))
    t = rows["total"]
    table.append("| **total** | **%d** | 100%% | %d | %d |" % (total, t["light"], t["heavy"]))
    extra = [l.strip() for l in first["table"] if re.match(r"^\s+(denied|emulated|clock):", l)]
    return "\n".join(table), "; ".join(extra)


def light_summary(lp, runs):
    """The section's light-share sentence (the goal is 97%)."""
    rows = lp[0]["exits"]
    total = rows["total"]["exits"]
    shares = [r["light_share"] for r in lp]
    totals = [r["exits"]["total"]["exits"] for r in lp]
    goal = "meets" if min(shares) >= 97.0 else "misses"
    over = (f"({min(shares):.1f}-{max(shares):.1f}% over the {runs} runs, {min(totals)}-{max(totals)}\nexits)"
            if runs > 1 else f"({total} exits)")
    return (f"**Light share: {rows['total']['light'] * 100.0 / total:.1f}%** in run 1\n"
            f"{over}; the goal is at least 97%, which this boot {goal}.")


def section(doc):
    lp, dr = doc["lightpath"], doc["direct"]
    ratio_p = doc["ratio_prompt"]
    ratio_t = doc["ratio_total"]
    first = lp[0]
    table, extra = exit_mix(lp)
    return f"""{BEGIN}
## Linux boot to a shell (make linux-report)

Debian's kernel ({doc['kernel_package'] or 'linux-image-amd64'}, unpatched) with lightpath's
busybox initramfs, kernel command line `{doc['cmdline']}`, {doc['memory_mb']} MiB, booted to
the busybox shell prompt and powered off with `poweroff` (ACPI S5), {doc['runs']} times each,
alternating:

- **lightpath**: lightpath (all optimisations on) runs the VM described by
  `build/linux/linux.cfg`: `{first['cmd']}`;
- **direct**: the same kernel, initramfs and command line straight under the same QEMU:
  `{dr[0]['cmd']}`.

Both under {doc['qemu']} TCG (`-cpu {lpguest.CPU}`, no `-icount`), on a host with
{doc['host_cpus']} CPUs. These are **wall-clock seconds of software emulation**: under
lightpath, QEMU also emulates SVM, every VM exit and lightpath itself, so the ratio is the
cost of running Linux under lightpath *in TCG*, not what it would cost on AMD hardware.

| | to the shell prompt (s) | to QEMU's exit (s) |
|---|---|---|
| lightpath | {fmt_runs(lp, 'prompt_s')} | {fmt_runs(lp, 'total_s')} |
| direct | {fmt_runs(dr, 'prompt_s')} | {fmt_runs(dr, 'total_s')} |
| **ratio of the medians** | **{ratio_p:.2f}** | **{ratio_t:.2f}** |

### Exits during the boot, by reason (lightpath run 1)

From lightpath's exit statistics, printed when the VM ends: the boot, the idle prompt and
the power-off. Light = handled in the light loop next to VMRUN; heavy = the full world switch.

{table}

{extra}.

The command line has no `quiet`: the kernel's messages are what `make run` shows while Linux
comes up, and every character of them costs port-I/O exits on the UART (a THR write and LSR
reads), most of the `io` row.

{light_summary(lp, doc['runs'])}

Measured on {doc['date']}. Reproduce with `make linux-report` (results also in
`build/bench/linux-boot.json`, serial logs in `build/bench/linux-boot-*.log`).
{END}"""


def section_vmx(doc):
    lp = doc["lightpath"]
    first = lp[0]
    table, extra = exit_mix(lp)
    runs = "once" if doc["runs"] == 1 else "%d times" % doc["runs"]
    uptime = ("; the kernel's clock read %.2f s at `reboot: Power down`" % first["guest_uptime_s"]
              if first.get("guest_uptime_s") is not None else "")
    no_ratio = textwrap.fill("**Ratio to a direct boot: not measured.** %s. With `clock: sync=none` "
                             "Bochs' clock counts executed instructions, not wall time%s."
                             % (doc["ratio_not_measured"], uptime), 92)
    return f"""{VMX_BEGIN}
## Linux boot to a shell on VT-x under Bochs (make linux-report BACKEND=vmx)

The same guest as above (Debian's kernel {doc['kernel_package'] or 'linux-image-amd64'},
unpatched, lightpath's busybox initramfs, kernel command line `{doc['cmdline']}`,
{doc['memory_mb']} MiB), booted to the busybox shell prompt and powered off with `poweroff`
(ACPI S5), {runs}, by lightpath's Intel VT-x image (`build/lightpath-vmx.elf`, all
optimisations on) under {doc['bochs']}, from a GRUB ISO made by tools/lp-bochs, the VM's
console on COM1 through a pty (PTY below) that the report reads and types into, as in the
`linux-vmx` test: `{first['cmd']}`. Bochs' configuration:
`cpu: {first['bochs_cpu']}`, `clock: {first['bochs_clock']}`, `megs: {first['bochs_megs']}`.

Wall-clock seconds of Bochs' emulation on a host with {doc['host_cpus']} CPUs (Bochs emulates
VT-x, every VM exit and lightpath itself):

| | to the shell prompt (s) | to lp-bochs' exit (s) |
|---|---|---|
| lightpath (VT-x) under Bochs | {fmt_runs(lp, 'prompt_s')} | {fmt_runs(lp, 'total_s')} |

{no_ratio}

### Exits during the boot, by reason (VT-x under Bochs, run 1)

From lightpath's exit statistics, printed when the VM ends: the boot, the idle prompt and
the power-off; the same reasons and columns as the SVM table above. Light = handled in the
light loop next to VMRESUME; heavy = the full world switch.

{table}

{extra}.

{light_summary(lp, doc['runs'])}

Measured on {doc['date']}. Reproduce with `make linux-report BACKEND=vmx` (results also in
`build/bench/linux-boot-vmx.json`, serial logs in `build/bench/linux-boot-bochs-*.log`).
{VMX_END}"""


def replace_block(text, block, begin=BEGIN, end=END, after=None, before=None):
    """block in place of the old begin..end block, else right after the
    marker `after` or before the marker `before` (the two Linux sections
    stay together, SVM first), else before '## Analysis', else at the end."""
    a = text.find(begin)
    b = text.find(end, a + 1) if a >= 0 else -1
    if a >= 0 and b >= 0:
        return text[:a] + block + text[b + len(end):]
    i = text.find(after) if after else -1
    if i >= 0:
        i += len(after)
        return text[:i] + "\n\n" + block + text[i:]
    i = text.find(before) if before else -1
    if i >= 0:
        return text[:i] + block + "\n\n" + text[i:]
    i = text.find("\n## Analysis\n")
    if i >= 0:
        return text[:i + 1] + block + "\n\n" + text[i + 1:]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def check_bochs():
    """One clear error for what lp-bochs would only complain about in its
    stderr file, after the boot was started."""
    bochs = os.environ.get("LP_BOCHS", "bochs")
    if not shutil.which(bochs):
        raise lpguest.GuestError("%s not found: the VT-x report runs under Bochs (run 'make deps')"
                                 % bochs)
    if not os.path.exists(lpguest.VMX_IMAGE):
        raise lpguest.GuestError("no %s (run 'make all')" % lpguest.rel(lpguest.VMX_IMAGE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="svm",
                    help="svm (lightpath under QEMU and QEMU direct) or vmx (the VT-x image "
                    "under Bochs)")
    ap.add_argument("--runs", type=int, help="boots per mode (default 3; vmx: 1)")
    ap.add_argument("--timeout", type=int, help="seconds to the prompt, per boot (default 300; vmx: 600)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/BENCHMARKS.md")
    args = ap.parse_args()
    if args.backend not in BACKENDS:
        print("linux-report: error: BACKEND=%s: the Linux report runs on %s only"
              % (args.backend, " and ".join(BACKENDS)), file=sys.stderr)
        return 2
    be = BACKENDS[args.backend]
    runs = args.runs or be["runs"]
    timeout = args.timeout or be["timeout"]
    os.makedirs(OUT, exist_ok=True)
    try:
        if args.backend == "vmx":
            check_bochs()
        say("building the guest (tools/linux/build.sh)")
        lpguest.build_guest(quiet=True)
        if args.backend == "svm" and not os.path.exists(os.path.join(ROOT, "build", "lightpath.elf")):
            raise lpguest.GuestError("no build/lightpath.elf (run 'make all')")
        cfg = lpguest.read_vmcfg(lpguest.CFG)
        if args.backend == "vmx":
            say("%d boot%s of the VT-x image under Bochs to the shell and back; each takes "
                "minutes (~150 s to the prompt)" % (runs, "s" if runs > 1 else ""))
        else:
            say("%d boots to the shell and back per mode, alternating; each takes tens of seconds"
                % runs)
        boots = {m: [] for m in be["modes"]}
        for i in range(1, runs + 1):
            for m in be["modes"]:
                boots[m].append(one_boot(m, i, timeout, be["slack"], be["progress"]))
    except lpguest.GuestError as e:
        print("linux-report: error: %s" % e, file=sys.stderr)
        return 1
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
    lp = boots[be["modes"][0]]
    doc = {"date": datetime.date.today().isoformat()}
    if args.backend == "svm":
        doc["qemu"] = qemu_version()
    doc.update({
        "host_cpus": os.cpu_count(),
        "kernel_package": kernel_package(),
        "cmdline": cfg.get("cmdline", ""),
        "memory_mb": int(cfg.get("memory", "256")),
        "runs": runs,
        "lightpath": lp,
    })
    if args.backend == "vmx":
        doc.update({"backend": "vmx", "bochs": bench.bochs_version(), "direct": None,
                    "ratio_not_measured": VMX_NO_DIRECT})
    else:
        dr = boots["direct"]
        doc.update({"direct": dr,
                    "ratio_prompt": round(med(lp, "prompt_s") / med(dr, "prompt_s"), 3),
                    "ratio_total": round(med(lp, "total_s") / med(dr, "total_s"), 3)})
    path = os.path.join(OUT, be["json"])
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    if args.backend == "vmx":
        say("to the shell prompt: median %.1f s; to lp-bochs' exit: median %.1f s (Bochs, VT-x); "
            "no direct boot to compare with" % (med(lp, "prompt_s"), med(lp, "total_s")))
    else:
        say("to the shell prompt: lightpath median %.1f s, direct median %.1f s, ratio %.2f"
            % (med(lp, "prompt_s"), med(dr, "prompt_s"), doc["ratio_prompt"]))
        say("to QEMU's exit:      lightpath median %.1f s, direct median %.1f s, ratio %.2f"
            % (med(lp, "total_s"), med(dr, "total_s"), doc["ratio_total"]))
    say("exit statistics of %s run 1 (light share %.1f%%, goal >= 97%%):"
        % ("lightpath" if args.backend == "svm" else "the VT-x", lp[0]["light_share"]))
    for line in lp[0]["table"]:
        print("  " + line)
    say("wrote %s" % lpguest.rel(path))
    if not args.no_docs:
        try:
            with open(DOC) as f:
                text = f.read()
        except OSError:
            text = "# lightpath exit benchmarks\n"
        if args.backend == "vmx":
            text = replace_block(text, section_vmx(doc), VMX_BEGIN, VMX_END, after=END)
        else:
            text = replace_block(text, section(doc), before=VMX_BEGIN)
        with open(DOC, "w") as f:
            f.write(text)
        say("updated the %s section of docs/BENCHMARKS.md"
            % (VMX_BEGIN if args.backend == "vmx" else BEGIN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
