/* What the host (core/: boot, CPUs, console, timers) asks of the hypervisor
 * proper (vmm/, which implements these in vmm/hv.c). core/ includes no
 * vmm/ header: these calls are the whole interface, each at the point of
 * the boot where virtualization comes in. */
#ifndef CORE_HV_H
#define CORE_HV_H

struct boot_info;
struct lp_options;
struct percpu;

/* The backend's name for the banner: "AMD SVM" or "Intel VT-x". */
const char *hv_backend_name(void);

/* On the boot CPU, before the host timer: checks the CPU, turns
 * virtualization on and checks the backend's exit table against its
 * intercepts. Negative (after one clear line) when lightpath cannot run. */
int hv_boot_cpu_init(const struct lp_options *opt);
/* On the boot CPU, once its timer runs and before the APs start: the
 * speculation hygiene of the exit path (spec=). */
void hv_boot_cpu_ready(const struct lp_options *opt);

/* On the boot CPU, before AP `pc` is started: the pages its
 * virtualization needs (pc->virt_pa); negative when out of memory. */
int hv_ap_alloc(struct percpu *pc);
/* On the AP itself, once its timer is set up: its speculation controls,
 * and virtualization on. Returns NULL, or why it could not (the boot CPU
 * prints it). */
const char *hv_ap_init(struct percpu *pc, const struct lp_options *opt);
/* AP `pc` panicked inside its work item (core/smp.c smp_ap_panicked): the
 * VM whose vCPU it ran stops with one line; on that CPU. */
void hv_ap_panicked(struct percpu *pc);

/* Runs every VM the boot modules describe, one after the other, and prints
 * the last line (the status and the rule that chose it). Returns the status
 * to power off with. */
unsigned hv_run_guests(const struct boot_info *bi, const struct lp_options *opt);

#endif
