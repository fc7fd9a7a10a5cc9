#!/usr/bin/env bash
# lightpath test suite (`make test`, after `make all unit-tests`):
#   1. host unit tests: `make unit-check` (cmocka), counted per test;
#   2. integration tests: tests/integration/itest.py boots lightpath under
#      QEMU with the project's guests (2 at a time; LP_JOBS to change);
#   3. the Linux boot: tests/integration/linux_test.py boots Debian's kernel
#      in a lightpath VM and uses its shell (LP_SKIP_LINUX=1 skips it);
#   4. VMX integration tests: tests/integration/vmx_tests.py boots the Intel
#      VT-x image under Bochs (LP_SKIP_VMX=1 skips them);
#   5. one round of the shortest timing-sensitive tests under a host CPU hog
#      (tools/stress.py --quick, `make stress` in small; LP_SKIP_STRESS=1
#      skips it, LP_SKIP_VMX=1 leaves its Bochs tests out).
# Ends with one line "N passed, M failed" (", K skipped" added when tests
# were skipped); exit status 0 iff M == 0.
# Extra arguments go to itest.py and vmx_tests.py (e.g. `-k combo`);
# LP_SKIP_UNIT=1 skips the unit tests.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p build/test
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
start=$SECONDS

passed=0
failed=0
skipped=0

if [[ "${LP_SKIP_UNIT:-0}" != 1 ]]; then
	echo "== unit tests (make unit-check)"
	log=build/test/unit-check.log
	rc=0
	make --no-print-directory unit-check >"$log" 2>&1 </dev/null || rc=$?
	# cmocka closes each test binary with "[  PASSED  ] N test(s)." and,
	# when some failed, "[  FAILED  ] N test(s), listed below:" followed by
	# one "[  FAILED  ] name" line per failed test.
	report=$(awk '
		/^== / { name = $2; sub(/.*\//, "", name) }
		/^\[==========\] .*Running [0-9]+ test/ { bin++; if (name == "") name = "#" bin }
		/^\[  PASSED  \] [0-9]+ test\(s\)\./ {
			n = $4; p += n
			printf "unit %s: %d test(s) passed\n", name, n
		}
		/^\[  FAILED  \] [0-9]+ test\(s\)/ { f += $4; listing = 1; next }
		/^\[==========\]/ || /^[ ]*$/ { listing = 0 }
		listing && /^\[  (FAILED|ERROR) *\] [^ ]+[ ]*$/ { printf "FAIL unit %s: %s\n", name, $NF }
		END { printf "counts %d %d %d\n", p, f, bin }
	' "$log")
	grep -v '^counts ' <<<"$report" || true
	read -r _ up uf ubins < <(grep '^counts ' <<<"$report")
	if ((rc != 0 && uf == 0)); then
		# A crash, a build error or a non-cmocka failure: still a failure.
		echo "FAIL unit-check: 'make unit-check' exited $rc (see $log):"
		tail -n 15 "$log" | sed 's/^/    /'
		uf=1
	elif ((uf > 0)); then
		echo "unit tests: $uf failed (full output: $log)"
	elif ((up == 0)); then
		echo "FAIL unit-check: no cmocka results in the output of 'make unit-check' (see $log)"
		uf=1
	fi
	echo "unit tests: $up ok and $uf not ok, from ${ubins:-0} cmocka binaries"
	passed=$((passed + up))
	failed=$((failed + uf))
fi

# Runs one Python test suite that writes "passed failed" to its --counts
# file; a runner that stops early or exits non-zero counts as a failure.
run_suite() {
	local name=$1 script=$2 counts rc=0 p f
	shift 2
	counts=build/test/$name.counts
	rm -f "$counts"
	"$python" "$script" --counts "$counts" "$@" </dev/null || rc=$?
	if [[ -s "$counts" ]]; then
		read -r p f <"$counts"
	else
		echo "FAIL $name: the runner stopped early (exit $rc)"
		p=0
		f=1
	fi
	if ((rc != 0 && f == 0)); then
		echo "FAIL $name: the runner exited $rc"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

echo "== integration tests (QEMU TCG, -cpu EPYC,+svm)"
run_suite integration tests/integration/itest.py "$@"

echo "== Linux boot (QEMU TCG, Debian's kernel in a lightpath VM)"
if [[ "${LP_SKIP_LINUX:-0}" == 1 ]]; then
	echo "SKIP linux-boot: LP_SKIP_LINUX=1"
	skipped=$((skipped + 1))
else
	run_suite linux-boot tests/integration/linux_test.py "$@"
fi

if [[ "${LP_SKIP_VMX:-0}" == 1 ]]; then
	echo "SKIP vmx-integration: LP_SKIP_VMX=1"
	skipped=$((skipped + 1))
else
	echo "== Bochs integration tests (VT-x: cpu corei7_skylake_x; SVM with NRIP save: cpu ryzen)"
	run_suite vmx-integration tests/integration/vmx_tests.py "$@"
fi

echo "== under load: one round of the shortest timing-sensitive tests with a CPU hog (tools/stress.py --quick)"
if [[ "${LP_SKIP_STRESS:-0}" == 1 ]]; then
	echo "SKIP stress-quick: LP_SKIP_STRESS=1"
	skipped=$((skipped + 1))
else
	run_suite stress-quick tools/stress.py --quick
fi

echo "== $((SECONDS - start)) s"
if ((skipped > 0)); then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
((failed == 0))
