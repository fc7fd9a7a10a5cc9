#include "vmm/exit_cost.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/pmem.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/exit_setup.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vm.h"

bool exit_cost_alloc(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	if (!o->stats_cost && !o->stats_sites)
		return true;
	struct exit_cost *c = (struct exit_cost *)(uintptr_t)pmem_alloc(sizeof(*c), 64);
	if (!c)
		return false;
	memset(c, 0, sizeof(*c));
	c->cost = o->stats_cost;
	c->sites = o->stats_sites;
	c->t_start = rdtsc();
	v->cost = c;
	return true;
}

void exit_cost_free(struct vcpu *v)
{
	if (v->cost)
		pmem_free((uint64_t)(uintptr_t)v->cost, sizeof(*v->cost));
	v->cost = 0;
}

static unsigned log2_bucket(uint64_t ticks)
{
	unsigned b = ticks ? 63 - (unsigned)__builtin_clzll(ticks) : 0;
	return b < COST_BUCKETS ? b : COST_BUCKETS - 1;
}

static void cost_record(struct exit_cost *c, unsigned reason, uint64_t ticks)
{
	struct exit_cost_reason *r = &c->r[reason];
	if (!r->n || ticks < r->min)
		r->min = ticks;
	if (ticks > r->max)
		r->max = ticks;
	r->n++;
	r->sum += ticks;
	r->hist[log2_bucket(ticks)]++;
}

static void site_count(struct exit_site *s, uint64_t rip)
{
	struct exit_site *least = &s[0];
	for (unsigned i = 0; i < COST_SITES; i++) {
		if (s[i].n && s[i].rip == rip) {
			s[i].n++;
			return;
		}
		if (s[i].n < least->n)
			least = &s[i];
	}
	/* a free slot, or the least counted one's count plus one */
	least->err = least->n;
	least->n++;
	least->rip = rip;
}

struct vcpu *exit_cost_light(struct vcpu *v)
{
	struct exit_cost *c = v->cost;
	const struct exit_row *row = exit_row_of(vendor_exit_code(v));
	unsigned reason = row ? row->stat : LP_EXIT_OTHER;
	uint64_t rip = c->sites ? vendor_guest_rip(v) : 0;
	uint64_t writes = v->stats.exits[LP_EXIT_MSR_WRITE];
	light_handler_fn *handler = exit_light_handler_real(v, c->sw, row);
	uint64_t t0 = rdtsc();   /* the bookkeeping above and below is outside */
	struct vcpu *ret = handler(v);
	uint64_t t1 = rdtsc();
	if (v->stats.exits[LP_EXIT_MSR_WRITE] != writes)
		reason = LP_EXIT_MSR_WRITE;   /* SVM: RDMSR and WRMSR share an exit code */
	if (c->sites)
		site_count(c->site[reason], rip);
	if (!c->cost)
		return ret;
	if (ret) {
		cost_record(c, reason, t1 - t0);
	} else {
		c->open = true;
		c->open_reason = reason;
		c->open_t0 = t0;
	}
	return ret;
}

void exit_cost_heavy_done(struct vcpu *v)
{
	struct exit_cost *c = v->cost;
	if (c->open) {
		c->open = false;
		cost_record(c, c->open_reason, rdtsc() - c->open_t0);
	}
}

/* The VM's sites of one reason, all vCPUs' merged, most exits first. */
static unsigned sites_merged(const struct vm *vm, unsigned reason, struct exit_site *out,
			     unsigned max)
{
	unsigned n = 0;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		const struct exit_site *s = vm->vcpus[i]->cost->site[reason];
		for (unsigned j = 0; j < COST_SITES; j++) {
			if (!s[j].n)
				continue;
			unsigned k = 0;
			while (k < n && out[k].rip != s[j].rip)
				k++;
			if (k == n) {
				if (n == max)
					continue;
				out[n++] = (struct exit_site){ s[j].rip, 0, 0 };
			}
			out[k].n += s[j].n;
			out[k].err += s[j].err;
		}
	}
	for (unsigned i = 1; i < n; i++)   /* insertion sort: a few dozen at most */
		for (unsigned k = i; k > 0 && out[k].n > out[k - 1].n; k--) {
			struct exit_site t = out[k];
			out[k] = out[k - 1];
			out[k - 1] = t;
		}
	return n;
}

#define SITES_SHOWN 4

/* What the exits took of the time since the VM started (vCPU 0's): with
 * QEMU -icount, the hypervisor's share of the instructions executed (the
 * exit stubs aside). */
static void print_cost_total(const struct vm *vm)
{
	uint64_t spent = 0, ran = rdtsc() - vm->vcpus[0]->cost->t_start;
	for (unsigned j = 0; j < vm->nr_vcpus; j++)
		for (unsigned i = 0; i < LP_EXIT_COUNT; i++)
			spent += vm->vcpus[j]->cost->r[i].sum;
	unsigned permille = ran ? (unsigned)(spent * 1000 / ran) : 0;
	kprintf("  cost total: %lu ticks in exit handling of %lu since the VM started (%u.%u%%%s)\n",
		spent, ran, permille / 10, permille % 10,
		vm->nr_vcpus > 1 ? ", all vCPUs' handling against vCPU 0's time" : "");
}

static void print_cost(const struct vm *vm)
{
	kprintf("  cost: TSC ticks per exit from its handler's start to the guest's resumption, the "
		"exit stub outside (instructions under QEMU -icount or Bochs)\n");
	kprintf("  %-16s %8s %8s %8s %8s   %s\n", "reason", "exits", "min", "mean", "max",
		"log2 histogram (k:exits, k = floor(log2 ticks))");
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		struct exit_cost_reason sum = { 0 };
		for (unsigned j = 0; j < vm->nr_vcpus; j++) {
			const struct exit_cost_reason *r = &vm->vcpus[j]->cost->r[i];
			if (!r->n)
				continue;
			if (!sum.n || r->min < sum.min)
				sum.min = r->min;
			if (r->max > sum.max)
				sum.max = r->max;
			sum.n += r->n;
			sum.sum += r->sum;
			for (unsigned b = 0; b < COST_BUCKETS; b++)
				sum.hist[b] += r->hist[b];
		}
		if (!sum.n)
			continue;
		char hist[COST_BUCKETS * 24];
		size_t used = 0;
		hist[0] = '\0';
		for (unsigned b = 0; b < COST_BUCKETS; b++) {
			if (!sum.hist[b])
				continue;
			int w = snprintf(hist + used, sizeof(hist) - used, "%s%u:%lu", used ? " " : "", b,
					 sum.hist[b]);
			if (w < 0 || (size_t)w >= sizeof(hist) - used)
				break;
			used += (size_t)w;
		}
		kprintf("  %-16s %8lu %8lu %8lu %8lu   %s\n", exit_reason_name(i), sum.n, sum.min,
			sum.sum / sum.n, sum.max, hist);
	}
	print_cost_total(vm);
}

static void print_sites(const struct vm *vm)
{
	kprintf("  sites: the guest RIPs that exited most, per reason (count: exits, at most "
		"+err too high)\n");
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		struct exit_site s[COST_SITES * 4];   /* several vCPUs: the first 32 RIPs met */
		unsigned n = sites_merged(vm, i, s, sizeof(s) / sizeof(s[0]));
		if (!n)
			continue;
		char line[SITES_SHOWN * 48];
		size_t used = 0;
		line[0] = '\0';
		for (unsigned k = 0; k < n && k < SITES_SHOWN; k++) {
			int w = s[k].err ? snprintf(line + used, sizeof(line) - used, "  0x%lx: %lu (+%lu)",
						    s[k].rip, s[k].n, s[k].err)
					 : snprintf(line + used, sizeof(line) - used, "  0x%lx: %lu",
						    s[k].rip, s[k].n);
			if (w < 0 || (size_t)w >= sizeof(line) - used)
				break;
			used += (size_t)w;
		}
		kprintf("  %-16s%s\n", exit_reason_name(i), line);
	}
}

void exit_cost_print(struct vm *vm)
{
	const struct exit_cost *c = vm->vcpu->cost;
	if (!c)
		return;
	if (c->cost)
		print_cost(vm);
	if (c->sites)
		print_sites(vm);
}
