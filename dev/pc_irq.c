/* PC interrupt routing glue. */
#include "dev/pc_irq.h"

void pc_irq_firmware_setup(struct pic8259 *pic, struct ioapic *io, struct lapic *a)
{
	pic_firmware_setup(pic);
	lapic_firmware_setup(a);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		ioapic_write_reg(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin + 1), 0);
		ioapic_write_reg(io, (uint8_t)(IOAPIC_REG_REDTBL + 2 * pin), (uint32_t)IOAPIC_RTE_MASKED);
	}
}

void pc_irq_set(struct pic8259 *pic, struct ioapic *io, unsigned line, bool level)
{
	if (line == 2 || line >= IOAPIC_PINS)
		return;
	if (line < 16)
		pic_set_irq(pic, line, level);
	ioapic_set_irq(io, line == 0 ? 2 : line, level);
}

enum irq_edge_state pc_irq_edge_state(const struct pic8259 *pic, const struct ioapic *io,
				      const struct lapic *a, unsigned line)
{
	bool open = false, waiting = false;
	if (line < 16 && line != 2 && lapic_pic_intr_allowed(a)) {
		const struct pic_chip *c = &pic->chip[line >> 3];
		uint8_t bit = (uint8_t)(1u << (line & 7));
		if (!(c->imr & bit) && (line < 8 || !(pic->chip[0].imr & 0x04))) {
			open = true;
			waiting = c->irr & bit;
		}
	}
	unsigned pin = line == 0 ? 2 : line;
	if (pin < IOAPIC_PINS && !(io->rte[pin] & IOAPIC_RTE_MASKED)) {
		uint64_t e = io->rte[pin];
		unsigned vec = (unsigned)(e & IOAPIC_RTE_VECTOR);
		switch (IOAPIC_RTE_DELMODE(e)) {
		case IOAPIC_DM_FIXED:
		case IOAPIC_DM_LOWEST:
			open = true;
			waiting |= lapic_vec_test(a, LAPIC_IRR, vec);
			break;
		case IOAPIC_DM_NMI:
			open = true;
			waiting |= a->nmi_pending;
			break;
		default:   /* SMI, INIT, ExtINT: nothing this model delivers */
			break;
		}
	}
	return !open ? IRQ_EDGE_MASKED : waiting ? IRQ_EDGE_WAITING : IRQ_EDGE_FREE;
}

_Static_assert(IOAPIC_DM_FIXED == LAPIC_DM_FIXED && IOAPIC_DM_LOWEST == LAPIC_DM_LOWEST &&
	       IOAPIC_DM_SMI == LAPIC_DM_SMI && IOAPIC_DM_NMI == LAPIC_DM_NMI &&
	       IOAPIC_DM_INIT == LAPIC_DM_INIT && IOAPIC_DM_EXTINT == LAPIC_DM_EXTINT,
	       "one numbering of delivery modes on the APIC bus");

struct apic_msg pc_ioapic_msg(const struct ioapic_irq *irq)
{
	return (struct apic_msg){
		.dest = irq->dest,
		.vector = irq->vector,
		.delivery_mode = irq->delivery_mode,
		.shorthand = LAPIC_SH_NONE,
		.logical = irq->logical,
		.level = irq->level,
	};
}

void pc_ioapic_deliver(void *lapic, const struct ioapic_irq *irq)
{
	struct lapic *a = lapic;
	struct apic_msg m = pc_ioapic_msg(irq);
	if (lapic_msg_targets(a, 0, &m))
		lapic_msg_receive(a, &m);
}

void pc_lapic_eoi(void *ioapic, uint8_t vector)
{
	ioapic_eoi(ioapic, vector);
}

int pc_intr_pending(struct lapic *a, struct pic8259 *pic, bool *from_pic)
{
	/* (with virtual-interrupt delivery the CPU takes the APIC's own) */
	int v = lapic_cpu_delivers(a) ? -1 : lapic_highest_pending(a);
	*from_pic = false;
	if (v >= 0)
		return v;
	if (!lapic_pic_intr_allowed(a))
		return -1;
	v = pic_pending_vector(pic);
	*from_pic = v >= 0;
	return v;
}

int pc_pic_take(struct lapic *a, struct pic8259 *pic)
{
	if (!lapic_pic_intr_allowed(a) || pic_pending_vector(pic) < 0)
		return -1;
	return pic_ack(pic);
}
