"""One boot of lightpath under QEMU and its checks: Boot (tools/lp-qemu,
its serial log and exit code), run_watched (a run stopped as hung when its
output stops), claim_log (one log per test), Fail and check (how a test
fails), guest() (a guest module's command line)."""

import os
import re
import signal
import subprocess
import threading
import time

import serial_log  # tools/serial_log.py: lines a guest cannot forge


# tests/integration (this package's parent) and the repository above it
INTEGRATION = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(INTEGRATION))
LP_QEMU = os.path.join(ROOT, "tools", "lp-qemu")
OUT = os.path.join(ROOT, "build", "test")
GUESTS = "build/guests"
# A run fails as hung when its serial output stays the same for TIMEOUT
# seconds, not when a loaded host makes it slow; CAP_FACTOR * TIMEOUT
# seconds in all bound a run that prints for ever (run_watched).
TIMEOUT = int(os.environ.get("LP_TEST_TIMEOUT", "60"))
CAP_FACTOR = int(os.environ.get("LP_TEST_CAP_FACTOR", "10"))


PREFIX = r"\[vm\d+\] "   # every line of guest output starts with it


_current = threading.local()  # .logs, .name: serial logs and name of the test running on this thread
_log_owners = {}               # log path -> the test of this run that wrote it
_log_owners_lock = threading.Lock()


def descendants(pid):
    """Every process below pid (the emulator under its wrappers)."""
    out, todo = [], [pid]
    while todo:
        p = subprocess.run(["pgrep", "-P", str(todo.pop())], capture_output=True, text=True)
        kids = [int(x) for x in p.stdout.split()]
        out += kids
        todo += kids
    return out


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def run_watched(cmd, watch, stall):
    """Runs cmd (the emulator's wrapper, whose own --timeout is the cap)
    until it exits, or until the file `watch` (where the machine's serial
    output lands) has not changed size for `stall` seconds: then the
    emulator is stopped (the wrapper still collects its log) and the run
    counts as hung. Returns (completed process, seconds of silence that
    stopped it or 0). The child stays in this process group, so that
    Ctrl-C and tools/stress.py's killpg still reach the emulator."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    out = {}
    readers = [threading.Thread(target=lambda k, f: out.__setitem__(k, f.read()), args=(k, f))
               for k, f in (("out", p.stdout), ("err", p.stderr))]
    for t in readers:
        t.start()
    path = os.path.join(ROOT, watch)
    size, since, silent = -1, time.monotonic(), 0
    while p.poll() is None:
        try:
            now_size = os.path.getsize(path)
        except OSError:
            now_size = -1
        now = time.monotonic()
        if now_size != size:
            size, since = now_size, now
        elif now - since >= stall:
            silent = now - since
            signal_all(descendants(p.pid), signal.SIGTERM)   # the wrapper collects the log
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                signal_all(descendants(p.pid) + [p.pid], signal.SIGKILL)
            break
        try:
            p.wait(0.5)
        except subprocess.TimeoutExpired:
            pass
    p.wait()
    for t in readers:
        t.join()
    return subprocess.CompletedProcess(cmd, 124 if silent else p.returncode, out.get("out", ""),
                                       out.get("err", "")), silent


def claim_log(log):
    """Records that the running test writes `log` (a Bochs boot's emulator
    directory is named like its log). A second test of the run that would
    write the same one fails here, every time, rather than racing on the
    file and the directory when the two happen to run in parallel."""
    name = getattr(_current, "name", None)
    with _log_owners_lock:
        owner = _log_owners.setdefault(log, name)
    check(owner == name, "%s is also test %s's log: give the two boots distinct names" % (log, owner))
    getattr(_current, "logs", []).append(log)


class Fail(Exception):
    pass


def check(cond, reason):
    if not cond:
        raise Fail(reason)


class Boot:
    """One QEMU run of lightpath; .rc, .text, .lines, .log (repo-relative).
    `kernel`: boot that multiboot image instead of lightpath (a 32-bit guest
    run natively, `append` its arguments)."""

    silent = 0   # seconds without output that stopped the run (run_watched)

    def __init__(self, name, modules, append="", cpu=None, timeout=TIMEOUT, smp=None, icount=False,
                 kernel=None):
        safe = re.sub(r"[^A-Za-z0-9._=+-]", "_", name)
        self.log = os.path.join("build", "test", safe + ".log")
        claim_log(self.log)
        cmd = [LP_QEMU, "--timeout", str(timeout * CAP_FACTOR), "--log", self.log,
               "--append", append]
        if kernel:
            cmd += ["--kernel", kernel]
        if cpu:
            cmd += ["--cpu", cpu]
        if smp:   # QEMU's -smp (default 1)
            cmd += ["--smp", smp]
        if icount:   # -icount: QEMU runs its CPUs round robin, not in threads
            cmd += ["--icount"]
        cmd += list(modules)
        self.cmd = cmd
        self.timeout = timeout
        t0 = time.monotonic()
        p, self.silent = run_watched(cmd, self.log, timeout)
        self.secs = time.monotonic() - t0
        self.rc = p.returncode
        self.stderr = p.stderr
        try:
            self.text = serial_log.read(os.path.join(ROOT, self.log))
        except OSError:
            self.text = ""
        # split at '\n' only: a guest can print the other line breaks
        self.lines = serial_log.lines(self.text)
        if p.stderr.strip():
            with open(os.path.join(ROOT, self.log[:-4] + ".stderr"), "w") as f:
                f.write(p.stderr)

    def why_rc(self):
        if self.silent:
            return "hung: no output for %d s (at %d s)" % (self.silent, self.secs)
        if self.rc == 124 or self.rc == 137:
            return "timed out after %d s" % (self.timeout * CAP_FACTOR)
        if self.rc == 2 and self.stderr.startswith("lp-qemu:"):
            return self.stderr.strip().splitlines()[0]
        if self.rc == 0:
            return "QEMU exit 0 (the machine reset or lightpath triple-faulted)"
        s = "QEMU exit %d" % self.rc
        if self.rc % 2 == 1:
            s += " (status %#x)" % (self.rc >> 1)
        err = [l for l in self.stderr.splitlines()
               if l.strip() and "TCG doesn't support requested feature" not in l]
        if err:
            s += "; stderr: " + err[-1].strip()
        last = [l for l in serial_log.lightpath_lines(self.text) if l.startswith("lightpath:")]
        if last:
            s += "; last line: " + last[-1].strip()
        return s

    def expect_rc(self, rc):
        check(self.rc == rc, "expected QEMU exit %d, got %s" % (rc, self.why_rc()))

    def find(self, regex):
        """First match of regex (anchored at line start) or None."""
        r = re.compile(regex)
        for line in self.lines:
            m = r.match(line)
            if m:
                return m
        return None

    def findall(self, regex):
        r = re.compile(regex)
        return [m for m in (r.match(l) for l in self.lines) if m]

    def expect(self, regex, what=None):
        m = self.find(regex)
        check(m is not None, "no line %s" % (what or "matching /%s/" % regex))
        return m

    def expect_not(self, regex, what=None):
        m = self.find(regex)
        check(m is None, "unexpected line: %s" % (m.group(0).strip() if m else what))

    def expect_options(self, append):
        """lightpath's echo of its options agrees with what we asked for."""
        m = self.expect(r"^lightpath: options: (.*)$", "'lightpath: options: ...'")
        seen = dict(w.split("=", 1) for w in m.group(1).split() if "=" in w)
        for word in append.split():
            k, v = word.split("=", 1)
            check(seen.get(k) == v, "asked for %s, lightpath reports options: %s"
                  % (word, m.group(1).strip()))

    def expect_powered_off(self, status, why=None):
        """The last line: `status`, and the rule that chose it (a regex;
        default: every VM ended with 0 for status 0, the first non-zero
        otherwise)."""
        if why is None:
            why = (r"every VM ended with status 0" if status == 0 else
                   r"the first non-zero status, vm\d+'s; .*")
        m = self.expect(r"^lightpath: all VMs ended; powering off with status %d \((.*)\)$" % status,
                        "'lightpath: all VMs ended; powering off with status %d (...)'" % status)
        check(re.fullmatch(why, m.group(1)), "powering off with status %d, but (%s); expected /%s/"
              % (status, m.group(1), why))
        ends = self.findall(r"^lightpath: all VMs ended")
        check(len(ends) == 1, "%d 'lightpath: all VMs ended' lines" % len(ends))


def guest(name, args=""):
    return ("%s/%s.elf %s" % (GUESTS, name, args)).strip()


def norm(line):
    """A guest test line with numbers blanked, for comparing runs."""
    line = re.sub(r"^\[vm\d+\] ", "", line)
    return re.sub(r"\d+", "#", re.sub(r"0x[0-9a-fA-F]+", "0x#", line)).strip()


def write_test_file(name, data):
    """Writes build/test/<name> (text or bytes); returns its repo-relative path."""
    path = "build/test/" + name
    with open(os.path.join(ROOT, path), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return path
