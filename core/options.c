/* Boot option parsing: one table row per option, so the parser, the error
 * messages and the list of accepted keys cannot drift apart. */
#include "core/options.h"

#include "lightpath/abi.h"
#include "lib/printf.h"
#include "lib/string.h"

#define MEM_MB_MIN 4u
#define MEM_MB_MAX 1024u
#define MEM_MB_DEFAULT 64u

/* Longest word quoted back in an error line; longer words are cut with "...". */
#define QUOTE_MAX 48

enum option_kind {
	OPT_SWITCH,  /* a bool: `on_word` sets it, `off_word` clears it */
	OPT_MIB,     /* an unsigned MiB count in MEM_MB_MIN..MEM_MB_MAX */
	OPT_SECONDS, /* whole seconds, 0..OPTIONS_VM_TIMEOUT_MAX_S */
	OPT_CPUS,    /* a CPU count, 1..OPTIONS_CPUS_MAX */
	OPT_CPU,     /* a CPU number, 0..OPTIONS_CPUS_MAX - 1 */
	OPT_STATS,   /* stats=: the table, and what is measured beside it */
	OPT_AUTO3,   /* enum opt_auto: auto, `on_word` or `off_word` */
};

struct option_desc {
	const char *key;      /* without the '=' */
	enum option_kind kind;
	size_t field;         /* offsetof() into struct lp_options */
	const char *on_word;
	const char *off_word;
};

#define SWITCH(k, f, on, off) { k, OPT_SWITCH, offsetof(struct lp_options, f), on, off }

static const struct option_desc option_table[] = {
	SWITCH("light", light, "on", "off"),
	SWITCH("svm.vmload", vmload_lazy, "lazy", "always"),
	SWITCH("vmx.tpr", vmx_tpr_shadow, "shadow", "exit"),
	SWITCH("vmx.apicv", vmx_apicv, "on", "off"),
	{ "vmx.bochs_quirk", OPT_AUTO3, offsetof(struct lp_options, vmx_bochs_quirk), "on", "off" },
	SWITCH("dr", dr_lazy, "lazy", "always"),
	SWITCH("pmu", pmu_lazy, "lazy", "always"),
	SWITCH("msr", msr_lazy, "lazy", "always"),
	SWITCH("io", io_fast, "fast", "emulate"),
	SWITCH("spec", spec, "on", "off"),
	SWITCH("unclaimed", unclaimed_pc, "pc", "stop"),
	SWITCH("clock", clock_poll, "poll", "host"),
	SWITCH("timer", timer_lead, "lead", "exact"),
	{ "mem", OPT_MIB, offsetof(struct lp_options, mem_mb), NULL, NULL },
	{ "stats", OPT_STATS, offsetof(struct lp_options, stats), NULL, NULL },
	{ "vm.timeout", OPT_SECONDS, offsetof(struct lp_options, vm_timeout_s), NULL, NULL },
	{ "tsc.check", OPT_SECONDS, offsetof(struct lp_options, tsc_check_s), NULL, NULL },
	{ "cpus", OPT_CPUS, offsetof(struct lp_options, cpus), NULL, NULL },
	{ "test.panic_ap", OPT_CPU, offsetof(struct lp_options, test_panic_ap), NULL, NULL },
};

#define OPTION_COUNT (sizeof(option_table) / sizeof(option_table[0]))

void options_defaults(struct lp_options *opt)
{
	opt->light = true;
	opt->vmload_lazy = true;
	opt->vmx_tpr_shadow = true;
	opt->vmx_apicv = true;
	opt->vmx_bochs_quirk = OPT_AUTO;
	opt->dr_lazy = true;
	opt->pmu_lazy = true;
	opt->msr_lazy = true;
	opt->io_fast = true;
	opt->spec = true;
	opt->unclaimed_pc = true;
	opt->clock_poll = true;
	opt->timer_lead = true;
	opt->mem_mb = MEM_MB_DEFAULT;
	opt->stats = true;
	opt->stats_cost = false;
	opt->stats_sites = false;
	opt->vm_timeout_s = 0;
	opt->tsc_check_s = 0;
	opt->cpus = 0;
	opt->test_panic_ap = 0;
}

uint32_t options_config_bits(const struct lp_options *opt)
{
	uint32_t bits = 0;
	if (opt->light)
		bits |= LP_CONFIG_LIGHT;
	if (opt->vmload_lazy)
		bits |= LP_CONFIG_VMLOAD_LAZY;
	if (opt->dr_lazy)
		bits |= LP_CONFIG_DR_LAZY;
	if (opt->pmu_lazy)
		bits |= LP_CONFIG_PMU_LAZY;
	if (opt->msr_lazy)
		bits |= LP_CONFIG_MSR_LAZY;
	if (opt->io_fast)
		bits |= LP_CONFIG_IO_FAST;
	if (opt->spec)
		bits |= LP_CONFIG_SPEC;
	return bits;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Does the counted string s[0..n) equal the C string word? */
static bool word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Copies s[0..n) into a NUL-terminated buffer for quoting in an error line
 * (our printf has no "%.*s"). */
static void quote(char *dst, const char *s, size_t n)
{
	if (n > QUOTE_MAX) {
		memcpy(dst, s, QUOTE_MAX - 3);
		memcpy(dst + QUOTE_MAX - 3, "...", 4);
	} else {
		memcpy(dst, s, n);
		dst[n] = '\0';
	}
}

static void accepted_keys(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		int n = snprintf(buf + used, len - used, "%s%s=", i ? " " : "",
				 option_table[i].key);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

static void set_error(char *err, size_t errlen, const char *what,
		      const char *word, size_t n)
{
	char q[QUOTE_MAX + 1];
	char keys[224];
	if (!err || !errlen)
		return;
	quote(q, word, n);
	accepted_keys(keys, sizeof(keys));
	snprintf(err, errlen, "%s '%s' (accepted: %s)", what, q, keys);
}

static void set_bad_value(char *err, size_t errlen,
			  const struct option_desc *d, const char *val, size_t n)
{
	char q[QUOTE_MAX + 1];
	if (!err || !errlen)
		return;
	quote(q, val, n);
	if (d->kind == OPT_SWITCH)
		snprintf(err, errlen, "bad value '%s' for %s= (use %s or %s)", q,
			 d->key, d->on_word, d->off_word);
	else if (d->kind == OPT_AUTO3)
		snprintf(err, errlen, "bad value '%s' for %s= (use auto, %s or %s)", q,
			 d->key, d->on_word, d->off_word);
	else if (d->kind == OPT_CPUS)
		snprintf(err, errlen, "bad value '%s' for %s= (use 1..%u: the most host CPUs to "
			 "start, the boot CPU included)", q, d->key, OPTIONS_CPUS_MAX);
	else if (d->kind == OPT_CPU)
		snprintf(err, errlen, "bad value '%s' for %s= (use 0..%u: a host CPU's number; 0 = "
			 "off)", q, d->key, OPTIONS_CPUS_MAX - 1);
	else if (d->kind == OPT_STATS)
		snprintf(err, errlen, "bad value '%s' for %s= (use on, off, cost, sites or all)", q,
			 d->key);
	else if (d->kind == OPT_SECONDS)
		snprintf(err, errlen, "bad value '%s' for %s= (use whole seconds 0..%u; 0 = no limit)",
			 q, d->key, OPTIONS_VM_TIMEOUT_MAX_S);
	else
		snprintf(err, errlen, "bad value '%s' for %s= (use an even number %u..%u, in MiB)",
			 q, d->key, MEM_MB_MIN, MEM_MB_MAX);
}

/* Decimal only; anything else (sign, suffix, overflow) is a bad value. */
static bool parse_mib(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	/* guest RAM is mapped with 2 MiB pages: an odd size would map part of
	 * the next host page into the guest */
	if (v < MEM_MB_MIN || v > MEM_MB_MAX || (v & 1))
		return false;
	*out = v;
	return true;
}

/* Decimal seconds, 0..OPTIONS_VM_TIMEOUT_MAX_S; anything else is a bad value. */
static bool parse_seconds(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 6)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > OPTIONS_VM_TIMEOUT_MAX_S)
		return false;
	*out = v;
	return true;
}

/* Decimal lo..hi (at most 3 digits); anything else is a bad value. */
static bool parse_small(const char *s, size_t n, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 3)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* on: the exit table; cost, sites: the table and that measurement (all:
 * both); off: nothing. */
static bool parse_stats(struct lp_options *opt, const char *s, size_t n)
{
	static const struct { const char *word; bool table, cost, sites; } values[] = {
		{ "on", true, false, false },  { "off", false, false, false },
		{ "cost", true, true, false }, { "sites", true, false, true },
		{ "all", true, true, true },
	};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (word_is(s, n, values[i].word)) {
			opt->stats = values[i].table;
			opt->stats_cost = values[i].cost;
			opt->stats_sites = values[i].sites;
			return true;
		}
	return false;
}

static int apply_word(struct lp_options *opt, const char *w, size_t n,
		      char *err, size_t errlen)
{
	const char *eq = NULL;
	for (size_t i = 0; i < n; i++) {
		if (w[i] == '=') {
			eq = w + i;
			break;
		}
	}
	if (!eq) {
		set_error(err, errlen, "missing '=value' in boot option", w, n);
		return -1;
	}
	size_t keylen = (size_t)(eq - w);
	const char *val = eq + 1;
	size_t vallen = n - keylen - 1;

	for (size_t i = 0; i < OPTION_COUNT; i++) {
		const struct option_desc *d = &option_table[i];
		if (!word_is(w, keylen, d->key))
			continue;
		char *field = (char *)opt + d->field;
		if (d->kind == OPT_SWITCH) {
			if (word_is(val, vallen, d->on_word))
				*(bool *)field = true;
			else if (word_is(val, vallen, d->off_word))
				*(bool *)field = false;
			else
				goto bad_value;
		} else if (d->kind == OPT_AUTO3) {
			if (word_is(val, vallen, "auto"))
				*(unsigned *)field = OPT_AUTO;
			else if (word_is(val, vallen, d->on_word))
				*(unsigned *)field = OPT_ON;
			else if (word_is(val, vallen, d->off_word))
				*(unsigned *)field = OPT_OFF;
			else
				goto bad_value;
		} else if (d->kind == OPT_STATS) {
			if (!parse_stats(opt, val, vallen))
				goto bad_value;
		} else if (d->kind == OPT_CPUS) {
			unsigned n;
			if (!parse_small(val, vallen, 1, OPTIONS_CPUS_MAX, &n))
				goto bad_value;
			*(unsigned *)field = n;
		} else if (d->kind == OPT_CPU) {
			unsigned n;
			if (!parse_small(val, vallen, 0, OPTIONS_CPUS_MAX - 1, &n))
				goto bad_value;
			*(unsigned *)field = n;
		} else if (d->kind == OPT_SECONDS) {
			unsigned secs;
			if (!parse_seconds(val, vallen, &secs))
				goto bad_value;
			*(unsigned *)field = secs;
		} else {
			unsigned mib;
			if (!parse_mib(val, vallen, &mib))
				goto bad_value;
			*(unsigned *)field = mib;
		}
		return 0;
bad_value:
		set_bad_value(err, errlen, d, val, vallen);
		return -1;
	}
	set_error(err, errlen, "unknown boot option", w, n);
	return -1;
}

int options_parse(struct lp_options *opt, const char *cmdline, char *err,
		  size_t errlen)
{
	bool first = true;
	const char *p = cmdline;

	if (err && errlen)
		err[0] = '\0';
	if (!p)
		return 0;
	for (;;) {
		while (is_space(*p))
			p++;
		if (!*p)
			return 0;
		const char *w = p;
		bool has_eq = false;
		while (*p && !is_space(*p)) {
			if (*p == '=')
				has_eq = true;
			p++;
		}
		size_t n = (size_t)(p - w);
		/* The boot loader may put the image path first. */
		if (first && !has_eq) {
			first = false;
			continue;
		}
		first = false;
		if (apply_word(opt, w, n, err, errlen) < 0)
			return -1;
	}
}
