#!/usr/bin/python3
"""make stress: the timing-, interrupt-, SMP-, virtio- and link-sensitive
integration tests, ROUNDS rounds under a host CPU hog.

    tools/stress.py [--rounds N] [--tests REGEX] [--quick] [--counts FILE] [--list]

The tests are chosen by name from the suites' own --list (SELECT below, the
one place that says which), in the QEMU suite (tests/integration/itest.py),
the Bochs suites (tests/integration/vmx_tests.py: VT-x and ryzen) and the
Linux guests of several vCPUs (tests/integration/linux_test.py, SUITE_ONLY);
--tests (make's STRESS_TESTS=) narrows them further by regex. A hog of one
busy process per core (tools/hog.py) runs for the whole time and is stopped
however the run ends (failure, Ctrl-C, SIGTERM). Each round runs each
suite once on the chosen tests; a failed test's serial logs are copied to
build/stress/<test>-round<N>.log (then -2, -3... for a boot's further
logs), so later rounds do not overwrite them. Ends with a table (test,
runs, failures, the first failure's log and reason) and the line
"N passed, M failed"; exit status 0 iff nothing failed.

--quick: one round of QUICK, the shortest of them (what `make test` runs
at its end, tools/test.sh). LP_SKIP_VMX=1 leaves the Bochs suites out.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools"))
import hog  # noqa: E402

OUT = os.path.join(ROOT, "build", "stress")
PYTHON = sys.executable or "/usr/bin/python3"
SUITES = (("qemu", "tests/integration/itest.py"),
          ("bochs", "tests/integration/vmx_tests.py"),
          ("linux", "tests/integration/linux_test.py"))
# A suite's own narrowing: of the Linux guests, those of several vCPUs only
# (about 40 s each under the hog; side by side and the link have their QEMU
# tests): a round stays under 10 minutes, 20 rounds a few hours.
SUITE_ONLY = {"linux": re.compile(r"smp")}

# The tests whose outcome depends on timing, interrupts, several CPUs,
# virtio or the network link: every name any suite lists that matches.
SELECT = re.compile(r"intr|irq|timer|hpet|smp|side|virtio|net|ipi|leadwild|irqtwice|timeout|"
                    r"console|hlt|clock|tscwild")
# ... except the option and description parsers that merely carry one of
# those words in their name (they boot, print one error line and stop).
EXCLUDE = re.compile(r"^(vmx-)?bad-")
# The shortest of them, one round under the hog at the end of `make test`.
QUICK = ("selftest-timers", "selftest-intr64", "selftest-irqonce64", "timeout-not-early",
         "clock-under-load", "smp-guest-2-on-2", "virtio-rw",
         "vmx-selftest-timers", "nrip-selftest-intr64")

RESULT = re.compile(r"^(PASS|FAIL) (\S+?)(?: \(\d+\.\d s\)$|: (.*))")
LOGS = re.compile(r" \[serial log: ([^\]]+)\]$")


def listed(script):
    p = subprocess.run([PYTHON, script, "--list"], cwd=ROOT, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise SystemExit("stress: %s --list failed: %s" % (script, p.stderr.strip()))
    return p.stdout.split()


def choose(names, only, quick):
    chosen = [n for n in names if SELECT.search(n) and not EXCLUDE.search(n)]
    if quick:
        chosen = [n for n in chosen if n in QUICK]
    if only:
        r = re.compile(only)
        chosen = [n for n in chosen if r.search(n)]
    return chosen


def safe(name):
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", name)


def keep_logs(test, rnd, logs):
    """Copies a failed run's logs out of build/test; returns the first copy."""
    os.makedirs(OUT, exist_ok=True)
    first = None
    for i, log in enumerate(logs):
        src = os.path.join(ROOT, log)
        dst = os.path.join(OUT, "%s-round%d%s.log" % (safe(test), rnd, "" if i == 0 else "-%d" % (i + 1)))
        if not os.path.exists(src):
            continue
        shutil.copyfile(src, dst)
        err = src[:-4] + ".stderr"
        if os.path.exists(err):
            shutil.copyfile(err, dst[:-4] + ".stderr")
        if first is None:
            first = os.path.relpath(dst, ROOT)
    return first


def run_suite(kind, script, tests, rnd, results):
    """One suite, one round; records each PASS/FAIL line in results."""
    pattern = "^(%s)$" % "|".join(re.escape(t) for t in tests)
    counts = os.path.join(OUT, "%s.counts" % kind)
    out_path = os.path.join(OUT, "round%d-%s.out" % (rnd, kind))
    cmd = [PYTHON, script, "-k", pattern, "--counts", counts]
    seen = set()
    with open(out_path, "w") as out:
        # a session of its own: an interruption ends the runner and its
        # emulators together (killpg), wherever the signal came from
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            for line in p.stdout:
                out.write(line)
                m = RESULT.match(line.rstrip("\n"))
                if not m:
                    continue
                verdict, name, reason = m.group(1), m.group(2), m.group(3)
                seen.add(name)
                r = results.setdefault(name, {"runs": 0, "fails": 0, "log": None, "why": None})
                r["runs"] += 1
                if verdict == "PASS":
                    print("  round %d: PASS %s" % (rnd, name), flush=True)
                    continue
                r["fails"] += 1
                lm = LOGS.search(reason or "")
                logs = [l.strip() for l in lm.group(1).split(",")] if lm else []
                kept = keep_logs(name, rnd, logs)
                if r["log"] is None:
                    r["log"] = kept or "(no serial log)"
                    r["why"] = LOGS.sub("", reason or "")
                print("  round %d: FAIL %s: %s%s" % (rnd, name, LOGS.sub("", reason or ""),
                                                     " -> " + kept if kept else ""), flush=True)
            rc = p.wait()
        finally:
            if p.poll() is None:   # Ctrl-C or SIGTERM while it ran
                stop_group(p)
    if rc != 0 and not any(results[n]["fails"] for n in seen if n in results) or not seen:
        # the runner broke (or ran nothing): a failure of the round, not a pass
        name = "(%s suite, round %d)" % (kind, rnd)
        results[name] = {"runs": 1, "fails": 1, "log": os.path.relpath(out_path, ROOT),
                         "why": "the runner exited %d%s" % (rc, "" if seen else " having run no test")}


def stop_group(p):
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, None)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        try:
            p.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


def interrupt(signum, frame):
    raise KeyboardInterrupt


def table(results):
    rows = sorted(results.items(), key=lambda kv: (-kv[1]["fails"], kv[0]))
    w = max([len("test")] + [len(n) for n in results])
    print("%-*s  %5s  %8s  %s" % (w, "test", "runs", "failures", "first failure (log: reason)"))
    for name, r in rows:
        first = "%s: %s" % (r["log"], (r["why"] or "")[:160]) if r["fails"] else "-"
        print("%-*s  %5d  %8d  %s" % (w, name, r["runs"], r["fails"], first))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", "20") or 20))
    ap.add_argument("--tests", default=os.environ.get("STRESS_TESTS") or None,
                    help="only the chosen tests whose name matches this regex")
    ap.add_argument("--quick", action="store_true", help="one round of the shortest tests")
    ap.add_argument("--counts", help="write 'passed failed' (runs) to this file")
    ap.add_argument("--list", action="store_true", help="list the chosen tests and exit")
    args = ap.parse_args()
    # Ctrl-C and SIGTERM both end the run cleanly (a shell's background
    # job starts with SIGINT ignored: take it back)
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    rounds = 1 if args.quick else max(1, args.rounds)
    skip_vmx = os.environ.get("LP_SKIP_VMX") == "1"

    plan = []
    for kind, script in SUITES:
        if kind == "bochs" and skip_vmx:
            continue
        tests = [t for t in choose(listed(script), args.tests, args.quick)
                 if kind not in SUITE_ONLY or SUITE_ONLY[kind].search(t)]
        if tests:
            plan.append((kind, script, tests))
    if args.list:
        for _, _, tests in plan:
            print("\n".join(tests))
        return 0
    if not plan:
        print("stress: no test matches%s" % (" --tests %r" % args.tests if args.tests else ""))
        if args.counts:
            with open(args.counts, "w") as f:
                f.write("0 1\n")
        return 1
    os.makedirs(OUT, exist_ok=True)
    total = sum(len(t) for _, _, t in plan)
    print("stress: %d tests (%s), %d round%s, under a hog of %d busy processes"
          % (total, ", ".join("%s %d" % (k, len(t)) for k, _, t in plan), rounds,
             "" if rounds == 1 else "s", os.cpu_count() or 1), flush=True)

    results = {}
    t0 = time.monotonic()
    interrupted = False
    rnd = 0
    h = hog.Hog()
    try:
        with h:
            for rnd in range(1, rounds + 1):
                print("== round %d of %d (%.0f s so far)" % (rnd, rounds, time.monotonic() - t0),
                      flush=True)
                for kind, script, tests in plan:
                    run_suite(kind, script, tests, rnd, results)
                if not h.alive():
                    results["(the hog)"] = {"runs": 1, "fails": 1, "log": "-",
                                            "why": "a hog process died in round %d: the "
                                                   "rounds after it would not be under load" % rnd}
                    break
    except KeyboardInterrupt:
        interrupted = True
        print("\nstress: interrupted; the hog is stopped", flush=True)
    passed = sum(r["runs"] - r["fails"] for r in results.values())
    failed = sum(r["fails"] for r in results.values())
    print("== %.0f s; the hog had %.0f%% of %d CPUs" % (time.monotonic() - t0,
                                                         h.busy_fraction() * 100, h.n))
    table(results)
    if interrupted:
        failed += 1   # an interrupted run is not a pass
        print("stress: the run was interrupted in round %d: counted as one failure" % rnd)
    if args.counts:
        with open(args.counts, "w") as f:
            f.write("%d %d\n" % (passed, failed))
    print("%d passed, %d failed" % (passed, failed))
    return 130 if interrupted else (0 if failed == 0 else 1)


if __name__ == "__main__":
    sys.exit(main())
