/* The console shared by the VMs (vmm/vm_console.c). */
#ifndef VMM_VM_CONSOLE_H
#define VMM_VM_CONSOLE_H

#include <stdbool.h>

#include "vmm/vm.h"

/* One byte of the guest's serial output to the console (the lines of VMs
 * side by side kept apart). Devices reach it through dev_console_putc. */
void vm_console_putc(struct vm *vm, char c);
/* Console with VMs side by side: each VM's output is held until its line
 * ends; an unfinished line that waited 100 ms goes out when the VM runs
 * alone (vm_console_idle, called from its console poll);
 * console input goes to one running VM at a time (the first to start, then
 * the next in VM order when it ends), vm_console_switch passes it on to the
 * next running VM. vm_side_by_side: VMs run on several CPUs at once
 * (vmm/guests.c), which enables the switch key and its lines. */
void vm_console_idle(struct vm *vm);
bool vm_console_input_mine(const struct vm *vm);
void vm_console_switch(struct vm *vm);
extern bool vm_side_by_side;

/* The VM's start and end as the console sees them: input goes to a running
 * VM only, and passes on when the one that has it ends. */
void vm_running_add(struct vm *vm);
void vm_running_remove(struct vm *vm);
/* Writes what the VM's output held back (console lock held): its last
 * unfinished line, at its end. */
void vm_line_flush(struct vm *vm);

#endif
