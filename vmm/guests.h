/* Turns the boot modules into VMs and runs them, one after the other. A
 * module that starts with the line "# lightpath vm" is a VM description
 * (vmm/vmconfig.h) naming other modules by their file name; every other
 * module not named by a description is a guest of its own (a multiboot ELF
 * kernel, or a Linux bzImage whose module arguments are its command line).
 *
 * Every module is used or reported with one line: a description that names
 * a description (itself included) as its kernel, initrd or one of its
 * modules is refused, and modules beyond BOOT_MAX_MODULES are listed as
 * ignored. A multiboot kernel gets the description's initrd and modules =
 * entries as its multiboot modules. */
#ifndef VMM_GUESTS_H
#define VMM_GUESTS_H

#include "core/bootinfo.h"
#include "core/options.h"

/* How the VMs of one boot ended. `status` is what lightpath powers off
 * with: 0 only if every VM ended with status 0 and no module was ignored;
 * otherwise the first non-zero status in module order (a VM that could not
 * be started counts as LP_STATUS_VM_FAULT or LP_STATUS_HV_ERROR, and ignored
 * modules, which come last, as LP_STATUS_VM_FAULT). */
struct guests_outcome {
	unsigned status;
	unsigned vms;            /* VMs run or refused (vm0 .. vmN-1) */
	unsigned nonzero;        /* of those, how many did not end with status 0 */
	unsigned first_nonzero;  /* the VM `status` comes from, if nonzero > 0 */
	unsigned ignored;        /* modules beyond BOOT_MAX_MODULES */
};

void guests_run_all(const struct boot_info *bi, const struct lp_options *opt,
		    struct guests_outcome *out);

struct percpu;
/* AP `pc` panicked (core/smp.c smp_ap_panicked) inside its work item: the
 * VM whose vCPU it ran is stopped with one line and its other vCPUs end;
 * if the CPU ran the VM's first vCPU, the VM's other CPUs are given back
 * (the VM's memory is not freed: the parked CPU may still hold its state).
 * On that CPU, before it halts for good. */
void guests_cpu_panicked(struct percpu *pc);

#endif
