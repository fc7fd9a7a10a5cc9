/* The PC platform every VM gets (vmm/platform.c): its devices created and
 * wired on the VM's ports, MMIO pages and interrupt lines. The rest of the PC
 * is in files of their own: the services devices reach (vmm/dev_host.c), the
 * APIC bus, the local APICs' MSRs and page (vmm/lapic_access.c), the
 * interrupt a vCPU takes (vmm/platform_intr.h), virtio (vmm/pc_virtio.h) and
 * host console input (vmm/console_input.h). What the firmware leaves in
 * memory (ACPI tables, BIOS data area) is vmm/firmware.h's. */
#ifndef VMM_PLATFORM_H
#define VMM_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

/* Allocates the VM's platform object (vm->pc, struct dev_host): false when
 * out of memory. platform_free gives it back (nothing if there is none). */
bool platform_alloc(struct vm *vm);
void platform_free(struct vm *vm);
/* Creates and registers every device of the platform. Call once the VM has
 * its RAM and its clock. */
void platform_create(struct vm *vm);
/* At the VM's start: the host console's input poll (a periodic VM timer)
 * and the network link. */
void platform_start(struct vm *vm);

#endif
