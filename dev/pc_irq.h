/* The PC interrupt wiring between the device models, as pure glue the
 * hypervisor calls (one vCPU):
 *
 *   devices --irq_line_set--> pc_irq_set --> 8259 (ISA IRQ 0-15)
 *                                            \-> I/O APIC (GSI; IRQ0 -> GSI 2,
 *                                                the MADT's override)
 *   I/O APIC --pc_ioapic_msg--> the VM's APIC bus --> local APICs (lapic_msg_receive)
 *   local APIC EOI of a level vector --pc_lapic_eoi--> ioapic_eoi
 *   before entering the guest, when it can take an interrupt:
 *   pc_intr_take() -> the vector to inject, acknowledged; when it cannot:
 *   pc_intr_pending() -> whether one waits.
 *
 * irq_line_set() must call pc_irq_set() at once (not just record the level):
 * the PIT sends IRQ0 as a pulse (high then low) and the edge is latched by
 * the 8259 and the I/O APIC during the call. */
#ifndef DEV_PC_IRQ_H
#define DEV_PC_IRQ_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/ioapic.h"
#include "dev/lapic.h"
#include "dev/pic8259.h"

/* The interrupt controllers as a PC BIOS hands them to an OS, the state
 * every VM starts in (call after the three *_init): the 8259s initialised
 * with vector bases 0x08/0x70 and every IRQ masked but the cascade
 * (pic_firmware_setup), the local APIC software-enabled with LINT0 ExtINT
 * and LINT1 NMI (lapic_firmware_setup), and every I/O APIC pin masked (its
 * reset state; SeaBIOS does not program it). A multiboot guest that never
 * programs them gets no device interrupt at all, never one on an exception
 * vector. */
void pc_irq_firmware_setup(struct pic8259 *pic, struct ioapic *io, struct lapic *a);

/* A device drives ISA IRQ / GSI `line` (0-23). IRQ2 is the cascade and
 * cannot be driven. */
void pc_irq_set(struct pic8259 *pic, struct ioapic *io, unsigned line, bool level);

/* irq_line_edge_state for ISA IRQ / GSI `line`: IRQ_EDGE_MASKED when neither
 * the 8259 (unmasked there and, for the slave, the cascade; its INTR let
 * through by LINT0) nor the I/O APIC (pin unmasked) passes it on;
 * IRQ_EDGE_WAITING when a path that does still holds the last edge (the
 * 8259's IRR bit, the local APIC's IRR bit of the pin's vector, or a
 * pending NMI for a pin in NMI mode); else IRQ_EDGE_FREE. */
enum irq_edge_state pc_irq_edge_state(const struct pic8259 *pic, const struct ioapic *io,
				      const struct lapic *a, unsigned line);

/* The I/O APIC's message as the APIC bus carries it (no shorthand; the
 * delivery modes are numbered alike). */
struct apic_msg pc_ioapic_msg(const struct ioapic_irq *irq);

/* ioapic_deliver_fn for an I/O APIC with one local APIC on its bus
 * (ioapic_set_deliver(io, pc_ioapic_deliver, lapic)): a message addressed to it
 * goes to lapic_msg_receive() (fixed and lowest priority to IRR, NMI to
 * nmi_pending; ExtINT is the 8259's business, pc_intr_pending). A VM's
 * platform routes them over its APIC bus instead (vmm/apic_bus.c). */
void pc_ioapic_deliver(void *lapic, const struct ioapic_irq *irq);

/* lapic_eoi_fn for lapic_set_eoi_hook(lapic, pc_lapic_eoi, ioapic). */
void pc_lapic_eoi(void *ioapic, uint8_t vector);

/* The vector to deliver next, or -1: the local APIC's highest deliverable
 * vector (none where the CPU delivers them itself, lapic_cpu_delivers()),
 * else the 8259's INTR when lapic_pic_intr_allowed(). *from_pic says which
 * it was. Whether the guest can take it now (RFLAGS.IF, the interrupt
 * shadow) is the hypervisor's check. */
int pc_intr_pending(struct lapic *a, struct pic8259 *pic, bool *from_pic);

/* The guest takes the interrupt that pc_intr_pending() would return, in
 * one pass: LAPIC IRR -> ISR, or the 8259's INTA cycle. Returns the vector
 * to inject (for the 8259 it may differ from what was pending: a spurious
 * IRQ7/15 if the request went away), or -1 if none is deliverable. */
int pc_pic_take(struct lapic *a, struct pic8259 *pic);   /* its 8259 half */
static inline int pc_intr_take(struct lapic *a, struct pic8259 *pic)
{
	/* inline: the injection path calls it once per interrupt */
	if (!lapic_cpu_delivers(a)) {
		int v = lapic_take_highest(a);
		if (v >= 0)
			return v;
	}
	return pc_pic_take(a, pic);
}

#endif
