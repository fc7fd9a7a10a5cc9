/* VM description parser (vmm/vmconfig.h has the format): one table row per
 * key, so the parser, the error lines and the list of accepted keys cannot
 * drift apart. Every error names its line. */
#include "vmm/vmconfig.h"

#include "lib/printf.h"
#include "lib/string.h"

/* Longest value quoted back in an error line; longer ones end in "...". */
#define QUOTE_MAX 48

enum key_kind {
	KEY_NAME,     /* a string of [A-Za-z0-9._-] */
	KEY_MODULE,   /* a module basename: no blanks */
	KEY_STRING,   /* anything */
	KEY_MEMORY,   /* MiB */
	KEY_CPUS,
	KEY_PCPUS,
	KEY_SECONDS,  /* the time limit */
	KEY_UNCLAIMED, /* pc | stop */
	KEY_DISK,     /* module[,ro|,rw] */
	KEY_NET,      /* link[,mac=xx:xx:xx:xx:xx:xx] */
	KEY_MODULE_LIST, /* "name args", name, ...: parsed from the raw line */
};

struct key_desc {
	const char *key;
	enum key_kind kind;
	size_t field;  /* offsetof() into struct vmconfig */
	size_t size;   /* string fields: the buffer size */
};

#define STR(k, kind) { #k, kind, offsetof(struct vmconfig, k), sizeof(((struct vmconfig *)0)->k) }

static const struct key_desc key_table[] = {
	STR(name, KEY_NAME),
	STR(kernel, KEY_MODULE),
	STR(initrd, KEY_MODULE),
	{ "modules", KEY_MODULE_LIST, offsetof(struct vmconfig, modules), 0 },
	STR(cmdline, KEY_STRING),
	{ "memory", KEY_MEMORY, offsetof(struct vmconfig, memory_mb), 0 },
	{ "cpus", KEY_CPUS, offsetof(struct vmconfig, cpus), 0 },
	{ "pcpus", KEY_PCPUS, offsetof(struct vmconfig, pcpus), 0 },
	{ "timeout", KEY_SECONDS, offsetof(struct vmconfig, timeout_s), 0 },
	{ "unclaimed", KEY_UNCLAIMED, offsetof(struct vmconfig, unclaimed_stop), 0 },
	STR(disk, KEY_DISK),
	STR(net, KEY_NET),
};

#define KEY_COUNT (sizeof(key_table) / sizeof(key_table[0]))

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool word_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* s[0..n) as a NUL-terminated string for an error line (our printf has no
 * "%.*s"); dst holds QUOTE_MAX + 1 bytes. */
static const char *quote(char *dst, const char *s, size_t n)
{
	if (n > QUOTE_MAX) {
		memcpy(dst, s, QUOTE_MAX - 3);
		memcpy(dst + QUOTE_MAX - 3, "...", 4);
	} else {
		memcpy(dst, s, n);
		dst[n] = '\0';
	}
	return dst;
}

static void accepted_keys(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < KEY_COUNT; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", key_table[i].key);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

/* Unsigned decimal, at most 9 digits (no overflow); false for anything else. */
static bool parse_uint(const char *s, size_t n, unsigned *out)
{
	unsigned v = 0;
	if (n == 0 || n > 9)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return true;
}

/* The magic first line, s[0..n) without its newline: exact, then blanks or
 * a CR only. */
static bool is_magic_line(const char *s, size_t n)
{
	size_t m = sizeof(VMCONFIG_MAGIC) - 1;
	if (n < m || memcmp(s, VMCONFIG_MAGIC, m) != 0)
		return false;
	for (size_t i = m; i < n; i++)
		if (!is_blank(s[i]) && s[i] != '\r')
			return false;
	return true;
}

bool vmconfig_is_config(const uint8_t *data, size_t len)
{
	size_t n = 0;
	if (!data)
		return false;
	while (n < len && data[n] != '\n')
		n++;
	return is_magic_line((const char *)data, n);
}

/* Stores value v[0..n) of key d on line `line`; 0 or -1 with err set. */
static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* net = LINK[,mac=xx:xx:xx:xx:xx:xx]: the link's name as a VM's name, and
 * a unicast MAC address other than zero. */
static int parse_net(struct vmconfig *out, const char *v, size_t n, unsigned line, char *field,
		     size_t size, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	size_t name_n = 0;
	while (name_n < n && v[name_n] != ',')
		name_n++;
	bool name_ok = name_n && name_n < size;
	for (size_t i = 0; i < name_n; i++)
		name_ok = name_ok && is_name_char(v[i]);
	if (!name_ok) {
		snprintf(err, errlen, ":%u: net = %s: use a link name (1..%zu of A-Z a-z 0-9 . _ -), "
			 "then ,mac=xx:xx:xx:xx:xx:xx if you like", line, quote(q, v, n), size - 1);
		return -1;
	}
	memcpy(field, v, name_n);
	field[name_n] = '\0';
	out->has_mac = false;
	if (name_n == n)
		return 0;
	const char *m = v + name_n + 1;
	size_t m_n = n - name_n - 1;
	bool ok = m_n == 4 + 17 && !memcmp(m, "mac=", 4);
	for (unsigned i = 0; ok && i < 6; i++) {
		const char *h = m + 4 + 3 * i;
		int hi = hex_digit(h[0]), lo = hex_digit(h[1]);
		ok = hi >= 0 && lo >= 0 && (i == 5 || h[2] == ':');
		out->mac[i] = (uint8_t)(hi << 4 | lo);
	}
	if (!ok) {
		snprintf(err, errlen, ":%u: net = %s: after the link name, ,mac=xx:xx:xx:xx:xx:xx "
			 "(six hex bytes)", line, quote(q, v, n));
		return -1;
	}
	static const uint8_t zero[6];
	if ((out->mac[0] & 1) || !memcmp(out->mac, zero, 6)) {
		snprintf(err, errlen, ":%u: net = %s: a VM's MAC address must be unicast (first byte "
			 "even) and not zero", line, quote(q, v, n));
		return -1;
	}
	out->has_mac = true;
	return 0;
}

static int apply(struct vmconfig *out, const struct key_desc *d, const char *v, size_t n,
		 unsigned line, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	char *field = (char *)out + d->field;
	unsigned num;

	switch (d->kind) {
	case KEY_NAME:
	case KEY_MODULE:
	case KEY_STRING:
		if (n >= d->size) {
			snprintf(err, errlen, ":%u: the value of '%s' is too long (%zu characters, at most %zu)",
				 line, d->key, n, d->size - 1);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			char c = v[i];
			bool ok = true;
			if (d->kind == KEY_NAME)
				ok = is_name_char(c);
			else if (d->kind == KEY_MODULE)
				ok = !is_blank(c);
			if (!ok) {
				snprintf(err, errlen, d->kind == KEY_NAME ?
					 ":%u: %s = '%s': use letters, digits, '.', '_' and '-'" :
					 ":%u: %s = '%s': a module name has no blanks",
					 line, d->key, quote(q, v, n));
				return -1;
			}
		}
		if (d->field == offsetof(struct vmconfig, kernel) && n == 0) {
			snprintf(err, errlen, ":%u: kernel = needs a module name", line);
			return -1;
		}
		memcpy(field, v, n);
		field[n] = '\0';
		return 0;
	case KEY_MEMORY:
		/* even: guest RAM is mapped with 2 MiB pages */
		if (!parse_uint(v, n, &num) || num < VMCONFIG_MEMORY_MIN_MB ||
		    num > VMCONFIG_MEMORY_MAX_MB || (num & 1)) {
			snprintf(err, errlen, ":%u: memory = %s: use an even number %u..%u (MiB)", line,
				 quote(q, v, n), VMCONFIG_MEMORY_MIN_MB, VMCONFIG_MEMORY_MAX_MB);
			return -1;
		}
		*(unsigned *)field = num;
		return 0;
	case KEY_CPUS:
		/* more than the machine has, or more than 1, is refused when
		 * the VM is started (vmm/guests.c), which knows the machine */
		if (parse_uint(v, n, &num) && num >= 1 && num <= VMCONFIG_CPUS_MAX) {
			*(unsigned *)field = num;
			return 0;
		}
		snprintf(err, errlen, ":%u: cpus = %s: use 1..%u (the VM's vCPUs)", line,
			 quote(q, v, n), VMCONFIG_CPUS_MAX);
		return -1;
	case KEY_PCPUS: {
		/* a comma-separated list of host CPU numbers, one per vCPU */
		size_t i = 0;
		out->nr_pcpus = 0;
		for (;;) {
			size_t j = i;
			while (j < n && v[j] != ',')
				j++;
			size_t a = i, b = j;
			while (a < b && is_blank(v[a]))
				a++;
			while (b > a && is_blank(v[b - 1]))
				b--;
			if (!parse_uint(v + a, b - a, &num) || num >= VMCONFIG_CPUS_MAX ||
			    out->nr_pcpus == VMCONFIG_CPUS_MAX) {
				snprintf(err, errlen, ":%u: pcpus = %s: use host CPU numbers 0..%u, "
					 "separated by commas, one per vCPU", line, quote(q, v, n),
					 VMCONFIG_CPUS_MAX - 1);
				return -1;
			}
			for (unsigned k = 0; k < out->nr_pcpus; k++)
				if (out->pcpus[k] == num) {
					snprintf(err, errlen, ":%u: pcpus = %s: CPU %u is listed twice",
						 line, quote(q, v, n), num);
					return -1;
				}
			out->pcpus[out->nr_pcpus++] = (uint8_t)num;
			if (j == n)
				return 0;
			i = j + 1;
		}
	}
	case KEY_SECONDS:
		if (!parse_uint(v, n, &num) || num > VMCONFIG_TIMEOUT_MAX_S) {
			snprintf(err, errlen, ":%u: timeout = %s: use whole seconds 0..%u (0 = no limit)",
				 line, quote(q, v, n), VMCONFIG_TIMEOUT_MAX_S);
			return -1;
		}
		*(unsigned *)field = num;
		out->has_timeout = true;
		return 0;
	case KEY_UNCLAIMED:
		if (!word_is(v, n, "pc") && !word_is(v, n, "stop")) {
			snprintf(err, errlen, ":%u: unclaimed = %s: use pc or stop", line,
				 quote(q, v, n));
			return -1;
		}
		*(bool *)field = word_is(v, n, "stop");
		out->has_unclaimed = true;
		return 0;
	case KEY_DISK: {
		size_t name_n = 0;
		while (name_n < n && v[name_n] != ',')
			name_n++;
		const char *opt = v + name_n + 1;
		size_t opt_n = name_n < n ? n - name_n - 1 : 0;
		if (!name_n || (name_n < n && !word_is(opt, opt_n, "ro") && !word_is(opt, opt_n, "rw"))) {
			snprintf(err, errlen, ":%u: disk = %s: use a module name, then ,ro or ,rw if "
				 "you like", line, quote(q, v, n));
			return -1;
		}
		for (size_t i = 0; i < name_n; i++) {
			if (is_blank(v[i])) {
				snprintf(err, errlen, ":%u: disk = '%s': a module name has no blanks",
					 line, quote(q, v, name_n));
				return -1;
			}
		}
		if (name_n >= d->size) {
			snprintf(err, errlen, ":%u: the value of 'disk' is too long (%zu characters, at "
				 "most %zu)", line, name_n, d->size - 1);
			return -1;
		}
		memcpy(field, v, name_n);
		field[name_n] = '\0';
		out->disk_ro = name_n < n && word_is(opt, opt_n, "ro");
		return 0;
	}
	case KEY_NET:
		return parse_net(out, v, n, line, field, d->size, err, errlen);
	case KEY_MODULE_LIST:
		break;   /* parse_module_list() */
	}
	return -1;
}

/* Stores entry number `idx` (from 1), e[0..n), of a modules = list. */
static int add_module(struct vmconfig *out, const char *e, size_t n, unsigned idx, unsigned line,
		      char *err, size_t errlen)
{
	if (idx > VMCONFIG_MODULES_MAX) {
		snprintf(err, errlen, ":%u: modules: more than %u entries", line, VMCONFIG_MODULES_MAX);
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, ":%u: modules: entry %u is empty", line, idx);
		return -1;
	}
	if (is_blank(e[0])) {
		snprintf(err, errlen, ":%u: modules: entry %u must start with the module's name", line,
			 idx);
		return -1;
	}
	if (n >= VMCONFIG_MODULE_STR_MAX) {
		snprintf(err, errlen, ":%u: modules: entry %u is too long (%zu characters, at most %u)",
			 line, idx, n, VMCONFIG_MODULE_STR_MAX - 1);
		return -1;
	}
	size_t name = 0;
	while (name < n && !is_blank(e[name]))
		name++;
	if (name >= VMCONFIG_MODULE_NAME_MAX) {
		snprintf(err, errlen, ":%u: modules: the module name in entry %u is too long (%zu "
			 "characters, at most %u)", line, idx, name, VMCONFIG_MODULE_NAME_MAX - 1);
		return -1;
	}
	struct vmconfig_module *m = &out->modules[idx - 1];
	memcpy(m->name, e, name);
	m->name[name] = '\0';
	memcpy(m->string, e, n);
	m->string[n] = '\0';
	out->nr_modules = idx;
	return 0;
}

/* The value of modules = as written, v[0..n) (after the '=' and blanks):
 * entries separated by ',', each "quoted" or one bare word, then an
 * optional comment. */
static int parse_module_list(struct vmconfig *out, const char *v, size_t n, unsigned line,
			     char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	size_t i = 0;
	unsigned idx = 0;

	out->nr_modules = 0;
	if (n == 0 || v[0] == '#')
		return 0;                        /* an empty list */
	for (;;) {
		idx++;
		while (i < n && is_blank(v[i]))
			i++;
		if (i == n || v[i] == '#') {
			snprintf(err, errlen, ":%u: modules: nothing after the last ','", line);
			return -1;
		}
		const char *e = v + i;
		size_t len;
		if (v[i] == '"') {
			size_t j = i + 1;
			while (j < n && v[j] != '"')
				j++;
			if (j == n) {
				snprintf(err, errlen, ":%u: modules: entry %u has no closing '\"'", line, idx);
				return -1;
			}
			e = v + i + 1;
			len = j - i - 1;
			i = j + 1;
		} else {
			size_t j = i;
			while (j < n && !is_blank(v[j]) && v[j] != ',' && v[j] != '"')
				j++;
			if (j < n && v[j] == '"') {
				snprintf(err, errlen, ":%u: modules: unexpected '\"' inside entry %u (quote "
					 "the whole entry)", line, idx);
				return -1;
			}
			len = j - i;
			i = j;
		}
		if (add_module(out, e, len, idx, line, err, errlen))
			return -1;
		while (i < n && is_blank(v[i]))
			i++;
		if (i == n || v[i] == '#')
			return 0;
		if (v[i] != ',') {
			snprintf(err, errlen, ":%u: modules: unexpected '%s' after entry %u (entries are "
				 "separated by ',')", line, quote(q, v + i, n - i), idx);
			return -1;
		}
		i++;
	}
}

/* One line s[0..n) (no newline, no CR), not blank and not a comment. */
static int parse_line(struct vmconfig *out, const char *s, size_t n, unsigned line,
		      unsigned *seen, char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	size_t i = 0;

	while (i < n && !is_blank(s[i]) && s[i] != '=')
		i++;
	size_t keylen = i;
	while (i < n && is_blank(s[i]))
		i++;
	if (i == n || s[i] != '=') {
		snprintf(err, errlen, ":%u: missing '=' in '%s' (lines are 'key = value')", line,
			 quote(q, s, n));
		return -1;
	}
	if (keylen == 0) {
		snprintf(err, errlen, ":%u: missing key before '='", line);
		return -1;
	}
	const struct key_desc *d = NULL;
	size_t k;
	for (k = 0; k < KEY_COUNT; k++) {
		if (word_is(s, keylen, key_table[k].key)) {
			d = &key_table[k];
			break;
		}
	}
	if (!d) {
		char keys[96];
		accepted_keys(keys, sizeof(keys));
		snprintf(err, errlen, ":%u: unknown key '%s' (accepted: %s)", line, quote(q, s, keylen),
			 keys);
		return -1;
	}
	if (seen[k]) {
		snprintf(err, errlen, ":%u: duplicate key '%s' (already set on line %u)", line, d->key,
			 seen[k]);
		return -1;
	}
	seen[k] = line;

	i++; /* the '=' */
	while (i < n && is_blank(s[i]))
		i++;
	if (d->kind == KEY_MODULE_LIST)
		return parse_module_list(out, s + i, n - i, line, err, errlen);
	const char *v = s + i;
	size_t vlen;
	if (i < n && s[i] == '"') {
		size_t j = i + 1;
		while (j < n && s[j] != '"')
			j++;
		if (j == n) {
			snprintf(err, errlen, ":%u: missing closing '\"' in the value of '%s'", line,
				 d->key);
			return -1;
		}
		v = s + i + 1;
		vlen = j - i - 1;
		j++;
		while (j < n && is_blank(s[j]))
			j++;
		if (j < n && s[j] != '#') {
			snprintf(err, errlen, ":%u: unexpected '%s' after the quoted value of '%s'", line,
				 quote(q, s + j, n - j), d->key);
			return -1;
		}
	} else {
		size_t j = i;
		/* a '#' right after '=' or after a blank starts a comment */
		while (j < n && !(s[j] == '#' && (j == i || is_blank(s[j - 1]))))
			j++;
		while (j > i && is_blank(s[j - 1]))
			j--;
		vlen = j - i;
	}
	return apply(out, d, v, vlen, line, err, errlen);
}

int vmconfig_parse(const char *text, size_t len, struct vmconfig *out, char *err, size_t errlen)
{
	char scratch[1];
	unsigned seen[KEY_COUNT];
	unsigned line = 0;
	size_t pos = 0;

	if (!err || !errlen) {
		err = scratch;
		errlen = sizeof(scratch);
	}
	err[0] = '\0';
	memset(out, 0, sizeof(*out));
	out->memory_mb = VMCONFIG_MEMORY_DEFAULT;
	out->cpus = 1;
	memset(seen, 0, sizeof(seen));

	if (!text || len == 0) {
		snprintf(err, errlen, ": empty file (the first line must be '%s')", VMCONFIG_MAGIC);
		return -1;
	}
	while (pos < len) {
		size_t start = pos, end;
		while (pos < len && text[pos] != '\n')
			pos++;
		end = pos;
		if (pos < len)
			pos++; /* the '\n' */
		line++;
		if (end > start && text[end - 1] == '\r')
			end--;
		if (line == 1) {
			if (!is_magic_line(text + start, end - start)) {
				snprintf(err, errlen, ":1: the first line must be '%s' (it marks a VM description)",
					 VMCONFIG_MAGIC);
				return -1;
			}
			continue;
		}
		for (size_t i = start; i < end; i++) {
			unsigned char c = (unsigned char)text[i];
			if ((c < 0x20 && c != '\t') || c == 0x7f) {
				snprintf(err, errlen, ":%u: control character 0x%02x (a VM description is text)",
					 line, c);
				return -1;
			}
		}
		while (start < end && is_blank(text[start]))
			start++;
		while (end > start && is_blank(text[end - 1]))
			end--;
		if (start == end || text[start] == '#')
			continue;
		if (parse_line(out, text + start, end - start, line, seen, err, errlen) < 0)
			return -1;
	}
	bool have_kernel = false;
	for (size_t k = 0; k < KEY_COUNT; k++)
		if (key_table[k].field == offsetof(struct vmconfig, kernel) && seen[k])
			have_kernel = true;
	if (!have_kernel) {
		snprintf(err, errlen, ": no 'kernel = ...' line (every VM needs a kernel)");
		return -1;
	}
	if (out->nr_pcpus && out->nr_pcpus != out->cpus) {
		unsigned pline = 0;
		for (size_t k = 0; k < KEY_COUNT; k++)
			if (key_table[k].kind == KEY_PCPUS)
				pline = seen[k];
		snprintf(err, errlen, ":%u: pcpus = lists %u CPU%s, but the VM has %u vCPU%s "
			 "(cpus = %u): give one CPU per vCPU", pline, out->nr_pcpus,
			 out->nr_pcpus == 1 ? "" : "s", out->cpus, out->cpus == 1 ? "" : "s", out->cpus);
		return -1;
	}
	return 0;
}
