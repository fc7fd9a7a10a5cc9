#!/usr/bin/python3
"""Boot Debian's Linux under QEMU TCG and run lightpath's bench guest under KVM.

Used by `make compare` (tools/compare/compare.py); on its own:

    tools/compare/kvmboot.py [--n N] [--timeout S]

Steps, each reported as it happens:
  1. packages: `apt-get download` linux-image-amd64 (the metapackage, to learn
     which linux-image-6.1.*-amd64 it stands for), that kernel package and
     busybox-static into build/compare/debs/ (kept: later runs reuse them),
     then `dpkg -x` into build/compare/pkgroot/;
  2. initramfs: busybox, the kvm_amd module and the modules it depends on
     (from each module's .modinfo `depends=`, loaded with insmod in that
     order), build/compare/kvmrun, the bench guests and an /init script,
     written as a newc cpio archive (uncompressed: nothing to inflate under
     TCG) to build/compare/initramfs.cpio;
  3. boot: qemu-system-x86_64 -accel tcg -cpu EPYC,+svm
     -icount shift=0,align=off,sleep=off (the configuration `make bench` uses
     for lightpath); /init prints the kernel command line and what the kernel
     reports for its mitigations (sysfs and dmesg), loads kvm_amd and runs
     kvmrun on bench32 and bench64 with host=kvm, then each again with
     timer=1 (which adds the timer_irq row, the only one compare.py takes
     from that run) under `kvmrun --irqchip` (KVM's in-kernel local APIC,
     which the first runs do without). The serial log is
     build/compare/kvm.log (kvm-NAME.log with --log-name NAME).
"""

import argparse
import glob
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(ROOT, "build", "compare")
DEBS = os.path.join(OUT, "debs")
PKGROOT = os.path.join(OUT, "pkgroot")
INITRAMFS = os.path.join(OUT, "initramfs.cpio")
KVMRUN = os.path.join(OUT, "kvmrun")
GUESTS = ("bench32", "bench64")

CPU = "EPYC,+svm"
ICOUNT = "shift=0,align=off,sleep=off"
# A fixed RNG seed (RDRAND, hence KASLR and the slab freelist order) and a
# fixed RTC make the boot, and so the kernel's memory layout, the same every
# time: otherwise alignment-dependent copies make KVM's rows wobble by 1-3.
RTC = "base=2025-01-01T00:00:00,clock=vm"
# console on the serial port; quiet keeps the kernel's own chatter (and its
# cost) out of the log; panic=-1 turns a kernel panic into a QEMU exit.
KERNEL_APPEND = "console=ttyS0 quiet panic=-1"


class BootError(Exception):
    pass


def say(msg):
    print("compare: " + msg, flush=True)


def rel(p):
    return os.path.relpath(p, ROOT)


# ---------------------------------------------------------------- packages

def apt_download(names, dest):
    """`apt-get download NAMES` into dest; one `apt-get update` on failure."""
    os.makedirs(dest, exist_ok=True)
    for attempt in (1, 2):
        p = subprocess.run(["apt-get", "download", "-q"] + names, cwd=dest, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)
        if p.returncode == 0:
            return
        if attempt == 1:
            say("apt-get download failed; running apt-get update once and retrying")
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, stdin=subprocess.DEVNULL)
    err = [l for l in p.stderr.splitlines() if l.startswith("E:")] or p.stderr.splitlines()[-1:]
    raise BootError("apt-get download %s failed: %s" % (" ".join(names), "; ".join(err)))


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", deb, field], capture_output=True, text=True,
                          check=True).stdout.strip()


def newest(pattern):
    files = sorted(glob.glob(pattern), key=os.path.getmtime)
    return files[-1] if files else None


def fetch_packages():
    """Returns (kernel .deb, busybox .deb), downloading what is missing."""
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise BootError("%s not found: `make compare` needs Debian's apt and dpkg" % tool)
    meta_dir = os.path.join(DEBS, "meta")
    shutil.rmtree(meta_dir, ignore_errors=True)
    kernel_pkg = None
    try:
        say("packages: asking apt which kernel linux-image-amd64 stands for")
        apt_download(["linux-image-amd64"], meta_dir)
        meta = newest(os.path.join(meta_dir, "linux-image-amd64_*.deb"))
        deps = deb_field(meta, "Depends")
        m = re.search(r"(linux-image-[0-9][^\s,(]*-amd64)\s*(?:\(=\s*([^)\s]+)\))?", deps)
        if not m:
            raise BootError("linux-image-amd64 depends on '%s': no linux-image-*-amd64 in it" % deps)
        kernel_pkg, kernel_ver = m.group(1), m.group(2)
    except BootError as e:
        cached = newest(os.path.join(DEBS, "linux-image-[0-9]*-amd64_*.deb"))
        if not cached:
            raise
        say("packages: %s; using the cached %s" % (e, os.path.basename(cached)))
    if kernel_pkg:
        pattern = "%s_%s_amd64.deb" % (kernel_pkg, (kernel_ver or "*").replace(":", "%3a"))
        kdeb = newest(os.path.join(DEBS, pattern))
        if kdeb:
            say("packages: %s (cached)" % os.path.basename(kdeb))
        else:
            say("packages: downloading %s (about 70 MB)" % kernel_pkg)
            apt_download([kernel_pkg + ("=" + kernel_ver if kernel_ver else "")], DEBS)
            kdeb = newest(os.path.join(DEBS, pattern))
    else:
        kdeb = newest(os.path.join(DEBS, "linux-image-[0-9]*-amd64_*.deb"))
    bdeb = newest(os.path.join(DEBS, "busybox-static_*.deb"))
    if bdeb:
        say("packages: %s (cached)" % os.path.basename(bdeb))
    else:
        say("packages: downloading busybox-static")
        apt_download(["busybox-static"], DEBS)
        bdeb = newest(os.path.join(DEBS, "busybox-static_*.deb"))
    if not kdeb or not bdeb:
        raise BootError("the downloaded packages are not in %s" % rel(DEBS))
    return kdeb, bdeb


def unpack(debs):
    stamp = os.path.join(PKGROOT, ".unpacked")
    want = "\n".join(os.path.basename(d) for d in debs) + "\n"
    if os.path.exists(stamp) and open(stamp).read() == want:
        say("unpack: %s is up to date" % rel(PKGROOT))
        return
    shutil.rmtree(PKGROOT, ignore_errors=True)
    os.makedirs(PKGROOT)
    for d in debs:
        say("unpack: dpkg -x %s" % os.path.basename(d))
        subprocess.run(["dpkg", "-x", d, PKGROOT], check=True)
    with open(stamp, "w") as f:
        f.write(want)


# ---------------------------------------------------------------- initramfs

def module_info(path):
    """The key=value strings of a .ko's .modinfo section (enough of ELF to
    find it; Debian 6.1 ships its modules uncompressed)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise BootError("%s is not an ELF64 module (compressed?)" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)

    def sec(i):
        name, _, _, _, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
        return name, off, size
    _, stroff, _ = sec(shstrndx)
    for i in range(shnum):
        name, off, size = sec(i)
        end = data.index(b"\0", stroff + name)
        if data[stroff + name:end] == b".modinfo":
            info = {}
            for item in data[off:off + size].split(b"\0"):
                if b"=" in item:
                    k, v = item.decode(errors="replace").split("=", 1)
                    info.setdefault(k, v)
            return info
    return {}


def module_order(moddir, top):
    """Module files to insmod, dependencies first, ending with `top`."""
    index = {}
    for p in glob.glob(os.path.join(moddir, "kernel", "**", "*.ko"), recursive=True):
        index[os.path.basename(p)[:-3].replace("-", "_")] = p
    order, seen = [], set()

    def visit(name, chain):
        key = name.replace("-", "_")
        if key in seen:
            return
        if key in chain:
            raise BootError("module dependency loop: %s" % " -> ".join(chain + [key]))
        if key not in index:
            raise BootError("module %s not found under %s" % (name, rel(moddir)))
        deps = module_info(index[key]).get("depends", "")
        for d in filter(None, deps.split(",")):
            visit(d, chain + [key])
        seen.add(key)
        order.append(index[key])
    visit(top, [])
    return order


INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo "compare: init: up after $(cut -d' ' -f1 /proc/uptime) s (guest clock)"
echo "compare: init: kernel $(uname -r)"
echo "compare: init: cmdline $(cat /proc/cmdline)"
echo "compare: init: cpu$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for m in @MODULES@; do
	insmod /modules/$m.ko || echo "compare: init: error: insmod $m failed"
done
for f in /sys/devices/system/cpu/vulnerabilities/*; do
	echo "compare: init: mitigation ${f##*/}: $(cat $f)"
done
# What the kernel said when it chose them (quiet kept it off the console);
# the command line is printed above already.
dmesg | grep -iE 'mitigat|vulnerab|spectre|retbleed|speculat|srso' | grep -v 'ommand line:' |
	sed 's/^/compare: init: dmesg: /'
echo "compare: init: kvm_amd npt=$(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null) nrips=$(cat /sys/module/kvm_amd/parameters/nrips 2>/dev/null) kvm.lapic_timer_advance_ns=$(cat /sys/module/kvm/parameters/lapic_timer_advance_ns 2>/dev/null)"
if [ ! -c /dev/kvm ]; then
	echo "compare: init: error: no /dev/kvm after loading kvm_amd"
fi
for g in @GUESTS@; do
	echo "compare: init: running $g under KVM"
	/kvmrun /$g.elf n=@N@ host=kvm
	echo "compare: init: kvmrun $g status $?"
	echo "compare: init: running $g timer=1 under KVM with its in-kernel irqchip"
	/kvmrun --irqchip /$g.elf n=@N@ host=kvm timer=1
	echo "compare: init: kvmrun $g-timer status $?"
done
echo "compare: init: end"
poweroff -f
"""


def cpio_newc(entries):
    """entries: [(path, mode, contents[, (rdev major, minor)])] -> the bytes of
    a newc ("070701") archive, as the kernel unpacks an initramfs. All files
    are owned by root with mtime 0, so the same inputs give the same bytes."""
    out = bytearray()
    for ino, e in enumerate(list(entries) + [("TRAILER!!!", 0, b"")], 1):
        name, mode, body = e[:3]
        rmaj, rmin = e[3] if len(e) > 3 else (0, 0)
        nb = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 2 if stat.S_ISDIR(mode) else 1, 0, len(body),
                  0, 0, rmaj, rmin, len(nb), 0)
        out += b"070701" + b"".join(b"%08X" % v for v in fields) + nb
        out += b"\0" * (-len(out) % 4)
        out += body
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def build_initramfs(n):
    mods = glob.glob(os.path.join(PKGROOT, "lib", "modules", "*"))
    if len(mods) != 1:
        raise BootError("expected one kernel under %s/lib/modules, found %d" % (rel(PKGROOT), len(mods)))
    moddir = mods[0]
    kver = os.path.basename(moddir)
    vmlinuz = os.path.join(PKGROOT, "boot", "vmlinuz-" + kver)
    if not os.path.exists(vmlinuz):
        raise BootError("no %s" % rel(vmlinuz))
    busybox = os.path.join(PKGROOT, "bin", "busybox")
    if not os.path.exists(busybox):
        raise BootError("no busybox in %s" % rel(PKGROOT))
    if not os.path.exists(KVMRUN):
        raise BootError("no %s (run `make %s`)" % (rel(KVMRUN), rel(KVMRUN)))
    order = module_order(moddir, "kvm_amd")
    names = [os.path.basename(p)[:-3] for p in order]
    say("initramfs: kernel %s, modules %s" % (kver, " ".join(names)))

    D, F, X = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFREG | 0o755
    init = INIT.replace("@MODULES@", " ".join(names)).replace("@GUESTS@", " ".join(GUESTS)) \
               .replace("@N@", str(n))
    entries = [("bin", D, b""), ("modules", D, b""), ("dev", D, b""),
               ("dev/console", stat.S_IFCHR | 0o600, b"", (5, 1)),
               ("init", X, init.encode()),
               ("bin/busybox", X, open(busybox, "rb").read()),
               ("kvmrun", X, open(KVMRUN, "rb").read())]
    for p, nm in zip(order, names):
        entries.append(("modules/%s.ko" % nm, F, open(p, "rb").read()))
    for g in GUESTS:
        path = os.path.join(ROOT, "build", "guests", g + ".elf")
        if not os.path.exists(path):
            raise BootError("no %s (run `make guests`)" % rel(path))
        entries.append((g + ".elf", F, open(path, "rb").read()))
    # /dev/console (5,1) is there for the kernel to open before /init runs.
    data = cpio_newc(entries)
    with open(INITRAMFS + ".tmp", "wb") as f:
        f.write(data)
    os.replace(INITRAMFS + ".tmp", INITRAMFS)
    say("initramfs: %s, %.1f MB" % (rel(INITRAMFS), len(data) / 1e6))
    return vmlinuz, kver


# ---------------------------------------------------------------- boot

def qemu_cmd(vmlinuz, cpu=CPU):
    return ["qemu-system-x86_64", "-accel", "tcg", "-cpu", cpu, "-icount", ICOUNT,
            "-smp", "1", "-m", "512", "-seed", "1", "-rtc", RTC,
            "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot", "-kernel", vmlinuz, "-initrd", INITRAMFS,
            "-append", KERNEL_APPEND]


def log_path(name=None):
    return os.path.join(OUT, "kvm-%s.log" % name if name else "kvm.log")


def boot(vmlinuz, timeout, cpu=CPU, append=KERNEL_APPEND, log_name=None):
    """Boots, echoes the progress lines, returns the serial log text."""
    log = log_path(log_name)
    cmd = qemu_cmd(vmlinuz, cpu)
    cmd[-1] = append
    say("boot: %s" % " ".join(c if " " not in c else "'%s'" % c for c in
                              [os.path.basename(cmd[0])] + [rel(c) if c.startswith(ROOT) else c
                                                            for c in cmd[1:]]))
    say("boot: Linux under TCG takes tens of seconds (more on a busy machine); progress follows")
    t0 = time.monotonic()
    lines = []
    with open(log, "w") as logf:
        # Bytes, split at b"\n" only: a text-mode pipe would also end a
        # line at a guest's lone "\r" (universal newlines).
        p = subprocess.Popen(["timeout", "--kill-after=5", str(timeout)] + cmd, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        for raw in p.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
            logf.write(line + "\n")
            logf.flush()
            lines.append(line)
            el = time.monotonic() - t0
            if line.startswith("compare: init: "):
                print("compare: [%5.1f s] %s" % (el, line[len("compare: init: "):]), flush=True)
            elif line.startswith("kvmrun:") or "check FAILED" in line or \
                    re.match(r"\[guest\] bench: mode=\S+ done", line) or "Kernel panic" in line:
                print("compare: [%5.1f s] %s" % (el, line), flush=True)
        rc = p.wait()
    secs = time.monotonic() - t0
    text = "\n".join(lines) + "\n"
    if rc == 124 or rc == 137:
        raise BootError("the Linux boot timed out after %d s (serial log %s)" % (timeout, rel(log)))
    if "compare: init: end" not in text:
        err = [l for l in lines if "error" in l.lower() or "panic" in l.lower()]
        raise BootError("the Linux boot ended (QEMU exit %d) before /init finished%s (serial log %s)"
                        % (rc, "; " + err[-1].strip() if err else "", rel(log)))
    say("boot: done in %.0f s (serial log %s)" % (secs, rel(log)))
    return text, secs


def prepare(n):
    """Packages and initramfs: what every boot of one run shares."""
    os.makedirs(OUT, exist_ok=True)
    kdeb, bdeb = fetch_packages()
    unpack([kdeb, bdeb])
    vmlinuz, kver = build_initramfs(n)
    return {"vmlinuz": vmlinuz, "kernel_deb": os.path.basename(kdeb),
            "kernel_version": deb_field(kdeb, "Version"), "kernel_release": kver}


def run(n, timeout, cpu=CPU, append=KERNEL_APPEND, log_name=None, prep=None):
    """One boot; prep (from prepare()) lets several boots share the packages
    and the initramfs."""
    k = dict(prep or prepare(n))
    k["text"], k["secs"] = boot(k["vmlinuz"], timeout, cpu, append, log_name)
    return k


def main():
    ap = argparse.ArgumentParser(description="run lightpath's bench guest under KVM in QEMU TCG")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--cpu", default=CPU, help="QEMU -cpu (default %s)" % CPU)
    ap.add_argument("--append", default=KERNEL_APPEND, help="kernel command line")
    ap.add_argument("--log-name", help="serial log build/compare/kvm-NAME.log (default kvm.log)")
    args = ap.parse_args()
    try:
        r = run(args.n, args.timeout, args.cpu, args.append, args.log_name)
    except BootError as e:
        print("compare: error: %s" % e, file=sys.stderr)
        return 1
    for line in r["text"].split("\n"):
        if line.startswith("[guest] bench:"):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
