"""What lightpath reports about itself: the exit statistics table, its
cost and sites sections (stats=all), the speculation hygiene line (spec=)."""

import os
import re
import subprocess

import lpguest  # tools/linux/lpguest.py: its exit-statistics parser

from .boot import Boot, check, guest, GUESTS, ROOT
from .lines import HELLO, selftest_result


STATS_ROW = re.compile(r"^\s+(\S.*?)\s+(\d+)\s+(\d+(?:\.\d+)?)%\s+(\d+)\s+(\d+)(?:\s+light\s+\d+(?:\.\d+)?%)?\s*$")


def t_stats():
    b = Boot("stats-table", [guest("stats")])
    selftest_result(b, "stats")
    b.expect_rc(1)
    head = [i for i, l in enumerate(b.lines) if re.match(r"^lightpath: vm0: exit statistics\s*$", l)]
    check(len(head) == 1, "expected one 'lightpath: vm0: exit statistics' line, got %d" % len(head))
    rows = {}
    for line in b.lines[head[0] + 1:]:
        if re.match(r"^\s+reason\s+exits\s+share\s+light\s+heavy\s*$", line):
            continue
        m = STATS_ROW.match(line)
        if not m:
            break
        reason, exits, light, heavy = m.group(1), int(m.group(2)), int(m.group(4)), int(m.group(5))
        check(light + heavy == exits, "row '%s': light %d + heavy %d != exits %d"
              % (reason, light, heavy, exits))
        rows[reason] = exits
    check("hypercall" in rows, "no 'hypercall' row in the exit statistics table")
    check("total" in rows, "no 'total' row in the exit statistics table")
    check(rows["hypercall"] >= 50, "hypercall row has %d exits, expected >= 50" % rows["hypercall"])
    others = sum(v for k, v in rows.items() if k != "total")
    check(others == rows["total"], "rows add up to %d, total row says %d" % (others, rows["total"]))
    return b


COST_HEAD = re.compile(r"^  cost: TSC ticks per exit ")
COST_ROW = re.compile(r"^  (\S+) +(\d+) +(\d+) +(\d+) +(\d+)   ((?:\d+:\d+ ?)+)$")
SITES_HEAD = re.compile(r"^  sites: the guest RIPs that exited most")
SITES_ROW = re.compile(r"^  (\S+) +((?:  0x[0-9a-f]+: \d+(?: \(\+\d+\))?)+)$")


def elf_functions(path):
    """[(start, end, name)] of the ELF's function symbols (nm -S)."""
    out = subprocess.run(["nm", "-S", "--defined-only", os.path.join(ROOT, path)],
                         capture_output=True, text=True, check=True).stdout
    funcs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            funcs.append((int(f[0], 16), int(f[0], 16) + int(f[1], 16), f[3]))
    return funcs


def check_stats_cost(b, elf, hypercalls):
    """stats=all (docs/EXITS.md): vm0's cost table has a row for every
    reason of its exit table with the same count (every exit measured, light
    and heavy), min <= mean <= max, a histogram that adds up to the count
    with buckets between log2(min) and log2(max); its sites lie in the
    guest's functions (`elf`), no reason lists more exits than it made, and
    the top hypercall site made at least `hypercalls` exits (the guest's
    loop at one RIP)."""
    rows, _ = lpguest.exit_stats(b.text, 0)
    check(rows, "no exit statistics for vm0")
    lines = b.lines[next(i for i, l in enumerate(b.lines)
                         if re.match(r"^lightpath: vm0: exit statistics", l)):]
    ch = [i for i, l in enumerate(lines) if COST_HEAD.match(l)]
    sh = [i for i, l in enumerate(lines) if SITES_HEAD.match(l)]
    check(len(ch) >= 1 and len(sh) >= 1, "no 'cost:' or 'sites:' section after vm0's table")
    cost = {}
    for l in lines[ch[0] + 2:]:
        m = COST_ROW.match(l)
        if not m:
            break
        n, lo, mean, hi = (int(m.group(k)) for k in (2, 3, 4, 5))
        hist = {int(k): int(v) for k, v in (x.split(":") for x in m.group(6).split())}
        check(0 < lo <= mean <= hi, "cost row %r: not 0 < min <= mean <= max" % l)
        check(sum(hist.values()) == n, "cost row %r: the histogram adds up to %d, not %d"
              % (l, sum(hist.values()), n))
        check(min(hist) == lo.bit_length() - 1 and max(hist) == min(hi.bit_length() - 1, 23),
              "cost row %r: buckets %d..%d, min/max say %d..%d"
              % (l, min(hist), max(hist), lo.bit_length() - 1, hi.bit_length() - 1))
        cost[m.group(1)] = n
    tot = [re.match(r"^  cost total: (\d+) ticks in exit handling of (\d+) since the VM started "
                    r"\((\d+)\.(\d)%\)$", l) for l in lines]
    tot = [m for m in tot if m]
    check(len(tot) == 1, "no single 'cost total:' line")
    spent, ran = int(tot[0].group(1)), int(tot[0].group(2))
    check(0 < spent < ran and int(tot[0].group(3)) * 10 + int(tot[0].group(4)) == spent * 1000 // ran,
          "cost total: %d of %d ticks, share printed %s.%s%%" % (spent, ran, tot[0].group(3), tot[0].group(4)))
    reasons = {k: v[0] for k, v in rows.items() if k != "total"}
    check(cost == reasons, "cost rows %r differ from the exit table %r" % (cost, reasons))
    funcs = elf_functions(elf)
    sites = {}
    for l in lines[sh[0] + 1:]:
        m = SITES_ROW.match(l)
        if not m:
            break
        got = [(int(r, 16), int(n), int(e or 0)) for r, n, e in
               re.findall(r"0x([0-9a-f]+): (\d+)(?: \(\+(\d+)\))?", m.group(2))]
        sites[m.group(1)] = got
        check(m.group(1) in reasons, "sites for %r, which has no exits" % m.group(1))
        check(sum(n - e for _, n, e in got) <= reasons[m.group(1)],
              "sites of %r add up to more than its %d exits: %r" % (m.group(1), reasons[m.group(1)], got))
        for rip, _, _ in got:
            check(any(s <= rip < e for s, e, _ in funcs),
                  "site 0x%x of %r is in no function of %s" % (rip, m.group(1), elf))
    check(set(sites) == set(reasons), "sites for %r, exits for %r" % (sorted(sites), sorted(reasons)))
    top = sites["hypercall"][0]
    check(top[1] >= hypercalls, "the top hypercall site made %d exits, expected >= %d"
          % (top[1], hypercalls))


def t_stats_cost():
    """stats=all on the stats self-test: its 50 null and 10 heavy
    hypercalls come from one RIP (lp_hypercall's VMMCALL)."""
    b = Boot("stats-cost", [guest("stats")], append="stats=all")
    selftest_result(b, "stats")
    b.expect_rc(1)
    check_stats_cost(b, GUESTS + "/stats.elf", 60)
    return b


def t_stats_on_measures_nothing():
    """stats=on (the default) prints the exit table alone."""
    b = Boot("stats-on-no-cost", [guest("stats")], append="stats=on")
    selftest_result(b, "stats")
    b.expect_rc(1)
    check(not any(COST_HEAD.match(l) or SITES_HEAD.match(l) for l in b.lines),
          "stats=on printed a cost or sites section")
    return b


SPEC_ON_EPYC = ("lightpath: spec=on: return stack overwritten after each exit: 32 entries (no "
                "Automatic IBRS); IBPB between VMs: no (the CPU has no IBPB); guest SPEC_CTRL "
                "switched: no (the CPU has no SPEC_CTRL)")


def t_spec(opts, line):
    """spec= says what it does on this CPU model (EPYC under TCG has no IBPB,
    no SPEC_CTRL and no Automatic IBRS: the return-stack overwrite only), and
    the VM runs either way."""
    def run():
        b = Boot("spec-" + (opts or "default").replace("=", "-"), [HELLO], append=opts)
        b.expect(r"^%s$" % re.escape(line), "'%s'" % line)
        b.expect_rc(1)
        return b
    return run
