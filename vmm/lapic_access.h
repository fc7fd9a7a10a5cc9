/* The local APICs' MSRs and MMIO page as the guest reaches them
 * (vmm/lapic_access.c). */
#ifndef VMM_LAPIC_ACCESS_H
#define VMM_LAPIC_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

/* Registers the local APIC's MSRs (x2APIC, IA32_APIC_BASE,
 * IA32_TSC_DEADLINE) for a VM of one vCPU or of several. */
void lapic_register_msrs(struct vm *vm);

/* The platform's wrappers of the APICs' MMIO callbacks (the device table's
 * `one` and `several`): the I/O APIC's page (a write asks for the hazard
 * check), the local APIC's page in a VM of one vCPU (`dev` is its vCPU's
 * local APIC; the EOI straight to the model), and in a VM of several
 * (the accessing vCPU's; on the light path IO_NEEDS_LOCK for all but a
 * fixed IPI and an edge EOI). */
int ioapic_mmio_checked(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
int lapic_mmio_checked(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
int lapic_mmio_shared(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

#endif
