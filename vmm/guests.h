/* Turns the boot modules into VMs and runs them, one after the other. A
 * module that starts with the line "# lightpath vm" is a VM description
 * (vmm/vmconfig.h) naming other modules by their file name; every other
 * module not named by a description is a guest of its own (a multiboot ELF
 * kernel, or a Linux bzImage whose module arguments are its command line). */
#ifndef VMM_GUESTS_H
#define VMM_GUESTS_H

#include "core/bootinfo.h"
#include "core/options.h"

/* Returns the end status of the last VM (what lightpath powers off with). */
unsigned guests_run_all(const struct boot_info *bi, const struct lp_options *opt);

#endif
