/* lightpath boot options (the multiboot command line). */
#ifndef CORE_OPTIONS_H
#define CORE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"

struct lp_options {
	bool light;        /* light=on|off: frequent exits handled in the light loop */
	bool vmload_lazy;  /* svm.vmload=lazy|always: VMLOAD/VMSAVE on heavy exits only */
	bool vmx_tpr_shadow; /* vmx.tpr=shadow|exit: CR8 through VT-x's TPR shadow where the
				CPU has one, or CR8 exiting (the fallback) */
	bool vmx_apicv;    /* vmx.apicv=on|off: VT-x's APIC virtualization (APIC-access
			      page, x2APIC and register virtualization, virtual-interrupt
			      delivery) where the CPU has it, or injection (the fallback) */
	unsigned vmx_bochs_quirk; /* vmx.bochs_quirk=auto|on|off (enum opt_auto): VT-x's
				     workaround for Bochs 2.7's virtual-interrupt defect
				     (vmm/vmx/bochs.c), where Bochs is detected, always, never */
	bool dr_lazy;      /* dr=lazy|always: DR0-3 switched once the guest uses them */
	bool pmu_lazy;     /* pmu=lazy|always: PMU MSRs switched only for a vPMU */
	bool msr_lazy;     /* msr=lazy|always: syscall MSRs switched on heavy exits only */
	bool io_fast;      /* io=fast|emulate: IN/OUT decoded from the exit information */
	bool spec;         /* spec=on|off: speculative-execution hygiene on the exit path */
	bool clock_poll;   /* clock=poll|host: guest time while polling (vmm/guest_clock.h) */
	bool timer_lead;   /* timer=lead|exact: a VM's timers run ahead of their deadline and
			      the vCPU waits for it before entering (vmm/timer_lead.h) */
	bool unclaimed_pc; /* unclaimed=pc|stop: guest-physical addresses nobody claims */
	unsigned mem_mb;   /* mem=N: guest RAM per VM in MiB (4..1024), default 64 */
	bool stats;        /* stats=on|off|cost|sites|all: print the exit table when a VM ends */
	bool stats_cost;   /* stats=cost|all: per exit reason, the TSC ticks each exit took */
	bool stats_sites;  /* stats=sites|all: per exit reason, the guest RIPs exiting most */
	unsigned vm_timeout_s; /* vm.timeout=SECONDS: each VM's time limit, 0 = none (default) */
	unsigned tsc_check_s; /* tsc.check=SECONDS: after calibrating, time that long by the TSC
				 and by the PM timer and print both (core/tsc.h); 0 = no */
	unsigned cpus;     /* cpus=N: start at most N host CPUs, the boot CPU included; 0 = all */
	unsigned test_panic_ap; /* test.panic_ap=N, for tests only: CPU N (an AP) panics when it
				   starts running a vCPU (core/smp.c: how an AP's panic is
				   handled); 0 = off (default) */
};

/* A three-way option's values. */
enum opt_auto { OPT_AUTO = 0, OPT_ON, OPT_OFF };
/* The word of an enum opt_auto value: "auto", "on" or "off". */
static inline const char *opt_auto_word(unsigned v)
{
	return v == OPT_ON ? "on" : v == OPT_OFF ? "off" : "auto";
}

/* cpus= accepts 1..this many (= SMP_MAX_CPUS, core/smp.h). */
#define OPTIONS_CPUS_MAX LP_MAX_CPUS

/* vm.timeout= and a VM description's `timeout =` accept 0..this many seconds. */
#define OPTIONS_VM_TIMEOUT_MAX_S 86400u

/* Fills *opt with the defaults (everything optimised, mem=64, stats=on,
 * no time limit). */
void options_defaults(struct lp_options *opt);

/* Parses a space-separated command line of key=value words into *opt
 * (which should hold the defaults first). A leading word without '=' is
 * the image path the boot loader puts first and is skipped. On error returns
 * a negative value and writes one line (no newline) naming the bad word and
 * what is accepted into err. */
int options_parse(struct lp_options *opt, const char *cmdline, char *err,
		  size_t errlen);

/* The LP_CONFIG_* bits (include/lightpath/abi.h) for these options. */
uint32_t options_config_bits(const struct lp_options *opt);

#endif
