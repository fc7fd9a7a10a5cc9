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
_Static_assert(VMCONFIG_MODULES_MAX + 1 <= MB_MAX_MODULES, "a description's initrd and modules");

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

/* What a description names: its kernel, initrd and modules = entries,
 * each resolved to a boot module (-1: not given). */
struct named_modules {
	int kernel, initrd;
	int mods[VMCONFIG_MODULES_MAX];
};

static void resolve(const struct boot_info *bi, const struct vmconfig *c, struct named_modules *n)
{
	n->kernel = find_module(bi, c->kernel);
	n->initrd = c->initrd[0] ? find_module(bi, c->initrd) : -1;
	for (unsigned j = 0; j < c->nr_modules; j++)
		n->mods[j] = find_module(bi, c->modules[j].name);
}

/* One line for a module a description names (as its `role`) that cannot
 * be used: not given, or a description (itself included); true then. */
static bool refuse_module(unsigned id, unsigned i, const char *name, int k, const char *role,
			  const bool is_config[])
{
	if (k < 0) {
		kprintf("lightpath: vm%u: %s names module '%s', which was not given\n", id, names[i],
			name);
		return true;
	}
	if (!is_config[k])
		return false;
	/* a description is never a kernel, initrd or module: it would run as
	 * part of this VM and never as its own (or, naming itself, not at
	 * all); it runs, or is reported, on its own instead */
	if ((unsigned)k == i)
		kprintf("lightpath: vm%u: %s names itself as %s\n", id, names[i], role);
	else
		kprintf("lightpath: vm%u: %s names module '%s' as %s, but that is a VM description\n",
			id, names[i], name, role);
	return true;
}

/* The VM a description (module i) asks for, in *spec; or one line saying
 * why there is none, and -1. */
static int config_spec(const struct boot_info *bi, unsigned i, unsigned id,
		       const bool is_config[], struct vm_spec *spec)
{
	const struct vmconfig *c = &configs[i];
	struct named_modules n;
	resolve(bi, c, &n);
	if (refuse_module(id, i, c->kernel, n.kernel, "its kernel", is_config) ||
	    (c->initrd[0] && refuse_module(id, i, c->initrd, n.initrd, "its initrd", is_config)))
		return -1;
	for (unsigned j = 0; j < c->nr_modules; j++)
		if (refuse_module(id, i, c->modules[j].name, n.mods[j], "a module", is_config))
			return -1;
	const struct boot_module *km = &bi->modules[n.kernel];
	spec->name = c->name[0] ? c->name : names[i];
	spec->image_name = c->kernel;
	spec->image = module_data(km);
	spec->image_size = km->end - km->start;
	spec->linux_kernel = is_bzimage(spec->image, spec->image_size);
	if (spec->linux_kernel && c->nr_modules) {
		kprintf("lightpath: vm%u: %s: modules = is for multiboot kernels; '%s' is a Linux "
			"bzImage (its initrd is initrd =)\n", id, names[i], c->kernel);
		return -1;
	}
	/* a multiboot kernel gets the loader-style string: path, then args */
	spec->cmdline = spec->linux_kernel ? c->cmdline : km->cmdline;
	if (n.initrd >= 0) {
		const struct boot_module *rm = &bi->modules[n.initrd];
		spec->initrd = module_data(rm);
		spec->initrd_size = rm->end - rm->start;
		if (!spec->linux_kernel)   /* a multiboot kernel's first module */
			spec->modules[spec->nr_modules++] = (struct mb_module){
				c->initrd, spec->initrd, spec->initrd_size };
	}
	for (unsigned j = 0; j < c->nr_modules; j++) {
		const struct boot_module *mm = &bi->modules[n.mods[j]];
		spec->modules[spec->nr_modules++] = (struct mb_module){
			c->modules[j].string, module_data(mm), mm->end - mm->start };
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
		struct named_modules n;
		resolve(bi, &configs[i], &n);
		/* descriptions are never taken over by another (config_spec says why) */
		int all[2 + VMCONFIG_MODULES_MAX] = { n.kernel, n.initrd };
		for (unsigned j = 0; j < configs[i].nr_modules; j++)
			all[2 + j] = n.mods[j];
		for (unsigned j = 0; j < 2 + configs[i].nr_modules; j++)
			if (all[j] >= 0 && !is_config[all[j]])
				named[all[j]] = true;
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
