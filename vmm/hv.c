/* The hypervisor's entry points for the host (core/hv.h). */
#include "core/hv.h"

#include "core/console.h"
#include "lib/printf.h"
#include "vmm/exit_setup.h"      /* exit_table_init */
#include "vmm/exit_table.h"
#include "vmm/guests.h"
#include "vmm/spec_ctrl.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor_setup.h"

const char *hv_backend_name(void)
{
	return vendor_name();
}

/* Every exit the backend's intercepts can produce has a row in its exit
 * table, or the backend is refused: an exit without one would stop a VM
 * only when a guest first causes it. Once, at boot; nothing of it is on
 * the exit path. */
static int exit_table_check(void)
{
	struct exit_span spans[EXIT_SPANS_MAX];
	unsigned n = vendor_intercept_spans(spans, EXIT_SPANS_MAX);
	if (n > EXIT_SPANS_MAX) {
		kprintf("lightpath: error: the %s backend's intercepts make %u exit spans, more "
			"than the %u the exit table check takes (EXIT_SPANS_MAX)\n", vendor_name(), n,
			EXIT_SPANS_MAX);
		return -1;
	}
	uint32_t code;
	const struct exit_span *s =
		exit_table_missing(vendor_exit_table, vendor_exit_table_rows, spans, n, &code);
	if (!s)
		return 0;
	kprintf("lightpath: error: the %s backend intercepts exit 0x%x (%s) but its exit table "
		"has no row for it; refusing to run\n", vendor_name(), code, s->intercept);
	return -1;
}

int hv_boot_cpu_init(const struct lp_options *opt)
{
	if (vendor_cpu_init(opt) < 0 || exit_table_init() < 0 || exit_table_check() < 0)
		return -1;
	return 0;
}

void hv_boot_cpu_ready(const struct lp_options *opt)
{
	spec_init(opt);
}

int hv_ap_alloc(struct percpu *pc)
{
	return vendor_cpu_alloc(pc);
}

const char *hv_ap_init(struct percpu *pc, const struct lp_options *opt)
{
	spec_init_ap(opt);
	return vendor_cpu_virt_on(pc);
}

void hv_ap_panicked(struct percpu *pc)
{
	guests_cpu_panicked(pc);
}

/* The last line: the status and the rule that chose it (guests.h). */
static void report_outcome(const struct guests_outcome *end)
{
	char why[128], clamp[80] = "";
	if (end->nonzero)
		snprintf(why, sizeof(why), "the first non-zero status, vm%u's; VMs that did not end "
			 "with 0: %u of %u%s", end->first_nonzero, end->nonzero, end->vms,
			 end->ignored ? "; modules were ignored" : "");
	else if (end->ignored)
		snprintf(why, sizeof(why), "every VM ended with status 0, but %u module%s ignored",
			 end->ignored, end->ignored == 1 ? " was" : "s were");
	else
		snprintf(why, sizeof(why), "every VM ended with status 0");
	if (power_off_status(end->status) != end->status)
		snprintf(clamp, sizeof(clamp), "; passed on as %u, the largest QEMU's exit code carries",
			 power_off_status(end->status));
	kprintf("lightpath: all VMs ended; powering off with status %u (%s%s)\n", end->status, why,
		clamp);
}

unsigned hv_run_guests(const struct boot_info *bi, const struct lp_options *opt)
{
	struct guests_outcome end;
	guests_run_all(bi, opt, &end);
	report_outcome(&end);
	return end.status;
}
