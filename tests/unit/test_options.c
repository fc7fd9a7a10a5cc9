/* core/options.c: every option, every value, and every way to get it wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/options.h"
#include "lightpath/abi.h"

#define ALL_BITS (LP_CONFIG_LIGHT | LP_CONFIG_VMLOAD_LAZY | LP_CONFIG_DR_LAZY | \
		  LP_CONFIG_PMU_LAZY | LP_CONFIG_MSR_LAZY | LP_CONFIG_IO_FAST | LP_CONFIG_SPEC)

static char err[256];

/* Field by field: the struct has padding that options_defaults leaves alone. */
static void assert_options_equal(const struct lp_options *a, const struct lp_options *b)
{
	assert_int_equal(a->light, b->light);
	assert_int_equal(a->vmload_lazy, b->vmload_lazy);
	assert_int_equal(a->dr_lazy, b->dr_lazy);
	assert_int_equal(a->pmu_lazy, b->pmu_lazy);
	assert_int_equal(a->msr_lazy, b->msr_lazy);
	assert_int_equal(a->io_fast, b->io_fast);
	assert_int_equal(a->spec, b->spec);
	assert_int_equal(a->unclaimed_pc, b->unclaimed_pc);
	assert_int_equal(a->clock_poll, b->clock_poll);
	assert_int_equal(a->timer_lead, b->timer_lead);
	assert_int_equal(a->mem_mb, b->mem_mb);
	assert_int_equal(a->stats, b->stats);
	assert_int_equal(a->stats_cost, b->stats_cost);
	assert_int_equal(a->stats_sites, b->stats_sites);
	assert_int_equal(a->vm_timeout_s, b->vm_timeout_s);
	assert_int_equal(a->cpus, b->cpus);
	assert_int_equal(a->vmx_bochs_quirk, b->vmx_bochs_quirk);
}

static int parse(struct lp_options *o, const char *cmdline)
{
	memset(o, 0xa5, sizeof(*o));
	options_defaults(o);
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	return options_parse(o, cmdline, err, sizeof(err));
}

/* stats=: the table alone, nothing, or the table with what is measured. */
static void test_stats_values(void **state)
{
	(void)state;
	static const struct { const char *cmd; bool table, cost, sites; } cases[] = {
		{ "stats=on", true, false, false },  { "stats=off", false, false, false },
		{ "stats=cost", true, true, false }, { "stats=sites", true, false, true },
		{ "stats=all", true, true, true },   { "stats=all stats=on", true, false, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct lp_options o;
		assert_int_equal(parse(&o, cases[i].cmd), 0);
		assert_int_equal(o.stats, cases[i].table);
		assert_int_equal(o.stats_cost, cases[i].cost);
		assert_int_equal(o.stats_sites, cases[i].sites);
	}
}

static void test_defaults(void **state)
{
	(void)state;
	struct lp_options o;
	memset(&o, 0, sizeof(o));
	options_defaults(&o);
	assert_true(o.light);
	assert_true(o.vmload_lazy);
	assert_true(o.dr_lazy);
	assert_true(o.pmu_lazy);
	assert_true(o.msr_lazy);
	assert_true(o.io_fast);
	assert_int_equal(o.mem_mb, 64);
	assert_true(o.stats);
	assert_false(o.stats_cost);                    /* measuring is asked for */
	assert_false(o.stats_sites);
	assert_int_equal(o.vm_timeout_s, 0);           /* no time limit */
	assert_int_equal(options_config_bits(&o), ALL_BITS);
}

static void test_empty_and_blank(void **state)
{
	(void)state;
	struct lp_options o, d;
	options_defaults(&d);
	assert_int_equal(parse(&o, ""), 0);
	assert_options_equal(&o, &d);
	assert_string_equal(err, "");
	assert_int_equal(parse(&o, "   \t "), 0);
	assert_options_equal(&o, &d);
	assert_int_equal(options_parse(&o, NULL, err, sizeof(err)), 0);
}

/* Each switch: its off word clears exactly its field and config bit, its on
 * word sets it again. */
struct switch_case {
	const char *off;
	const char *on;
	size_t field;
	uint32_t bit; /* 0: not a config bit (stats) */
};

static const struct switch_case switches[] = {
	{ "light=off", "light=on", offsetof(struct lp_options, light), LP_CONFIG_LIGHT },
	{ "svm.vmload=always", "svm.vmload=lazy", offsetof(struct lp_options, vmload_lazy), LP_CONFIG_VMLOAD_LAZY },
	{ "vmx.tpr=exit", "vmx.tpr=shadow", offsetof(struct lp_options, vmx_tpr_shadow), 0 },
	{ "vmx.apicv=off", "vmx.apicv=on", offsetof(struct lp_options, vmx_apicv), 0 },
	{ "dr=always", "dr=lazy", offsetof(struct lp_options, dr_lazy), LP_CONFIG_DR_LAZY },
	{ "pmu=always", "pmu=lazy", offsetof(struct lp_options, pmu_lazy), LP_CONFIG_PMU_LAZY },
	{ "msr=always", "msr=lazy", offsetof(struct lp_options, msr_lazy), LP_CONFIG_MSR_LAZY },
	{ "io=emulate", "io=fast", offsetof(struct lp_options, io_fast), LP_CONFIG_IO_FAST },
	{ "spec=off", "spec=on", offsetof(struct lp_options, spec), LP_CONFIG_SPEC },
	{ "unclaimed=stop", "unclaimed=pc", offsetof(struct lp_options, unclaimed_pc), 0 },
	{ "clock=host", "clock=poll", offsetof(struct lp_options, clock_poll), 0 },
	{ "timer=exact", "timer=lead", offsetof(struct lp_options, timer_lead), 0 },
	{ "stats=off", "stats=on", offsetof(struct lp_options, stats), 0 },
};

static void test_each_switch(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(switches) / sizeof(switches[0]); i++) {
		const struct switch_case *c = &switches[i];
		struct lp_options o, want;

		options_defaults(&want);
		*(bool *)((char *)&want + c->field) = false;
		assert_int_equal(parse(&o, c->off), 0);
		assert_options_equal(&o, &want);
		assert_int_equal(options_config_bits(&o), ALL_BITS & ~c->bit);

		/* Starting from "off", the on word restores the default. */
		char both[64];
		snprintf(both, sizeof(both), "%s %s", c->off, c->on);
		options_defaults(&want);
		assert_int_equal(parse(&o, both), 0);
		assert_options_equal(&o, &want);
		assert_int_equal(options_config_bits(&o), ALL_BITS);
	}
}

static void test_all_off(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "light=off svm.vmload=always dr=always pmu=always "
				    "msr=always io=emulate spec=off mem=128 stats=off"), 0);
	assert_false(o.light);
	assert_false(o.vmload_lazy);
	assert_false(o.dr_lazy);
	assert_false(o.pmu_lazy);
	assert_false(o.msr_lazy);
	assert_false(o.io_fast);
	assert_false(o.spec);
	assert_int_equal(o.mem_mb, 128);
	assert_false(o.stats);
	assert_int_equal(options_config_bits(&o), 0);
}

static void test_config_bits_values(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "dr=always io=emulate"), 0);
	assert_int_equal(options_config_bits(&o), 0x5bu); /* bits 0,1,3,4,6 */
	assert_int_equal(parse(&o, "light=off"), 0);
	assert_int_equal(options_config_bits(&o), 0x7eu);
	assert_int_equal(parse(&o, "spec=off"), 0);
	assert_int_equal(options_config_bits(&o), 0x3fu);
}

static void test_mem(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "mem=4"), 0);
	assert_int_equal(o.mem_mb, 4);
	assert_int_equal(parse(&o, "mem=1024"), 0);
	assert_int_equal(o.mem_mb, 1024);
	assert_int_equal(parse(&o, "mem=0256"), 0);
	assert_int_equal(o.mem_mb, 256);

	const char *bad[] = { "mem=3", "mem=1025", "mem=0", "mem=", "mem=-4", "mem=5", "mem=127",
			      "mem=64M", "mem=x", "mem=99999999999", "mem=4 5" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(&o, bad[i]);
		if (strcmp(bad[i], "mem=4 5") == 0) {
			/* "5" is a second word without '=' (not the leading path) */
			assert_true(rc < 0);
			continue;
		}
		assert_true(rc < 0);
		assert_int_equal(o.mem_mb, 64);
		assert_non_null(strstr(err, "bad value '"));
		assert_non_null(strstr(err, "for mem= (use an even number 4..1024, in MiB)"));
	}
	assert_int_equal(parse(&o, "mem=3"), -1);
	assert_string_equal(err, "bad value '3' for mem= (use an even number 4..1024, in MiB)");
}

static void test_vm_timeout(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "vm.timeout=2"), 0);
	assert_int_equal(o.vm_timeout_s, 2);
	assert_int_equal(options_config_bits(&o), ALL_BITS);  /* not a switch */
	assert_int_equal(parse(&o, "vm.timeout=86400"), 0);
	assert_int_equal(o.vm_timeout_s, 86400);
	assert_int_equal(parse(&o, "vm.timeout=5 vm.timeout=0"), 0);
	assert_int_equal(o.vm_timeout_s, 0);                   /* 0: no limit */
	assert_int_equal(parse(&o, "vm.timeout=007"), 0);
	assert_int_equal(o.vm_timeout_s, 7);
	/* tsc.check= takes the same whole seconds; default 0 (no check) */
	assert_int_equal(o.tsc_check_s, 0);
	assert_int_equal(parse(&o, "tsc.check=5"), 0);
	assert_int_equal(o.tsc_check_s, 5);
	assert_int_equal(o.vm_timeout_s, 0);
	assert_true(parse(&o, "tsc.check=1.5") < 0);

	const char *bad[] = { "vm.timeout=", "vm.timeout=-1", "vm.timeout=1.5", "vm.timeout=2s",
			      "vm.timeout=86401", "vm.timeout=1000000", "vm.timeout=99999999999",
			      "vm.timeout=x", "vm.timeout= 1", "vm.timeout=0x10" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(parse(&o, bad[i]) < 0);
		assert_int_equal(o.vm_timeout_s, 0);
		if (strcmp(bad[i], "vm.timeout= 1") == 0)
			continue;      /* "1" is then a second word without '=' */
		assert_non_null(strstr(err, "bad value '"));
		assert_non_null(strstr(err, "' for vm.timeout= (use whole seconds 0..86400; 0 = no limit)"));
	}
	assert_true(parse(&o, "vm.timeout=1.5") < 0);
	assert_string_equal(err, "bad value '1.5' for vm.timeout= (use whole seconds 0..86400; "
			    "0 = no limit)");
	/* the key is exact */
	assert_true(parse(&o, "timeout=1") < 0);
	assert_non_null(strstr(err, "unknown boot option 'timeout=1'"));
	assert_true(parse(&o, "vm.Timeout=1") < 0);
}

static void test_bad_values(void **state)
{
	(void)state;
	struct lp_options o;
	assert_true(parse(&o, "light=maybe") < 0);
	assert_string_equal(err, "bad value 'maybe' for light= (use on or off)");
	assert_true(parse(&o, "svm.vmload=on") < 0);
	assert_string_equal(err, "bad value 'on' for svm.vmload= (use lazy or always)");
	assert_true(parse(&o, "dr=") < 0);
	assert_string_equal(err, "bad value '' for dr= (use lazy or always)");
	assert_true(parse(&o, "pmu=LAZY") < 0);
	assert_string_equal(err, "bad value 'LAZY' for pmu= (use lazy or always)");
	assert_true(parse(&o, "msr=lazyy") < 0);
	assert_string_equal(err, "bad value 'lazyy' for msr= (use lazy or always)");
	assert_true(parse(&o, "io=slow") < 0);
	assert_string_equal(err, "bad value 'slow' for io= (use fast or emulate)");
	assert_true(parse(&o, "stats=1") < 0);
	assert_string_equal(err, "bad value '1' for stats= (use on, off, cost, sites or all)");
	assert_true(parse(&o, "stats=cost,sites") < 0);
	assert_true(parse(&o, "light=on=off") < 0);
	assert_string_equal(err, "bad value 'on=off' for light= (use on or off)");
}

/* vmx.bochs_quirk=: three words, auto the default; anything else is one
 * error line naming them. */
static void test_bochs_quirk(void **state)
{
	(void)state;
	struct lp_options o, want;
	options_defaults(&want);
	assert_int_equal(want.vmx_bochs_quirk, OPT_AUTO);
	assert_int_equal(parse(&o, "vmx.bochs_quirk=on"), 0);
	want.vmx_bochs_quirk = OPT_ON;
	assert_options_equal(&o, &want);
	assert_int_equal(parse(&o, "vmx.bochs_quirk=off"), 0);
	want.vmx_bochs_quirk = OPT_OFF;
	assert_options_equal(&o, &want);
	assert_int_equal(parse(&o, "vmx.bochs_quirk=off vmx.bochs_quirk=auto"), 0);
	want.vmx_bochs_quirk = OPT_AUTO;
	assert_options_equal(&o, &want);
	assert_int_equal(options_config_bits(&o), ALL_BITS);
	static const char *const bad[] = { "vmx.bochs_quirk=yes", "vmx.bochs_quirk=",
					   "vmx.bochs_quirk=AUTO", "vmx.bochs_quirk=on,off" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(parse(&o, bad[i]) < 0);
		assert_non_null(strstr(err, "for vmx.bochs_quirk= (use auto, on or off)"));
	}
	assert_true(parse(&o, "vmx.bochs_quirk=1") < 0);
	assert_string_equal(err, "bad value '1' for vmx.bochs_quirk= (use auto, on or off)");
}

static void test_cpus(void **state)
{
	(void)state;
	struct lp_options o;
	options_defaults(&o);
	assert_int_equal(o.cpus, 0);                            /* 0: every CPU */
	assert_int_equal(parse(&o, "cpus=1"), 0);
	assert_int_equal(o.cpus, 1);
	assert_int_equal(parse(&o, "cpus=64"), 0);
	assert_int_equal(o.cpus, 64);
	static const char *const bad[] = { "cpus=0", "cpus=65", "cpus=", "cpus=-1", "cpus=2x",
					   "cpus=0x4", "cpus=1000", "cpus= 4" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(parse(&o, bad[i]) < 0);
		assert_non_null(strstr(err, "for cpus= (use 1..64: the most host CPUs to start, "
					    "the boot CPU included)"));
	}
	assert_true(parse(&o, "cpus=0") < 0);
	assert_string_equal(err, "bad value '0' for cpus= (use 1..64: the most host CPUs to "
			    "start, the boot CPU included)");
}

static void test_unknown_key(void **state)
{
	(void)state;
	struct lp_options o;
	assert_true(parse(&o, "foo=1") < 0);
	assert_string_equal(err, "unknown boot option 'foo=1' (accepted: light= "
			    "svm.vmload= vmx.tpr= vmx.apicv= vmx.bochs_quirk= dr= pmu= msr= io= spec= unclaimed= clock= timer= mem= stats= vm.timeout= "
			    "tsc.check= cpus= test.panic_ap=)");
	/* Prefixes and case variants of real keys are not keys. */
	assert_true(parse(&o, "lightx=on") < 0);
	assert_non_null(strstr(err, "unknown boot option 'lightx=on'"));
	assert_true(parse(&o, "Light=on") < 0);
	assert_true(parse(&o, "vmload=lazy") < 0);
	assert_true(parse(&o, "=on") < 0);
	assert_non_null(strstr(err, "unknown boot option '=on'"));
}

static void test_missing_equals(void **state)
{
	(void)state;
	struct lp_options o;
	assert_true(parse(&o, "light=on stats") < 0);
	assert_string_equal(err, "missing '=value' in boot option 'stats' (accepted: "
			    "light= svm.vmload= vmx.tpr= vmx.apicv= vmx.bochs_quirk= dr= pmu= msr= io= spec= unclaimed= clock= timer= mem= stats= vm.timeout= "
			    "tsc.check= cpus= test.panic_ap=)");
	/* The leading path is skipped only once. */
	assert_true(parse(&o, "/boot/lightpath.elf light") < 0);
	assert_non_null(strstr(err, "'light'"));
}

static void test_path_skipped(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "/boot/lightpath.elf"), 0);
	assert_int_equal(options_config_bits(&o), ALL_BITS);
	assert_int_equal(parse(&o, "build/lightpath.elf light=off mem=32"), 0);
	assert_false(o.light);
	assert_int_equal(o.mem_mb, 32);
	assert_int_equal(parse(&o, "  lightpath   io=emulate\t stats=off  "), 0);
	assert_false(o.io_fast);
	assert_false(o.stats);
	assert_true(o.light);
}

static void test_last_wins(void **state)
{
	(void)state;
	struct lp_options o;
	assert_int_equal(parse(&o, "light=off light=on light=off"), 0);
	assert_false(o.light);
	assert_int_equal(parse(&o, "mem=8 mem=16"), 0);
	assert_int_equal(o.mem_mb, 16);
}

static void test_error_stops_and_keeps_earlier(void **state)
{
	(void)state;
	struct lp_options o;
	/* Words before the bad one were applied, later ones were not. */
	assert_true(parse(&o, "dr=always bogus=1 io=emulate") < 0);
	assert_false(o.dr_lazy);
	assert_true(o.io_fast);
	assert_non_null(strstr(err, "'bogus=1'"));
}

static void test_error_buffer_limits(void **state)
{
	(void)state;
	struct lp_options o;
	char small[16];
	options_defaults(&o);
	assert_true(options_parse(&o, "foo=1", small, sizeof(small)) < 0);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "unknown boot op", 15);
	/* No buffer at all is allowed. */
	assert_true(options_parse(&o, "foo=1", NULL, 0) < 0);
	/* A very long word is quoted cut short, never overflowing. */
	char longword[300];
	memset(longword, 'a', sizeof(longword));
	memcpy(longword + 250, "=1", 3);
	assert_true(parse(&o, longword) < 0);
	assert_non_null(strstr(err, "unknown boot option 'aaaa"));
	assert_non_null(strstr(err, "...' (accepted:"));
	assert_true(strlen(err) < sizeof(err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_stats_values),
		cmocka_unit_test(test_empty_and_blank),
		cmocka_unit_test(test_each_switch),
		cmocka_unit_test(test_all_off),
		cmocka_unit_test(test_config_bits_values),
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_vm_timeout),
		cmocka_unit_test(test_cpus),
		cmocka_unit_test(test_bochs_quirk),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_missing_equals),
		cmocka_unit_test(test_path_skipped),
		cmocka_unit_test(test_last_wins),
		cmocka_unit_test(test_error_stops_and_keeps_earlier),
		cmocka_unit_test(test_error_buffer_limits),
	};
	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
