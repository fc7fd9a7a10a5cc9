#!/usr/bin/env bash
# `make run` (tools/run.sh [linux]): boots lightpath under QEMU (TCG,
# -cpu EPYC,+svm, no -icount: interactive speed) with the Linux guest of
# tools/linux/build.sh (`make linux-guest`) and gives its serial console to
# the terminal: a busybox shell once Linux is up; `poweroff` ends the VM,
# lightpath and QEMU. Ctrl-C goes to the guest; Ctrl-A x quits QEMU at once.
#
# `make run-bench` (tools/run.sh bench): boots lightpath with the two
# benchmark guests under -icount shift=0 (the instructions-per-exit metric)
# and shows what it prints on COM1.
#
# The Linux VM gets 2 vCPUs (build/linux/linux-smp2.cfg, QEMU -smp 2) when
# this machine has 2 CPUs or more, else 1 (linux.cfg, -smp 1); LP_VCPUS=1 or
# 2 chooses.
#
# LP_ROOT=disk (`make run LP_ROOT=disk`): Linux runs from the root disk
# build/linux/rootfs.img (ext4, root=/dev/vda) instead of the initramfs:
# build/linux/linux-rootfs-smp2.cfg (or linux-rootfs.cfg with 1 vCPU, as
# above) with the modules vmlinuz, initrd.cpio.gz and rootfs.img. lightpath
# keeps the disk in RAM: what the guest writes is lost when the VM ends.
#
# LP_OPTS: boot options (e.g. LP_OPTS="light=off"); LP_RUN_TIMEOUT: seconds
# (default: none for linux, 600 for bench). The serial output is also kept
# in build/run.log.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p build
log=build/run.log
mode=${1:-linux}

rc=0
case "$mode" in
linux)
	modules=(build/linux/vmlinuz build/linux/initrd.cpio.gz)
	case "${LP_ROOT:-}" in
	"" | initramfs)
		# one host CPU per vCPU: QEMU's CPUs are threads on this machine's
		vcpus=${LP_VCPUS:-$( (($(nproc) >= 2)) && echo 2 || echo 1)}
		case "$vcpus" in
		1) cfg=build/linux/linux.cfg ;;
		2) cfg=build/linux/linux-smp2.cfg ;;
		*) echo "lightpath: LP_VCPUS must be 1 or 2, not '$vcpus'" >&2; exit 2 ;;
		esac
		what="Linux with $vcpus vCPU$( ((vcpus > 1)) && echo s)"
		;;
	disk)
		vcpus=${LP_VCPUS:-$( (($(nproc) >= 2)) && echo 2 || echo 1)}
		case "$vcpus" in
		1) cfg=build/linux/linux-rootfs.cfg ;;
		2) cfg=build/linux/linux-rootfs-smp2.cfg ;;
		*) echo "lightpath: LP_VCPUS must be 1 or 2, not '$vcpus'" >&2; exit 2 ;;
		esac
		modules+=(build/linux/rootfs.img)
		what="Linux with $vcpus vCPU$( ((vcpus > 1)) && echo s) from the root disk build/linux/rootfs.img (ext4 on /dev/vda, kept in RAM: changes are lost at power-off)"
		;;
	*) echo "lightpath: LP_ROOT must be 'disk' or 'initramfs' (the default), not '$LP_ROOT'" >&2; exit 2 ;;
	esac
	for f in "$cfg" "${modules[@]}"; do
		[[ -f "$f" ]] || { echo "lightpath: no $f (run 'make linux-guest')" >&2; exit 1; }
	done
	echo "lightpath: booting $what under QEMU TCG (about 20-40 s); type 'poweroff' to end it"
	[[ -n "${LP_ROOT:-}" ]] && echo "lightpath: modules: $cfg ${modules[*]}"
	[[ -t 0 ]] && echo "lightpath: (Ctrl-C goes to the guest; Ctrl-A x quits QEMU at once)"
	# QEMU warns about every EPYC feature TCG lacks; those lines are noise here.
	tools/lp-qemu --interactive --smp "$vcpus" --mem 512 --timeout "${LP_RUN_TIMEOUT:-0}" \
		--append "${LP_OPTS:-}" "$cfg" "${modules[@]}" \
		2> >(grep -v "TCG doesn't support requested feature" >&2) | tee "$log" || rc=${PIPESTATUS[0]}
	;;
bench)
	tools/lp-qemu --icount --timeout "${LP_RUN_TIMEOUT:-600}" --append "${LP_OPTS:-}" \
		build/guests/bench32.elf build/guests/bench64.elf \
		2> >(grep -v "TCG doesn't support requested feature" >&2) | tee "$log" || rc=${PIPESTATUS[0]}
	;;
*)
	echo "usage: tools/run.sh [linux|bench]" >&2
	exit 2
	;;
esac

# lightpath's own lines start with "lightpath: " (guest lines with "[vmN] ");
# -a: a guest may have printed NUL bytes
if ((rc == 1)) && grep -aq '^lightpath: ' "$log"; then
	echo "lightpath: run ended with status 0 (QEMU exit 1); serial output in $log"
	exit 0
fi
if ((rc == 1)); then
	echo "lightpath: QEMU exited 1 without lightpath output: QEMU failed to start?" >&2
elif ((rc == 124)); then
	echo "lightpath: run timed out after ${LP_RUN_TIMEOUT:-600} s" >&2
elif ((rc == 0)) && [[ "$mode" == linux ]] && ! grep -aq '^lightpath: all VMs ended' "$log"; then
	echo "lightpath: QEMU exited 0 before lightpath ended: quit with Ctrl-A x, or the machine reset" >&2
elif ((rc == 0)); then
	echo "lightpath: QEMU exited 0: the machine reset (lightpath triple-faulted?)" >&2
elif ((rc % 2 == 1)); then
	# statuses above 127 reach QEMU as 127 (README, "Output and exit status")
	printf 'lightpath: run ended with status %#x%s (QEMU exit %d)\n' $((rc >> 1)) \
		"$( ((rc == 255)) && echo ' or more')" "$rc" >&2
else
	echo "lightpath: run failed (exit $rc)" >&2
fi
exit 1
