"""Boot lightpath's Linux test guest under QEMU and drive its serial console.

Shared by tests/integration/linux_test.py (`make test`) and
tools/linux-boot-report.py (`make linux-report`). The guest is what
tools/linux/build.sh builds: build/linux/{linux.cfg,vmlinuz,initrd.cpio.gz}.

Two ways to boot the same kernel, initramfs and command line:
  "lightpath": tools/lp-qemu --interactive --mem 512 build/linux/linux.cfg
               build/linux/vmlinuz build/linux/initrd.cpio.gz (lightpath reads
               the VM description and boots the kernel in a VM);
  "direct":    qemu-system-x86_64 -kernel vmlinuz -initrd initrd.cpio.gz
               -append CMDLINE -m MEMORY (the VM's memory), same -cpu, no
               lightpath: the baseline, and a check of the harness itself.
Both: TCG, -cpu EPYC,+svm, no -icount, serial port on QEMU's stdin/stdout,
QEMU -smp as the description's `cpus` (build/linux/linux-smp2.cfg: 2).
A third, "bochs": tools/lp-bochs with the Intel VT-x image
(build/lightpath-vmx.elf, cpu corei7_skylake_x, 512 MiB), COM1 on a pty
that this module reads and types into (Bochs has no stdio serial port).

Several VMs side by side in one boot (more descriptions as extra_modules,
QEMU -smp with a CPU each): every VM's lines come on the one console behind
"[vmN] " and typed keys go to one VM at a time. Guest.use_vm(N) gives vmN
the input (Ctrl-\ until lightpath says "console input goes to vmN now") and
makes wait_for, send, run and boot_to_shell read vmN's lines alone;
end_vm() powers off the VM that has the input while the others run on.
"""

import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
import tty

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import serial_log  # noqa: E402  (tools/serial_log.py)
LINUX_DIR = os.path.join(ROOT, "build", "linux")
CFG = os.path.join(LINUX_DIR, "linux.cfg")
CFG_SMP2 = os.path.join(LINUX_DIR, "linux-smp2.cfg")   # the same guest, cpus = 2
CFG_ROOTFS = os.path.join(LINUX_DIR, "linux-rootfs.cfg")   # on its root disk, rootfs.img
CFG_ROOTFS_SMP2 = os.path.join(LINUX_DIR, "linux-rootfs-smp2.cfg")   # the same, cpus = 2
KERNEL = os.path.join(LINUX_DIR, "vmlinuz")
INITRD = os.path.join(LINUX_DIR, "initrd.cpio.gz")
LP_QEMU = os.path.join(ROOT, "tools", "lp-qemu")
LP_BOCHS = os.path.join(ROOT, "tools", "lp-bochs")
VMX_IMAGE = os.path.join(ROOT, "build", "lightpath-vmx.elf")
BOCHS_MEGS = 512   # the VM's 256 MiB plus lightpath itself
CPU = "EPYC,+svm"
# QEMU's RAM under lightpath: the VM's 256 MiB plus lightpath itself.
LP_QEMU_MEM = 512
INIT_LINE = "lightpath-linux: init started"
# INIT_LINE, also when a kernel message printed by another CPU landed in its
# middle (after its "lightpath-linux:", with the rest on the next line)
INIT_RE = (r"lightpath-linux:(?:\[\s*\d+\.\d+\][^\n]*\n(?:\[vm\d+\] )?)? init started")
PROMPT = re.compile(r"lightpath-vm:[^\n]*# ")
# The longest a boot to the shell may take in all (boot_to_shell: what
# fails first is a console silent for its `stall` seconds).
BOOT_CAP = int(os.environ.get("LP_LINUX_BOOT_CAP", "1200"))
QEMU_NOISE = "TCG doesn't support requested feature"

# One row of lightpath's exit statistics table (as tests/integration/qemu_suite/reports.py).
STATS_ROW = re.compile(r"^\s+(\S.*?)\s+(\d+)\s+(\d+(?:\.\d+)?)%\s+(\d+)\s+(\d+)"
                       r"(?:\s+light\s+(\d+(?:\.\d+)?)%)?\s*$")


class GuestError(Exception):
    pass


def rel(p):
    return os.path.relpath(p, ROOT)


def build_guest(quiet=False):
    """Runs tools/linux/build.sh (quick when everything is up to date)."""
    p = subprocess.run([os.path.join(ROOT, "tools", "linux", "build.sh")], cwd=ROOT,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if not quiet:
        for line in (p.stdout + p.stderr).splitlines():
            print("  " + line, flush=True)
    if p.returncode != 0:
        err = [l for l in (p.stderr + p.stdout).splitlines() if "error" in l] or \
            (p.stderr + p.stdout).splitlines()[-1:]
        raise GuestError("tools/linux/build.sh failed: " + "; ".join(err))


def read_vmcfg(path):
    """The key = value pairs of a VM description (vmm/vmconfig.h's format;
    only for the project's own files: no error reporting beyond the basics)."""
    out = {}
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0].rstrip() != "# lightpath vm":
        raise GuestError("%s does not start with '# lightpath vm'" % rel(path))
    for line in lines[1:]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, val = line.partition("=")
        val = val.strip()
        if val.startswith('"'):
            val = val[1:val.index('"', 1)]
        else:
            val = re.split(r"(?:^|\s)#", val, maxsplit=1)[0].strip()
        out[key.strip()] = val
    return out


def write_vmcfg(path, cfg, comment):
    """Writes a VM description (values quoted)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("# lightpath vm\n# %s\n" % comment)
        for k in ("name", "kernel", "initrd", "cmdline", "memory", "cpus", "disk", "net"):
            if k in cfg:
                f.write('%s = "%s"\n' % (k, cfg[k]))


class Guest:
    """One boot. .log (serial output), .t_init / .t_prompt / .t_end (seconds
    from start), .rc, .text (everything read so far, CRs removed: the shell
    is driven through it; lightpath's lines are still told from the guest's
    by their place at a line start, see tools/serial_log.py)."""

    def __init__(self, mode, log, cmdline_extra="", cfg_path=CFG, lp_opts="", timeout=900,
                 say=print, extra_modules=(), smp=None, icount=False):
        """extra_modules: more boot modules after the guest's (more VMs, under
        lightpath only); smp: QEMU's CPUs (default: one per vCPU); icount:
        QEMU -icount (lp-qemu --icount: the TSC counts instructions), under
        lightpath only."""
        if mode not in ("lightpath", "direct", "bochs"):
            raise ValueError(mode)
        if icount and mode != "lightpath":
            raise ValueError("icount is lp-qemu's option: lightpath mode only")
        self.mode = mode
        self.log = log
        self.say = say
        self.cfg_path = cfg_path
        cfg = read_vmcfg(cfg_path)
        self.cmdline = (cfg.get("cmdline", "") + " " + cmdline_extra).strip()
        self.memory = int(cfg.get("memory", "256"))
        # one host CPU per vCPU (lightpath pins each vCPU to a CPU of its own)
        self.cpus = int(cfg.get("cpus", "1"))
        host_cpus = smp or self.cpus
        self._pty = None
        if mode in ("lightpath", "bochs"):
            if cmdline_extra:
                # lightpath takes the command line from the VM description:
                # write one next to the log with the extra words.
                cfg = dict(cfg, cmdline=self.cmdline)
                self.cfg_path = os.path.splitext(log)[0] + ".cfg"
                write_vmcfg(self.cfg_path, cfg, "written by tools/linux/lpguest.py for %s"
                            % rel(log))
        if mode == "lightpath":
            self.cmd = [LP_QEMU, "--interactive"] + (["--icount"] if icount else []) + \
                ["--smp", str(host_cpus), "--mem", str(LP_QEMU_MEM),
                 "--timeout", str(timeout), "--append", lp_opts,
                 rel(self.cfg_path), rel(KERNEL), rel(INITRD)] + list(extra_modules)
        elif mode == "bochs":
            # COM1 on a pty in raw mode (no echo or newline translation of
            # its own): what the guest prints and what is typed pass as bytes
            self._pty = pty.openpty()
            tty.setraw(self._pty[1])
            name = os.path.splitext(os.path.basename(log))[0]
            self.cmd = [LP_BOCHS, "--timeout", str(timeout), "--megs", str(BOCHS_MEGS),
                        "--cpus", str(host_cpus), "--name", name, "--append", lp_opts,
                        "--serial-tty", os.ttyname(self._pty[1]),
                        rel(self.cfg_path), rel(KERNEL), rel(INITRD)] + list(extra_modules)
        else:
            qemu = os.environ.get("LP_QEMU", "qemu-system-x86_64")
            self.cmd = ["timeout", "--kill-after=5", str(timeout), qemu, "-accel", "tcg",
                        "-cpu", CPU, "-smp", str(self.cpus), "-m", str(self.memory),
                        "-display", "none", "-monitor", "none", "-serial", "stdio",
                        "-no-reboot", "-kernel", rel(KERNEL), "-initrd", rel(INITRD),
                        "-append", self.cmdline]
        for f in (KERNEL, INITRD, self.cfg_path):
            if not os.path.exists(f):
                raise GuestError("no %s (run `make linux-guest`)" % rel(f))
        self.text = ""
        # Which output the console methods (wait_for, send, run, boot_to_shell)
        # read: None, all of it; N, vmN's lines alone (VMs side by side, see
        # use_vm); "lightpath", lightpath's own lines. One read position each.
        self.vm = None
        self._pos = {}
        self._vm_cache = {}   # vm: (length of .text's complete lines read, their text)
        self.input_vm = None  # the VM console input goes to, as lightpath last said
        self._input_pos = 0
        self.pos = 0
        self.rc = None
        self.t_init = self.t_prompt = self.t_end = None
        self._cond = threading.Condition()
        self._eof = False
        self._seq = 0

    def command_line(self):
        words = [rel(c) if c.startswith(ROOT + os.sep) else c for c in self.cmd]
        return " ".join(c if c and " " not in c else "'%s'" % c for c in words)

    # ------------------------------------------------------------ process

    def start(self):
        os.makedirs(os.path.dirname(self.log), exist_ok=True)
        self._logf = open(self.log, "w")
        self._errf = open(os.path.splitext(self.log)[0] + ".stderr", "w")
        self.t0 = time.monotonic()
        # A session (and process group) of its own: kill() ends timeout and
        # QEMU together, never anything else.
        # (Bochs: the console is the pty; lp-bochs prints nothing else)
        pipe = subprocess.DEVNULL if self._pty else subprocess.PIPE
        self.p = subprocess.Popen(self.cmd, cwd=ROOT, stdin=pipe, stdout=pipe,
                                  stderr=self._errf, bufsize=0, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        fd = self._pty[0] if self._pty else self.p.stdout.fileno()
        while True:
            if self._pty:
                # the pty never reaches end-of-file (this process holds its
                # other side): the end is Bochs' exit
                if not select.select([fd], [], [], 0.2)[0]:
                    if self.p.poll() is not None:
                        break
                    continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                break
            s = chunk.decode("utf-8", errors="replace").replace("\r", "")
            self._logf.write(s)
            self._logf.flush()
            with self._cond:
                self.text += s
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def elapsed(self):
        return time.monotonic() - self.t0

    def last_line(self):
        lines = [l for l in self.text.splitlines() if l.strip()]
        return lines[-1].strip()[:110] if lines else "(nothing yet)"

    def stderr_text(self):
        try:
            with open(os.path.splitext(self.log)[0] + ".stderr", errors="replace") as f:
                return "\n".join(l for l in f.read().splitlines() if QEMU_NOISE not in l)
        except OSError:
            return ""

    def kill(self):
        """Ends QEMU (and the timeout wrapping it): the process group of the
        process start() began."""
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.wait_exit(10)

    def wait_exit(self, timeout):
        """QEMU's exit status, or None if it is still running after timeout."""
        try:
            self.rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self._reader.join(5)
        self.t_end = self.elapsed()
        self._logf.close()
        self._errf.close()
        if self._pty:
            for fd in self._pty:
                os.close(fd)
            self._pty = None
        return self.rc

    # ------------------------------------------------------------ console

    @property
    def pos(self):
        """The read position in the output .vm selects."""
        return self._pos.get(self.vm, 0)

    @pos.setter
    def pos(self, value):
        self._pos[self.vm] = value

    def output(self, source=None):
        """The output wait_for reads: source None (the default: .vm's), or
        an explicit one as .vm takes them. A VM's output is its lines
        without the prefixes, in order, joined by '\n' (a line of it that
        lightpath cut to print another VM's is two lines here); its last,
        unfinished line is included. Only grows as .text grows."""
        src = self.vm if source is None else source
        if src is None:
            return self.text
        if src == "lightpath":
            end = self.text.rfind("\n") + 1
            return "".join(l + "\n" for l in serial_log.lightpath_lines(self.text[:end]))
        done, body = self._vm_cache.get(src, (0, ""))
        end = self.text.rfind("\n") + 1
        if end > done:
            body += "".join(strip_vm_prefix(l[m.end():]) + "\n"
                            for l in serial_log.lines(self.text[done:end])
                            for m in [serial_log.VM_PREFIX.match(l)]
                            if m and int(m.group(1)) == src)
            self._vm_cache[src] = (end, body)
        tail = self.text[end:]
        m = serial_log.VM_PREFIX.match(tail)
        if m and int(m.group(1)) == src:
            # not a prefix still arriving (it would vanish once complete)
            return body + re.sub(r"\[(?:v(?:m(?:\d+\]?)?)?)?$", "", strip_vm_prefix(tail[m.end():]))
        return body

    def use_vm(self, vm, timeout=20):
        """VMs side by side: passes console input to vmN (Ctrl-\\ until
        lightpath says 'console input goes to vmN now'; again a moment later
        while it says the input stays: vmN has not started yet) and makes
        the console methods read vmN's output alone from now on."""
        deadline = time.monotonic() + timeout
        if self.input_vm is None:
            self._track_input(timeout, wait=True)   # the first VM to start has it
        self._track_input()
        while self.input_vm != vm:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuestError("Ctrl-\\ did not give console input to vm%d in %d s (it stays "
                                 "with vm%s); last line: %s" % (vm, timeout, self.input_vm,
                                                               self.last_line()))
            before = self.input_vm
            self._write(b"\x1c")
            self._track_input(left, wait=True)
            if self.input_vm == before:
                time.sleep(0.5)
        self.vm = vm

    INPUT_LINE = re.compile(r"(?m)^lightpath: console input (?:goes to|stays with) vm(\d+)\b.*\n")

    def _track_input(self, timeout=0, wait=False):
        """Reads lightpath's lines about console input since the last call
        (.input_vm is the last one's VM); with wait, waits up to timeout s
        for one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = list(self.INPUT_LINE.finditer(self.output("lightpath"), self._input_pos))
                if found:
                    self._input_pos = found[-1].end()
                    self.input_vm = int(found[-1].group(1))
                    return
                if not wait:
                    return
                if self._eof:
                    raise GuestError("QEMU exited while waiting for a 'console input goes to' line;"
                                     " last line: %s" % self.last_line())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GuestError("no 'lightpath: console input goes to vmN now' line after "
                                     "%.0f s; last line: %s" % (self.elapsed(), self.last_line()))
                self._cond.wait(min(left, 0.2))

    def wait_for(self, regex, timeout, what, progress=10, source=None, stall=None):
        """Waits until regex matches the output (self.output(source)) after
        its read position; moves that past it. Prints a progress line every
        `progress` seconds (0: never). With `stall`, what fails is a guest
        that stopped making progress, not a slow one: no new output at all
        (any VM's) for `stall` seconds; `timeout` is then only the cap for
        one that prints for ever without getting there."""
        r = re.compile(regex) if isinstance(regex, str) else regex
        key = self.vm if source is None else source
        deadline = time.monotonic() + timeout
        next_note = time.monotonic() + progress if progress else None
        seen, seen_at = len(self.text), time.monotonic()
        with self._cond:
            while True:
                m = r.search(self.output(key), self._pos.get(key, 0))
                if m:
                    self._pos[key] = m.end()
                    return m
                now = time.monotonic()
                if self._eof:
                    rc = self.p.poll()
                    raise GuestError("QEMU exited (status %s) while waiting for %s; last line: %s"
                                     % (rc, what, self.last_line()))
                if len(self.text) != seen:
                    seen, seen_at = len(self.text), now
                if stall and now - seen_at >= stall:
                    raise GuestError("no %s: no output for %.0f s (at %.0f s); last line: %s"
                                     % (what, now - seen_at, self.elapsed(), self.last_line()))
                if now >= deadline:
                    raise GuestError("no %s after %.0f s; last line: %s"
                                     % (what, self.elapsed(), self.last_line()))
                if next_note and now >= next_note:
                    self.say("  [%5.1f s] waiting for %s; last line: %s"
                             % (self.elapsed(), what, self.last_line()))
                    next_note = now + progress
                wake = min(deadline, next_note) if next_note else deadline
                if stall:
                    wake = min(wake, seen_at + stall)
                self._cond.wait(max(0.05, wake - now))

    def send(self, text, echo_wait=2.0):
        """Types text, 8 bytes at a time, waiting (up to echo_wait s per
        chunk) for the terminal to echo each chunk before typing the next:
        a UART has a 16-byte receive FIFO, and typing faster than the guest
        reads can lose bytes. A newline is not waited for."""
        typed = ""
        with self._cond:
            start = len(self.output())
        for i in range(0, len(text), 8):
            chunk = text[i:i + 8]
            self._write(chunk.encode())
            typed += chunk.replace("\n", "")
            if not typed or not echo_wait:
                time.sleep(0.02)
                continue
            deadline = time.monotonic() + echo_wait
            with self._cond:
                while typed not in echoed(self.output()[start:]) and not self._eof:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(min(left, 0.1))

    def _write(self, data):
        """Types bytes on the console (the serial port's input)."""
        try:
            if self._pty:
                if self.p.poll() is not None:
                    raise OSError("Bochs exited")
                os.write(self._pty[0], data)
            else:
                self.p.stdin.write(data)
                self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            raise GuestError("QEMU's stdin is closed (QEMU exited?); last line: %s"
                             % self.last_line())

    def boot_to_shell(self, stall=180, cap=BOOT_CAP):
        """Waits for /init's first line and the shell prompt; returns the
        seconds to the prompt. A boot fails when its console stays silent
        for `stall` seconds, not when a loaded host makes it slow (Linux
        with 2 vCPUs under TCG beside another test suite took more than
        180 s to reach /init); `cap` seconds in all bound a boot that never
        ends."""
        self.wait_for(INIT_RE, cap, "'%s'" % INIT_LINE, stall=stall)
        self.t_init = self.elapsed()
        self.say("  [%5.1f s] %s" % (self.t_init, INIT_LINE))
        self.wait_for(PROMPT, max(5, cap - self.t_init), "the shell prompt", stall=stall)
        self.t_prompt = self.elapsed()
        self.say("  [%5.1f s] shell prompt" % self.t_prompt)
        return self.t_prompt

    def run(self, cmd, timeout=60, kernel_lines=False):
        """Runs a shell command line; returns (output, exit status). The
        markers are typed as LPn""B so that the terminal's echo of the typed
        line never matches them. Lines that look like the kernel's console
        messages ("[   1.234567] ...") are dropped from the output unless
        kernel_lines (for dmesg's own output)."""
        self._seq += 1
        n = self._seq
        self.send('echo LP%d""B; %s; echo LP%d""E $?\n' % (n, cmd, n))
        m = self.wait_for(r"(?s)LP%dB\n(.*?)LP%dE (\d+)\n" % (n, n), timeout,
                          "the end of '%s'" % cmd, progress=0)
        out = strip_vm_prefix(m.group(1))
        return (out if kernel_lines else strip_printk(out)), int(m.group(2))

    def end_vm(self, timeout=60):
        """VMs side by side: types poweroff to the VM that has the input
        (.vm, see use_vm) and waits for lightpath's line that it ended or
        was stopped; returns that line (the other VMs run on)."""
        self.send("poweroff\n")
        m = self.wait_for(r"(?m)^lightpath: vm%d: (?:ended|stopped)\b.*\n" % self.vm, timeout,
                          "vm%d's end after 'poweroff'" % self.vm, source="lightpath")
        self._track_input()
        return m.group(0).strip()

    def poweroff(self, timeout=120):
        """Types poweroff and waits for QEMU to exit; returns its status."""
        self.send("poweroff\n")
        rc = self.wait_exit(timeout)
        if rc is None:
            self.kill()
            raise GuestError("QEMU still running %d s after 'poweroff'; last line: %s"
                             % (timeout, self.last_line()))
        return rc


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def echoed(text):
    """What a terminal shows of typed text: no escape sequences, no line
    breaks (the line editor wraps long lines), no "[vmN] " prefixes."""
    return ANSI_ESCAPE.sub("", strip_vm_prefix(text)).replace("\n", "")


PRINTK_LINE = re.compile(r"(?m)^\[\s*\d+\.\d+\] .*\n?")


def strip_printk(text):
    """Command output without the kernel's console messages (lines starting
    "[   12.345678] ") that were printed while the command ran."""
    return PRINTK_LINE.sub("", text)


def strip_vm_prefix(text):
    """Guest output without lightpath's "[vmN] " prefixes: at every line
    start, and again after a carriage return followed by a visible character
    (the CR itself is gone from .text, so the prefix can be mid-line)."""
    return re.sub(r"\[vm\d+\] ", "", text)


def exit_stats(text, vm=0):
    """lightpath's exit statistics table for vmN: (rows {reason: (exits,
    light, heavy)}, the table's lines), or (None, []) when absent."""
    lines = serial_log.lines(text)   # never str.splitlines(): a guest can print its separators
    head = [i for i, l in enumerate(lines)
            if re.match(r"^lightpath: vm%d: exit statistics\s*$" % vm, l)]
    if not head:
        return None, []
    rows, table = {}, [lines[head[-1]]]
    for line in lines[head[-1] + 1:]:
        if re.match(r"^\s+reason\s+exits\s+share\s+light\s+heavy\s*$", line):
            table.append(line)
            continue
        m = STATS_ROW.match(line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), int(m.group(4)), int(m.group(5)))
            table.append(line)
            continue
        if re.match(r"^\s+(denied|emulated|clock):", line):
            table.append(line)
            continue
        break
    return rows, table


# stats=cost|all (vmm/exit_cost.c): a cost row "reason exits min mean max
# k:exits...", the total line, and a sites row "reason  0xRIP: n (+err)...".
COST_ROW = re.compile(r"^\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+((?:\d+:\d+\s*)+)$")
COST_TOTAL = re.compile(r"^\s+cost total: (\d+) ticks in exit handling of (\d+) since the VM started")
COST_SITE = re.compile(r"0x([0-9a-f]+): (\d+)(?: \(\+(\d+)\))?")


def exit_cost(text, vm=0):
    """The cost and sites sections stats=all prints after vmN's exit
    statistics: (cost {reason: {"exits", "min", "mean", "max", "hist"
    {k: exits}}}, (ticks in exit handling, ticks since the VM started) or
    None, sites {reason: [(rip, exits, err)]}, most exits first)."""
    lines = serial_log.lines(text)
    head = [i for i, l in enumerate(lines)
            if re.match(r"^lightpath: vm%d: exit statistics\s*$" % vm, l)]
    cost, total, sites = {}, None, {}
    part = None
    for line in lines[head[-1] + 1:] if head else []:
        if not line.startswith("  "):   # lightpath's next line ends the table
            break
        if line.startswith("  cost: ") or line.startswith("  sites: "):
            part = line.split(":")[0].strip()
            continue
        m = COST_TOTAL.match(line)
        if m:
            total = (int(m.group(1)), int(m.group(2)))
            continue
        m = COST_ROW.match(line)
        if part == "cost" and m:
            cost[m.group(1)] = {"exits": int(m.group(2)), "min": int(m.group(3)),
                                "mean": int(m.group(4)), "max": int(m.group(5)),
                                "hist": {int(k): int(n) for k, n in
                                         (x.split(":") for x in m.group(6).split())}}
        elif part == "sites" and COST_SITE.search(line):
            sites[line.split()[0]] = [(int(r, 16), int(n), int(e or 0))
                                      for r, n, e in COST_SITE.findall(line)]
    return cost, total, sites


def light_share(rows):
    """Light exits / all exits, in percent, from the 'total' row."""
    if not rows or "total" not in rows or rows["total"][0] == 0:
        return None
    exits, light, _ = rows["total"]
    return 100.0 * light / exits


if __name__ == "__main__":
    sys.exit("tools/linux/lpguest.py is a module (see tests/integration/linux_test.py)")
