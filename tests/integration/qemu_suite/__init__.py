"""The QEMU (SVM) integration suite that tests/integration/itest.py runs,
one module per group of tests, and the machinery the Bochs suite
(vmx_tests.py) and the hostile-guest cases (hostile/*.py) share with it:

  boot.py       Boot: one run of lightpath under QEMU; Fail, check
  runner.py     run_suite, suite_main (-j, -k, --list, --counts), plugin_tests
  lines.py      the lines a boot must print, shared by the suites
  selftests.py  guest self-tests, switch configurations, unclaimed addresses
  isolation.py  how VMs end and stay apart: status, forged lines, irqstate
  config.py     boot options, VM descriptions and images: loaded or refused
  virtio.py     virtio disk and network, and the guests that attack them
  timeouts.py   time limits and the clock they are timed by
  console.py    Ctrl-^, Ctrl-\\, host NMIs (interactive runs)
  reports.py    the exit statistics, stats=all, spec=
  tooling.py    the bench and compare parsers, the ISO, exit_trace, fixed registers
  smp.py        host SMP: VMs side by side, pcpus =, the SMP guest
  registry.py   all_tests(): every test, in the order it is listed and run

`import itest` gives all of their names (itest.Boot, itest.healthy, ...).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# tools/ and tools/linux/ hold the parsers under test (bench, serial_log, lpguest)
_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_TOOLS = os.path.join(_ROOT, "tools")
sys.path.insert(0, _TOOLS)
sys.path.insert(0, os.path.join(_TOOLS, "linux"))
