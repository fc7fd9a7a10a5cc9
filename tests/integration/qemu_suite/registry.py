"""The QEMU suite's tests, in the order they are listed and run:
all_tests() gives [(phase, name, fn)]; phase 2 needs phase 1's baselines
(baselines_needed)."""

from .runner import plugin_tests
from .lines import both_switch_sets, HOSTILE_SWITCHES
from .selftests import (ALL_OFF, combo_name, CPUMSR_GUESTS, HOSTILE_GUESTS, MBINFO_GUESTS,
                        MMIO_GUESTS, MMIO_SWITCHES, SELFTESTS, SWITCH_CONFIGS, SWITCHED_GUESTS,
                        SWITCHES, t_combo, t_selftest, t_switched, t_timer_exact, t_timer_lead,
                        t_unclaimed, t_unclaimed_stop, TIMER_EXACT_GUESTS, UNCLAIMED_GUESTS)
from .isolation import (t_forge, t_hello_status, t_irqstate_leave, t_isolation, t_mmio_bad,
                        t_status_first_nonzero, t_status_high, t_status_stopped_then_healthy,
                        t_virtinsn)
from .config import (BAD_CONFIGS, BAD_MODULE_CONFIGS, BAD_SEGMENTS, make_non_multiboot_elf,
                     make_text_file, t_bad_config, t_bad_image, t_bad_linux_old_protocol,
                     t_bad_linux_small_memory, t_bad_linux_truncated, t_bad_module_config,
                     t_bad_modules_linux, t_bad_option, t_bad_segment, t_bad_timeout_option,
                     t_bad_value, t_config_cycle, t_config_names_config, t_mb_modules,
                     t_no_modules, t_no_svm, t_too_many_modules)
from .virtio import (t_hostile_rxwalk, t_hostile_vqrefill, t_virtio, t_virtionet,
                     t_virtionet_same_mac)
from .timeouts import (t_clock_under_load, t_timeout, t_timeout_cli_hlt, t_timeout_not_early,
                       t_timeout_precedence)
from .console import t_console_key, t_console_switch, t_host_nmi
from .reports import SPEC_ON_EPYC, t_spec, t_stats, t_stats_cost, t_stats_on_measures_nothing
from .tooling import t_bench_parser, t_compare_selfcheck, t_exit_trace, t_fixed_regs, t_iso
from .smp import (CPUS_REFUSED, t_ap_panic, t_bad_cpus_option, t_cpus_refused, t_pcpus_no_blocking,
                  t_pcpus_pinned, t_side_by_side_four, t_side_by_side_triple, t_smp, t_smp_guest,
                  t_smp_guest_native, t_smp_selftest)


def baselines_needed(sel):
    """The baselines the tests `sel` need: a phase-2 switch test needs its
    guest's phase-1 self-test."""
    return set("selftest-" + n.split("-")[1] for _, n, _ in sel
               if n.startswith("switch-") or n == "hostile-irqstate-" + HOSTILE_SWITCHES[0])


def all_tests():
    """[(phase, name, fn)]: phase 2 tests need phase 1's baselines."""
    t = []
    t.append((0, "bench-parser", t_bench_parser))
    t.append((0, "compare-selfcheck", t_compare_selfcheck))
    for g in SELFTESTS:
        t.append((1, "selftest-" + g, t_selftest(g)))
    t.append((1, "hello-status", t_hello_status))
    t.append((1, "isolation", t_isolation))
    t.append((1, "virtinsn-stays-up", t_virtinsn))
    t.append((1, "mmio-bad-isolation", t_mmio_bad))
    for g in UNCLAIMED_GUESTS:
        t.append((1, "selftest-" + g, t_unclaimed(g)))
    for how in ("option", "config"):
        t.append((1, "unclaimed-stop-" + how, t_unclaimed_stop(how)))
    t.append((1, "status-stopped-then-healthy",
              t_status_stopped_then_healthy("status-stopped-then-healthy")))
    label = "status-stopped-then-healthy-" + HOSTILE_SWITCHES[0]
    t.append((1, label, t_status_stopped_then_healthy(label, HOSTILE_SWITCHES[1])))
    t.append((1, "status-first-nonzero", t_status_first_nonzero))
    t.append((1, "status-0x80", t_status_high(0x80)))
    t.append((1, "status-0x85", t_status_high(0x85)))
    t.append((1, "forge", t_forge("forge")))
    t.append((1, "forge-" + HOSTILE_SWITCHES[0], t_forge("forge-" + HOSTILE_SWITCHES[0],
                                                         HOSTILE_SWITCHES[1])))
    cfg, opts = HOSTILE_SWITCHES
    t.append((1, "config-cycle", t_config_cycle("config-cycle")))
    t.append((1, "config-cycle-" + cfg, t_config_cycle("config-cycle-" + cfg, opts)))
    t.append((1, "config-names-config", t_config_names_config))
    t.append((1, "modules-10", t_too_many_modules("modules-10")))
    t.append((1, "modules-10-" + cfg, t_too_many_modules("modules-10-" + cfg, opts)))
    t.append((1, "stats-table", t_stats))
    t.append((1, "stats-cost", t_stats_cost))
    t.append((1, "stats-on-no-cost", t_stats_on_measures_nothing))
    t.append((1, "bad-option", t_bad_option))
    t.append((1, "bad-value", t_bad_value))
    t.append((1, "no-modules", t_no_modules))
    t.append((1, "bad-image-text", t_bad_image("text", make_text_file)))
    t.append((1, "bad-image-elf", t_bad_image("elf", make_non_multiboot_elf)))
    for label, text, line_for in BAD_CONFIGS:
        t.append((1, "bad-config-" + label, t_bad_config(label, text, line_for)))
    for k in MBINFO_GUESTS:
        t.append((1, "multiboot-modules-" + k[len("mbinfo"):].lstrip("-"),
                  t_mb_modules(k, k[len("mbinfo"):].lstrip("-"))))
    for label, segs, reason in BAD_SEGMENTS:
        t.append((1, "bad-segment-" + label, t_bad_segment(label, segs, reason)))
    for label, text, extra, line_for in BAD_MODULE_CONFIGS:
        t.append((1, "bad-config-" + label, t_bad_module_config(label, text, extra, line_for)))
    t.append((1, "bad-config-modules-linux", t_bad_modules_linux))
    t.append((1, "virtio-rw", t_virtio(False)))
    t.append((1, "virtio-ro", t_virtio(True)))
    t.append((1, "virtio-smp2-rw", t_virtio(False, label="virtio-smp2", cpus=2)))
    t.append((1, "virtionet", t_virtionet()))
    t.append((1, "net-same-mac", t_virtionet_same_mac()))
    t += both_switch_sets("hostile-", "vqrefill", t_hostile_vqrefill)
    t += both_switch_sets("hostile-", "rxwalk", t_hostile_rxwalk)
    t.append((1, "bad-linux-truncated", t_bad_linux_truncated))
    t.append((1, "bad-linux-old-protocol", t_bad_linux_old_protocol))
    t.append((1, "bad-linux-small-memory", t_bad_linux_small_memory))
    t.append((1, "no-svm", t_no_svm))
    t.append((1, "bad-timeout-option", t_bad_timeout_option))
    for mode in ("spin", "hlt"):
        for how in ("config", "option"):
            t.append((1, "timeout-%s-%s" % (how, mode), t_timeout("%s-%s" % (how, mode), mode, how)))
        label = "option-%s-%s" % (mode, HOSTILE_SWITCHES[0])
        t.append((1, "timeout-" + label, t_timeout(label, mode, "option", switches=HOSTILE_SWITCHES[1])))
    t.append((1, "timeout-precedence", t_timeout_precedence))
    t.append((1, "timeout-not-early", t_timeout_not_early))
    t.append((1, "clock-under-load", t_clock_under_load))
    t.append((1, "timeout-cli-hlt", t_timeout_cli_hlt))
    t.append((1, "console-key", t_console_key))
    t.append((1, "iso", t_iso))
    t.append((1, "exit-trace", t_exit_trace))
    t.append((1, "fixed-regs", t_fixed_regs))
    t.append((1, "spec-on", t_spec("", SPEC_ON_EPYC)))
    t.append((1, "smp-4", t_smp("4", "4", "lightpath: 4 CPUs found (ACPI MADT), 4 started")))
    t.append((1, "smp-1", t_smp("1", "1", "lightpath: 1 CPU found (ACPI MADT), 1 started")))
    t.append((1, "smp-2-maxcpus-4", t_smp("2-maxcpus-4", "2,maxcpus=4",
                                          "lightpath: 2 CPUs found (ACPI MADT; 2 more listed, not "
                                          "enabled), 2 started")))
    t.append((1, "smp-4-cpus-option", t_smp("4-cpus-option", "4",
                                            "lightpath: 4 CPUs found (ACPI MADT), 2 started (cpus=2)",
                                            append="cpus=2")))
    t.append((1, "smp-4-selftest-hlt", t_smp_selftest("hlt", "4")))
    t.append((1, "bad-cpus-option", t_bad_cpus_option))
    t.append((1, "smp-guest-native", t_smp_guest_native))
    t.append((1, "side-by-side-triple", t_side_by_side_triple("side-by-side-triple", "2")))
    t.append((1, "side-by-side-triple-smp3", t_side_by_side_triple("side-by-side-triple-smp3", "3")))
    t.append((1, "side-by-side-4", t_side_by_side_four()))
    for label, smp, text, line in CPUS_REFUSED:
        t.append((1, "cpus-" + label, t_cpus_refused(label, smp, text, line)))
    t.append((1, "pcpus-pinned", t_pcpus_pinned()))
    t.append((1, "pcpus-no-blocking", t_pcpus_no_blocking()))
    t.append((1, "ap-panic", t_ap_panic()))
    t.append((1, "smp-guest-4-on-4", t_smp_guest("4", "4", "0,1,2,3")))
    t.append((1, "smp-guest-2-on-2", t_smp_guest("2", "2", "0,1")))
    t.append((1, "smp-guest-2-on-3", t_smp_guest("3", "2", "1,2")))
    t.append((1, "console-switch", t_console_switch))
    t.append((1, "host-nmi-smp1", t_host_nmi("1")))
    t.append((1, "host-nmi-smp2", t_host_nmi("2")))
    t.append((1, "spec-off", t_spec("spec=off",
                                    "lightpath: spec=off: no speculation hygiene on the exit path")))
    for g in SWITCHED_GUESTS:
        for cfg, opts in SWITCH_CONFIGS:
            t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    for g in TIMER_EXACT_GUESTS:
        t.append((2, "switch-%s-timer-exact" % g, t_timer_exact(g)))
    for g in ("hpet32", "hpet64", "intr32", "intr64"):
        t.append((1, "timer-lead-" + g, t_timer_lead(g)))
    for g in CPUMSR_GUESTS:   # pmu=always and the heavy paths around the MSR handlers
        t.append((2, "switch-%s-all-off" % g, t_switched(g, "all-off", ALL_OFF)))
    for g in MMIO_GUESTS:
        for cfg, opts in SWITCH_CONFIGS:
            if cfg in MMIO_SWITCHES:
                t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    cfg, opts = HOSTILE_SWITCHES
    t.append((1, "hostile-irqstate", t_irqstate_leave("hostile-irqstate")))
    t.append((2, "hostile-irqstate-" + cfg, t_irqstate_leave("hostile-irqstate-" + cfg, opts)))
    for g in HOSTILE_GUESTS:
        cfg, opts = HOSTILE_SWITCHES
        t.append((2, "switch-%s-%s" % (g, cfg), t_switched(g, cfg, opts)))
    for bits in range(1 << len(SWITCHES)):
        t.append((2, combo_name(bits), t_combo(bits)))
    t.extend(plugin_tests("qemu_tests"))
    return t
