/* Host console input for a VM (vmm/console_input.c). */
#ifndef VMM_CONSOLE_INPUT_H
#define VMM_CONSOLE_INPUT_H

#include "vmm/vm.h"

/* Starts polling the host console for the VM (a periodic VM timer). */
void console_input_start(struct vm *vm);

#endif
