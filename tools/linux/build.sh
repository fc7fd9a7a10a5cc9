#!/usr/bin/env bash
# `make linux-guest`: builds lightpath's Linux test guest from Debian packages
# only (nothing is installed on the host, nothing comes from anywhere else):
#
#   build/linux/debs/            the .debs, from `apt-get download` (kept)
#   build/linux/root/            both packages unpacked with `dpkg-deb -x`
#   build/linux/vmlinuz          Debian's kernel (linux-image-6.1.*-amd64,
#                                what linux-image-amd64 depends on), unpatched
#   build/linux/initrd.cpio.gz   busybox (busybox-static) + /init, cpio newc
#   build/linux/linux.cfg        the VM description lightpath boots
#   build/linux/linux-smp2.cfg   the same VM with 2 vCPUs (cpus = 2)
#
# Each step says what it does and is skipped when its output is up to date.
# --kernel-only: only build/linux/vmlinuz (the unit tests' real bzImage,
# tests/unit/rules.mk); needs no cpio. LP_LINUX_DIR overrides build/linux.
set -euo pipefail

kernel_only=0
case "${1:-}" in
--kernel-only) kernel_only=1 ;;
"") ;;
*) echo "usage: tools/linux/build.sh [--kernel-only]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
self="tools/linux/build.sh"
out=${LP_LINUX_DIR:-build/linux}
debs=$out/debs
pkgroot=$out/root
stage=$out/initramfs
initrd=$out/initrd.cpio.gz
cfg=$out/linux.cfg

say() { echo "linux-guest: $*"; }
die() {
	echo "linux-guest: error: $*" >&2
	exit 1
}

tools=(apt-get apt-cache dpkg-deb)
((kernel_only)) || tools+=(cpio gzip)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool not found (Debian's apt, dpkg, cpio and gzip are needed; 'make deps' installs cpio)"
done
mkdir -p "$debs"

# ---------------------------------------------------------------- packages

# Which kernel package linux-image-amd64 stands for (e.g. linux-image-6.1.0-57-amd64).
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1
}

# newest file matching a glob, or nothing
newest() {
	local f
	f=$(ls -t $1 2>/dev/null | head -n1) || true
	echo "$f"
}

# fetch NAME: the .deb of package NAME in $debs, downloading it when there is
# none yet (`make compare` keeps the same packages in build/compare/debs:
# those are linked, not downloaded again).
fetch() {
	local name=$1 deb
	deb=$(newest "$debs/${name}_*.deb")
	if [[ -n "$deb" ]]; then
		say "packages: $(basename "$deb") (cached)" >&2
		echo "$deb"
		return
	fi
	deb=$(newest "build/compare/debs/${name}_*.deb")
	if [[ -n "$deb" ]]; then
		ln -f "$deb" "$debs/" 2>/dev/null || cp "$deb" "$debs/"
		say "packages: $(basename "$deb") (from build/compare/debs)" >&2
		echo "$debs/$(basename "$deb")"
		return
	fi
	say "packages: downloading $name with apt-get download" >&2
	if ! (cd "$debs" && apt-get download -q "$name" >/dev/null 2>&1 </dev/null); then
		say "packages: apt-get download failed; running apt-get update once and retrying" >&2
		apt-get update -qq >/dev/null 2>&1 </dev/null || true
		(cd "$debs" && apt-get download -q "$name" </dev/null >&2) ||
			die "apt-get download $name failed (offline? no Debian package lists?)"
	fi
	deb=$(newest "$debs/${name}_*.deb")
	[[ -n "$deb" ]] || die "apt-get download $name left no ${name}_*.deb in $debs"
	echo "$deb"
}

kpkg=$(kernel_pkg)
if [[ -z "$kpkg" ]]; then
	say "packages: apt does not know linux-image-amd64 yet; running apt-get update"
	apt-get update -qq >/dev/null 2>&1 </dev/null || true
	kpkg=$(kernel_pkg)
fi
if [[ -z "$kpkg" ]]; then
	# offline: whatever kernel was fetched before
	kdeb=$(newest "$debs/linux-image-[0-9]*-amd64_*.deb")
	[[ -n "$kdeb" ]] || die "cannot tell which kernel linux-image-amd64 depends on (apt-cache depends linux-image-amd64 printed nothing)"
	say "packages: apt has no package lists; using the cached $(basename "$kdeb")"
else
	say "packages: linux-image-amd64 depends on $kpkg"
	kdeb=$(fetch "$kpkg")
fi
debs_wanted=("$kdeb")
if ((!kernel_only)); then
	bdeb=$(fetch busybox-static)
	debs_wanted+=("$bdeb")
fi

# ---------------------------------------------------------------- unpack

stamp=$pkgroot/.unpacked
want=$(for d in "${debs_wanted[@]}"; do basename "$d"; done)
if [[ -f "$stamp" ]] && { [[ "$(cat "$stamp")" == "$want" ]] ||
	{ ((kernel_only)) && grep -qxF "$(basename "$kdeb")" "$stamp"; }; }; then
	say "unpack: $pkgroot is up to date"
else
	rm -rf "$pkgroot"
	mkdir -p "$pkgroot"
	for d in "${debs_wanted[@]}"; do
		say "unpack: dpkg-deb -x $(basename "$d") $pkgroot"
		dpkg-deb -x "$d" "$pkgroot"
	done
	echo "$want" >"$stamp"
fi

kernels=("$pkgroot"/boot/vmlinuz-*)
((${#kernels[@]} == 1)) && [[ -f "${kernels[0]}" ]] ||
	die "expected one kernel in $pkgroot/boot, found: ${kernels[*]}"
kernel=${kernels[0]}

# build/linux/vmlinuz is also the target of tests/unit/rules.mk (test_linux_boot):
# keep it the same file as the unpacked kernel.
if cmp -s "$kernel" "$out/vmlinuz"; then
	say "kernel: $out/vmlinuz is $(basename "$kernel") (up to date)"
else
	cp "$kernel" "$out/vmlinuz.tmp"
	mv "$out/vmlinuz.tmp" "$out/vmlinuz"
	say "kernel: $out/vmlinuz <- $(basename "$kernel")"
fi

if ((kernel_only)); then
	exit 0
fi
busybox=$pkgroot/bin/busybox
[[ -x "$busybox" ]] || die "no busybox in $pkgroot/bin (busybox-static unpacked?)"

# ---------------------------------------------------------------- initramfs

# /init: the first process. Mounts the kernel filesystems, says it started,
# then becomes busybox init (/etc/inittab below), which keeps a shell on the
# console (ttyS0) for ever (leaving the shell starts a new one) and turns
# `poweroff`, `reboot` and `halt` into the kernel's power-off, reboot and halt
# (poweroff: through ACPI, and lightpath ends the VM). A shell script as PID 1
# could not do both: its background jobs ignore Ctrl-C, and it cannot take
# the poweroff signal while it waits for a foreground shell.
read -r -d '' INIT <<'EOF' || true
#!/bin/sh
# /init of lightpath's Linux test guest (written by tools/linux/build.sh)
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /tmp /root
mount -t devpts devpts /dev/pts
echo "lightpath-linux: init started $(cut -d' ' -f1 /proc/uptime) s after boot (kernel $(uname -r))"
hostname lightpath-vm
# lp.test=1: the integration test drives the shell over the serial port
# itself; nothing else changes.
case " $(cat /proc/cmdline) " in
*" lp.test=1 "*) echo "lightpath-linux: test mode (lp.test=1)" ;;
esac
# a virtio device (a VM description's disk =): its drivers and ext4, from
# the kernel package (lightpath's PCI bus is empty otherwise: nothing loads)
if grep -qs 0x1af4 /sys/bus/pci/devices/*/vendor; then
	for m in $(cat /lib/modules/order); do
		insmod /lib/modules/$m.ko || echo "lightpath-linux: insmod $m failed"
	done
	echo "lightpath-linux: virtio drivers loaded"
fi
echo "lightpath-linux: type 'poweroff' to end the VM"
exec /sbin/init
EOF

# The kernel modules /init loads for a disk, in dependency order (each one's
# `depends=` before it).
VIRTIO_MODULES=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	virtio_blk crc16 mbcache jbd2 crc32c_generic ext4)

# busybox init: cttyhack makes the console (ttyS0) the shell's controlling
# terminal, so Ctrl-C and job control work.
read -r -d '' INITTAB <<'EOF' || true
# /etc/inittab of lightpath's Linux test guest (written by tools/linux/build.sh)
::respawn:/bin/cttyhack /bin/sh -l
::shutdown:/bin/echo lightpath-linux: shutting down
::ctrlaltdel:/sbin/reboot
EOF

read -r -d '' PROFILE <<'EOF' || true
# /etc/profile of lightpath's Linux test guest (written by tools/linux/build.sh)
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
export HOME=/root
PS1='\h:\w\$ '
cd /root
EOF

if [[ -f "$initrd" && "$initrd" -nt "$self" && "$initrd" -nt "$stamp" ]]; then
	say "initramfs: $initrd is up to date"
else
	say "initramfs: building $initrd (busybox $("$busybox" 2>&1 | sed -n '1s/^BusyBox \(v[^ ]*\).*/\1/p'), /init)"
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,root,etc}
	cp "$busybox" "$stage/bin/busybox"
	# one symlink per applet, where busybox says it belongs (bin/sh, sbin/poweroff, ...)
	n=0
	while read -r applet; do
		applet=${applet#/}
		[[ -n "$applet" && "$applet" != bin/busybox ]] || continue
		mkdir -p "$stage/$(dirname "$applet")"
		ln -sf /bin/busybox "$stage/$applet"
		n=$((n + 1))
	done < <("$busybox" --list-full)
	printf '%s\n' "$INIT" >"$stage/init"
	chmod 755 "$stage/init"
	mkdir -p "$stage/lib/modules"
	for m in "${VIRTIO_MODULES[@]}"; do
		ko=$(find "$pkgroot"/lib/modules/*/kernel -name "$m.ko" | head -1)
		[[ -n "$ko" ]] || die "no $m.ko in the kernel package (needed for a disk)"
		cp "$ko" "$stage/lib/modules/"
	done
	printf '%s\n' "${VIRTIO_MODULES[@]}" >"$stage/lib/modules/order"
	printf '%s\n' "$PROFILE" >"$stage/etc/profile"
	printf '%s\n' "$INITTAB" >"$stage/etc/inittab"
	echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
	echo "root:x:0:" >"$stage/etc/group"
	echo "lightpath-vm" >"$stage/etc/hostname"
	# The kernel opens /dev/console before /init runs (devtmpfs is mounted
	# only by /init). Needs root; without it the kernel warns and /init
	# still has the console once devtmpfs is up.
	if ! mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null; then
		say "initramfs: warning: cannot create dev/console (not root?); the kernel will warn 'unable to open an initial console'"
	fi
	# Same inputs, same bytes: fixed mtimes, no gzip name/time.
	find "$stage" -exec touch -h -d @0 {} +
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc --owner=0:0 --reproducible --quiet) | gzip -9n >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	say "initramfs: $initrd, $(du -k "$initrd" | cut -f1) KiB, busybox with $n applet links"
fi

# ---------------------------------------------------------------- VM description

read -r -d '' CFG <<'EOF' || true
# lightpath vm
# lightpath's Linux test guest: Debian's kernel with a busybox initramfs, both
# built from Debian packages by tools/linux/build.sh (`make linux-guest`).
# `make run` boots it: -initrd "linux.cfg,vmlinuz,initrd.cpio.gz" (README.md).
name    = linux
kernel  = vmlinuz
initrd  = initrd.cpio.gz
# console=ttyS0: the kernel's console and /dev/console are the VM's serial
#   port (COM1, 0x3f8), the only terminal a lightpath VM has.
# panic=-1: a kernel panic reboots at once; lightpath then ends the VM with a
#   reason line instead of leaving a dead terminal.
cmdline = "console=ttyS0 panic=-1"
memory  = 256
EOF
# The same guest with 2 vCPUs (`make run` on a machine with 2 CPUs or more,
# and the linux-smp2 test).
read -r -d '' CFG_SMP2 <<'EOF' || true
# lightpath vm
# lightpath's Linux test guest with 2 vCPUs, each on a host CPU of its own
# (QEMU -smp 2 at least); written by tools/linux/build.sh, as linux.cfg.
name    = linux-smp2
kernel  = vmlinuz
initrd  = initrd.cpio.gz
# tsc=reliable: every vCPU's TSC is the host's TSC plus one VM-wide offset,
#   so the two agree as the host CPUs' do; Linux trusts that only of a CPU
#   with an invariant TSC (CPUID 80000007H:EDX[8], which QEMU's TCG does not
#   give) and would mark the TSC unstable at boot ("TSCs unsynchronized").
#   It still compares the two TSCs when it starts CPU 1.
cmdline = "console=ttyS0 panic=-1 tsc=reliable"
memory  = 256
cpus    = 2
EOF

# write_cfg FILE TEXT: writes the description unless it is already that
write_cfg() {
	if [[ -f "$1" && "$(cat "$1")" == "$2" ]]; then
		say "config: $1 is up to date"
	else
		printf '%s\n' "$2" >"$1"
		say "config: wrote $1"
	fi
}
write_cfg "$cfg" "$CFG"
write_cfg "$out/linux-smp2.cfg" "$CFG_SMP2"
say "ready: $cfg, $out/linux-smp2.cfg, $out/vmlinuz, $initrd"
