/* The interrupt a vCPU takes next (vmm/platform_intr.c): from the test
 * facility, its local APIC or the 8259s; its NMI; CR8, its TPR. */
#ifndef VMM_PLATFORM_INTR_H
#define VMM_PLATFORM_INTR_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

/* Whether any interrupt is requested at all (LP_HC_RAISE_IRQ/LP_HC_TIMER,
 * the local APIC's IRR unless the CPU delivers those itself, an unmasked
 * 8259 request), before the priority rules: false is the common case of a
 * heavy exit, answered cheaply. */
bool platform_intr_requested(const struct vcpu *v);
/* The next interrupt vector the vCPU should take, or -1; *from_pic / *test
 * say where it comes from (the 8259, or LP_HC_RAISE_IRQ/LP_HC_TIMER). */
int platform_intr_pending(struct vcpu *v, bool *from_pic, bool *test);
/* Edges the PIT and HPET held back while their last interrupt waited may
 * go now, if it was taken (platform_intr_take does it for what it injects;
 * with virtual-interrupt delivery the CPU takes interrupts unseen). */
void platform_irq_retry(struct vcpu *v);
/* The guest takes the interrupt platform_intr_pending would return, now:
 * acknowledged at its source, its vector returned (-1: none deliverable). */
int platform_intr_take(struct vcpu *v);

/* An NMI waits for the vCPU: an ICR write with delivery mode NMI (xAPIC or
 * x2APIC), or an I/O APIC pin in NMI mode. One is latched at most, as on the
 * CPU: NMIs that arrive while one waits are one NMI. Whoever sets it sets
 * v->pending too, like for interrupts. */
static inline bool platform_nmi_pending(const struct vcpu *v)
{
	return v->lapic.nmi_pending;
}

/* Could a device raise an NMI (an unmasked I/O APIC pin in NMI mode)? */
bool platform_nmi_source(struct vcpu *v);

/* The guest takes the NMI now. */
static inline void platform_nmi_ack(struct vcpu *v)
{
	v->lapic.nmi_pending = false;
}

/* MOV to/from CR8, which is the local APIC's TPR[7:4] (Intel SDM vol. 3
 * 10.8.6.1, AMD APM vol. 2 16.6.4): both backends intercept it and come here.
 * A write with any of bits 63:4 set returns negative (#GP), changes nothing. */
int platform_cr8_write(struct vcpu *v, uint64_t val);
uint64_t platform_cr8_read(struct vcpu *v);

#endif
