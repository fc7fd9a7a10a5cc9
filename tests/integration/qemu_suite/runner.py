"""Running a suite: run_suite (the tests on -j threads, phase by phase,
PASS/FAIL per test), suite_main (the command line: -j, -k, --list, --counts)
and plugin_tests (the hostile-guest cases of tests/integration/hostile/)."""

import argparse
import concurrent.futures
import glob
import os
import re
import threading
import time

from .boot import _current, Fail, INTEGRATION, OUT


def plugin_tests(kind):
    """Tests from tests/integration/hostile/*.py: each module may define
    qemu_tests() and vmx_tests(), returning [(phase, name, fn)] like
    all_tests(); one module per hostile-guest case."""
    import importlib.util
    t = []
    pattern = os.path.join(INTEGRATION, "hostile", "*.py")
    for path in sorted(glob.glob(pattern)):
        spec = importlib.util.spec_from_file_location("hostile_" + os.path.basename(path)[:-3], path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if hasattr(mod, kind):
            t.extend(getattr(mod, kind)())
    return t


def run_suite(tests, jobs, title, counts=None):
    """Runs [(phase, name, fn)] on `jobs` threads, phase by phase, printing
    each start and PASS/FAIL; `counts`: write 'passed failed' there. 0 when
    all passed."""
    lock = threading.Lock()
    passed = failed = 0
    total = len(tests)
    started = [0]

    def run(name, fn):
        with lock:
            started[0] += 1
            print("[%3d/%d] %s ..." % (started[0], total, name), flush=True)
        t0 = time.monotonic()
        _current.logs, _current.name = [], name
        try:
            fn()
            return name, None, _current.logs, time.monotonic() - t0
        except Fail as e:
            return name, str(e), _current.logs, time.monotonic() - t0
        except Exception as e:  # a harness bug is still a failure, never a pass
            return name, "%s: %s" % (type(e).__name__, e), _current.logs, time.monotonic() - t0

    t_start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for phase in sorted(set(p for p, _, _ in tests)):
            futs = [pool.submit(run, n, fn) for p, n, fn in tests if p == phase]
            for fut in concurrent.futures.as_completed(futs):
                name, err, logs, secs = fut.result()
                with lock:
                    if err is None:
                        passed += 1
                        print("PASS %s (%.1f s)" % (name, secs), flush=True)
                    else:
                        failed += 1
                        log = " [serial log: %s]" % ", ".join(logs) if logs else ""
                        print("FAIL %s: %s%s" % (name, err, log), flush=True)
    print("%s: %d tests in %.0f s" % (title, passed + failed, time.monotonic() - t_start), flush=True)
    if counts:
        with open(counts, "w") as f:
            f.write("%d %d\n" % (passed, failed))
    return 0 if failed == 0 else 1


def suite_main(doc, tests, needed, title):
    """A suite's command line: -j, -k (with the baselines needed(selected)
    names), --list, --counts; runs the selected [(phase, name, fn)]."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("LP_JOBS", "2")))
    ap.add_argument("-k", "--match", help="only tests whose name matches this regex")
    ap.add_argument("--list", action="store_true", help="list the tests and exit")
    ap.add_argument("--counts", help="write 'passed failed' to this file")
    args = ap.parse_args()
    if args.match:
        r = re.compile(args.match)
        sel = [x for x in tests if r.search(x[1])]
        keep = needed(sel)
        tests = [x for x in tests if x in sel or x[1] in keep]
    if args.list:
        for _, name, _ in tests:
            print(name)
        return 0
    os.makedirs(OUT, exist_ok=True)
    return run_suite(tests, args.jobs, title, args.counts)
