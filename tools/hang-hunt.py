#!/usr/bin/python3
"""Runs one guest under lightpath many times, several at once, and reports
the runs that hang: for finding a rare lost interrupt under host load.

    tools/hang-hunt.py [--runs N] [--parallel P] [--append OPTS] [--load L] GUEST

GUEST is a built guest name (build/guests/GUEST.elf). Each run boots it with
tools/lp-qemu; one that prints no "selftest " line within --wait seconds is a
hang: Ctrl-] is typed three times (lightpath prints the VM's interrupt and
timer state) and its output is kept in build/hang-hunt/. --load starts L
busy loops next to the runs (a loaded CI machine). Prints one line per run
and "N runs, H hung". Not part of make test: it takes minutes and a hang is
found by chance (irqonce's hang at a HLT whose wake-up was already handled
showed under these settings, --parallel 4 --load 3, before it was fixed).
"""

import argparse
import os
import select
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "hang-hunt")
DUMP_KEY = b"\x1d"   # Ctrl-]: lightpath's interrupt-state line


def one_run(guest, append, wait, tag, results, lock):
    cmd = [os.path.join(ROOT, "tools", "lp-qemu"), "--interactive", "--timeout", str(wait + 30),
           "--append", append, "build/guests/%s.elf" % guest]
    p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out, t0, keys = b"", time.monotonic(), 0
    while True:
        ready, _, _ = select.select([p.stdout], [], [], 1.0)
        if ready:
            data = os.read(p.stdout.fileno(), 65536)
            if not data:
                break
            out += data
        elapsed = time.monotonic() - t0
        if b"selftest " not in out and elapsed > wait + 3 * keys and keys < 3:
            p.stdin.write(DUMP_KEY)
            p.stdin.flush()
            keys += 1
        if elapsed > wait + 12:
            p.kill()
            break
    p.wait()
    hung = b"selftest " not in out
    with lock:
        results.append(hung)
        line = "%s: %s (%.0f s)" % (tag, "HUNG" if hung else "ok", time.monotonic() - t0)
        if hung:
            path = os.path.join(OUT, "%s-%s.log" % (guest, tag))
            with open(path, "wb") as f:
                f.write(out)
            line += ", output in " + os.path.relpath(path, ROOT)
        print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("guest")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--append", default="light=off io=emulate dr=always stats=on")
    ap.add_argument("--load", type=int, default=0, help="busy loops next to the runs")
    ap.add_argument("--wait", type=int, default=60, help="seconds before a run counts as hung")
    a = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, "build", "guests", a.guest + ".elf")):
        sys.exit("hang-hunt: no build/guests/%s.elf (run 'make all')" % a.guest)
    os.makedirs(OUT, exist_ok=True)
    loads = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(a.load)]
    results, lock = [], threading.Lock()
    try:
        done = 0
        while done < a.runs:
            n = min(a.parallel, a.runs - done)
            ts = [threading.Thread(target=one_run, args=(a.guest, a.append, a.wait,
                                                        "run%d" % (done + k), results, lock))
                  for k in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            done += n
    finally:
        for p in loads:
            p.kill()
    print("%d runs, %d hung" % (len(results), sum(results)))
    return 1 if any(results) else 0


if __name__ == "__main__":
    sys.exit(main())
