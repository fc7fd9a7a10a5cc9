#!/usr/bin/python3
"""lightpath integration tests: boot the real hypervisor under QEMU (TCG, AMD
SVM) with the project's guests and check what it prints and how it exits.

Run by tools/test.sh (`make test`); on its own:

    tests/integration/itest.py [-j JOBS] [-k REGEX] [--list] [--counts FILE]

Prints `PASS name` or `FAIL name: reason` per test (serial logs are kept in
build/test/<name>.log) and writes "passed failed" to --counts. Every boot runs
under `timeout` (LP_TEST_TIMEOUT seconds, default 60), so a hang is a failure.

The tests and their machinery live in tests/integration/qemu_suite/ (one
module per group of tests; its __init__.py lists them). This script runs
them, and `import itest` (vmx_tests.py, hostile/*.py) gets all their names.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from qemu_suite.boot import *  # noqa: E402,F401,F403
from qemu_suite.runner import *  # noqa: E402,F401,F403
from qemu_suite.lines import *  # noqa: E402,F401,F403
from qemu_suite.selftests import *  # noqa: E402,F401,F403
from qemu_suite.isolation import *  # noqa: E402,F401,F403
from qemu_suite.config import *  # noqa: E402,F401,F403
from qemu_suite.virtio import *  # noqa: E402,F401,F403
from qemu_suite.timeouts import *  # noqa: E402,F401,F403
from qemu_suite.console import *  # noqa: E402,F401,F403
from qemu_suite.reports import *  # noqa: E402,F401,F403
from qemu_suite.tooling import *  # noqa: E402,F401,F403
from qemu_suite.smp import *  # noqa: E402,F401,F403
from qemu_suite.registry import *  # noqa: E402,F401,F403


def main():
    return suite_main(__doc__, all_tests(), baselines_needed, "integration")  # noqa: F405


if __name__ == "__main__":
    sys.exit(main())
