"""What lightpath loads and what it refuses: boot options, VM descriptions
(the config files), guest images (ELF, multiboot, Linux bzImage), the
modules of a multiboot kernel, too many modules, a CPU without SVM."""

import os
import re
import shutil
import struct
import subprocess
import threading

from .boot import Boot, check, Fail, guest, OUT, ROOT, TIMEOUT, write_test_file
from .lines import (expect_error_line, expect_exact_lines, expect_first_nonzero, healthy, HELLO,
                    loaded, NORMAL_LINE, resetcheck_lines, selftest_result)


def t_bad_option():
    b = Boot("bad-option", [guest("hello")], append="bogus=1")
    expect_error_line(b, "bogus")
    return b


def t_bad_value():
    b = Boot("bad-value", [guest("hello")], append="light=maybe")
    expect_error_line(b, "light", "maybe")
    return b


def t_bad_timeout_option():
    b = Boot("bad-timeout-option", [guest("hello")], append="vm.timeout=1.5")
    expect_error_line(b, "vm.timeout", "1.5")
    b.expect(r"^lightpath: error: bad value '1\.5' for vm\.timeout= \(use whole seconds 0\.\.86400; "
             r"0 = no limit\)\s*$", "the exact error line for vm.timeout=1.5")
    return b


def t_no_modules():
    b = Boot("no-modules", [])
    expect_error_line(b)
    return b


def t_bad_image(label, path_maker):
    def run():
        path = path_maker()
        b = Boot("bad-image-" + label, [path, guest("hello")])
        b.expect(r"^lightpath: vm0: cannot load guest image '%s': \S.*$" % re.escape(path),
                 "'lightpath: vm0: cannot load guest image '%s': <reason>'" % path)
        b.expect_not(r"^lightpath: vm0: loaded .*")
        b.expect(r"^\[vm1\] hello from lightpath guest\s*$",
                 "'[vm1] hello from lightpath guest' (the next VM must still run)")
        b.expect(r"^lightpath: vm1: ended with status 0 ", "'lightpath: vm1: ended with status 0 (...)'")
        expect_first_nonzero(b, 0x70, 0, 1, 2)   # a VM that could not start is not a 0
        return b
    return run


def make_text_file():
    path = "build/test/not-an-elf.txt"
    with open(os.path.join(ROOT, path), "w") as f:
        f.write("this is not a guest image\n" * 8)
    return path


def make_non_multiboot_elf():
    # An ordinary host ELF: no multiboot header. Copied so the path has no
    # surprises (and a unit-test binary is not required to exist).
    path = "build/test/not-multiboot.elf"
    shutil.copyfile("/bin/true", os.path.join(ROOT, path))
    return path


LINUX_KERNEL = "build/linux/vmlinuz"
LINUX_KERNEL_LOCK = threading.Lock()


def linux_kernel():
    """build/linux/vmlinuz, built (Debian's kernel, `tools/linux/build.sh
    --kernel-only`) when missing or out of date; never skipped."""
    with LINUX_KERNEL_LOCK:
        log = os.path.join(OUT, "linux-kernel-build.log")
        with open(log, "w") as f:
            try:
                p = subprocess.run([os.path.join(ROOT, "tools", "linux", "build.sh"), "--kernel-only"],
                                   cwd=ROOT, stdout=f, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, timeout=900)
            except subprocess.TimeoutExpired:
                raise Fail("tools/linux/build.sh --kernel-only hung (see build/test/linux-kernel-build.log)")
        check(p.returncode == 0, "tools/linux/build.sh --kernel-only exited %d (see "
              "build/test/linux-kernel-build.log)" % p.returncode)
        path = os.path.join(ROOT, LINUX_KERNEL)
        check(os.path.isfile(path) and os.path.getsize(path) > 1 << 20,
              "tools/linux/build.sh --kernel-only did not produce " + LINUX_KERNEL)
        return LINUX_KERNEL


# Bad VM descriptions and bad Linux images, each followed by a healthy hello
# VM in the same boot: one clear line for the bad VM (vm0), then hello runs as
# vm1 and lightpath powers off normally.
def odd_lines(b):
    """lightpath's lines other than the usual ones: errors and reports."""
    return [l.strip() for l in b.lines if l.startswith("lightpath:") and not NORMAL_LINE.match(l)]


def expect_bad_vms_then_hello(b, lines, hello=HELLO):
    """One problem line per bad VM, equal to lines[i] (a regex for the whole
    line) for vmi, in that order and nothing else; then hello runs as the
    next VM, and lightpath powers off with vm0's status 0x70 (the first
    non-zero: a VM that could not start is not a VM that ended with 0)."""
    b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
    odd = odd_lines(b)
    check(odd, "no error line for the bad VM (wanted /%s/); %s" % (lines[0], b.why_rc()))
    check(len(odd) == len(lines), "expected %d error line(s), got %d: %s"
          % (len(lines), len(odd), " | ".join(odd[:4])))
    for got, want in zip(odd, lines):
        check(re.fullmatch(want + r"\s*", got) is not None, "wrong error line: %r (wanted /%s/)"
              % (got, want))
    n = len(lines)
    for i in range(n):
        b.expect_not(r"^lightpath: vm%d: loaded .*" % i, "the bad VM vm%d must not be loaded" % i)
        b.expect_not(r"^\[vm%d\] .*" % i, "the bad VM vm%d must print nothing" % i)
    b.expect(r"^lightpath: vm%d: loaded %s " % (n, re.escape(hello)),
             "'lightpath: vm%d: loaded %s ...'" % (n, hello))
    b.expect(r"^\[vm%d\] hello from lightpath guest\s*$" % n,
             "'[vm%d] hello from lightpath guest' (the next VM must still run)" % n)
    b.expect(r"^lightpath: vm%d: ended with status 0 " % n,
             "'lightpath: vm%d: ended with status 0 (...)'" % n)
    expect_first_nonzero(b, 0x70, 0, n, n + 1)


def expect_bad_vm_then_hello(b, line, hello=HELLO):
    """Exactly one problem line, equal to `line` (a regex for the whole line,
    anchored), for vm0; then hello runs as vm1."""
    expect_bad_vms_then_hello(b, [line], hello=hello)


def t_bad_config(label, text, line_for):
    """A VM description `text` (build/test/bad-config-<label>.cfg), then hello;
    line_for(path) is the regex of the one error line expected."""
    def run():
        path = write_test_file("bad-config-%s.cfg" % label, text)
        b = Boot("bad-config-" + label, [path, HELLO])
        expect_bad_vm_then_hello(b, line_for(re.escape(path)))
        return b
    return run


BAD_CONFIGS = (
    ("pcpus-twice", "# lightpath vm\nkernel = hello.elf\ncpus = 2\npcpus = 1,1\n",
     lambda p: r"lightpath: error: %s:4: pcpus = 1,1: CPU 1 is listed twice" % p),
    ("pcpus-count", "# lightpath vm\nkernel = hello.elf\npcpus = 0,1\n",
     lambda p: r"lightpath: error: %s:3: pcpus = lists 2 CPUs, but the VM has 1 vCPU \(cpus = 1\): "
               r"give one CPU per vCPU" % p),
    ("pcpus-value", "# lightpath vm\nkernel = hello.elf\npcpus = 64\n",
     lambda p: r"lightpath: error: %s:3: pcpus = 64: use host CPU numbers 0\.\.63, separated by "
               r"commas, one per vCPU" % p),
    ("cpus-value", "# lightpath vm\nkernel = hello.elf\ncpus = 0\n",
     lambda p: r"lightpath: error: %s:3: cpus = 0: use 1\.\.64 \(the VM's vCPUs\)" % p),
    ("unknown-key", "# lightpath vm\nkernel = vmlinuz\ncolour = blue\nmemory = 64\n",
     lambda p: r"lightpath: error: %s:3: unknown key 'colour' "
               r"\(accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net\)" % p),
    ("memory", "# lightpath vm\nname = small\n\n# too little\nmemory = 12\nkernel = vmlinuz\n",
     lambda p: r"lightpath: error: %s:5: memory = 12: use an even number 16\.\.3072 \(MiB\)" % p),
    ("no-kernel", "# lightpath vm\nname = nokernel\nmemory = 64\n",
     lambda p: r"lightpath: error: %s: no 'kernel = \.\.\.' line \(every VM needs a kernel\)" % p),
    ("missing-module", "# lightpath vm\nkernel = missing.elf\n",
     lambda p: r"lightpath: vm0: %s names module 'missing\.elf', which was not given" % p),
    ("self", "# lightpath vm\nname = narcissus\nkernel = bad-config-self.cfg\n",
     lambda p: r"lightpath: vm0: %s names itself as its kernel" % p),
    ("timeout", "# lightpath vm\nkernel = vmlinuz\ntimeout = 2s\n",
     lambda p: r"lightpath: error: %s:3: timeout = 2s: use whole seconds 0\.\.86400 \(0 = no limit\)" % p),
)


def config_cycle_boot(boot_cls, label, switches=""):
    """Two descriptions naming each other, then resetcheck: (boot, the lines
    expected, exactly). Each description is reported with one line (the old
    loader took both for modules of the other and ran neither, without a
    word), and the healthy VM after them starts from the reset state."""
    bochs = boot_cls is not Boot
    a = write_test_file("%s-a.cfg" % label, "# lightpath vm\nkernel = %s-b.cfg\n" % label)
    bb = write_test_file("%s-b.cfg" % label, "# lightpath vm\nkernel = %s-a.cfg\n" % label)
    module, path, name = healthy(bochs)
    b = boot_cls(label, [a, bb, module], append=switches)
    shown = (lambda p: os.path.basename(p)) if bochs else (lambda p: p)
    lines = [r"lightpath: vm0: %s names module '%s-b\.cfg' as its kernel, but that is a VM "
             r"description" % (re.escape(shown(a)), re.escape(label)),
             r"lightpath: vm1: %s names module '%s-a\.cfg' as its kernel, but that is a VM "
             r"description" % (re.escape(shown(bb)), re.escape(label))]
    lines += resetcheck_lines(b, 2, path, name)
    lines.append(r"lightpath: all VMs ended; powering off with status 112 \(the first non-zero "
                 r"status, vm0's; VMs that did not end with 0: 2 of 3\)")
    return b, lines


def t_config_cycle(label, switches=""):
    def run():
        b, lines = config_cycle_boot(Boot, label, switches)
        expect_exact_lines(b, lines)
        b.expect_rc(225)
        return b
    return run


def t_config_names_config():
    """A description naming a valid description: the first is refused, the
    second still runs as its own VM."""
    a = write_test_file("config-outer.cfg", "# lightpath vm\nkernel = config-inner.cfg\n")
    inner = write_test_file("config-inner.cfg", "# lightpath vm\nkernel = hello.elf\nmemory = 16\n")
    b = Boot("config-names-config", [a, inner, HELLO])
    odd = odd_lines(b)
    want = (r"lightpath: vm0: %s names module 'config-inner\.cfg' as its kernel, but that is a VM "
            r"description" % re.escape(a))
    check(len(odd) == 1 and re.fullmatch(want, odd[0]), "expected one line /%s/, got: %s"
          % (want, " | ".join(odd) or "none"))
    b.expect(r"^lightpath: vm1: loaded %s \(multiboot ELF32, .*\), 16 MiB" % re.escape(inner),
             "'lightpath: vm1: loaded %s (multiboot ELF32 ...), 16 MiB' (the inner description)" % inner)
    b.expect(r"^\[vm1\] hello from lightpath guest$", "'[vm1] hello from lightpath guest'")
    b.expect(r"^lightpath: vm1: ended with status 0 ", "'lightpath: vm1: ended with status 0 (...)'")
    b.expect_not(r"^lightpath: vm2:", "a third VM (hello.elf is the inner description's kernel)")
    expect_first_nonzero(b, 0x70, 0, 1, 2)
    return b


def t_too_many_modules(label, switches=""):
    """10 modules: the first 8 run, the 9th and 10th are reported by name
    (the old loader dropped them without a word). The 8th is resetcheck:
    the VMs before it left it nothing, and it runs normally."""
    module, path, name = healthy()
    mods = [guest("hello", "n=%d" % i) for i in range(1, 8)] + [module] + \
        [guest("hello", "n=%d" % i) for i in (9, 10)]

    def run():
        b = Boot(label, mods, append=switches)
        lines = [r"lightpath: error: module %d \('%s'\) is ignored: lightpath takes at most 8 modules"
                 % (i + 1, re.escape(mods[i])) for i in (8, 9)]
        for i in range(7):
            lines += [loaded(i, HELLO, 64, mods[i]),
                      r"\[vm%d\] hello from lightpath guest" % i,
                      r'\[vm%d\] hello: args "n=%d"' % (i, i + 1),
                      r"\[vm%d\] hello: exiting with status 0" % i,
                      r"lightpath: vm%d: ended with status 0 \(isa-debug-exit\)" % i,
                      r"lightpath: vm%d: exit statistics" % i]
        lines += resetcheck_lines(b, 7, path, name)
        lines.append(r"lightpath: all VMs ended; powering off with status 112 \(every VM ended with "
                     r"status 0, but 2 modules were ignored\)")
        expect_exact_lines(b, lines)
        b.expect_powered_off(0x70, r"every VM ended with status 0, but 2 modules were ignored")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def image_refused(path, reason):
    return r"lightpath: vm0: cannot load guest image '%s': %s" % (re.escape(path), reason)


def t_bad_linux_truncated():
    kernel = linux_kernel()
    with open(os.path.join(ROOT, kernel), "rb") as f:
        head = f.read(0x300)
    check(head[0x202:0x206] == b"HdrS", "%s has no HdrS magic" % kernel)
    setup = ((head[0x1f1] or 4) + 1) * 512
    path = write_test_file("bad-linux-truncated.bzImage", head)
    b = Boot("bad-linux-truncated", [path, HELLO])
    expect_bad_vm_then_hello(b, image_refused(path, r"truncated bzImage: 768 bytes, but the setup "
                                              r"code alone is %d" % setup))
    return b


def t_bad_linux_old_protocol():
    img = bytearray(0x1000)
    img[0x1f1] = 1                                    # setup_sects
    img[0x1fe:0x200] = struct.pack("<H", 0xaa55)      # boot_flag
    img[0x202:0x206] = b"HdrS"
    img[0x206:0x208] = struct.pack("<H", 0x0204)      # boot protocol 2.04
    path = write_test_file("bad-linux-old-protocol.bzImage", bytes(img))
    b = Boot("bad-linux-old-protocol", [path, HELLO])
    expect_bad_vm_then_hello(b, image_refused(path, r"boot protocol 2\.04 is too old: 64-bit entry "
                                              r"needs 2\.06\+"))
    return b


def t_bad_linux_small_memory():
    kernel = linux_kernel()
    path = write_test_file("bad-linux-small-memory.cfg",
                           "# lightpath vm\nname = tiny\nkernel = vmlinuz\nmemory = 32\n")
    b = Boot("bad-linux-small-memory", [path, kernel, HELLO])
    expect_bad_vm_then_hello(b, r"lightpath: vm0: cannot load guest image 'vmlinuz': the kernel needs "
                                r"(\d+) MiB; the VM has 32 MiB \(it loads at \d+ MiB and unpacks into "
                                r"\d+ MiB from there\)")
    need = int(b.find(r"^lightpath: vm0: cannot load .* the kernel needs (\d+) MiB").group(1))
    check(need > 32, "the kernel 'needs %d MiB', yet 32 MiB were refused" % need)
    return b


# Multiboot kernels get their modules, anywhere in RAM but
# lightpath's own ranges (guests/selftest/mbinfo.c checks what they find).
def xorshift_bytes(seed, n):
    out = bytearray(n)
    x = seed
    for k in range(n):
        x ^= (x << 13) & 0xffffffff
        x ^= x >> 17
        x ^= (x << 5) & 0xffffffff
        out[k] = x & 0xff
    return out


def make_mb_module(name, index, length, seed, string):
    """build/test/<name>: a module that says what it should look like to
    mbinfo (its index, length, seed and string; then xorshift32 bytes)."""
    s = string.encode()
    head = b"LPMOD\0\0\0" + struct.pack("<IIII", index, length, seed, len(s)) + s
    assert len(head) <= length
    data = xorshift_bytes(seed, length)
    data[:len(head)] = head
    return write_test_file(name, bytes(data))


def mb_modules_boot(boot_cls, label, kernel):
    """A description with initrd = and modules = for `kernel` (an mbinfo
    guest), its three modules (named after `label`, apart for parallel
    runs), then hello: (boot, the description's path)."""
    p = "mbmod-%s-" % label
    mods = [make_mb_module(p + "initrd.bin", 0, 5001, 7, p + "initrd.bin"),
            make_mb_module(p + "a.bin", 1, 300 * 1024 + 3, 8, p + "a.bin alpha beta=2"),
            make_mb_module(p + "b.bin", 2, 100, 9, p + "b.bin")]
    cfg = write_test_file(p + "vm.cfg", "# lightpath vm\nname = mb-%s\nkernel = %s.elf\n"
                          "initrd = %sinitrd.bin\nmodules = \"%sa.bin alpha beta=2\", %sb.bin\n"
                          "memory = 32\n" % (label, kernel, p, p, p))
    b = boot_cls("multiboot-modules-" + label, [cfg, guest(kernel, "mods=3 ram=32")] + mods + [HELLO])
    return b, cfg


def check_mb_modules(b, kernel, label, hello=HELLO):
    """The mbinfo VM passes with its 3 modules; the modules were not run as
    VMs; hello runs as vm1."""
    b.expect(r"^lightpath: vm0: loaded mb-%s \(multiboot ELF(32|64), entry 0x[0-9a-f]+, 3 modules\), "
             r"32 MiB, " % re.escape(label), "'lightpath: vm0: loaded mb-%s (..., 3 modules), 32 MiB'" % label)
    selftest_result(b, kernel)
    b.expect(r"^lightpath: vm1: loaded %s " % re.escape(hello), "'lightpath: vm1: loaded %s'" % hello)
    b.expect(r"^\[vm1\] hello from lightpath guest\s*$", "'[vm1] hello from lightpath guest'")
    b.expect_not(r"^lightpath: vm2:", "a third VM (the modules must not run as VMs)")
    b.expect_powered_off(0)
    b.expect_rc(1)


def t_mb_modules(kernel, label):
    def run():
        b, _ = mb_modules_boot(Boot, label, kernel)
        check_mb_modules(b, kernel, label)
        return b
    return run


def make_mb_elf(name, segments, entry=0x100000):
    """build/test/<name>: an ELF32 multiboot kernel whose PT_LOAD segments
    are [(paddr, memsz)] (one page of file data each, or less)."""
    n = len(segments)
    img = bytearray(0x1000 + 0x1000 * n)
    img[0:16] = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    img[16:52] = struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, entry, 52, 0, 0, 52, 32, n, 0, 0, 0)
    for i, (paddr, memsz) in enumerate(segments):
        off = 0x1000 * (i + 1)
        img[52 + 32 * i:84 + 32 * i] = struct.pack("<IIIIIIII", 1, off, paddr, paddr,
                                                   min(memsz, 0x1000), memsz, 7, 0x1000)
    img[0x200:0x20c] = struct.pack("<III", 0x1BADB002, 3, (-(0x1BADB002 + 3)) & 0xffffffff)
    return write_test_file(name, bytes(img))


# A kernel whose segment overlaps a range lightpath fills or that is not
# RAM: (label, segments, the reason in the refusal line).
BAD_SEGMENTS = (
    ("bda", [(0x100000, 0x1000), (0x400, 0x20)],
     r"program header 1 loads 0x400-0x41f, which overlaps 0x400-0x4ff, the BIOS data area"),
    ("ebda", [(0x9f000, 0x2000)],
     r"program header 0 loads 0x9f000-0xa0fff, which overlaps 0x9fc00-0x9ffff, the EBDA"),
    ("bios-area", [(0x100000, 0x1000), (0xf0000, 0x1000)],
     r"program header 1 loads 0xf0000-0xf0fff, which overlaps 0xe0000-0xfffff, the BIOS area with "
     r"the ACPI tables"),
    ("beyond-ram", [(0x3fff000, 0x2000)],
     r"program header 0 loads 0x3fff000-0x4000fff, beyond the VM's 64 MiB of RAM"),
)


def t_bad_segment(label, segments, reason, boot_cls=None):
    """A kernel with a segment where it cannot go, then hello: one line
    naming the segment's range and what it collides with, hello runs."""
    def run():
        path = make_mb_elf("bad-segment-%s.elf" % label, segments,
                           entry=segments[0][0] if segments[0][0] >= 0x100000 else 0x100000)
        b = (boot_cls or Boot)("bad-segment-" + label, [path, HELLO])
        hello = HELLO if boot_cls is None else "hello.elf"
        name = path if boot_cls is None else os.path.basename(path)
        expect_bad_vms_then_hello(b, [image_refused(name, reason)], hello=hello)
        return b
    return run


# Descriptions whose modules = cannot be used, each then hello (the second
# hello.elf: the first is the description's kernel and so not a VM of its
# own): (label, text, extra modules, the expected line for path p).
BAD_MODULE_CONFIGS = (
    ("module-missing", "# lightpath vm\nkernel = hello.elf\nmodules = \"gone.bin x=1\"\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names module 'gone\.bin', which was not given" % p),
    ("module-self", "# lightpath vm\nkernel = hello.elf\nmodules = hello.elf, "
     "bad-config-module-self.cfg\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names itself as a module" % p),
    ("module-syntax", "# lightpath vm\nkernel = hello.elf\nmodules = \"a.bin x\",\n", [],
     lambda p: r"lightpath: error: %s:3: modules: nothing after the last ','" % p),
    ("modules-too-many", "# lightpath vm\nkernel = hello.elf\nmodules = a,b,c,d,e,f,g,h,i\n", [],
     lambda p: r"lightpath: error: %s:3: modules: more than 8 entries" % p),
    ("module-too-big", "# lightpath vm\nkernel = hello.elf\nmemory = 16\n"
     "modules = bad-config-big.bin\n", [HELLO, "build/test/bad-config-big.bin"],
     lambda p: r"lightpath: vm0: cannot load guest image 'hello\.elf': module 'bad-config-big\.bin' "
               r"\(17408 KiB\) does not fit in the free RAM of the VM's 16 MiB"),
    ("disk-missing", "# lightpath vm\nkernel = hello.elf\ndisk = gone.img\n", [HELLO],
     lambda p: r"lightpath: vm0: %s names module 'gone\.img', which was not given" % p),
    ("disk-odd-size", "# lightpath vm\nkernel = hello.elf\ndisk = bad-config-odd.img\n",
     [HELLO, "build/test/bad-config-odd.img"],
     lambda p: r"lightpath: vm0: %s: disk 'bad-config-odd\.img' is 1000 bytes, not a whole number "
               r"of 512-byte sectors" % p),
)


def t_bad_module_config(label, text, extra, line_for):
    def run():
        if label == "module-too-big":
            write_test_file("bad-config-big.bin", bytes(17 << 20))
        write_test_file("bad-config-odd.img", bytes(1000))
        write_test_file("bad-config-ok.img", bytes(4096))
        path = write_test_file("bad-config-%s.cfg" % label, text)
        b = Boot("bad-config-" + label, [path] + extra + [HELLO])
        expect_bad_vm_then_hello(b, line_for(re.escape(path)))
        return b
    return run


def t_bad_modules_linux():
    """modules = for a Linux kernel: refused with one line (Linux takes its
    initrd through initrd =)."""
    kernel = linux_kernel()
    path = write_test_file("bad-config-modules-linux.cfg", "# lightpath vm\nkernel = vmlinuz\n"
                           "modules = hello.elf\nmemory = 32\n")
    b = Boot("bad-config-modules-linux", [path, kernel, HELLO, HELLO])
    expect_bad_vm_then_hello(b, r"lightpath: vm0: %s: modules = is for multiboot kernels; 'vmlinuz' "
                                r"is a Linux bzImage \(its initrd is initrd =\)" % re.escape(path))
    return b


NO_SVM_LINE = "lightpath: this CPU has no AMD SVM with nested paging"


def t_no_svm():
    b = Boot("no-svm", [guest("hello")], cpu="EPYC,-svm", timeout=min(TIMEOUT, 30))
    b.expect(r"^%s\s*$" % re.escape(NO_SVM_LINE), "'%s'" % NO_SVM_LINE)
    b.expect_rc(255)
    b.expect_not(r"^lightpath: vm\d+: loaded .*")
    return b
