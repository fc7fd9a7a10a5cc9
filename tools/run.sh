#!/usr/bin/env bash
# `make run`: boots lightpath with the two benchmark guests under QEMU
# (TCG, -cpu EPYC,+svm, -icount shift=0 so the bench numbers are the
# instructions-per-exit metric) and shows what it prints on COM1.
# LP_OPTS: boot options (e.g. LP_OPTS="light=off"); LP_RUN_TIMEOUT: seconds.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p build
log=build/run.log

rc=0
# QEMU warns about every EPYC feature TCG lacks; those lines are noise here.
tools/lp-qemu --icount --timeout "${LP_RUN_TIMEOUT:-600}" --append "${LP_OPTS:-}" \
	build/guests/bench32.elf build/guests/bench64.elf \
	2> >(grep -v "TCG doesn't support requested feature" >&2) | tee "$log" || rc=${PIPESTATUS[0]}

if ((rc == 1)) && grep -q '^lightpath: ' "$log"; then
	echo "lightpath: run ended with status 0 (QEMU exit 1); serial output in $log"
	exit 0
fi
if ((rc == 1)); then
	echo "lightpath: QEMU exited 1 without lightpath output: QEMU failed to start?" >&2
elif ((rc == 124)); then
	echo "lightpath: run timed out after ${LP_RUN_TIMEOUT:-600} s" >&2
elif ((rc == 0)); then
	echo "lightpath: QEMU exited 0: the machine reset (lightpath triple-faulted?)" >&2
elif ((rc % 2 == 1)); then
	printf 'lightpath: run ended with status %#x (QEMU exit %d)\n' $((rc >> 1)) "$rc" >&2
else
	echo "lightpath: run failed (exit $rc)" >&2
fi
exit 1
