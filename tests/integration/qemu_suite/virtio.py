"""virtio devices: the disk (virtio-blk), the network between VMs
(virtio-net), and the hostile guests that attack their rings."""

import os
import re
import shutil

from .boot import Boot, check, guest, GUESTS, ROOT, write_test_file
from .lines import selftest_result, SIDE


VIRTIO_SECTORS = 64


def virtio_disk(name):
    """build/test/<name>: a disk image whose sector s byte i is
    (s * 31 + i * 7 + 0x5a) & 0xff (guests/selftest/virtio.c checks it)."""
    img = bytearray(VIRTIO_SECTORS * 512)
    for sec in range(VIRTIO_SECTORS):
        for i in range(512):
            img[sec * 512 + i] = (sec * 31 + i * 7 + 0x5a) & 0xff
    return write_test_file(name, bytes(img))


def t_virtio(ro, boot_cls=None, label="virtio", cpus=1):
    """A VM description's `disk =` gives the VM a virtio-blk
    function (guests/selftest/virtio.c drives it: PCI, negotiation, reads
    against the image, a write, the edges, MSI-X, a hostile ring); a second
    VM given the same image reads it as it was (a writable disk is the VM's
    own copy; a read-only one is never written). cpus=2: both VMs have two
    vCPUs (QEMU -smp 2; the second waits for a SIPI that never comes): the
    device then runs on the heavy path, under the VM lock."""
    def run():
        tag = "%s-%s" % (label, "ro" if ro else "rw")
        disk = virtio_disk("%s.img" % tag)
        cfg, again = (write_test_file("%s%s.cfg" % (tag, which), "# lightpath vm\nname = %s%s\n"
                                      "kernel = virtio.elf\nmemory = 32\ncpus = %d\n"
                                      "disk = %s.img%s\n"
                                      % (tag, which, cpus, tag, ",ro" if ro else ""))
                      for which in ("", "-again"))
        args = "sectors=%d ro=%d" % (VIRTIO_SECTORS, 1 if ro else 0)
        kw = {"smp": str(cpus)} if cpus > 1 else {}
        b = (boot_cls or Boot)(tag, [cfg, again, guest("virtio", args), disk], **kw)
        selftest_result(b, "virtio", vm=0)
        selftest_result(b, "virtio", vm=1)
        # the device's own count of what the guest did (twice: one line per VM)
        stats = (r"^  disk: 10 reads \(7 KiB\), %d writes \(0 KiB\), 0 flushes; interrupts: 3 MSI-X "
                 r"messages, 1 dropped, 7 INTx$" % (0 if ro else 1),
                 r"^  disk refused: 2 outside the image, 1 malformed, %d writes to a read-only "
                 r"disk, 0 unsupported, 1 broken rings; 3 resets, 0 undefined accesses$"
                 % (1 if ro else 0))
        for want in stats:
            check(len([l for l in b.lines if re.match(want, l)]) == 2,
                  "two statistics lines (one per VM) matching %r" % want)
        b.expect_powered_off(0)
        return b
    return run


NET_MACS = {"ping": "52:54:00:00:00:01", "echo": "52:54:00:00:00:02", "other": "52:54:00:00:00:03"}
# about 25 ms of TSC: longer than ping's answer takes under TCG (of the ~11
# gaps of a run, 7 to 10 saw the frame come inside them)
ECHO_GAP = 50000000


def t_virtionet(frames=20):
    """`net =` gives a VM a virtio-net device on a link
    between VMs side by side (QEMU -smp 4, one CPU each).
    guests/selftest/virtionet.c as three VMs: ping and echo on link0 (hello,
    `frames` frames of 60..1514 bytes echoed with their bytes inverted, a
    broadcast, a frame to an address nobody on link0 has, hostile transmit
    chains), and other on link1 sending 200 broadcasts, which must reach
    nobody; nothing of link0 may reach it. lightpath's statistics lines say
    the same from the device's side. The echo VM spins ECHO_GAP TSC ticks
    between every second look at its empty ring and its HLT, so that frames
    come both there and while it is halted (the guest's `gap=`: echo once looked with
    interrupts on, took the interrupt before the HLT and slept on)."""
    def run():
        num = lambda mac: "0x" + mac.replace(":", "")
        mods = []
        for role, link in (("ping", "link0"), ("echo", "link0"), ("other", "link1")):
            peer = NET_MACS["echo" if role == "ping" else "ping"]
            elf = "build/test/virtionet-%s.elf" % role
            shutil.copyfile(os.path.join(ROOT, GUESTS, "virtionet.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("virtionet-%s.cfg" % role, "# lightpath vm\nname = %s\n"
                                  "kernel = virtionet-%s.elf\nmemory = 32\ntimeout = 120\n"
                                  "net = %s,mac=%s\n" % (role, role, link, NET_MACS[role]))
            mods += [cfg, "%s role=%s n=%d me=%s peer=%s other=%s%s" % (
                elf, role, frames, num(NET_MACS[role]), num(peer), num(NET_MACS["other"]),
                " gap=%d" % ECHO_GAP if role == "echo" else "")]
        b = Boot("virtionet", mods, smp="4", timeout=180)
        for vm in range(3):
            selftest_result(b, "virtionet", vm=vm)
        for vm, (role, link) in enumerate((("ping", "link0"), ("echo", "link0"),
                                           ("other", "link1"))):
            b.expect(r"^lightpath: vm%d: network device %s on link %s$" % (vm, NET_MACS[role], link))
        def stats(role):
            want = r"^  net (link\d) %s: (\d+) frames sent \(\d+ KiB\), (\d+) received " \
                   r"\(\d+ KiB\); interrupts: (\d+) MSI-X messages, 0 dropped, 0 INTx$" % NET_MACS[role]
            m = [re.match(want, l) for l in b.lines]
            m = [x for x in m if x]
            check(len(m) == 1, "one 'net ... %s:' statistics line" % NET_MACS[role])
            return [m[0].group(1)] + [int(v) for v in m[0].groups()[1:]]
        ping, echo, other = stats("ping"), stats("echo"), stats("other")
        # ping received exactly: READY, the echoes, the broadcast, the frame to other
        check(ping[2] == frames + 3, "ping received %d frames, not %d" % (ping[2], frames + 3))
        check(echo[1] == frames + 3, "echo sent %d frames, not %d" % (echo[1], frames + 3))
        check(echo[2] >= frames + 1 and echo[2] <= ping[1], "echo received %d frames of ping's %d"
              % (echo[2], ping[1]))
        check(other[1] == 200 and other[2] == 0, "other sent %d and received %d (200, 0)"
              % (other[1], other[2]))
        check(echo[3] >= 1, "no MSI-X message woke the echo VM")
        refused = [l for l in b.lines if l.startswith("  net refused:")]
        check(len(refused) == 3, "three 'net refused:' lines")
        check(len([l for l in refused if re.match(r"  net refused: 4 bad transmit chains, 0 bad "
                   r"receive chains, 0 receive buffers too small, 0 frames lost to a full inbox, "
                   r"0 broken rings; \d+ resets, 0 undefined accesses$", l)]) == 1,
              "the echo VM's four hostile transmit chains are not counted once: %s" % refused)
        b.expect_powered_off(0)
        return b
    return run


def t_virtionet_same_mac():
    """Two VMs side by side on one link with the same MAC address: the one
    that starts second is stopped with one line naming the address (which
    one that is, is a race; each runs guests/selftest/side.c for a second,
    so both are on the link together); the other runs on and ends with 0."""
    def run():
        mods = []
        for k in range(2):
            cfg = write_test_file("net-same-mac-%d.cfg" % k, "# lightpath vm\nkernel = side%d.elf\n"
                                  "memory = 32\nnet = l0,mac=52:54:00:aa:bb:cc\n" % k)
            elf = "build/test/side%d.elf" % k
            shutil.copyfile(os.path.join(ROOT, SIDE), os.path.join(ROOT, elf))
            mods += [cfg, elf + " lines=20 ms=50"]
        b = Boot("net-same-mac", mods, smp="2")
        stopped = b.findall(r"^lightpath: vm([01]): stopped: net = l0: link l0: another VM on it has "
                            r"the MAC address 52:54:00:aa:bb:cc$")
        check(len(stopped) == 1, "%d VMs stopped for the MAC address, wanted 1" % len(stopped))
        other = 1 - int(stopped[0].group(1))
        b.expect(r"^lightpath: vm%d: ended with status 0 \(isa-debug-exit\)$" % other)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        b.expect_rc((0x70 << 1) | 1)
        return b
    return run


def vm_stat(b, vm, regex):
    """The first match of `regex` among VM `vm`'s statistics lines (those
    after its 'exit statistics' line, up to the next lightpath line), or
    None."""
    lines = [l.rstrip() for l in b.lines]
    start = next((i for i, l in enumerate(lines)
                  if l == "lightpath: vm%d: exit statistics" % vm), None)
    if start is None:
        return None
    for l in lines[start + 1:]:
        if l.startswith("lightpath: "):
            break
        m = re.match(regex, l)
        if m:
            return m
    return None


def budget_stops(b, vm, dev):
    """VM `vm`'s device `dev` ('disk' or 'net'): (turns stopped at the
    budget, the longest such turn's descriptors, its KiB), from its budget
    line; (0, 0, 0) without one."""
    m = vm_stat(b, vm, r"  %s: (\d+) doorbell turns stopped at their budget \(2048 descriptors, "
                r"1024 KiB\); the longest of them: (\d+) descriptors, (\d+) KiB$" % dev)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


VQREFILL_SECTORS = 2048


def t_hostile_vqrefill(label, append, limit=15):
    """A VM of two vCPUs with a disk (guests/hostile/vqrefill.c) rings its
    doorbell once while its second vCPU keeps the ring full for ever; beside
    it a VM with its own disk runs guests/selftest/virtio.c (QEMU -smp 3).
    Without a budget that doorbell never ended (the time limit could not
    fire, QEMU's timeout ended the run). Passes when: the healthy VM's
    self-test passes, the attacker is stopped by its time limit, its disk
    served more than a ring of requests (the sibling did refill) and
    stopped at a budget at least once."""
    label = "hostile-" + label   # (its files and log)
    def run():
        # 1 MiB: each request reads all of it, a long copy during which the
        # sibling has time to refill (the sibling must keep up for the old
        # doorbell to never end; a short copy often let the ring run dry)
        disk_a = write_test_file("%s-attacker.img" % label, bytes(VQREFILL_SECTORS * 512))
        disk_h = virtio_disk("%s-healthy.img" % label)
        att = write_test_file("%s-attacker.cfg" % label, "# lightpath vm\nname = vqrefill\n"
                              "kernel = vqrefill.elf\nmemory = 32\ncpus = 2\ntimeout = %d\n"
                              "disk = %s-attacker.img\n" % (limit, label))
        hea = write_test_file("%s-healthy.cfg" % label, "# lightpath vm\nname = healthy\n"
                              "kernel = virtio.elf\nmemory = 32\ntimeout = 120\n"
                              "disk = %s-healthy.img\n" % label)
        b = Boot(label, [att, guest("vqrefill", "sectors=%d" % VQREFILL_SECTORS), hea,
                         guest("virtio", "sectors=%d ro=0" % VIRTIO_SECTORS),
                         disk_a, disk_h], append=append, smp="3", timeout=120)
        b.expect(r"^\[vm0\] vqrefill: ringing the doorbell; the sibling refills the ring for ever$")
        b.expect(r"^lightpath: vm0: stopped: time limit of %d s reached$" % limit,
                 "the attacker stopped by its time limit; %s" % b.why_rc())
        selftest_result(b, "virtio", vm=1)
        b.expect(r"^lightpath: vm1: ended with status 0 \(isa-debug-exit\)$")
        m = vm_stat(b, 0, r"  disk: (\d+) reads \(")
        check(m and int(m.group(1)) > 128, "the attacker's disk served %s reads, wanted more "
              "than one ring (128)" % (m.group(1) if m else "no"))
        stops, descs, kib = budget_stops(b, 0, "disk")
        check(stops >= 1, "the attacker's disk never stopped at its budget")
        # one turn: at most the budget, and the bytes' budget plus the one
        # chain (a 1 MiB read) that crossed it
        check(descs <= 2048 and kib <= 2 * 1024, "the attacker's longest turn: %d descriptors, "
              "%d KiB" % (descs, kib))
        check(budget_stops(b, 1, "disk")[0] == 0, "the healthy VM's disk stopped at a budget")
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        return b
    return run


def t_hostile_rxwalk(label, append, limit=30, frames=20):
    """guests/hostile/rxwalk.c: on link evil, a walker whose receive ring
    is 256 chains of 1279 descriptors (refused after the whole walk, so a
    frame waits and the next chain is walked) and a flooder that keeps a
    frame waiting for it; on link0 beside them the healthy ping and echo
    of guests/selftest/virtionet.c (QEMU -smp 4). Before the budget and the
    per-link locks, each frame walked ~327,000 descriptors under the lock
    every link shared. Passes when: ping gets all its echoes (its self-test
    passes) and ends while the walker still runs (ping's end is logged
    before the walker's time-limit stop), both attackers are stopped by
    their time limit, and the walker's device stopped at its budget."""
    label = "hostile-" + label   # (its files and log)
    def run():
        num = lambda mac: "0x" + mac.replace(":", "")
        macs = dict(NET_MACS, walk="52:54:00:00:00:11", flood="52:54:00:00:00:12")
        mods = []
        for role in ("walk", "flood"):   # (one image per VM: a kernel = names one module)
            elf = "build/test/%s-%s.elf" % (label, role)
            shutil.copyfile(os.path.join(ROOT, GUESTS, "rxwalk.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("%s-%s.cfg" % (label, role), "# lightpath vm\nname = %s\n"
                                  "kernel = %s-%s.elf\nmemory = 32\ntimeout = %d\n"
                                  "net = evil,mac=%s\n" % (role, label, role, limit, macs[role]))
            mods += [cfg, "%s role=%s me=%s" % (elf, role, num(macs[role]))]
        for role in ("ping", "echo"):
            peer = NET_MACS["echo" if role == "ping" else "ping"]
            elf = "build/test/%s-%s.elf" % (label, role)
            shutil.copyfile(os.path.join(ROOT, GUESTS, "virtionet.elf"), os.path.join(ROOT, elf))
            cfg = write_test_file("%s-%s.cfg" % (label, role), "# lightpath vm\nname = %s\n"
                                  "kernel = %s-%s.elf\nmemory = 32\ntimeout = 120\n"
                                  "net = link0,mac=%s\n" % (role, label, role, NET_MACS[role]))
            mods += [cfg, "%s role=%s n=%d me=%s peer=%s other=%s" % (
                elf, role, frames, num(NET_MACS[role]), num(peer), num(NET_MACS["other"]))]
        b = Boot(label, mods, append=append, smp="4", timeout=240)
        b.expect(r"^\[vm0\] rxwalk: walker: 256 chains of 1279 descriptors on the receive ring, "
                 r"for ever$")
        for vm in (2, 3):
            selftest_result(b, "virtionet", vm=vm)
        stop = r"^lightpath: vm%d: stopped: time limit of %d s reached$"
        for vm in (0, 1):
            b.expect(stop % (vm, limit), "vm%d stopped by its time limit; %s" % (vm, b.why_rc()))
        lines = [l.rstrip() for l in b.lines]
        ping_end = next((i for i, l in enumerate(lines)
                         if re.match(r"lightpath: vm2: ended with status 0 \(isa-debug-exit\)$", l)), None)
        walk_stop = next(i for i, l in enumerate(lines) if re.match(stop % (0, limit), l))
        check(ping_end is not None and ping_end < walk_stop,
              "ping did not end (with 0) while the walker ran: %s, %s" % (ping_end, walk_stop))
        stops, descs, _ = budget_stops(b, 0, "net")
        check(stops >= 1, "the walker's device never stopped at its budget")
        check(descs <= 2048, "the walker's longest turn walked %d descriptors" % descs)
        for vm in (2, 3):
            check(budget_stops(b, vm, "net")[0] == 0, "healthy vm%d's device stopped at a budget" % vm)
        b.expect_not(r"^lightpath: panic:.*", "a hypervisor panic")
        return b
    return run
