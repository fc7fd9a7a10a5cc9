/* The PC platform every VM gets (DESIGN.md, "What a guest sees"): the
 * devices on their ports and MMIO pages, interrupt routing from device lines
 * through the 8259s and the I/O APIC to the vCPU's local APIC, the local
 * APIC's MSRs, and the host-console input poll. What the firmware leaves in
 * memory (ACPI tables, BIOS data area) is vmm/firmware.h's. */
#ifndef VMM_PLATFORM_H
#define VMM_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>

struct vm;
struct vcpu;

/* Registers every device of the platform. Call once the VM has its RAM. */
void platform_create(struct vm *vm);
/* Starts polling the host console for input (a periodic VM timer). */
void platform_start(struct vm *vm);

/* The next interrupt vector the vCPU should take, or -1; *from_pic / *test
 * say where it comes from (the 8259, or LP_HC_RAISE_IRQ/LP_HC_TIMER). */
int platform_intr_pending(struct vcpu *v, bool *from_pic, bool *test);
/* The guest takes it now: returns the vector to inject. */
int platform_intr_ack(struct vcpu *v, int vector, bool from_pic, bool test);

#endif
