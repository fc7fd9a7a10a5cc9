#include "vmm/guests.h"

#include "core/console.h"
#include "lib/string.h"
#include "vmm/vm.h"
#include "vmm/vmconfig.h"

/* the module's path: the first word of its string */
static size_t path_len(const char *cmdline)
{
	size_t n = 0;
	while (cmdline[n] && cmdline[n] != ' ')
		n++;
	return n;
}

static const char *args_of(const char *cmdline)
{
	const char *a = cmdline + path_len(cmdline);
	while (*a == ' ')
		a++;
	return a;
}

/* Does the module's path end in "/<name>" or equal <name>? */
static bool module_named(const struct boot_module *m, const char *name)
{
	size_t len = path_len(m->cmdline), nlen = strlen(name);
	if (!nlen || nlen > len || strncmp(m->cmdline + len - nlen, name, nlen))
		return false;
	return nlen == len || m->cmdline[len - nlen - 1] == '/';
}

static int find_module(const struct boot_info *bi, const char *name)
{
	for (unsigned i = 0; i < bi->nr_modules; i++)
		if (module_named(&bi->modules[i], name))
			return (int)i;
	return -1;
}

static bool is_bzimage(const uint8_t *p, uint64_t len)
{
	return len > 0x206 && !memcmp(p + 0x202, "HdrS", 4);
}

static const uint8_t *module_data(const struct boot_module *m)
{
	return (const uint8_t *)(uintptr_t)m->start;
}

#define NAME_MAX_LEN 64
static char names[BOOT_MAX_MODULES][NAME_MAX_LEN];

/* The module's path as a string (shortened to fit). */
static const char *module_path(const struct boot_module *m, char name[NAME_MAX_LEN])
{
	size_t len = path_len(m->cmdline);
	if (len >= NAME_MAX_LEN)
		len = NAME_MAX_LEN - 1;
	memcpy(name, m->cmdline, len);
	name[len] = 0;
	return name;
}
static struct vmconfig configs[BOOT_MAX_MODULES];

/* Modules past BOOT_MAX_MODULES: one line each, with their string. */
static void report_ignored(const struct boot_info *bi)
{
	for (unsigned i = 0; i < bi->nr_ignored && i < BOOT_MAX_IGNORED; i++)
		kprintf("lightpath: error: module %u ('%.*s') is ignored: lightpath takes at most %u "
			"modules\n", BOOT_MAX_MODULES + 1 + i, NAME_MAX_LEN, bi->ignored[i],
			BOOT_MAX_MODULES);
	if (bi->nr_ignored > BOOT_MAX_IGNORED)
		kprintf("lightpath: error: modules %u to %u are ignored too\n",
			BOOT_MAX_MODULES + BOOT_MAX_IGNORED + 1, BOOT_MAX_MODULES + bi->nr_ignored);
}

/* The VM a description (module i) asks for, in *spec; or one line saying
 * why there is none, and -1. */
static int config_spec(const struct boot_info *bi, unsigned i, unsigned id,
		       const bool is_config[], struct vm_spec *spec)
{
	const struct vmconfig *c = &configs[i];
	int k = find_module(bi, c->kernel);
	int r = c->initrd[0] ? find_module(bi, c->initrd) : -1;
	if (k < 0 || (c->initrd[0] && r < 0)) {
		kprintf("lightpath: vm%u: %s names module '%s', which was not given\n", id,
			names[i], k < 0 ? c->kernel : c->initrd);
		return -1;
	}
	if (is_config[k] || (r >= 0 && is_config[r])) {
		/* a description is never a kernel or an initrd: it would run as
		 * part of this VM and never as its own (or, naming itself, not at
		 * all); it runs, or is reported, on its own instead */
		bool kernel = is_config[k];
		if ((unsigned)(kernel ? k : r) == i)
			kprintf("lightpath: vm%u: %s names itself as its %s\n", id, names[i],
				kernel ? "kernel" : "initrd");
		else
			kprintf("lightpath: vm%u: %s names module '%s' as its %s, but that is a VM "
				"description\n", id, names[i], kernel ? c->kernel : c->initrd,
				kernel ? "kernel" : "initrd");
		return -1;
	}
	const struct boot_module *km = &bi->modules[k];
	spec->name = c->name[0] ? c->name : names[i];
	spec->image_name = c->kernel;
	spec->image = module_data(km);
	spec->image_size = km->end - km->start;
	spec->linux_kernel = is_bzimage(spec->image, spec->image_size);
	/* a multiboot kernel gets the loader-style string: path, then args */
	spec->cmdline = spec->linux_kernel ? c->cmdline : km->cmdline;
	if (r >= 0) {
		spec->initrd = module_data(&bi->modules[r]);
		spec->initrd_size = bi->modules[r].end - bi->modules[r].start;
	}
	spec->mem_mb = c->memory_mb;
	spec->has_timeout = c->has_timeout;
	spec->timeout_s = c->timeout_s;
	spec->has_unclaimed = c->has_unclaimed;
	spec->unclaimed_stop = c->unclaimed_stop;
	return 0;
}

static void note_end(struct guests_outcome *out, unsigned id, unsigned status)
{
	out->vms++;
	if (status && !out->nonzero++) {
		out->status = status;
		out->first_nonzero = id;
	}
}

void guests_run_all(const struct boot_info *bi, const struct lp_options *opt,
		    struct guests_outcome *out)
{
	bool named[BOOT_MAX_MODULES] = { false }, is_config[BOOT_MAX_MODULES] = { false };
	bool config_ok[BOOT_MAX_MODULES] = { false };
	char err[200];

	*out = (struct guests_outcome){ .ignored = bi->nr_ignored };
	report_ignored(bi);
	for (unsigned i = 0; i < bi->nr_modules; i++) {
		const struct boot_module *m = &bi->modules[i];
		module_path(m, names[i]);
		is_config[i] = vmconfig_is_config(module_data(m), m->end - m->start);
	}
	/* first the descriptions, so that the modules they name are known */
	for (unsigned i = 0; i < bi->nr_modules; i++) {
		const struct boot_module *m = &bi->modules[i];
		if (!is_config[i])
			continue;
		if (vmconfig_parse((const char *)module_data(m), m->end - m->start, &configs[i], err,
				   sizeof(err))) {
			/* the parser's message starts with ":<line>:" */
			kprintf("lightpath: error: %s%s\n", names[i], err);
			continue;
		}
		config_ok[i] = true;
		int k = find_module(bi, configs[i].kernel);
		int r = configs[i].initrd[0] ? find_module(bi, configs[i].initrd) : -1;
		/* descriptions are never taken over by another (config_spec says why) */
		if (k >= 0 && !is_config[k])
			named[k] = true;
		if (r >= 0 && !is_config[r])
			named[r] = true;
	}

	unsigned id = 0;
	for (unsigned i = 0; i < bi->nr_modules; i++) {
		const struct boot_module *m = &bi->modules[i];
		struct vm_spec spec = { 0 };
		if (named[i])
			continue;
		if (is_config[i]) {
			if (!config_ok[i] || config_spec(bi, i, id, is_config, &spec)) {
				note_end(out, id++, LP_STATUS_VM_FAULT);
				continue;
			}
		} else {
			spec.name = names[i];
			spec.image_name = names[i];
			spec.image = module_data(m);
			spec.image_size = m->end - m->start;
			spec.linux_kernel = is_bzimage(spec.image, spec.image_size);
			spec.cmdline = spec.linux_kernel ? args_of(m->cmdline) : m->cmdline;
			spec.mem_mb = opt->mem_mb;
		}
		unsigned status = vm_run(id, &spec, opt);
		note_end(out, id++, status);
	}
	if (!out->nonzero && out->ignored)
		out->status = LP_STATUS_VM_FAULT;
}
