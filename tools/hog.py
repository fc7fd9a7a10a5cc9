"""A host CPU hog: one busy process per core, for tests and `make stress`.

    with Hog() as h:      # starts os.cpu_count() spinning processes
        ...               # emulators now compete with them for the CPUs
    h.busy_fraction()     # CPU time the hog got / (processes x wall time)

The processes are stopped when the block ends, however it ends (exception,
Ctrl-C), at interpreter exit, and, should the process that started them be
killed outright, by the kernel (PR_SET_PDEATHSIG) or by themselves (each
spins only while its parent is the same). Children of the process that runs a hog
see LP_HOG=1 in their environment, so a test that would start its own hog
knows one is already running.
"""

import atexit
import os
import signal
import subprocess
import sys
import time

SPIN = "import os\np = os.getppid()\nwhile os.getppid() == p: pass"
PR_SET_PDEATHSIG = 1
_running = set()


def _stop_all():
    for p in list(_running):
        _kill(p)


def _kill(p):
    if p.poll() is None:
        p.kill()
    p.wait()
    _running.discard(p)


atexit.register(_stop_all)


def _clock_ticks(pid):
    """utime + stime of `pid` in clock ticks, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _die_with_parent():
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass   # the spin loop's own parent check still ends it


class Hog:
    def __init__(self, n=None):
        self.n = n or os.cpu_count() or 1
        self.procs = []
        self.t0 = self.t1 = None
        self.ticks = None

    def __enter__(self):
        for _ in range(self.n):
            p = subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=_die_with_parent)
            self.procs.append(p)
            _running.add(p)
        self.t0 = time.monotonic()
        os.environ["LP_HOG"] = "1"
        return self

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def stop(self):
        if self.t1 is None:
            self.t1 = time.monotonic()
            ticks = [_clock_ticks(p.pid) for p in self.procs]
            self.ticks = sum(t for t in ticks if t is not None)
        for p in self.procs:
            _kill(p)
        os.environ.pop("LP_HOG", None)

    def __exit__(self, *exc):
        self.stop()
        return False

    def busy_fraction(self):
        """CPU time the hog's processes got over their lifetime, as a share
        of n x wall time (1.0: each had a whole core)."""
        t1 = self.t1 if self.t1 is not None else time.monotonic()
        if self.ticks is None:
            ticks = sum(t or 0 for t in (_clock_ticks(p.pid) for p in self.procs))
        else:
            ticks = self.ticks
        wall = max(t1 - self.t0, 1e-6)
        return ticks / os.sysconf("SC_CLK_TCK") / (self.n * wall)
