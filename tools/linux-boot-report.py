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

After the timed runs, one more boot (not timed) measures where the exits come
from: lightpath under QEMU -icount (the TSC counts instructions) with
stats=all and the kernel command line plus nokaslr, then a direct boot that
looks the sites' RIPs up in the kernel's /proc/kallsyms (Debian's System.map
is a placeholder). The cost per reason, the hypervisor's share of the
instructions and the top sites go to the JSON's "cost" key and the section's
"Where the exits come from"; the exit mix and the cost histogram are drawn
with matplotlib (tools/plots.py) as docs/img/linux-boot-{mix,cost}.svg.
Serial logs: build/bench/linux-boot-{icount-1,symbols}.log.

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
import plots  # noqa: E402  (tools/plots.py: the pictures' common part)

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


def one_boot(mode, i, timeout, slack=0, progress=False, tag=None, **guest):
    """One boot to the shell and back; tag names its log and messages
    (default: the mode), guest: more of lpguest.Guest's options."""
    tag = tag or mode
    log = os.path.join(OUT, "linux-boot-%s-%d.log" % (tag, i))
    note = (lambda m: say("%s run %d: %s" % (tag, i, m.strip()))) if progress else (lambda m: None)
    g = lpguest.Guest(mode, log, timeout=timeout + slack, say=note, **guest)
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
                                 % (tag, i, e, "; stderr: " + err[-1] if err else "",
                                    lpguest.rel(log)))
    r = {"prompt_s": round(g.t_prompt, 2), "init_s": round(g.t_init, 2),
         "total_s": round(g.t_end, 2), "rc": rc, "log": lpguest.rel(log)}
    if mode != "direct":
        # lightpath's own line, at a line start (guest lines start "[vm0] ")
        ok = "lightpath: vm0: ended with status 0 (ACPI power-off)" in lpguest.serial_log.lines(g.text)
        if rc != 1 or not ok:
            raise lpguest.GuestError("%s run %d: %s exit %d, %s (serial log %s)"
                                     % (tag, i, RUNNER[mode], rc,
                                        "powered off" if ok else "no ACPI power-off line",
                                        lpguest.rel(log)))
        rows, table = lpguest.exit_stats(g.text)
        if not rows or "total" not in rows:
            raise lpguest.GuestError("%s run %d: no exit statistics table (serial log %s)"
                                     % (tag, i, lpguest.rel(log)))
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
        % (tag, i, g.t_prompt, RUNNER[mode], rc, g.t_end,
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


# ------------------------------------------------- where the exits come from

# The extra boot that measures the exits' cost (SVM only): under QEMU -icount
# the TSC counts instructions, guest and hypervisor alike, so stats=all's
# ticks are instructions; nokaslr puts the kernel at its link addresses.
COST_OPTS = "stats=all"
COST_CMDLINE = "nokaslr"
COST_TIMEOUT = 600
# __START_KERNEL_map: RIPs from here up are the kernel's text.
KERNEL_TEXT = 0xffffffff80000000
# Debian's System.map is a placeholder ("The real System.map is in the
# linux-image-<version>-dbg package"), so the symbols come from the kernel's
# own /proc/kallsyms, in a direct boot with nokaslr (the same addresses),
# looked up in the guest by awk: the nearest text symbol at or below each
# RIP. Addresses are 16 hex digits there, so comparing strings compares them.
KALLSYMS_AWK = ("awk -v t='%s' 'BEGIN{n=split(t,T,\" \")} $2~/^[tT]$/{for(i=1;i<=n;i++)"
                "if($1<=T[i]&&$1>B[i]){B[i]=$1;N[i]=$3}} "
                "END{for(i=1;i<=n;i++)print \"sym\",T[i],B[i],N[i]}' /proc/kallsyms")
SITE_WHERE_USER = "user space (busybox, stripped)"
SITES_PER_LOOKUP = 8   # RIPs per awk command line (the shell's line editor)


def kernel_symbols(rips, timeout):
    """{rip: 'symbol+0xoff'} for the kernel RIPs, from a direct boot."""
    log = os.path.join(OUT, "linux-boot-symbols.log")
    note = lambda m: say("symbols: " + m.strip())  # noqa: E731
    g = lpguest.Guest("direct", log, cmdline_extra=COST_CMDLINE, timeout=timeout, say=note)
    note("looking up %d kernel RIPs in /proc/kallsyms: %s" % (len(rips), g.command_line()))
    g.start()
    out = {}
    try:
        g.boot_to_shell(timeout)
        rips = sorted(rips)
        for k in range(0, len(rips), SITES_PER_LOOKUP):
            want = " ".join("%016x" % r for r in rips[k:k + SITES_PER_LOOKUP])
            note("[%5.1f s] RIPs %d-%d of %d" % (g.elapsed(), k + 1,
                                                min(k + SITES_PER_LOOKUP, len(rips)), len(rips)))
            text, rc = g.run(KALLSYMS_AWK % want, timeout=120)
            for line in text.splitlines():
                f = line.split()
                if rc != 0 or len(f) != 4 or f[0] != "sym":
                    continue
                rip, base = int(f[1], 16), int(f[2], 16)
                if base == 0:   # kptr_restrict hides the addresses
                    raise lpguest.GuestError("/proc/kallsyms shows no addresses")
                out[rip] = "%s+0x%x" % (f[3], rip - base)
        g.poweroff()
    except lpguest.GuestError as e:
        g.kill()
        raise lpguest.GuestError("%s (serial log %s)" % (e, lpguest.rel(log)))
    return out


def cost_run():
    """The -icount boot with stats=all: the cost per reason, the total and
    the sites, as the JSON's "cost" key. {"not_measured": why} when the
    boot fails; sites without symbols (and why) when their lookup does."""
    say("one more boot for the exits' cost: lightpath under QEMU -icount (instructions), "
        "%s, kernel command line + %s" % (COST_OPTS, COST_CMDLINE))
    # Untimed, so a boot that fails (once a typed 'poweroff' was lost
    # against busybox's cursor-position query under -icount) is made again
    # once; both attempts' errors are printed.
    for attempt in (1, 2):
        try:
            r = one_boot("lightpath", attempt, COST_TIMEOUT, progress=True, tag="icount",
                         icount=True, lp_opts=COST_OPTS, cmdline_extra=COST_CMDLINE)
            with open(os.path.join(ROOT, r["log"])) as f:
                cost, total, sites = lpguest.exit_cost(f.read())
            if not cost or not total:
                raise lpguest.GuestError("no cost table after the exit statistics (serial log %s)"
                                         % r["log"])
            break
        except lpguest.GuestError as e:
            print("linux-report: error: the exits' cost, attempt %d of 2: %s" % (attempt, e),
                  file=sys.stderr)
            if attempt == 2:
                return {"not_measured": str(e)}
    spent, ran = total
    # A blocking HLT waits inside its exit for the guest's next interrupt;
    # under -icount the halted time advances the TSC without instructions.
    # Its ticks (exits x mean) are taken out of both sides.
    hlt = cost["hlt"]["exits"] * cost["hlt"]["mean"] if "hlt" in cost else 0
    doc = {
        "cmd": r["cmd"], "log": r["log"], "prompt_s": r["prompt_s"], "total_s": r["total_s"],
        "exits": r["exits"]["total"]["exits"], "clock": clock_line(r["table"]),
        "unit": "instructions (QEMU -icount shift=0: the TSC counts instructions)",
        "reasons": {k: dict(v, hist={str(b): n for b, n in v["hist"].items()})
                    for k, v in cost.items()},
        "handling": spent, "since_start": ran, "hlt_ticks": hlt,
        "share_pct": round(100.0 * spent / ran, 2),
        "share_without_hlt_pct": round(100.0 * (spent - hlt) / (ran - hlt), 2),
    }
    kernel = {rip for rows in sites.values() for rip, _, _ in rows if rip >= KERNEL_TEXT}
    try:
        syms = kernel_symbols(kernel, 300) if kernel else {}
    except lpguest.GuestError as e:
        print("linux-report: error: the sites' symbols: %s" % e, file=sys.stderr)
        syms, doc["symbols_not_found"] = {}, str(e)
    doc["sites"] = {k: [{"rip": "0x%x" % rip, "exits": n, "err": err,
                         "where": syms.get(rip) or (SITE_WHERE_USER if rip < KERNEL_TEXT else None)}
                        for rip, n, err in rows] for k, rows in sites.items()}
    return doc


DD_MIB = 64
# Ctrl-]'s last line (vmm/console_input.c, dump_interrupt_state)
SO_FAR = (r"lightpath: vm0: so far (\d+) exits \((\d+) heavy\), (\d+) disk reads \((\d+) KiB\), "
          r"host TSC (\d+)")


def dd_run(timeout=COST_TIMEOUT):
    """A dd of DD_MIB MiB from a read-only disk in the Linux guest under
    lightpath and QEMU -icount: Ctrl-] before and after it prints
    the VM's exits, disk reads and the host TSC (instructions, both guest and
    hypervisor; and the time a halted vCPU waits), so the command's own
    exits and instructions per request are the differences. {"not_measured":
    why} when the boot fails."""
    say("one more boot for the disk: lightpath under QEMU -icount, a %d MiB read-only disk, "
        "dd if=/dev/vda bs=1M count=%d bracketed by Ctrl-]" % (DD_MIB + 1, DD_MIB))
    img = os.path.join(OUT, "linux-dd.img")
    with open(img, "wb") as f:
        f.truncate((DD_MIB + 1) << 20)
    cfg = dict(lpguest.read_vmcfg(lpguest.CFG), name="linux-dd", disk="linux-dd.img,ro")
    cfg_path = os.path.join(OUT, "linux-dd.cfg")
    lpguest.write_vmcfg(cfg_path, cfg, "written by tools/linux-boot-report.py (the dd run)")
    log = os.path.join(OUT, "linux-boot-dd.log")
    g = lpguest.Guest("lightpath", log, cfg_path=cfg_path, extra_modules=[lpguest.rel(img)],
                      icount=True, timeout=timeout + 60,
                      say=lambda m: say("dd run: " + m.strip()))
    g.start()
    try:
        g.boot_to_shell(timeout)

        def so_far():
            g.send("\x1d", echo_wait=0)
            return [int(v) for v in g.wait_for(SO_FAR, 60, "Ctrl-]'s 'so far' line",
                                               source="lightpath").groups()]
        before = so_far()
        out, rc = g.run("dd if=/dev/vda of=/dev/null bs=1M count=%d 2>&1 | tail -1" % DD_MIB,
                        timeout=timeout)
        after = so_far()
        if rc != 0:
            raise lpguest.GuestError("dd failed (status %d): %s" % (rc, out.strip()))
        rc = g.poweroff()
    except lpguest.GuestError as e:
        g.kill()
        print("linux-report: error: the dd run: %s (serial log %s)" % (e, lpguest.rel(log)),
              file=sys.stderr)
        return {"not_measured": str(e)}
    exits, heavy, reads, kib, tsc = (a - b for a, b in zip(after, before))
    if not reads:
        return {"not_measured": "dd made no disk read (serial log %s)" % lpguest.rel(log)}
    doc = {"mib": DD_MIB, "dd": out.strip(), "log": lpguest.rel(log), "cmd": g.command_line(),
           "requests": reads, "kib": kib, "kib_per_request": round(kib / reads, 1),
           "exits": exits, "heavy": heavy, "exits_per_request": round(exits / reads, 2),
           "heavy_per_request": round(heavy / reads, 2), "instructions": tsc,
           "instructions_per_request": round(tsc / reads),
           "unit": "instructions (QEMU -icount shift=0: the host TSC counts instructions of "
                   "guest and hypervisor, and advances while the vCPU halts)"}
    say("dd of %d MiB: %d requests (%.1f KiB each), %.2f exits per request (%.2f heavy), %d "
        "instructions per request" % (DD_MIB, reads, doc["kib_per_request"],
                                     doc["exits_per_request"], doc["heavy_per_request"],
                                     doc["instructions_per_request"]))
    return doc


def dd_section(d):
    """The dd figures (markdown)."""
    if "not_measured" in d:
        return "Disk read: not measured (%s).\n" % d["not_measured"]
    return ("**Disk read**: `dd if=/dev/vda of=/dev/null bs=1M count=%d` in the Linux "
            "guest with a %d MiB read-only virtio-blk disk (`disk = ...,ro`), under QEMU -icount, "
            "bracketed by Ctrl-] (lightpath prints the VM's exits, disk reads and the host TSC): "
            "%d requests of %.1f KiB, **%.2f exits per request** (%.2f heavy) and **%d "
            "instructions per request** (guest and hypervisor, the dd and the shell included; "
            "the TSC also runs while the vCPU halts). `dd` said: `%s`. Log: `%s`.\n"
            % (d["mib"], d["mib"] + 1, d["requests"], d["kib_per_request"],
               d["exits_per_request"], d["heavy_per_request"], d["instructions_per_request"],
               d["dd"], d["log"]))


def clock_line(table):
    """The exit table's 'clock:' line (the guest clock's work), or ''."""
    return next((l.strip() for l in table if l.strip().startswith("clock:")), "")


def by_exits(rows):
    """The reasons of {reason: {"exits": ...}}, most exits first (ties by name)."""
    return sorted((k for k in rows if k != "total"), key=lambda k: (-rows[k]["exits"], k))


def cost_tables(c):
    """The cost table and the sites table (markdown lines)."""
    handling = c["handling"] - c["hlt_ticks"]
    cost = ["| reason | exits | min | mean | max | exits x mean | share of the handling |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for k in by_exits(c["reasons"]):
        v = c["reasons"][k]
        cost.append("| %s | %d | %d | %d | %d | %d | %s |"
                    % (k, v["exits"], v["min"], v["mean"], v["max"], v["exits"] * v["mean"],
                       "(halted)" if k == "hlt" else
                       "%.1f%%" % (100.0 * v["exits"] * v["mean"] / handling)))
    sites = ["| reason | guest RIP | where | exits | at most too high by |",
             "|---|---|---|---:|---:|"]
    for k in by_exits(c["reasons"]):
        for s in c["sites"].get(k, []):
            kernel = int(s["rip"], 16) >= KERNEL_TEXT and s["where"]
            sites.append("| %s | `%s` | %s | %d | %s |"
                         % (k, s["rip"], "`%s`" % s["where"] if kernel else s["where"] or "?",
                            s["exits"], s["err"] or ""))
    return "\n".join(cost), "\n".join(sites)


def cost_summary(c):
    """The share sentence, in words the section and stdout both use."""
    busy = c["since_start"] - c["hlt_ticks"]
    return ("%d instructions in exit handling of %d the VM ran (%.2f%%), blocking-HLT waits "
            "left out; as printed, halted time included: %d of %d ticks (%.1f%%)"
            % (c["handling"] - c["hlt_ticks"], busy, c["share_without_hlt_pct"],
               c["handling"], c["since_start"], c["share_pct"]))


def cost_section(c, imgs, run1):
    """run1: lightpath run 1 of the timed boots, whose exits the section's
    first table shows."""
    if "not_measured" in c:
        return ("### Where the exits come from\n\n**Not measured**: the -icount boot with "
                "`%s` failed: %s.\n" % (COST_OPTS, c["not_measured"]))
    cost, sites = cost_tables(c)
    hlt = c["reasons"].get("hlt")
    busy = c["since_start"] - c["hlt_ticks"]
    runs1 = run1["exits"]["total"]["exits"]
    clock1 = clock_line(run1["table"])
    why_syms = ("Symbols: Debian's `System.map` is a placeholder (the real one is in the `-dbg` "
                "package), so the report looks the kernel RIPs up in the kernel's own "
                "`/proc/kallsyms`, in a direct boot with `nokaslr` (the same addresses): the "
                "nearest text symbol at or below each RIP"
                + (". Not found: %s" % c["symbols_not_found"] if "symbols_not_found" in c else ""))
    return f"""### Where the exits come from

One more boot, not timed: lightpath under QEMU `-icount shift=0,align=off,sleep=off`, boot
option `{COST_OPTS}`, the kernel command line plus `{COST_CMDLINE}` (so that the guest's RIPs are
the kernel's link addresses): `{c['cmd']}`. Under `-icount` the TSC advances by one per
executed instruction, guest and hypervisor alike, so what `stats=cost` counts per exit, from
its handler's start to the guest's resumption, is **instructions**. The exit stubs (the
register save and restore around VMRUN) are outside, and so is the world switch itself
(VMRUN and the #VMEXIT): neither is counted.

**Hypervisor share: {c['handling'] - c['hlt_ticks']} instructions in exit handling of {busy}
instructions the VM ran ({c['share_without_hlt_pct']:.2f}%).** Both sides leave out the
blocking HLT exits{f" ({hlt['exits']} exits, {c['hlt_ticks']} ticks as exits x mean)" if hlt else ""}:
the guest idles, lightpath halts the CPU until the guest's next interrupt, and under `-icount`
halted time advances the TSC without instructions. lightpath's own `cost total` line, halted
time included: {c['handling']} of {c['since_start']} ticks ({c['share_pct']:.1f}%).

Instructions per exit, by reason (the `hlt` row is mostly halted time; the share is of the
handling without it). This boot made {c['exits']} exits (run 1 above: {runs1}): its clocks
run differently, and so does the guest clock's work, here `{c['clock']}` against run 1's
`{clock1}`.

{cost}
{imgs.get('cost', '')}
The guest RIPs that exited most, per reason (lightpath keeps 8 per reason and prints 4; a
count may be too high by at most the last column, so a site whose count is mostly that
bound, as every `intr` one, where a host interrupt happened to find the guest, is no real
site):

{sites}

{textwrap.fill(why_syms, 92)}.
"""


def print_cost(c):
    """The cost subsection on stdout."""
    if "not_measured" in c:
        say("the exits' cost: not measured: " + c["not_measured"])
        return
    say("the exits' cost (QEMU -icount, %s, + %s; instructions): %s"
        % (COST_OPTS, COST_CMDLINE, cost_summary(c)))
    print("  %-12s %8s %8s %8s %10s   top sites" % ("reason", "exits", "min", "mean", "max"))
    for k in by_exits(c["reasons"]):
        v = c["reasons"][k]
        top = ["%s %s: %d%s" % (s["rip"], s["where"] or "?", s["exits"],
                                " (+%d)" % s["err"] if s["err"] else "")
               for s in c["sites"].get(k, [])[:2]]
        print("  %-12s %8d %8d %8d %10d   %s" % (k, v["exits"], v["min"], v["mean"], v["max"],
                                                 "; ".join(top)))


# The pictures, linked from the section as img/NAME.
MIX_IMG = "linux-boot-mix.svg"
LAST_BUCKET = 23   # vmm/exit_cost.h: COST_BUCKETS - 1 takes every cost from 2^23 up
COST_IMG = "linux-boot-cost.svg"


def draw_mix(plt, rows):
    """Exits per reason of lightpath run 1, light and heavy bars, log axis."""
    reasons = by_exits(rows)
    series = [(kind, color, {k: rows[k][kind] for k in reasons})
              for kind, color in (("light", "C0"), ("heavy", "C3"))]
    with plots.svg(plt, MIX_IMG, (8, 1.2 + 0.4 * len(reasons)), say) as (fig, ax):
        plots.grouped_barh(ax, reasons, series, "exits (log scale)")
        ax.set_title("Linux boot under lightpath (QEMU TCG): exits per reason, run 1")
        ax.legend(loc="lower right", fontsize=7)
    return "\n![Linux boot under lightpath: exits per reason, light and heavy](img/%s)\n" % MIX_IMG


def draw_cost(plt, c):
    """Exits per log2 bucket of instructions, one row per reason: a grid
    whose cells are shaded by their count (log colour scale) and labelled
    with it."""
    from matplotlib.colors import LogNorm
    reasons = by_exits(c["reasons"])
    hist = {k: {int(b): n for b, n in c["reasons"][k]["hist"].items()} for k in reasons}
    lo = min(min(h) for h in hist.values())
    hi = max(max(h) for h in hist.values())
    grid = [[hist[k].get(b, 0) or float("nan") for b in range(lo, hi + 1)] for k in reasons]
    top = max(max(h.values()) for h in hist.values())
    with plots.svg(plt, COST_IMG, (8, 1.4 + 0.32 * len(reasons)), say) as (fig, ax):
        mesh = ax.pcolormesh(range(lo, hi + 2), range(len(reasons) + 1), grid, cmap="Blues",
                             norm=LogNorm(1, top), edgecolors="0.85", linewidth=0.3)
        for y, k in enumerate(reasons):
            for b, n in hist[k].items():
                ax.text(b + 0.5, y + 0.5, str(n), ha="center", va="center", fontsize=5,
                        color="white" if n > top ** 0.6 else "black")
        ax.set_xticks([b + 0.5 for b in range(lo, hi + 1)], [str(b) for b in range(lo, hi + 1)])
        ax.set_yticks([y + 0.5 for y in range(len(reasons))], reasons)
        ax.invert_yaxis()
        ax.set_xlabel("k: instructions per exit in [2^k, 2^(k+1)) (QEMU -icount; hlt: mostly "
                      "halted time%s)" % ("; 23: 2^23 and more" if hi == LAST_BUCKET else ""))
        ax.set_title("Linux boot under lightpath: exits per reason and cost bucket")
        fig.colorbar(mesh, ax=ax, label="exits", pad=0.01)
    return ("\n![Linux boot under lightpath: exits per reason and log2 bucket of instructions]"
            "(img/%s)\n" % COST_IMG)


def section(doc, imgs):
    """imgs: the pictures' markdown links by name ("mix", "cost"; "" when not drawn)."""
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
{imgs.get('mix', '')}
The command line has no `quiet`: the kernel's messages are what `make run` shows while Linux
comes up, and every character of them costs port-I/O exits on the UART (a THR write and LSR
reads), most of the `io` row.

{light_summary(lp, doc['runs'])}

{cost_section(doc['cost'], imgs, lp[0])}
{dd_section(doc['dd']) if 'dd' in doc else ''}
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
    ap.add_argument("--dd-only", action="store_true", help="only the disk-read boot (prints its "
                    "figures; writes nothing)")
    args = ap.parse_args()
    if args.dd_only:
        d = dd_run()
        return 1 if "not_measured" in d else 0
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
        # after the timed runs, which it does not change
        doc["cost"] = cost_run()
        doc["dd"] = dd_run()
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
    if args.backend == "svm":
        print_cost(doc["cost"])
    if not args.no_docs:
        try:
            with open(DOC) as f:
                text = f.read()
        except OSError:
            text = "# lightpath exit benchmarks\n"
        if args.backend == "vmx":
            text = replace_block(text, section_vmx(doc), VMX_BEGIN, VMX_END, after=END)
        else:
            imgs = {}
            plt = plots.pyplot("linux-report", "pictures %s and %s"
                               % (plots.img(MIX_IMG), plots.img(COST_IMG)), "make linux-report")
            if plt:
                imgs["mix"] = draw_mix(plt, lp[0]["exits"])
                if "not_measured" not in doc["cost"]:
                    imgs["cost"] = draw_cost(plt, doc["cost"])
            text = replace_block(text, section(doc, imgs), before=VMX_BEGIN)
        with open(DOC, "w") as f:
            f.write(text)
        say("updated the %s section of docs/BENCHMARKS.md"
            % (VMX_BEGIN if args.backend == "vmx" else BEGIN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
