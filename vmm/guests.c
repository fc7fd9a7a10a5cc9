#include "vmm/guests.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/smp.h"
#include "core/timer.h"
#include "core/tsc.h"
#include "lib/string.h"
#include "vmm/cpuid.h"
#include "vmm/vendor_setup.h"
#include "vmm/vm.h"
#include "vmm/vm_console.h"
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
	int kernel, initrd, disk;
	int mods[VMCONFIG_MODULES_MAX];
};

static void resolve(const struct boot_info *bi, const struct vmconfig *c, struct named_modules *n)
{
	n->kernel = find_module(bi, c->kernel);
	n->initrd = c->initrd[0] ? find_module(bi, c->initrd) : -1;
	n->disk = c->disk[0] ? find_module(bi, c->disk) : -1;
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
	    (c->initrd[0] && refuse_module(id, i, c->initrd, n.initrd, "its initrd", is_config)) ||
	    (c->disk[0] && refuse_module(id, i, c->disk, n.disk, "its disk", is_config)))
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
	if (n.disk >= 0) {
		const struct boot_module *dm = &bi->modules[n.disk];
		spec->disk_name = c->disk;
		spec->disk = module_data(dm);
		spec->disk_size = dm->end - dm->start;
		spec->disk_ro = c->disk_ro;
		if (!spec->disk_size || spec->disk_size % 512) {
			kprintf("lightpath: vm%u: %s: disk '%s' is %lu bytes, not a whole number of "
				"512-byte sectors\n", id, names[i], c->disk, spec->disk_size);
			return -1;
		}
	}
	if (c->net[0]) {
		spec->net = c->net;
		spec->has_mac = c->has_mac;
		memcpy(spec->mac, c->mac, sizeof(spec->mac));
	}
	spec->mem_mb = c->memory_mb;
	spec->has_timeout = c->has_timeout;
	spec->timeout_s = c->timeout_s;
	spec->has_unclaimed = c->has_unclaimed;
	spec->unclaimed_stop = c->unclaimed_stop;
	spec->cpus = c->cpus;
	spec->nr_pcpus = c->nr_pcpus;
	memcpy(spec->pcpus, c->pcpus, c->nr_pcpus);
	return 0;
}

/* ---- static partitioning (docs/SMP.md): each vCPU on a CPU of its own ---- */

static unsigned cpus_running(void)
{
	unsigned n = 0;
	for (unsigned c = 0; c < SMP_MAX_CPUS; c++)
		n += smp_cpus[c] && !smp_cpu_parked(c);
	return n;
}

/* One line and false when the VM cannot be run on this machine. */
static bool cpus_ok(unsigned id, const struct vm_spec *spec)
{
	unsigned have = cpus_running();
	if (spec->cpus > have) {
		kprintf("lightpath: vm%u: asks for %u CPUs, but this machine has %u running "
			"lightpath; not started\n", id, spec->cpus, have);
		return false;
	}
	for (unsigned i = 0; i < spec->nr_pcpus; i++) {
		unsigned c = spec->pcpus[i];
		if (c >= SMP_MAX_CPUS || !smp_cpus[c]) {
			kprintf("lightpath: vm%u: pcpus = %u: CPU %u is not running lightpath (%u CPU%s "
				"run it: 0..%u); not started\n", id, c, c, have, have == 1 ? "" : "s",
				smp_nr_cpus - 1);
			return false;
		}
		if (smp_cpu_parked(c)) {
			kprintf("lightpath: vm%u: pcpus = %u: CPU %u panicked earlier and is out of use; "
				"not started\n", id, c, c);
			return false;
		}
		if (c == 0 && i) {
			kprintf("lightpath: vm%u: pcpus: CPU 0 can run only a VM's first vCPU (it "
				"keeps lightpath's housekeeping); not started\n", id);
			return false;
		}
	}
	return true;
}

/* CPUs given to a VM, from its start until its last vCPU has finished
 * (vm_job_run): a VM's APs are posted by its first vCPU, later than the
 * boot CPU hands out the next VM's. */
static bool cpu_taken[SMP_MAX_CPUS];

static bool cpu_free(unsigned c)
{
	return smp_cpu_idle(c) && !__atomic_load_n(&cpu_taken[c], __ATOMIC_ACQUIRE);
}

/* The CPUs for a VM now, in spec->run_on: the ones it asks for when they
 * are free; else free APs in order (1, 2, ...), with CPU 0 for its first
 * vCPU when the APs are too few (CPU 0 then runs that vCPU before it
 * starts another VM). CPUs in `reserved` (an earlier VM waits for them)
 * are not free. False: wait. */
static bool pick_cpus(struct vm_spec *spec, const bool reserved[SMP_MAX_CPUS])
{
	if (spec->nr_pcpus) {
		for (unsigned i = 0; i < spec->nr_pcpus; i++)
			if (!cpu_free(spec->pcpus[i]) || reserved[spec->pcpus[i]])
				return false;
		memcpy(spec->run_on, spec->pcpus, spec->nr_pcpus);
		return true;
	}
	unsigned aps = 0;
	for (unsigned c = 1; c < smp_nr_cpus; c++)
		aps += cpu_free(c) && !reserved[c];
	unsigned n = 0;
	if (aps < spec->cpus)
		spec->run_on[n++] = 0;   /* CPU 0 is always free when it picks */
	for (unsigned c = 1; c < smp_nr_cpus && n < spec->cpus; c++)
		if (cpu_free(c) && !reserved[c])
			spec->run_on[n++] = (uint8_t)c;
	return n == spec->cpus;
}

/* The boot CPU waits for an AP to finish: halted, woken by its own timer
 * every millisecond (an AP's VM may end at any time; no IPI back). */
static void wait_a_moment(void)
{
	timer_program(rdtsc() + tsc_hz() / 1000);
	asm volatile("sti; hlt; cli" ::: "memory");
	host_nmis_report();
}

struct vm_job {
	unsigned id;
	struct vm_spec spec;
	const struct lp_options *opt;
	unsigned status;
};
static struct vm_job jobs[BOOT_MAX_MODULES];

static void vm_job_run(void *arg)
{
	struct vm_job *j = arg;
	j->status = vm_run(j->id, &j->spec, j->opt);
	for (unsigned i = 0; i < j->spec.cpus; i++)   /* every vCPU has finished */
		__atomic_store_n(&cpu_taken[j->spec.run_on[i]], false, __ATOMIC_RELEASE);
	vendor_host_idle_state();   /* an AP halts in its idle loop next */
}

/* Runs VM j on the CPUs pick_cpus chose: its first vCPU on this CPU (the
 * boot CPU) to its end, or posted to an AP. Returns when it has started
 * (or ended, on CPU 0). */
static void start_vm(struct vm_job *j)
{
	for (unsigned i = 0; i < j->spec.cpus; i++)
		__atomic_store_n(&cpu_taken[j->spec.run_on[i]], true, __ATOMIC_RELEASE);
	unsigned cpu = j->spec.run_on[0];
	if (cpu == 0 || !smp_run_on(cpu, vm_job_run, j))
		vm_job_run(j);   /* an AP that does not take it: here (never seen) */
}

void guests_cpu_panicked(struct percpu *pc)
{
	bool first = vm_cpu_panicked();
	if (pc->work != vm_job_run)
		return;   /* an AP vCPU: its VM's vm_run ends the VM */
	struct vm_job *j = pc->work_arg;
	if (!first && !pc->vcpu_owned)
		kprintf("lightpath: vm%u: not run: CPU %u panicked while setting it up\n", j->id,
			pc->cpu_id);
	/* its other CPUs are done with it; this one stays taken (parked) */
	for (unsigned i = 1; i < j->spec.cpus; i++)
		__atomic_store_n(&cpu_taken[j->spec.run_on[i]], false, __ATOMIC_RELEASE);
}

/* VMs whose turn has come but whose CPUs were busy, in module order. */
static struct vm_job *waiting[BOOT_MAX_MODULES];
static unsigned nr_waiting;

/* Starts every waiting VM whose CPUs are free now, in module order. A VM
 * still waiting keeps the CPUs it is pinned to (pcpus) from the VMs after
 * it, so it starts as soon as they are free; one that is not pinned could
 * use any CPU, so it holds back every VM after it. A VM whose pinned CPU
 * is busy thus does not hold back a later VM whose CPUs are free. */
static void start_waiting(void)
{
again:;
	bool reserved[SMP_MAX_CPUS] = { false };
	for (unsigned k = 0; k < nr_waiting; k++) {
		struct vm_job *j = waiting[k];
		bool refused = !cpus_ok(j->id, &j->spec);   /* a CPU it needs panicked meanwhile */
		if (refused || pick_cpus(&j->spec, reserved)) {
			memmove(&waiting[k], &waiting[k + 1], (nr_waiting - k - 1) * sizeof(waiting[0]));
			nr_waiting--;
			if (!refused)   /* (refused: its status stays LP_STATUS_VM_FAULT) */
				start_vm(j);
			goto again;   /* (CPU 0 may have run it to its end: CPUs changed) */
		}
		if (!j->spec.nr_pcpus)
			return;
		for (unsigned i = 0; i < j->spec.nr_pcpus; i++)
			reserved[j->spec.pcpus[i]] = true;
	}
}

void guests_run_all(const struct boot_info *bi, const struct lp_options *opt,
		    struct guests_outcome *out)
{
	bool named[BOOT_MAX_MODULES] = { false }, is_config[BOOT_MAX_MODULES] = { false };
	bool config_ok[BOOT_MAX_MODULES] = { false };
	unsigned status[BOOT_MAX_MODULES];
	char err[200];

	*out = (struct guests_outcome){ .ignored = bi->nr_ignored };
	(void)cpuid_host();   /* read once here, not by VMs starting at once */
	vm_side_by_side = cpus_running() > 1;
	if (vm_side_by_side)
		kprintf("lightpath: VMs run side by side, one CPU per vCPU (CPUs 1..%u first, then CPU 0); "
			"console input goes to one VM at a time: Ctrl-\\ passes it on\n",
			smp_nr_cpus - 1);
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
		int all[3 + VMCONFIG_MODULES_MAX] = { n.kernel, n.initrd, n.disk };
		for (unsigned j = 0; j < configs[i].nr_modules; j++)
			all[3 + j] = n.mods[j];
		for (unsigned j = 0; j < 3 + configs[i].nr_modules; j++)
			if (all[j] >= 0 && !is_config[all[j]])
				named[all[j]] = true;
	}

	/* VMs start in module order, each as soon as the CPUs for it are free;
	 * one that waits for a pinned CPU lets later VMs with free CPUs start
	 * (start_waiting) */
	unsigned id = 0;
	for (unsigned i = 0; i < bi->nr_modules; i++) {
		const struct boot_module *m = &bi->modules[i];
		struct vm_job *j = &jobs[id];
		struct vm_spec *spec = &j->spec;
		if (named[i])
			continue;
		*j = (struct vm_job){ .id = id, .opt = opt, .status = LP_STATUS_VM_FAULT };
		spec->cpus = 1;
		if (is_config[i]) {
			if (!config_ok[i] || config_spec(bi, i, id, is_config, spec)) {
				status[id++] = LP_STATUS_VM_FAULT;
				continue;
			}
		} else {
			spec->name = names[i];
			spec->image_name = names[i];
			spec->image = module_data(m);
			spec->image_size = m->end - m->start;
			spec->linux_kernel = is_bzimage(spec->image, spec->image_size);
			spec->cmdline = spec->linux_kernel ? args_of(m->cmdline) : m->cmdline;
			spec->mem_mb = opt->mem_mb;
		}
		if (!cpus_ok(id, spec)) {
			status[id++] = LP_STATUS_VM_FAULT;
			continue;
		}
		status[id] = ~0u;   /* from the job, once it has ended */
		waiting[nr_waiting++] = j;
		start_waiting();
		id++;
	}
	for (start_waiting(); nr_waiting; start_waiting())
		wait_a_moment();
	for (unsigned c = 1; c < smp_nr_cpus; c++)
		while (smp_cpus[c] && !smp_cpu_parked(c) && !cpu_free(c))
			wait_a_moment();
	timer_program(0);
	/* "first" is by VM number (module order), whatever order they ended in */
	for (unsigned k = 0; k < id; k++) {
		unsigned st = status[k] == ~0u ? jobs[k].status : status[k];
		out->vms++;
		if (st && !out->nonzero++) {
			out->status = st;
			out->first_nonzero = k;
		}
	}
	if (!out->nonzero && out->ignored)
		out->status = LP_STATUS_VM_FAULT;
}
