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
#   build/linux/rootfs.img       a 32 MiB ext4 root disk (mkfs.ext4 -d, from
#                                Debian's e2fsprogs): the same busybox and
#                                modules, busybox init with /etc/init.d/rcS
#   build/linux/linux-rootfs.cfg the 1-vCPU VM with disk = rootfs.img and
#                                root=/dev/vda: /init mounts the disk and
#                                switches to it (`make run LP_ROOT=disk`)
#   build/linux/linux-rootfs-smp2.cfg  the same VM with 2 vCPUs
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
# mkfs.ext4 (e2fsprogs) for the root disk; often in /sbin, outside a user's PATH
mkfs_ext4=$(command -v mkfs.ext4 2>/dev/null || true)
[[ -n "$mkfs_ext4" ]] || for d in /sbin /usr/sbin; do
	[[ -x "$d/mkfs.ext4" ]] && mkfs_ext4=$d/mkfs.ext4 && break
done
((kernel_only)) || [[ -n "$mkfs_ext4" ]] ||
	die "mkfs.ext4 not found (Debian's e2fsprogs, for build/linux/rootfs.img; 'make deps' installs it)"

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

# Shell functions shared by the initramfs's /init and the root disk's
# /etc/init.d/rcS (each gets a copy: the scripts read whole in the guest).
read -r -d '' COMMON <<'EOF' || true
# --- shared by /init and the root disk's /etc/init.d/rcS (tools/linux/build.sh)
# cmdline_value WORD: the value of WORD=... on the kernel command line
cmdline_value() {
	for w in $(cat /proc/cmdline); do
		case "$w" in "$1"=*) echo "${w#*=}"; return ;; esac
	done
}
# load_modules: the virtio drivers (disk and network) and ext4, from the
# kernel package, in dependency order, when a virtio device (vendor 0x1af4)
# is on the PCI bus: lightpath's PCI bus is empty otherwise and nothing
# loads. A module already loaded (by /init, before the root disk) is skipped.
load_modules() {
	grep -qs 0x1af4 /sys/bus/pci/devices/*/vendor || return 0
	n=0
	for m in $(cat /lib/modules/order); do
		grep -qs "^$m " /proc/modules && continue
		if insmod /lib/modules/$m.ko; then
			n=$((n + 1))
		else
			echo "lightpath-linux: insmod $m failed"
		fi
	done
	[ $n -eq 0 ] || echo "lightpath-linux: virtio drivers loaded ($n modules)"
}
# net_up: with lp.ip=ADDR/PREFIX on the kernel command line, lo and eth0 up
# and ADDR/PREFIX on eth0 (the VM's virtio-net device); nothing without it.
net_up() {
	addr=$(cmdline_value lp.ip)
	[ -n "$addr" ] || return 0
	ip link set lo up
	if [ ! -e /sys/class/net/eth0 ]; then
		echo "lightpath-linux: lp.ip=$addr: there is no eth0 (no virtio-net device in this VM); network not set up"
		return 0
	fi
	if ip link set eth0 up && ip addr add "$addr" dev eth0; then
		echo "lightpath-linux: eth0 is up with $addr (MAC $(cat /sys/class/net/eth0/address))"
	else
		echo "lightpath-linux: lp.ip=$addr: setting up eth0 failed (ip's message above)"
	fi
}
# --- end of the shared part
EOF

# /init: the first process. Mounts the kernel filesystems, says it started,
# loads the virtio and ext4 modules when there is a virtio device; with
# root=/dev/vdX on the command line it mounts that disk (ext4) and switches
# to it (busybox switch_root: the disk's /sbin/init, its /etc/init.d/rcS);
# otherwise, or when that fails (one line says why), it sets up lp.ip= and
# becomes busybox init (/etc/inittab below), which keeps a shell on the
# console (ttyS0) for ever (leaving the shell starts a new one) and turns
# `poweroff`, `reboot` and `halt` into the kernel's power-off, reboot and halt
# (poweroff: through ACPI, and lightpath ends the VM). A shell script as PID 1
# could not do both: its background jobs ignore Ctrl-C, and it cannot take
# the poweroff signal while it waits for a foreground shell.
read -r -d '' INIT_HEAD <<'EOF' || true
#!/bin/sh
# /init of lightpath's Linux test guest (written by tools/linux/build.sh)
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /tmp /root
mount -t devpts devpts /dev/pts
# lp.test=1 (the integration tests): no kernel message on the console from
# here on (dmesg keeps them all); one printed by another CPU could land in
# the middle of a line the test waits for
case " $(cat /proc/cmdline) " in *" lp.test=1 "*) dmesg -n 1 ;; esac
echo "lightpath-linux: init started $(cut -d' ' -f1 /proc/uptime) s after boot (kernel $(uname -r))"
hostname lightpath-vm
# lp.test=1: the integration test drives the shell over the serial port
# itself; nothing else changes but the console's kernel messages (above).
case " $(cat /proc/cmdline) " in
*" lp.test=1 "*) echo "lightpath-linux: test mode (lp.test=1)" ;;
esac
EOF
read -r -d '' INIT_TAIL <<'EOF' || true
# switch_to_disk DEV: mounts DEV (ext4) on /newroot and becomes its
# /sbin/init; returns (after one line saying why) only when it cannot.
switch_to_disk() {
	dev=$1
	i=0
	while [ ! -b "$dev" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ ! -b "$dev" ]; then
		echo "lightpath-linux: root=$dev: no such disk after 5 s (no 'disk =' in the VM description?); staying in the initramfs"
		return
	fi
	mode=rw
	case " $(cat /proc/cmdline) " in *" ro "*) mode=ro ;; esac
	mkdir -p /newroot
	if ! err=$(mount -t ext4 -o $mode "$dev" /newroot 2>&1); then
		# the kernel's reason, when ext4 said one
		why=$(dmesg | grep "EXT4-fs (${dev#/dev/})" | tail -n1 | sed 's/^\[[^]]*\] //')
		echo "lightpath-linux: root=$dev: cannot mount it as ext4 ($err${why:+; kernel: $why}); staying in the initramfs"
		return
	fi
	if [ ! -x /newroot/sbin/init ]; then
		echo "lightpath-linux: root=$dev: the disk has no /sbin/init; staying in the initramfs"
		umount /newroot
		return
	fi
	echo "lightpath-linux: root is $dev (ext4, $mode), switching to it"
	# the disk's rcS mounts whatever is not there
	mount --move /dev /newroot/dev
	mount --move /proc /newroot/proc
	mount --move /sys /newroot/sys
	exec switch_root /newroot /sbin/init
}

load_modules
root=$(cmdline_value root)
case "$root" in
"") ;;
/dev/vd[a-z]) switch_to_disk "$root" ;;
*) echo "lightpath-linux: root=$root: only a virtio disk (/dev/vda...) can be the root; staying in the initramfs" ;;
esac
net_up
echo "lightpath-linux: type 'poweroff' to end the VM"
exec /sbin/init
EOF
INIT="$INIT_HEAD
$COMMON
$INIT_TAIL"

# The kernel modules /init (and the root disk's rcS) load for a virtio
# device, in dependency order (each one's `depends=` before it): the PCI
# transport, the disk (virtio_blk), the network (virtio_net needs
# net_failover, which needs failover) and ext4.
VIRTIO_MODULES=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	virtio_blk failover net_failover virtio_net crc16 mbcache jbd2 crc32c_generic ext4)

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

# stage_busybox DIR WHAT: what the initramfs and the root disk share: the
# directories, busybox and its applet links, the kernel modules and their
# order, /etc/{profile,passwd,group,hostname}, dev/console. Sets $n to the
# number of applet links.
stage_busybox() {
	local dir=$1 what=$2 applet m ko
	rm -rf "$dir"
	mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,root,mnt,etc}
	cp "$busybox" "$dir/bin/busybox"
	# one symlink per applet, where busybox says it belongs (bin/sh, sbin/poweroff, ...)
	n=0
	while read -r applet; do
		applet=${applet#/}
		[[ -n "$applet" && "$applet" != bin/busybox ]] || continue
		mkdir -p "$dir/$(dirname "$applet")"
		ln -sf /bin/busybox "$dir/$applet"
		n=$((n + 1))
	done < <("$busybox" --list-full)
	mkdir -p "$dir/lib/modules"
	for m in "${VIRTIO_MODULES[@]}"; do
		ko=$(find "$pkgroot"/lib/modules/*/kernel -name "$m.ko" | head -1)
		[[ -n "$ko" ]] || die "no $m.ko in the kernel package (needed for a virtio disk or network)"
		cp "$ko" "$dir/lib/modules/"
	done
	printf '%s\n' "${VIRTIO_MODULES[@]}" >"$dir/lib/modules/order"
	printf '%s\n' "$PROFILE" >"$dir/etc/profile"
	echo "root:x:0:0:root:/root:/bin/sh" >"$dir/etc/passwd"
	echo "root:x:0:" >"$dir/etc/group"
	echo "lightpath-vm" >"$dir/etc/hostname"
	# The kernel opens /dev/console before /init runs (devtmpfs is mounted
	# only by /init). Needs root; without it the kernel warns and /init
	# still has the console once devtmpfs is up.
	if ! mknod -m 600 "$dir/dev/console" c 5 1 2>/dev/null; then
		say "$what: warning: cannot create dev/console (not root?); the kernel will warn 'unable to open an initial console'"
	fi
}

bb_version=$("$busybox" 2>&1 | sed -n '1s/^BusyBox \(v[^ ]*\).*/\1/p')
if [[ -f "$initrd" && "$initrd" -nt "$self" && "$initrd" -nt "$stamp" ]]; then
	say "initramfs: $initrd is up to date"
else
	say "initramfs: building $initrd (busybox $bb_version, /init)"
	stage_busybox "$stage" initramfs
	printf '%s\n' "$INIT" >"$stage/init"
	chmod 755 "$stage/init"
	printf '%s\n' "$INITTAB" >"$stage/etc/inittab"
	# Same inputs, same bytes: fixed mtimes, no gzip name/time.
	find "$stage" -exec touch -h -d @0 {} +
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio -o -H newc --owner=0:0 --reproducible --quiet) | gzip -9n >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	say "initramfs: $initrd, $(du -k "$initrd" | cut -f1) KiB, busybox with $n applet links"
fi

# ---------------------------------------------------------------- root disk

# build/linux/rootfs.img: an ext4 file system for root=/dev/vda, made by
# mkfs.ext4 -d from a staging directory (no loop mount): the initramfs's
# busybox, applet links and modules, busybox init (its /etc/inittab runs
# /etc/init.d/rcS first), and /etc/lightpath-rootfs, which says what it is.
# The initramfs's /init mounts it and switches to it; rcS mounts the kernel
# filesystems that are not mounted yet, loads modules not loaded yet, sets up
# lp.ip= and says it runs from the disk.
read -r -d '' RCS_HEAD <<'EOF' || true
#!/bin/sh
# /etc/init.d/rcS of lightpath's root disk (written by tools/linux/build.sh):
# busybox init runs it first (::sysinit: in /etc/inittab)
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
mounted() { grep -qs " $1 " /proc/mounts; }
mounted /proc || mount -t proc proc /proc
mounted /sys || mount -t sysfs sysfs /sys
mounted /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mounted /dev/pts || mount -t devpts devpts /dev/pts
hostname -F /etc/hostname
EOF
read -r -d '' RCS_TAIL <<'EOF' || true
load_modules
net_up
# the root as the kernel sees it: the last mount on / in /proc/mounts
set -- $(awk '$2 == "/" { d = $1; t = $3; o = $4 } END { print d, t, substr(o, 1, 2) }' /proc/mounts)
echo "lightpath-linux: running from $1 ($2, $3), the root disk; what is written lasts until the VM ends (lightpath keeps the disk in RAM)"
echo "lightpath-linux: type 'poweroff' to end the VM"
EOF
RCS="$RCS_HEAD
$COMMON
$RCS_TAIL"

read -r -d '' INITTAB_DISK <<'EOF' || true
# /etc/inittab of lightpath's root disk (written by tools/linux/build.sh)
::sysinit:/etc/init.d/rcS
::respawn:/bin/cttyhack /bin/sh -l
::shutdown:/bin/echo lightpath-linux: shutting down
::shutdown:/bin/sync
::ctrlaltdel:/sbin/reboot
EOF

rootfs=$out/rootfs.img
rootfs_stage=$out/rootfs
rootfs_mib=32
if [[ -f "$rootfs" && "$rootfs" -nt "$self" && "$rootfs" -nt "$stamp" ]]; then
	say "root disk: $rootfs is up to date"
else
	say "root disk: building $rootfs (ext4, $rootfs_mib MiB, mkfs.ext4 -d: busybox $bb_version, busybox init, rcS)"
	stage_busybox "$rootfs_stage" "root disk"
	mkdir -p "$rootfs_stage/etc/init.d"
	printf '%s\n' "$RCS" >"$rootfs_stage/etc/init.d/rcS"
	chmod 755 "$rootfs_stage/etc/init.d/rcS"
	printf '%s\n' "$INITTAB_DISK" >"$rootfs_stage/etc/inittab"
	cat >"$rootfs_stage/etc/lightpath-rootfs" <<EOF
lightpath root disk: ext4, built by tools/linux/build.sh from Debian's busybox-static $bb_version and $(basename "$kdeb")
EOF
	find "$rootfs_stage" -exec touch -h -d @0 {} +
	rm -f "$rootfs.tmp"
	truncate -s $((rootfs_mib << 20)) "$rootfs.tmp"
	# (not byte-for-byte reproducible: mkfs.ext4 -d copies each file's
	# ctime, which only the clock sets, and picks a new UUID)
	if ! err=$("$mkfs_ext4" -q -F -L lp-root -E root_owner=0:0 -d "$rootfs_stage" \
		"$rootfs.tmp" 2>&1); then
		rm -f "$rootfs.tmp"
		die "mkfs.ext4 -d $rootfs_stage failed: $err"
	fi
	mv "$rootfs.tmp" "$rootfs"
	say "root disk: $rootfs, $rootfs_mib MiB ($(($(stat -c %s "$rootfs") / 512)) sectors), busybox with $n applet links"
fi

# ---------------------------------------------------------------- VM description

read -r -d '' CFG <<'EOF' || true
# lightpath vm
# lightpath's Linux test guest: Debian's kernel with a busybox initramfs, both
# built from Debian packages by tools/linux/build.sh (`make linux-guest`).
# `make run` boots it: -initrd "linux.cfg,vmlinuz,initrd.cpio.gz" (docs/USAGE.md).
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

# The guest with the root disk (`make run LP_ROOT=disk`, the linux-rootfs
# tests), with 1 vCPU and with 2.
read -r -d '' CFG_ROOTFS <<'EOF' || true
# lightpath vm
# lightpath's Linux test guest on its root disk: the initramfs's /init loads
# the virtio and ext4 modules, mounts /dev/vda (rootfs.img, ext4) and switches
# to it; written by tools/linux/build.sh, as linux.cfg. The disk is the VM's
# own copy in RAM: what the guest writes is lost when the VM ends.
# -initrd "linux-rootfs.cfg,vmlinuz,initrd.cpio.gz,rootfs.img"
name    = linux-rootfs
kernel  = vmlinuz
initrd  = initrd.cpio.gz
# root=/dev/vda rw: read by /init (the kernel leaves the root to an initramfs)
cmdline = "console=ttyS0 panic=-1 root=/dev/vda rw"
memory  = 256
cpus    = 1
disk    = rootfs.img
EOF
read -r -d '' CFG_ROOTFS_SMP2 <<'EOF' || true
# lightpath vm
# lightpath's Linux test guest on its root disk with 2 vCPUs (tsc=reliable:
# see linux-smp2.cfg); written by tools/linux/build.sh, as linux-rootfs.cfg.
# -initrd "linux-rootfs-smp2.cfg,vmlinuz,initrd.cpio.gz,rootfs.img"
name    = linux-rootfs-smp2
kernel  = vmlinuz
initrd  = initrd.cpio.gz
cmdline = "console=ttyS0 panic=-1 tsc=reliable root=/dev/vda rw"
memory  = 256
cpus    = 2
disk    = rootfs.img
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
write_cfg "$out/linux-rootfs.cfg" "$CFG_ROOTFS"
write_cfg "$out/linux-rootfs-smp2.cfg" "$CFG_ROOTFS_SMP2"
say "ready: $cfg, $out/linux-smp2.cfg, $out/linux-rootfs.cfg, $out/linux-rootfs-smp2.cfg, $out/vmlinuz, $initrd, $rootfs"
