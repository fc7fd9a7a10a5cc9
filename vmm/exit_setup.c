/* The backend's exit table, indexed by exit code at boot, and each vCPU's
 * light handlers chosen from it: by its VM's switch set (vmm/light.h) and
 * vCPU count, or the measuring wrapper (stats=cost|sites). */
#include "vmm/exit_setup.h"

#include "core/console.h"
#include "vmm/code_cache.h"
#include "vmm/exit.h"
#include "vmm/exit_cost.h"
#include "vmm/spec_ctrl.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

/* The row of each exit code below the light table's last slot. */
const struct exit_row *exit_row_index[VENDOR_EXIT_CODES - 1];

int exit_table_init(void)
{
	for (unsigned i = 0; i < vendor_exit_table_rows; i++) {
		const struct exit_row *r = &vendor_exit_table[i];
		bool past_table = r->last >= VENDOR_EXIT_CODES - 1;
		if (r->first > r->last || r->light >= LIGHT_KIND_COUNT || r->stat >= LP_EXIT_COUNT ||
		    !r->heavy || (past_table && r->light != LIGHT_NONE)) {
			kprintf("lightpath: error: exit table row %u (exit 0x%x) is malformed\n", i,
				r->first);
			return -1;
		}
		for (uint64_t c = r->first; c <= r->last && c < VENDOR_EXIT_CODES - 1; c++) {
			if (exit_row_index[c]) {
				kprintf("lightpath: error: exit 0x%lx is in two exit table rows\n", c);
				return -1;
			}
			exit_row_index[c] = r;
		}
	}
	return 0;
}

unsigned exit_switch_set(const struct lp_options *o)
{
	return (o->light ? 0 : SW_LIGHT_OFF) | (o->dr_lazy ? 0 : SW_DR_ALWAYS) |
	       (o->pmu_lazy ? 0 : SW_PMU_ALWAYS) | (o->msr_lazy ? 0 : SW_MSR_ALWAYS) |
	       (o->io_fast ? 0 : SW_IO_EMULATE) | vendor_switch_bits(o);
}

light_handler_fn *exit_light_handler(const struct vcpu *v, unsigned sw, const struct exit_row *r)
{
	return v->cost ? exit_cost_light : exit_light_handler_real(v, sw, r);
}

void exit_light_table_fill(struct vcpu *v, unsigned sw)
{
	v->light_sw = sw;   /* what the generic handlers test */
	if (v->cost)
		v->cost->sw = sw;   /* the handlers exit_cost_light measures */
	for (unsigned c = 0; c < VENDOR_EXIT_CODES; c++)
		v->light_table[c] = exit_light_handler(v, sw, c < VENDOR_EXIT_CODES - 1 ?
						       exit_row_of(c) : 0);
}

void exit_vcpu_init(struct vcpu *v)
{
	v->entry_variant = spec_entry_variant(v->vm->opt);
	code_cache_reset(v);
	exit_cpuid_cache_init(v);
	exit_light_table_fill(v, exit_switch_set(v->vm->opt));
}

/* What a VM of several vCPUs runs instead of each kind (LIGHT_KINDS). */
static const enum light_kind light_kind_smp[LIGHT_KIND_COUNT] = {
#define LIGHT_SMP_ROW(k, name, fn, smp, ...) [k] = smp,
	LIGHT_KINDS(LIGHT_SMP_ROW, _)
#undef LIGHT_SMP_ROW
};

light_handler_fn *exit_light_handler_real(const struct vcpu *v, unsigned sw,
					   const struct exit_row *r)
{
	enum light_kind k = r ? (enum light_kind)r->light : LIGHT_NONE;
	return exit_light_set_handler(sw, v->vm->nr_vcpus > 1 ? light_kind_smp[k] : k);
}
