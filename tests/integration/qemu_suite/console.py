"""The console and the host's own events: Ctrl-^ ends the VM with the
console, Ctrl-\\ passes console input to the next VM, a host NMI stays the
host's. Interactive runs of tools/lp-qemu."""

import os
import re
import subprocess
import time

from .boot import Boot, check, claim_log, LP_QEMU, ROOT, TIMEOUT
from .lines import (expect_exact_lines, expect_side_by_side, expect_vm_lines, FINAL_VM0_STOPPED,
                    FOREVER, forever_stopped, HELLO3, hello_lines, RUNS_ON, SIDE, side_lines)


CONSOLE_END_KEY = b"\x1e"  # Ctrl-^


def t_console_key():
    """Ctrl-^ on the console ends the VM that has it, even one that spins with
    IF=0 and never reads its serial port (108 bytes typed before the key: more
    than its receive FIFO holds); the next VM still runs. vm.timeout=30 only
    bounds the test if the key does not work."""
    log = os.path.join("build", "test", "console-key.log")
    cmd = [LP_QEMU, "--interactive", "--timeout", str(TIMEOUT), "--append", "vm.timeout=30",
           "%s mode=spin" % FOREVER, HELLO3]
    claim_log(log)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    text, typed = b"", False
    for chunk in iter(lambda: p.stdout.readline(), b""):
        text += chunk
        if not typed and b"[vm0] forever: mode=spin" in chunk:
            p.stdin.write(b"typed while the guest does not read " * 3 + CONSOLE_END_KEY)
            p.stdin.flush()
            typed = True
    rc = p.wait()
    with open(os.path.join(ROOT, log), "wb") as f:
        f.write(text)
    b = Boot.__new__(Boot)             # a Boot made from this run, for its checks
    b.log, b.cmd, b.timeout, b.rc, b.stderr = log, cmd, TIMEOUT, rc, ""
    b.secs = time.monotonic() - t0
    b.text = text.decode(errors="replace").replace("\r", "")
    b.lines = b.text.splitlines()
    check(typed, "the forever guest never printed its line, so nothing was typed; " + b.why_rc())
    expect_exact_lines(b, forever_stopped(0, FOREVER, 64, "spin", 30, r"Ctrl-\^ typed on the console") +
                       hello_lines(1, 30) + [FINAL_VM0_STOPPED])
    b.expect_rc(225)
    return b


CONSOLE_SWITCH_KEY = b"\x1c"  # Ctrl-\\


def t_console_switch():
    """With two VMs side by side (-smp 2, forever mode=hlt,
    neither ends by itself), console input goes to the VM that starts first
    (a race between the CPUs; lightpath says which); Ctrl-\\ passes it to the
    other, so the next Ctrl-^ stops that one; input goes back to the first
    (the only one left) and the next Ctrl-^ stops it. Each key is typed once
    the line before it has appeared."""
    cmd = [LP_QEMU, "--interactive", "--smp", "2", "--timeout", str(TIMEOUT), "--append",
           "vm.timeout=30", "%s mode=hlt" % FOREVER, "%s mode=hlt" % FOREVER]
    seen, steps = set(), []
    state = {"first": None}

    def on_line(chunk, stdin):
        if b"forever: mode=hlt" in chunk:
            seen.add(chunk[:5])
        m = re.match(rb"lightpath: console input goes to vm(\d) now\r?$", chunk)
        if state["first"] is None and m:
            first = state["first"] = int(m.group(1))
            other = 1 - first
            steps.extend([(None, CONSOLE_SWITCH_KEY),
                          (b"lightpath: console input goes to vm%d now" % other, CONSOLE_END_KEY),
                          (b"lightpath: console input goes to vm%d now (vm%d ended)"
                           % (first, other), CONSOLE_END_KEY)])
        if steps and (steps[0][0] in chunk if steps[0][0] else len(seen) == 2):
            stdin.write(steps.pop(0)[1])
            stdin.flush()

    b = interactive_boot("console-switch", cmd, on_line)
    first = state["first"]
    other = 1 - first if first is not None else None
    check(first is not None, "no line says which VM has console input; %s" % b.why_rc())
    check(not steps, "stuck before typing key %d; %s" % (4 - len(steps), b.why_rc()))
    for vm in (0, 1):
        f = forever_stopped(vm, FOREVER, 64, "hlt", 30, r"Ctrl-\^ typed on the console")
        expect_vm_lines(b, vm, f[:1] + [RUNS_ON % (vm, 1 - vm)] + f[1:])
    order = [l for l in b.lines if re.match(r"lightpath: (vm\d: stopped|console input)", l)]
    check(order == ["lightpath: console input goes to vm%d now" % first,
                    "lightpath: console input goes to vm%d now" % other,
                    "lightpath: vm%d: stopped: Ctrl-^ typed on the console" % other,
                    "lightpath: console input goes to vm%d now (vm%d ended)" % (first, other),
                    "lightpath: vm%d: stopped: Ctrl-^ typed on the console" % first],
          "console lines in this order: %r" % order)
    expect_side_by_side(b, FINAL_VM0_STOPPED, aps=1)
    b.expect_rc(225)
    return b


def interactive_boot(label, cmd, on_line):
    """Runs lp-qemu --interactive `cmd`, calling on_line(line, stdin) for
    each line of its output (a test's reactions: typing, the monitor), and
    returns a Boot made from the run (its log written to build/test)."""
    log = os.path.join("build", "test", label + ".log")
    claim_log(log)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    text = b""
    for chunk in iter(lambda: p.stdout.readline(), b""):
        text += chunk
        on_line(chunk, p.stdin)
    rc = p.wait()
    with open(os.path.join(ROOT, log), "wb") as f:
        f.write(text)
    b = Boot.__new__(Boot)
    b.log, b.cmd, b.timeout, b.rc, b.stderr = log, cmd, TIMEOUT, rc, ""
    b.secs = time.monotonic() - t0
    b.text = text.decode(errors="replace").replace("\r", "")
    b.lines = b.text.splitlines()
    return b


def monitor_command(sock, command):
    """One command to QEMU's monitor on Unix socket `sock`; returns once the
    monitor has answered with its next prompt (the command has been done)."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    s.connect(sock)
    got = b""
    while not got.endswith(b"(qemu) "):            # the banner and first prompt
        got += s.recv(4096) or b"(qemu) "
    s.sendall(command.encode() + b"\n")
    got = b""
    while b"(qemu) " not in got:
        data = s.recv(4096)
        check(data, "QEMU's monitor closed before it answered %r" % command)
        got += data
    s.close()


HOST_NMI_LINE = r"lightpath: cpu%d: NMI \(host\)"


def t_host_nmi(smp):
    """A physical NMI is the host's, never a guest's (docs/SECURITY.md case
    27): QEMU's monitor command `nmi` sends one to every CPU while the side
    guest (which takes NMIs on vector 2 and counts them) spins without exits
    on CPU 0 (-smp 1) or CPU 1 (-smp 2, CPU 0 idle in lightpath). Once every
    CPU has said "lightpath: cpuN: NMI (host)" and console input goes to the
    side guest (-smp 2: hello, side by side on CPU 0, may have it until it
    ends; a key typed then is hello's), a key is typed; the guest then
    reports 0 NMIs and ends with 0, and the next VM runs."""
    def run():
        label = "host-nmi-smp%s" % smp
        sock = os.path.join(ROOT, "build", "test", label + ".monitor")
        if os.path.exists(sock):
            os.unlink(sock)
        args = "lines=2 ms=5 key=1"
        cmd = [LP_QEMU, "--interactive", "--smp", smp, "--monitor", sock, "--timeout", str(TIMEOUT),
               "%s %s" % (SIDE, args), HELLO3]
        cpus = set(range(int(smp)))
        # -smp 1: one VM at a time, input goes to the one running (no line)
        st = {"nmi": False, "typed": False, "seen": set(), "input": 0 if smp == "1" else None}

        def on_line(line, stdin):
            if not st["nmi"] and line.startswith(b"[vm0] side: waiting for a key"):
                monitor_command(sock, "nmi")
                st["nmi"] = True
            m = re.match(rb"lightpath: cpu(\d+): NMI \(host\)\r?$", line)
            if m:
                st["seen"].add(int(m.group(1)))
            m = re.match(rb"lightpath: console input goes to vm(\d+) now", line)
            if m:
                st["input"] = int(m.group(1))
            if st["nmi"] and not st["typed"] and st["seen"] >= cpus and st["input"] == 0:
                stdin.write(b"k")
                stdin.flush()
                st["typed"] = True
        b = interactive_boot(label, cmd, on_line)
        check(st["nmi"], "the side guest never waited for its key, so no NMI was sent; " + b.why_rc())
        check(st["typed"], "NMI sent, but lightpath said 'NMI (host)' for CPUs %s of %s, and "
              "console input went to vm%s; %s"
              % (sorted(st["seen"]), sorted(cpus), st["input"], b.why_rc()))
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        for c in cpus:
            n = len(b.findall(r"^%s\s*$" % (HOST_NMI_LINE % c)))
            check(n == 1, "%d 'cpu%d: NMI (host)' lines, wanted 1" % (n, c))
        side = side_lines(0, 2, 1, args=args)
        side.insert(-3, r"\[vm0\] side: waiting for a key")
        h = hello_lines(1)
        if smp == "1":
            side = side[:1] + side[2:]
        else:
            h = h[:1] + [RUNS_ON % (1, 0)] + h[1:]
        expect_vm_lines(b, 0, side)
        expect_vm_lines(b, 1, h)
        b.expect_powered_off(3)
        b.expect_rc((3 << 1) | 1)
        return b
    return run
