#!/usr/bin/env bash
# Installs the Debian packages lightpath needs to build, run and test, if any
# are missing. Prints nothing when everything is already installed.
# Used by `make run`, `make test`, `make bench` and `make iso` (tools/rules.mk).
# LP_DEPS_BENCH=1 (`make bench`, `make linux-report`) adds matplotlib, LP_DEPS_FUZZ=1
# (`make fuzz`) clang.
set -euo pipefail

packages=(
	gcc make binutils python3
	libc6-dev	# libc.a: tools/compare/kvmrun is linked -static
	qemu-system-x86
	libcmocka-dev libzydis-dev
	grub-pc-bin grub-common xorriso mtools
	bochs bochsbios vgabios
	cpio	# tools/linux/build.sh: the Linux guest's initramfs
	e2fsprogs	# mkfs.ext4: the linux-disk test's file system image
	gdb	# tools/exit_trace.py (make exit-trace and its test): QEMU's gdb stub
)
# `make bench` and `make linux-report` only (LP_DEPS_BENCH=1): matplotlib,
# for their pictures in docs/img (both still write their tables without it).
if [[ "${LP_DEPS_BENCH:-0}" == 1 ]]; then
	packages+=(python3-matplotlib)
fi
# `make fuzz` only (LP_DEPS_FUZZ=1): clang with its sanitizer/libFuzzer
# runtime, which clang only recommends.
if [[ "${LP_DEPS_FUZZ:-0}" == 1 ]]; then
	packages+=(clang libclang-rt-14-dev)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "lightpath: error: dpkg-query not found; this script needs Debian (12) or a derivative." >&2
	echo "lightpath: install by hand: ${packages[*]}" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	if [[ "$status" != "installed" ]]; then
		missing+=("$p")
	fi
done

((${#missing[@]} == 0)) && exit 0

echo "lightpath: installing missing Debian packages: ${missing[*]}"

if [[ "$(id -u)" -ne 0 ]]; then
	echo "lightpath: error: installing packages needs root; run as root or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi

log=$(mktemp "${TMPDIR:-/tmp}/lightpath-deps.XXXXXX")
trap 'rm -f "$log"' EXIT

if ! apt-get update -qq >"$log" 2>&1; then
	cat "$log" >&2
	echo "lightpath: error: 'apt-get update' failed (see above)" >&2
	exit 1
fi
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"${missing[@]}" >"$log" 2>&1 </dev/null; then
	cat "$log" >&2
	echo "lightpath: error: 'apt-get install ${missing[*]}' failed (see above)" >&2
	exit 1
fi

# Double-check: apt can exit 0 and still leave a package unconfigured.
still=()
for p in "${missing[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[[ "$status" == "installed" ]] || still+=("$p")
done
if ((${#still[@]})); then
	echo "lightpath: error: still not installed after apt-get: ${still[*]}" >&2
	exit 1
fi
echo "lightpath: installed ${missing[*]}"
