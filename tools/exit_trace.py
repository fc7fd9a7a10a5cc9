#!/usr/bin/env python3
"""Instruction-by-instruction trace of one benchmark bracket (make exit-trace).

Boots lightpath under QEMU (TCG, -icount shift=0, as `make bench`) with one
bench guest, stops at a row's bracket through QEMU's gdb stub and
single-steps it: every instruction from the one after the opening RDTSC to
the closing RDTSC, guest and hypervisor alike, with the function it belongs
to. The bench guest marks each bracket's first instruction in its
.lp_bench_sites section (guests/bench/bench.c, BENCH_SITE), so nothing is
added to what `make bench` measures.

    tools/exit_trace.py [--config NAME | --append OPTS] [--guest 32|64]
                        [--skip N] [--list] [--json FILE] ROW [ROW...]

--config: one of tools/bench.py's configurations (default spec-off, the light
path itself); --append: boot options instead (clock=host is always added,
as in the bench). --skip: brackets of the row to let run first (default 3:
the warm-up and the first measured ones fill lightpath's caches). --list:
every instruction with its disassembly, not only the runs per function.

The count printed is exact: the number of instructions the emulated CPU
executed. It checks itself against the guest's own measure of the same
bracket (the TSC difference, which counts the closing RDTSC too): the two
must differ by exactly one. Only QEMU's SVM without NRIP save is traced:
Bochs, the other backends' emulator, has no gdb stub in Debian's build.

A VMRUN that injects an event (EVENTINJ, or the virtual interrupt lightpath
injects instead under QEMU's TCG) is run to the guest handler's first
instruction (from the guest's IDT) with a breakpoint, as QEMU's single step
would run that handler to its next exit in one step.

timer_irq is traced with timer=exact added (unless the options name timer=):
with the default timer=lead the path runs before the deadline and the vCPU
then waits for it, which single steps cannot time. It is traced from the
host timer's exit to the guest handler's first instruction. Every stop of the CPU for gdb lets icount's clock jump ahead,
so none may fall between the arming and that exit: the trace starts in
lightpath's host-interrupt handler, and the exit stub's instructions before
it (every exit's, counted in the image's disassembly) are added. `make bench`'s figure also counts the
guest's wait from the deadline to the exit.
"""
import argparse
import bisect
import json
import re
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (configurations and the bench's boot options)

HOST_ELF = os.path.join(ROOT, "build", "lightpath.elf")
GUEST_ELF = {"32": os.path.join(ROOT, "build", "guests", "bench32.elf"),
             "64": os.path.join(ROOT, "build", "guests", "bench64.elf"),
             # the virtio rows' guest (tools/bench.py run_virtio): two VMs
             "virtio": os.path.join(ROOT, "build", "guests", "vbench.elf")}
SITES_SECTION = ".lp_bench_sites"
VMRUN_LEN = 3          # 0f 01 d8
RDTSC = b"\x0f\x31"
MAX_STEPS = 20000      # the longest bracket (pio_rep_outsb, bench64) is ~5000
# QEMU's single-step flags (gdb "maintenance packet Qqemu.sstep=N"): 7, its
# default, steps with interrupts and timers held.
SSTEP_QUIET = 7


class TraceError(Exception):
    pass


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def bench_sites(elf, bits):
    """{row: [addresses]} from the guest's .lp_bench_sites section."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "sites")
        try:
            run(["objcopy", "--dump-section", "%s=%s" % (SITES_SECTION, out), elf,
                 os.path.join(d, "copy")])
        except subprocess.CalledProcessError as e:
            raise TraceError("%s has no %s section (%s); rebuild with `make`"
                             % (elf, SITES_SECTION, e.stderr.strip()))
        data = open(out, "rb").read()
    width = 8 if bits == "64" else 4
    sites, i = {}, 0
    while i < len(data):
        addr = int.from_bytes(data[i:i + width], "little")
        end = data.index(b"\0", i + width)
        sites.setdefault(data[i + width:end].decode(), []).append(addr)
        i = end + 1
    return sites


class Symbols:
    """Address to function name, from nm."""

    def __init__(self, elf):
        self.addrs, self.names = [], []
        for line in run(["nm", "-n", elf]).splitlines():
            parts = line.split()
            # the loops' VMRUN labels are not functions of their own
            if len(parts) == 3 and parts[1] in "tTwW" and not parts[2].endswith("_vmrun"):
                self.addrs.append(int(parts[0], 16))
                self.names.append(parts[2])

    def table(self):
        return self.addrs, self.names

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "?"

    def addr(self, name):
        return self.addrs[self.names.index(name)]



def instruction_bytes(elf, x86_64):
    """{address: the instruction's bytes} for every instruction objdump finds."""
    cmd = ["objdump", "-d", "-w"] + (["-M", "x86-64"] if x86_64 else []) + [elf]
    code = {}
    for line in run(cmd).splitlines():
        parts = line.split("\t")
        head = parts[0].strip().rstrip(":")
        if len(parts) >= 2 and head and all(c in "0123456789abcdef" for c in head):
            code[int(head, 16)] = bytes.fromhex(parts[1].replace(" ", ""))
    return code


def disassembly(elf, x86_64):
    """{address: text} for every instruction objdump finds in elf."""
    cmd = ["objdump", "-d", "--no-show-raw-insn"] + (["-M", "x86-64"] if x86_64 else []) + [elf]
    text = {}
    for line in run(cmd).splitlines():
        head, sep, insn = line.partition(":\t")
        if sep and head.strip() and all(c in "0123456789abcdef" for c in head.strip()):
            text[int(head, 16)] = " ".join(insn.split())
    return text


def stub_in_count(spec_off):
    """The exit stub's instructions from the exit (after VMRUN) to the light
    handler's call, that one included, in the light loop of the config
    (spec=off: svm_light_loop; spec=on on QEMU's EPYC: the full return-stack
    overwrite), read from the image so that it follows the stub."""
    loop = "svm_light_loop" if spec_off else "svm_light_loop_rsb_full"
    sym = Symbols(HOST_ELF)
    text = disassembly(HOST_ELF, True)
    addrs = sorted(a for a in text if sym.name(a) in (loop, loop + "_vmrun"))
    i = addrs.index(next(a for a in addrs if text[a] == "vmrun")) + 1
    n = 0
    while i < len(addrs):
        insn = text[addrs[i]]
        n += 1
        if insn.startswith("call *"):
            return n
        # the exit code in the table: taken; the return-stack overwrite's
        # calls go to the next call, past an INT3
        m = re.match(r"(?:jbe|call)\s+([0-9a-f]+)", insn)
        i = addrs.index(int(m.group(1), 16)) if m else i + 1
    raise TraceError("no light-handler call after VMRUN in %s" % loop)


GDB_SCRIPT = r'''
import gdb, json
p = json.load(open(PARAMS))
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set architecture i386:x86-64")
gdb.execute("target remote 127.0.0.1:%d" % p["port"])
inf = gdb.selected_inferior()
def pc():
    return int(gdb.parse_and_eval("$pc")) & 0xffffffffffffffff
def reg(r):
    return int(gdb.parse_and_eval("$" + r)) & 0xffffffffffffffff
def mem(a, n):
    try:
        return bytes(inf.read_memory(a, n))
    except gdb.MemoryError:
        return b""
out = {"ok": False}
EFER_LMA = 1 << 10
VMCB_EVENTINJ, VMCB_NCR3, VMCB_IDTR_BASE, VMCB_CR3, VMCB_CR0 = 0xa8, 0xb0, 0x488, 0x550, 0x558
VMCB_INTERCEPT_MISC1, VMCB_INT_CTL = 0x0c, 0x60
PTE_ADDR, CR0_PG = 0x000ffffffffff000, 1 << 31
try:
    gdb.execute("maintenance packet Qqemu.sstep=%d" % p["sstep"], to_string=True)
    # The hypervisor is linked where the guest is, and the stub reads
    # memory without the nested page tables: guest or host is told by the
    # mode (the host runs in long mode on its own CR3), read at a VMRUN
    # first, and the guest's bytes come from its ELF (rdtsc, wrmsr below).
    for a in p["vmruns"]:
        gdb.execute("break *0x%x" % a, to_string=True)
    gdb.execute("continue", to_string=True)
    host_cr3 = reg("cr3")
    gdb.execute("delete", to_string=True)
    def in_guest():
        return not (reg("efer") & EFER_LMA) or reg("cr3") != host_cr3
    for a in p["sites"]:
        gdb.execute("break *0x%x" % a, to_string=True)
    hits = 0
    while True:
        gdb.execute("continue", to_string=True)
        if pc() in p["sites"] and in_guest():
            hits += 1
            if hits > p["skip"]:
                break
    gdb.execute("delete", to_string=True)
    a = pc()
    landings, vmruns = set(p["landings"]), set(p["vmruns"])
    closing = set(p["closing"])
    trace = [[a, "g"]]
    guest = True
    if p["row"] == "timer_irq":
        # Stopped before the arming's RDTSC (timer_once's entry): a stop of
        # the CPU lets icount's clock jump ahead, so the next stop must be
        # the timer's exit itself, in the host-interrupt handler (the exit
        # stub before it is every exit's, p["stub_in"] instructions)
        for h in p["host_intr"]:
            gdb.execute("break *0x%x" % h, to_string=True)
        gdb.execute("continue", to_string=True)
        gdb.execute("delete", to_string=True)
        a = pc()
        trace = [[a, "h"]]
        guest = False
    def npt_gpa(vmcb, gpa):
        """Host-physical of a guest-physical address through the VMCB's
        nested page table (the host maps its memory 1:1)."""
        table = int.from_bytes(mem(vmcb + VMCB_NCR3, 8), "little") & PTE_ADDR
        for level, shift in enumerate((39, 30, 21, 12)):
            e = int.from_bytes(mem(table + ((gpa >> shift) & 511) * 8, 8), "little")
            if not e & 1:
                raise Exception("guest-physical %#x is not mapped" % gpa)
            if level in (1, 2) and e & 0x80:   # a 1 GiB or 2 MiB page
                return (e & PTE_ADDR & ~((1 << shift) - 1)) | (gpa & ((1 << shift) - 1))
            table = e & PTE_ADDR
        return table | (gpa & 0xfff)
    def guest_read(vmcb, lin, n):
        cr0 = int.from_bytes(mem(vmcb + VMCB_CR0, 8), "little")
        gpa = lin
        if cr0 & CR0_PG:   # bench64: 4-level paging
            table = int.from_bytes(mem(vmcb + VMCB_CR3, 8), "little") & PTE_ADDR
            for level, shift in enumerate((39, 30, 21, 12)):
                e = int.from_bytes(mem(npt_gpa(vmcb, table + ((lin >> shift) & 511) * 8), 8), "little")
                if level in (1, 2) and e & 0x80:
                    gpa = (e & PTE_ADDR & ~((1 << shift) - 1)) | (lin & ((1 << shift) - 1))
                    break
                table = e & PTE_ADDR
            else:
                gpa = table | (lin & 0xfff)
        return mem(npt_gpa(vmcb, gpa), n)
    def injected_vector(vmcb):
        """The vector this VMRUN delivers at once: EVENTINJ's, or under QEMU's
        TCG a virtual interrupt's (V_IRQ without the VINTR intercept, which
        lightpath injects only where the guest takes it; vmm/svm/arch_exit.h)."""
        inj = int.from_bytes(mem(vmcb + VMCB_EVENTINJ, 4), "little")
        if inj >> 31:
            return inj & 0xff
        ctl = int.from_bytes(mem(vmcb + VMCB_INT_CTL, 8), "little")
        misc1 = int.from_bytes(mem(vmcb + VMCB_INTERCEPT_MISC1, 4), "little")
        if ctl >> 8 & 1 and not misc1 >> 4 & 1:
            return ctl >> 32 & 0xff
        return None
    def stepi():
        # QEMU runs a VMRUN that injects an event and the guest's handler up
        # to its next exit as one step: stop at the handler's first
        # instruction (from the guest's IDT) with a breakpoint instead
        vmcb = reg("rax")
        vector = injected_vector(vmcb) if a in vmruns else None
        if vector is not None:
            idt = int.from_bytes(mem(vmcb + VMCB_IDTR_BASE, 8), "little")
            wide = p["bits"] == "64"
            g = guest_read(vmcb, idt + vector * (16 if wide else 8), 16 if wide else 8)
            handler = int.from_bytes(g[0:2] + g[6:8] + (g[8:12] if wide else b""), "little")
            gdb.execute("break *0x%x" % handler, to_string=True)
            while True:
                gdb.execute("continue", to_string=True)
                if pc() != handler or in_guest():
                    break
            gdb.execute("delete", to_string=True)
        else:
            gdb.execute("stepi", to_string=True)
    live = False
    while True:
        prev = a
        # interrupts on only in lightpath's host-interrupt window (STGI; NOP;
        # CLGI), where it takes the timer's interrupt
        want = p["row"] == "timer_irq" and p["window"][0] <= a < p["window"][1]
        if want != live:
            gdb.execute("maintenance packet Qqemu.sstep=%d" % (1 if want else p["sstep"]),
                        to_string=True)
            live = want
        stepi()
        a = pc()
        if a in landings and (guest or prev in vmruns):
            guest = False   # an exit (a VMRUN can exit before any guest instruction)
        elif not guest and prev in vmruns:
            guest = True
        if guest and a in closing:
            break
        if guest and p["row"] == "timer_irq":
            # an earlier host interrupt (another of lightpath's timers) went
            # back to the guest's wait: single steps hold QEMU's timers, so
            # run to the next host-interrupt exit and trace from there
            for h in p["host_intr"]:
                gdb.execute("break *0x%x" % h, to_string=True)
            gdb.execute("continue", to_string=True)
            gdb.execute("delete", to_string=True)
            a = pc()
            guest = False
            trace = [[a, "h"]]
            continue
        trace.append([a, "g" if guest else "h"])
        if len(trace) > p["max_steps"]:
            raise Exception("no closing RDTSC within %d instructions" % p["max_steps"])
    out = {"ok": True, "trace": trace}
except Exception as e:
    out = {"ok": False, "error": str(e), "trace": locals().get("trace", [])}
json.dump(out, open(p["out"], "w"))
try:
    gdb.execute("kill")
except gdb.error:
    pass
'''


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def guest_modules(bits, n, tmp):
    """The bench guest's boot: bench32/64 alone, or the virtio rows' two VMs
    with their disk on QEMU -smp 2 (tools/bench.py, run_virtio)."""
    if bits == "virtio":
        return ["--smp", "2"] + bench.virtio_modules(tmp, n)
    return ["%s n=%d" % (os.path.relpath(GUEST_ELF[bits], ROOT), n)]


def trace_row(row, opts, bits, skip, tmp):
    elf = GUEST_ELF[bits]
    for f in (HOST_ELF, elf):
        if not os.path.exists(f):
            raise TraceError("%s not built; run `make`" % os.path.relpath(f, ROOT))
    sites = bench_sites(elf, bits).get(row)
    if not sites:
        raise TraceError("bench%s has no bracket named %r (rows: %s)"
                         % (bits, row, ", ".join(sorted(bench_sites(elf, bits)))))
    vmruns = [int(l.split()[0], 16) for l in run(["nm", HOST_ELF]).splitlines()
              if l.split()[-1].endswith("_vmrun")]
    if not vmruns:
        raise TraceError("no *_vmrun symbol in %s" % HOST_ELF)
    code = instruction_bytes(elf, bits == "64")
    if any(a not in code for a in sites):
        raise TraceError("a %s site is not at an instruction objdump knows" % row)
    if min(vmruns) < max(code):
        raise TraceError("the hypervisor's VMRUNs are inside the guest image's addresses")
    rdtsc = sorted(a for a, b in code.items() if b == RDTSC)
    gsyms = dict(zip(Symbols(elf).table()[1], Symbols(elf).table()[0]))
    hsyms = Symbols(HOST_ELF)
    host_intr = [a for a, n in zip(*hsyms.table()) if re.match(r"light_\w+_host_intr$", n)]
    at = hsyms.names.index("vendor_host_interrupt_window")
    window = [hsyms.addrs[at], hsyms.addrs[at + 1]]
    if row == "timer_irq":
        # from timer_once's entry (its site is after the RDTSC, too late to
        # stop: see the gdb script) to the handler's first instruction
        sites, closing = [gsyms["timer_once"]], [gsyms["timer_entry"]]
        if min(host_intr) <= max(code):
            raise TraceError("the host-interrupt handlers are inside the guest image's addresses")
    else:
        # the bracket's own closing RDTSC: the next one in its asm
        closing = [rdtsc[bisect.bisect_right(rdtsc, s)] for s in sites]

    port = free_port()
    wrapper = os.path.join(tmp, "qemu-gdb")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\" -S -gdb tcp:127.0.0.1:%d\n"
                % (os.environ.get("LP_QEMU", "qemu-system-x86_64"), port))
    os.chmod(wrapper, 0o755)
    params = os.path.join(tmp, "params.json")
    out = os.path.join(tmp, "trace.json")
    json.dump({"port": port, "sites": sites, "closing": closing, "bits": bits, "row": row,
               "host_intr": host_intr, "window": window, "skip": skip,
               "landings": [a + VMRUN_LEN for a in vmruns], "vmruns": vmruns,
               "sstep": SSTEP_QUIET,
               "max_steps": MAX_STEPS, "out": out}, open(params, "w"))
    script = os.path.join(tmp, "trace_gdb.py")
    with open(script, "w") as f:
        f.write("PARAMS = %r\n" % params + GDB_SCRIPT)
    log = os.path.join(tmp, "serial.log")
    env = dict(os.environ, LP_QEMU=wrapper)
    qemu = subprocess.Popen([bench.LP_QEMU, "--icount", "--timeout", "600", "--log", log,
                             "--append", opts] + guest_modules(bits, skip + 4, tmp),
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        gdb = None
        for _ in range(50):   # QEMU opens its gdb port after start-up
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if qemu.poll() is not None:
                    raise TraceError("QEMU ended before its gdb stub opened: %s"
                                     % qemu.stderr.read().strip())
                import time
                time.sleep(0.1)
        gdb = subprocess.run(["gdb", "-nx", "-batch", "-x", script], capture_output=True,
                             text=True, timeout=900)
    finally:
        try:
            qemu.wait(timeout=10)
        except subprocess.TimeoutExpired:
            qemu.kill()
            qemu.wait()
    if not os.path.exists(out):
        raise TraceError("gdb left no trace: %s" % (gdb.stderr.strip() if gdb else "not run"))
    res = json.load(open(out))
    if not res["ok"]:
        raise TraceError("trace of %s failed: %s" % (row, res["error"]))
    return res


def bench_min(row, opts, bits, n):
    """The row's minimum over n brackets in a boot without gdb: what the
    trace must account for."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "serial.log")
        proc = subprocess.run([bench.LP_QEMU, "--icount", "--timeout", "120", "--log", log,
                               "--append", opts] + guest_modules(bits, n, tmp),
                              cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        text = bench.serial_log.read(log) if os.path.exists(log) else ""
    if proc.returncode != 1:
        raise TraceError("the check boot (no gdb) failed: QEMU exit %d" % proc.returncode)
    mode = bench.VIRTIO_MODE if bits == "virtio" else bench.MODES[0 if bits == "32" else 1]
    try:
        return bench.parse_bench(text, modes=(mode,), exits=(row,))[mode][row]["min"]
    except bench.BenchError as e:
        raise TraceError("the check boot (no gdb): %s" % e)


def describe(row, res, bits, config, opts, listing, measured):
    trace = res["trace"]
    lines = ["exit_trace: %s, bench%s, config %s (%s)" % (row, bits, config, opts)]
    if row == "timer_irq":
        return describe_timer(res, bits, config, opts, listing, measured)
    shown = trace
    # icount counts the opening RDTSC (it reads the count after itself)
    # but not an intercepted instruction, which exits instead of retiring
    exiting = sum(1 for i in range(len(trace) - 1)
                  if trace[i][1] == "g" and trace[i + 1][1] == "h")
    expect = len(trace) + 1 - exiting
    lines.append("  %d instructions traced, %d of them intercepted (they exit, so icount "
                 "does not count them), + the opening RDTSC = %d; `make bench` without "
                 "gdb (min of 20): %s%s"
                 % (len(trace), exiting, expect, measured,
                    "" if measured in (None, expect) else "  ** MISMATCH **"))
    if measured is not None and measured != expect:
        res["mismatch"] = True
    return "\n".join(lines + [listing_lines(shown, bits, listing)])


def describe_timer(res, bits, config, opts, listing, measured):
    trace = res["trace"]
    # an earlier host interrupt (another of lightpath's timers) went back to
    # the guest's wait: the path is the one from the last exit
    starts = [i for i in range(1, len(trace)) if trace[i][1] == "h" and trace[i - 1][1] == "g"]
    shown = trace[starts[-1]:] if starts else trace
    stub_in = 0 if starts else stub_in_count("spec=off" in opts)
    lines = ["exit_trace: timer_irq, bench%s, config %s (%s)" % (bits, config, opts),
             "  from the host timer's exit to the guest handler's first instruction: %d traced%s"
             " + the handler's RDTSC = %d; `make bench` without gdb (min of 20): %s, which also "
             "counts the guest's wait from the deadline to the exit"
             % (len(shown), " + %d of the exit stub before the handler (every exit's, as in "
                "the rows above)" % stub_in if stub_in else "", len(shown) + stub_in + 1,
                measured)]
    return "\n".join(lines + [listing_lines(shown, bits, listing)])


def listing_lines(shown, bits, listing):
    host, guest = Symbols(HOST_ELF), Symbols(GUEST_ELF[bits])
    htext = disassembly(HOST_ELF, True)
    gtext = disassembly(GUEST_ELF[bits], bits == "64")
    lines = []
    runs = []   # [side, function, count, addresses]
    for a, side in shown:
        fn = (guest if side == "g" else host).name(a)
        if runs and runs[-1][0] == side and runs[-1][1] == fn:
            runs[-1][2] += 1
            runs[-1][3].append(a)
        else:
            runs.append([side, fn, 1, [a]])
    totals = {}
    for side, fn, n, _ in runs:
        key = ("guest" if side == "g" else "host", fn)
        totals[key] = totals.get(key, 0) + n
    n_guest = sum(n for (side, _), n in totals.items() if side == "guest")
    lines.append("  guest %d, hypervisor %d" % (n_guest, len(shown) - n_guest))
    lines.append("  in order (side, function, instructions):")
    for side, fn, n, addrs in runs:
        lines.append("    %-5s %-44s %4d" % ("guest" if side == "g" else "host", fn, n))
        if listing:
            text = gtext if side == "g" else htext
            for a in addrs:
                lines.append("            %08x  %s" % (a, text.get(a, "?")))
    lines.append("  per function:")
    for (side, fn), n in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append("    %-5s %-44s %4d" % (side, fn, n))
    return "\n".join(lines)


def main():
    configs = dict(bench.CONFIGS)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", nargs="+", metavar="ROW")
    ap.add_argument("--config", default="spec-off", choices=sorted(configs))
    ap.add_argument("--append", help="boot options instead of a configuration's")
    ap.add_argument("--guest", default="32", choices=("32", "64", "virtio"),
                    help="bench32, bench64, or the virtio rows' vbench (two VMs, -smp 2)")
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", help="write the traces here as well")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the boot without gdb that checks the count")
    args = ap.parse_args()
    if args.skip < 1:
        ap.error("--skip must be at least 1 (the first bracket is the warm-up)")
    config = "custom" if args.append is not None else args.config
    opts = (bench.BENCH_OPTS + " " + (args.append if args.append is not None
                                      else configs[args.config])).strip()
    failed, doc = False, {}
    for row in args.rows:
        row_opts = opts
        if row == "timer_irq" and "timer=" not in opts:
            # the path itself: with timer=lead (the default) it runs before
            # the deadline and the vCPU waits, which a single step cannot time
            row_opts = opts + " timer=exact"
        try:
            with tempfile.TemporaryDirectory() as tmp:
                res = trace_row(row, row_opts, args.guest, args.skip, tmp)
            measured = None if args.no_check else bench_min(row, row_opts, args.guest, 20)
            print(describe(row, res, args.guest, config, row_opts, args.list, measured),
                  flush=True)
            failed |= bool(res.get("mismatch"))
            doc[row] = res
        except (TraceError, subprocess.CalledProcessError) as e:
            print("exit_trace: error: %s" % e, file=sys.stderr)
            failed = True
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"config": config, "options": opts, "guest": args.guest, "rows": doc}, f)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
