"""Checks of the build and the tools, beside the guests: the bench and
compare parsers, the bootable ISO, tools/exit_trace.py, and the registers
the light path keeps (-ffixed-r10 -ffixed-r11 -ffixed-rbx)."""

import os
import re
import struct
import subprocess
import sys

import bench  # tools/bench.py: the bench-line parser under test
import serial_log  # tools/serial_log.py: lines a guest cannot forge

from .boot import check, Fail, OUT, ROOT


def t_iso():
    log = os.path.join(OUT, "iso.log")
    with open(log, "w") as f:
        p = subprocess.run(["make", "--no-print-directory", "iso"], cwd=ROOT, stdout=f,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=300)
    check(p.returncode == 0, "make iso exited %d (see build/test/iso.log)" % p.returncode)
    iso = os.path.join(ROOT, "build", "lightpath.iso")
    check(os.path.isfile(iso), "make iso did not produce build/lightpath.iso")
    p = subprocess.run(["xorriso", "-indev", iso, "-find", "/boot", "-type", "f"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    check(p.returncode == 0, "xorriso could not read the ISO: " + (p.stderr.strip().splitlines() or ["?"])[-1])
    files = set(l.strip().strip("'") for l in p.stdout.splitlines())
    for want in ("/boot/lightpath.elf", "/boot/bench32.elf", "/boot/bench64.elf", "/boot/grub/grub.cfg"):
        check(want in files, "ISO has no %s" % want)
    # Boot it: SeaBIOS -> GRUB -> multiboot2 -> lightpath -> both bench guests.
    boot_log = os.path.join(OUT, "iso-boot.log")
    try:
        p = subprocess.run(["timeout", "90", "qemu-system-x86_64", "-accel", "tcg", "-cpu", "EPYC,+svm",
                            "-m", "256", "-display", "none", "-monitor", "none", "-no-reboot",
                            "-serial", "file:" + boot_log, "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
                            "-cdrom", iso], cwd=ROOT, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120)
    except subprocess.TimeoutExpired:
        raise Fail("booting the ISO hung (see build/test/iso-boot.log)")
    serial = serial_log.lines(serial_log.read(boot_log))
    check("[vm0] bench: mode=flat32 done" in serial and "[vm1] bench: mode=paged64 done" in serial,
          "the ISO (GRUB, multiboot2) did not run both bench guests (see build/test/iso-boot.log)")
    check(p.returncode == 1, "booting the ISO: QEMU exit %d, expected 1 (see build/test/iso-boot.log)"
          % p.returncode)
    return None


def t_exit_trace():
    """tools/exit_trace.py (make exit-trace) on three rows of bench32: its
    count must equal `make bench`'s figure from a boot without gdb (the tool
    checks that and exits 1 when they differ), and the hypercall's trace
    must go through the stub and the light handler."""
    log = os.path.join(OUT, "exit-trace.log")
    with open(log, "w") as f:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "exit_trace.py"), "--list",
                            "none", "hypercall", "self_ipi"], cwd=ROOT, stdout=f,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=600)
    text = open(log).read()
    check(p.returncode == 0, "exit_trace.py exited %d (see build/test/exit-trace.log)" % p.returncode)
    counts = re.findall(r"^  (\d+) instructions traced, (\d+) of them intercepted .* = (\d+); "
                        r"`make bench` without gdb \(min of 20\): (\d+)$", text, re.M)
    check(len(counts) == 3, "expected 3 count lines, got %d" % len(counts))
    for traced, exiting, total, measured in counts:
        check(total == measured, "traced %s (+1 -%s) = %s, bench %s" % (traced, exiting, total, measured))
    check(counts[0][0] == "1" and counts[0][3] == "2", "the empty bracket is not 1 instruction + RDTSC")
    hc = text[text.index("exit_trace: hypercall"):text.index("exit_trace: self_ipi")]
    for want in (r"host  svm_light_loop\b", r"host  light_\w+_hypercall\b", r"\bvmrun\b",
                 r"\bvmmcall\b"):
        check(re.search(want, hc), "the hypercall's trace has no %s" % want)
    ipi = text[text.index("exit_trace: self_ipi"):]
    check(re.search(r"guest on_self_ipi", ipi), "the self-IPI's trace does not reach the guest's handler")
    return None


# Where r10/r11 may appear in the hypervisor's code (vmm/light.h): the light
# loops and exit stubs, which keep the guest's values there; nothing else,
# not even the interrupt stub, touches them. __image_start is the multiboot
# header, data that objdump decodes as code.
FIXED_REGS_CODE = re.compile(r"^(svm_light_loop|vmx_light_loop|vmx_exit_stub)")
FIXED_REG = re.compile(r"%r1[01][dwb]?\b")
# rbx, which the light loop keeps too (-ffixed-rbx): besides the loops, only
# CPUID's wrapper (core/cpu.h: rbx kept in another register around CPUID and
# swapped back) and the light handlers' accessors (vmm/exit_light.c: rbx to or
# from memory, CPUID's EBX set) may name it; boot_entry32 runs before any VM.
RBX = re.compile(r"%(rbx|ebx|bx|bl|bh)\b")
RBX_SAVE = re.compile(r"^mov\s+%rbx,(%r\w+)$")
RBX_LIGHT = re.compile(r"^(mov\s+%rbx,(0x[0-9a-f]+)?\(%r\w+\)|mov\s+(0x[0-9a-f]+)?\(%r\w+\),%rbx|"
                       r"mov\s+((0x[0-9a-f]+)?\(%r\w+\)|%e\w+|%r\d+d),%ebx)$")


def fixed_regs_bad(out):
    """(bad uses, stub uses) of r10/r11 and rbx in one image's objdump -d."""
    fn, stubs, bad = None, 0, []
    insns = []
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            fn = m.group(1)
            continue
        if "\t" in line:
            insns.append((fn, line.split("\t")[-1].strip()))
    for i, (fn, insn) in enumerate(insns):
        fixed, rbx = FIXED_REG.search(insn), RBX.search(insn)
        if insn == "cpuid" and fn not in ("__image_start", "boot_entry32"):
            # CPUID writes EBX without naming it: only inside the wrapper
            m = RBX_SAVE.match(insns[i - 1][1]) if i else None
            if not (m and i + 1 < len(insns) and
                    re.match(r"^xchg\s+%rbx," + re.escape(m.group(1)) + "$", insns[i + 1][1])):
                bad.append("%s: cpuid outside core/cpu.h's wrapper" % fn)
            continue
        if not fixed and not rbx:
            continue
        if FIXED_REGS_CODE.match(fn or ""):
            stubs += 1
            continue
        if fn in ("__image_start", "boot_entry32"):
            continue
        if rbx and not fixed:
            m = RBX_SAVE.match(insn)
            if m and i + 2 < len(insns) and insns[i + 1][1] == "cpuid" and \
                    re.match(r"^xchg\s+%rbx," + re.escape(m.group(1)) + "$", insns[i + 2][1]):
                continue
            if insn.startswith("xchg") and i >= 2 and insns[i - 1][1] == "cpuid" and \
                    RBX_SAVE.match(insns[i - 2][1]):
                continue
            if (fn or "").startswith("light_") and RBX_LIGHT.match(insn):
                continue
        bad.append("%s: %s" % (fn, insn))
    return bad, stubs


def t_fixed_regs():
    """No hypervisor code but the exit stubs touches r10 or r11, and rbx only
    where the light path reads or writes the guest's value or CPUID's wrapper
    keeps it (-ffixed-r10 -ffixed-r11 -ffixed-rbx, Makefile): the light loop
    keeps the guest's values in them across every light handler, so an object
    built without the flags or assembly that clobbers them would hand a guest
    the host's values. A CPUID in C, a push of rbx, or rbx used as a base
    register is caught here."""
    for elf in ("build/lightpath64.elf", "build/lightpath-vmx64.elf"):
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(ROOT, elf)],
                             capture_output=True, text=True, check=True).stdout
        bad, stubs = fixed_regs_bad(out)
        check(not bad, "%s: r10/r11/rbx used outside the exit stubs and accessors: %s"
              % (elf, "; ".join(bad[:5])))
        check(stubs >= 6, "%s: the light loops do not keep r10/r11/rbx (%d uses)" % (elf, stubs))
    # the check itself: a function compiled without -ffixed-rbx is caught
    sample = ("0000000000100000 <some_fn>:\n  100000:\tpush   %rbx\n"
              "  100001:\tmov    0x8(%rbx),%rax\n"
              "0000000000100010 <light_x>:\n  100010:\tmov    %rbx,0x8(%rdi)\n"
              "0000000000100020 <other>:\n  100020:\tmov    %rbx,%rsi\n  100023:\tcpuid\n"
              "  100025:\txchg   %rbx,%rsi\n  100028:\tmov    %rbx,%rdx\n"
              "0000000000100030 <bare>:\n  100030:\tcpuid\n")
    bad, _ = fixed_regs_bad(sample)
    check(bad == ["some_fn: push   %rbx", "some_fn: mov    0x8(%rbx),%rax", "other: mov    %rbx,%rdx",
                  "bare: cpuid outside core/cpu.h's wrapper"],
          "the fixed-register check does not catch what it should: %s" % bad)
    return None


def t_bench_parser():
    sample = os.path.join(ROOT, "tests", "integration", "sample-bench.log")
    text = serial_log.read(sample)
    res = bench.parse_bench(text, n=1000)
    check(res["flat32"]["hypercall"] == {"min": 48, "mean": 48.25},
          "flat32 hypercall parsed as %r" % (res["flat32"].get("hypercall"),))
    check(res["paged64"]["hypercall_heavy"]["min"] == 219, "paged64 hypercall_heavy min misparsed")
    check(sorted(res["flat32"]) == sorted(bench.EXITS), "flat32 exits: %s" % sorted(res["flat32"]))
    check(bench.parse_options(text).get("svm.vmload") == "lazy", "options line misparsed")
    bench.check_config_bits(text, "")
    try:
        bench.check_config_bits(text, "light=off")
        raise Fail("config bits 0x7f accepted for light=off")
    except bench.BenchError:
        pass
    # It must reject broken logs, or it checks nothing.
    rdmsr64 = "bench: mode=paged64 exit=rdmsr n=1000 min=70 mean=70.25"
    check("[vm1] " + rdmsr64 + "\n" in text, "sample-bench.log changed: no paged64 rdmsr line")
    broken = {
        "check FAILED": text.replace("[vm1] bench: mode=paged64 done",
                                     "[vm1] bench: check FAILED: cpuid signature\n[vm1] bench: mode=paged64 done"),
        "missing exit": "\n".join(l for l in text.split("\n") if "flat32 exit=rdmsr" not in l),
        "missing done": "\n".join(l for l in text.split("\n") if "paged64 done" not in l),
        "wrong n": text.replace("exit=cpuid n=1000", "exit=cpuid n=999"),
        # a result line not at the start of a line of guest output
        "no [vmN] prefix": text.replace("[vm1] " + rdmsr64, rdmsr64),
        "result behind a \\x0b": text.replace("[vm1] " + rdmsr64, "[vm1] \x0b[vm1] " + rdmsr64),
        "result behind a \\r": text.replace("[vm1] " + rdmsr64, "[vm1] \r[vm1] " + rdmsr64),
        # another VM's guest reporting (forging) part of a mode
        "mode from two VMs": text.replace("[vm1] " + rdmsr64, "[vm0] " + rdmsr64),
    }
    for what, t in broken.items():
        try:
            bench.parse_bench(t, n=1000)
        except bench.BenchError:
            continue
        raise Fail("parser accepted a log with %s" % what)
    # And the command-line entry point agrees.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench.py"), "--parse", sample,
                        "--n-expected", "1000"], capture_output=True, text=True)
    check(p.returncode == 0, "tools/bench.py --parse failed: " + p.stderr.strip())
    return None


def t_compare_selfcheck():
    """`make compare` without its Linux boot: the KVM runner builds (static)
    and starts, and the compare script reads a recorded KVM serial log."""
    sys.path.insert(0, os.path.join(ROOT, "tools", "compare"))
    import compare  # tools/compare/compare.py
    # 1. The runner, through its make rule.
    log = os.path.join(OUT, "compare-kvmrun.log")
    with open(log, "w") as f:
        p = subprocess.run(["make", "--no-print-directory", "build/compare/kvmrun"], cwd=ROOT,
                           stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=120)
    check(p.returncode == 0, "make build/compare/kvmrun exited %d (see build/test/compare-kvmrun.log)"
          % p.returncode)
    exe = os.path.join(ROOT, "build", "compare", "kvmrun")
    with open(exe, "rb") as f:
        elf = f.read()
    check(elf[:4] == b"\x7fELF" and elf[4] == 2, "kvmrun is not an ELF64 executable")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]
    check(3 not in types, "kvmrun has a PT_INTERP: not linked statically (it must run from busybox)")
    p = subprocess.run([exe], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=10)
    check(p.returncode == 125 and "usage: kvmrun" in p.stderr,
          "kvmrun without arguments: exit %d, stderr %r" % (p.returncode, p.stderr.strip()))
    # 2. The parser, on a recorded log of tools/compare/kvmboot.py.
    sample = os.path.join(ROOT, "tests", "integration", "sample-compare-kvm.log")
    text = serial_log.read(sample)
    try:
        kvm, env = compare.parse_kvm(text, n=1000)
    except compare.CompareError as e:
        raise Fail("recorded KVM log rejected: %s" % e)
    check(kvm["flat32"]["hypercall"] == {"min": 2767, "mean": 2782.65},
          "flat32 hypercall parsed as %r" % (kvm["flat32"].get("hypercall"),))
    check(kvm["paged64"]["pio_out"]["min"] == 1624, "paged64 pio_out misparsed")
    check(env["kernel"] == "6.1.0-57-amd64" and env["kvm_amd"] == "npt=Y nrips=0",
          "environment misparsed: %r" % env)
    check(env["cpu_model"] == "AMD EPYC Processor", "cpu model misparsed: %r" % env["cpu_model"])
    lp = bench.parse_bench(serial_log.read(os.path.join(ROOT, "tests", "integration", "sample-bench.log")),
                           n=1000)
    # the recorded log is a defaults boot (no mitigations=off): the defaults
    # pair's rows come first here; the same figures stand in for the other
    # pair, for the docs section's shape
    doc = compare.json_doc([(compare.PAIRS[1], lp, kvm, env, "spec=on"),
                            (compare.PAIRS[0], lp, kvm, env, "spec=on")],
                           {"qemu": "QEMU", "kernel_deb": "k", "n": 1000})
    check(doc["unit"] == "instructions per exit (icount)", "unit: %r" % doc["unit"])
    check([r["exit"] for r in doc["results"]] ==
          ["hypercall", "cpuid", "pio_in_pmtimer", "pio_out", "rdmsr", "wrmsr"] * 2 and
          [r["pair"] for r in doc["results"]] == ["defaults"] * 6 + ["unmitigated"] * 6,
          "compare.json exits: %r" % [r["exit"] for r in doc["results"]])
    check(doc["results"][0] == {"pair": "defaults", "exit": "hypercall", "lightpath": 48, "kvm": 2767},
          "first row: %r" % doc["results"][0])
    row = [l for l in compare.table(doc["results"]).splitlines() if l.startswith("hypercall")]
    check(row and row[0].split() == ["hypercall", "48", "2767", "57.6x"], "table row: %r" % row)
    # It must reject broken logs, or it checks nothing.
    broken = {
        "check FAILED": text.replace("[guest] bench: mode=paged64 done",
                                     "[guest] bench: check FAILED: signature\n[guest] bench: mode=paged64 done"),
        # the guest's output is "[guest] "-prefixed: bare bench lines are not its
        "unprefixed result": text.replace("[guest] bench: mode=paged64 exit=cpuid", "bench: mode=paged64 exit=cpuid"),
        # a guest forging /init's status line behind a carriage return
        "forged status": text.replace("compare: init: kvmrun bench64 status 0",
                                      "compare: init: kvmrun bench64 status 1").replace(
            "[guest] bench: mode=paged64 done", "[guest] bench: mode=paged64 done\n[guest] "
            "\rcompare: init: kvmrun bench64 status 0"),
        "no host=kvm": text.replace("bench: mode=flat32 host=kvm", "bench: mode=flat32 config=0x0"),
        "status 1": text.replace("kvmrun bench64 status 0", "kvmrun bench64 status 1"),
        "missing exit": "\n".join(l for l in text.split("\n") if "paged64 exit=wrmsr" not in l),
        "missing guest": "\n".join(l for l in text.split("\n") if "kvmrun bench32 status" not in l),
        "wrong n": text.replace("exit=cpuid n=1000", "exit=cpuid n=999"),
        "no kvm_amd": "\n".join(l for l in text.split("\n") if "init: kvm_amd" not in l),
    }
    for what, t in broken.items():
        try:
            compare.parse_kvm(t, n=1000)
        except compare.CompareError:
            continue
        raise Fail("compare parser accepted a log with %s" % what)
    # A timer=1 run (kvmrun --irqchip): only its timer_irq counts, and its
    # rows repeated there are not duplicates of the first run's.
    def timer_run(g, mode, status):
        return ("compare: init: running %s timer=1 under KVM with its in-kernel irqchip\n"
                "[guest] bench: mode=%s exit=cpuid n=1000 min=7 mean=7.00\n"
                "[guest] bench: mode=%s exit=timer_irq n=1000 min=9 mean=9.50\n"
                "[guest] bench: mode=%s done\n"
                "compare: init: kvmrun %s-timer status %d\n" % (g, mode, mode, mode, g, status))
    end = "compare: init: end"
    check(end in text, "sample-compare-kvm.log changed: no '%s' line" % end)
    timed = text.replace(end, timer_run("bench32", "flat32", 0) + timer_run("bench64", "paged64", 0) + end)
    try:
        tk, _ = compare.parse_kvm(timed, n=1000)
    except compare.CompareError as e:
        raise Fail("compare parser rejected a log with timer=1 runs: %s" % e)
    check(tk["paged64"]["timer_irq"] == {"min": 9, "mean": 9.5} and
          tk["flat32"]["cpuid"] == kvm["flat32"]["cpuid"],
          "timer=1 runs misparsed: %r" % tk["flat32"])
    try:
        compare.parse_kvm(text.replace(end, timer_run("bench32", "flat32", 1) +
                                       timer_run("bench64", "paged64", 0) + end), n=1000)
        raise Fail("compare parser accepted a timer=1 run with status 1")
    except compare.CompareError:
        pass
    # 3. The docs section goes outside the analysis block, replaces itself,
    # and tools/bench.py keeps it when it regenerates docs/BENCHMARKS.md.
    md = "# t\n\n## Analysis\n\n<!-- analysis -->\nx\n<!-- /analysis -->\n"
    block = compare.doc_section(doc, "2000-01-01")
    once = compare.replace_block(md, block)
    check(compare.replace_block(once, block) == once, "replacing the compare section is not idempotent")
    check(once.index(compare.COMPARE_END) < once.index("<!-- analysis -->"),
          "the compare section is not placed before the analysis block")
    tmp = os.path.join(OUT, "compare-docs.md")
    with open(tmp, "w") as f:
        f.write(once)
    check(block in bench.read_blocks(tmp), "tools/bench.py would drop the compare section")
    # 4. The command-line entry point agrees.
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "compare", "compare.py"),
                        "--parse-kvm", sample, "--n-expected", "1000"], capture_output=True, text=True)
    check(p.returncode == 0, "tools/compare/compare.py --parse-kvm failed: " + p.stderr.strip())
    return None
