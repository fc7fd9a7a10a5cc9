/* The VM's timers (vmm/vm_timers.c): devices arm them with vm_timer_arm
 * (dev/device.h); these run, reprogram and cancel them for the VM. */
#ifndef VMM_VM_TIMERS_H
#define VMM_VM_TIMERS_H

#include <stdbool.h>

#include "vmm/vm.h"

/* At the VM's creation, before any device arms a timer: the minimum period
 * and timer=lead's state. */
void vm_timers_init(struct vm *vm);
/* Fires every armed timer whose deadline has passed and reprograms the host
 * timer for the next one. Returns true if any fired. */
bool vm_timers_run(struct vm *vm);
/* Programs the host timer for the next deadline (after the VM's clock
 * changed its offset or stopped polling). */
void vm_timers_reprogram(struct vm *vm);
/* Disarms every timer of the VM (its end). */
void vm_timers_cancel_all(struct vm *vm);
/* Before the vCPU enters, after the injection: with a timer fired ahead of
 * its deadline (timer=lead), wait until the VM's time reaches it. */
void vm_timer_lead_wait_slow(struct vm *vm);
/* The lead's line of the VM's statistics (none if no timer fired early). */
void vm_timer_lead_print_stats(const struct vm *vm);
static inline void vm_timer_lead_wait(struct vm *vm)
{
	if (__builtin_expect(vm->timer_lead.release != 0, 0))
		vm_timer_lead_wait_slow(vm);
}

#endif
