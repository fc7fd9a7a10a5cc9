/* 8259A pair with the PC cascade, after the 8259A data sheet. */
#include "dev/pic8259.h"

#include "lib/string.h"

static void chip_reset(struct pic_chip *c)
{
	uint8_t elcr = c->elcr, elcr_mask = c->elcr_mask;
	bool master = c->is_master;
	memset(c, 0, sizeof(*c));
	c->elcr = elcr;
	c->elcr_mask = elcr_mask;
	c->is_master = master;
}

void pic_init(void *opaque, struct dev_host *h)
{
	struct pic8259 *pic = opaque;
	(void)h;
	memset(pic, 0, sizeof(*pic));
	pic->chip[0].is_master = true;
	pic->chip[0].elcr_mask = PIC_ELCR_MASK_MASTER;
	pic->chip[1].elcr_mask = PIC_ELCR_MASK_SLAVE;
	chip_reset(&pic->chip[0]);
	chip_reset(&pic->chip[1]);
}

const struct dev_desc pic8259_desc = {
	.name = "pic8259",
	DEV_RANGES(
		{ .base = PIC_MASTER_BASE, .len = PIC_PORTS, .fn = pic_io,
		  .name = "pic-master", .light = true },
		{ .base = PIC_SLAVE_BASE, .len = PIC_PORTS, .fn = pic_io,
		  .name = "pic-slave", .light = true },
		{ .base = PIC_ELCR_BASE, .len = PIC_ELCR_PORTS, .fn = pic_elcr_io,
		  .name = "pic-elcr", .light = true }),
	.init = pic_init,
};

/* Priority 0 is the highest; returns 8 if mask is empty. */
static unsigned get_priority(const struct pic_chip *c, uint8_t mask)
{
	if (!mask)
		return 8;
	unsigned p = 0;
	while (!(mask & (1u << ((p + c->priority_add) & 7))))
		p++;
	return p;
}

/* The IRQ (0-7) this chip would raise INTR for, or -1. */
static int chip_get_irq(const struct pic_chip *c)
{
	unsigned p = get_priority(c, c->irr & ~c->imr);
	if (p == 8)
		return -1;
	/* What is in service blocks equal and lower priorities. In special
	 * mask mode masked in-service levels do not; in special fully nested
	 * mode the master lets a slave interrupt nest over IRQ2 in service. */
	uint8_t in_service = c->isr;
	if (c->special_mask)
		in_service &= ~c->imr;
	if (c->special_fully_nested && c->is_master)
		in_service &= ~(1u << 2);
	unsigned cur = get_priority(c, in_service);
	if (p < cur)
		return (int)((p + c->priority_add) & 7);
	return -1;
}

static void chip_set_line(struct pic_chip *c, unsigned irq, bool level)
{
	uint8_t bit = (uint8_t)(1u << irq);
	if (c->elcr & bit) {
		if (level) {
			c->irr |= bit;
			c->last_irr |= bit;
		} else {
			c->irr &= ~bit;
			c->last_irr &= ~bit;
		}
	} else if (level) {
		if (!(c->last_irr & bit))
			c->irr |= bit;
		c->last_irr |= bit;
	} else {
		c->last_irr &= ~bit;
	}
}

/* The slave's INTR output is the master's IRQ2 input. It is taken as a
 * level, not an edge: the master's IRR bit 2 is the slave's output now, so
 * a slave request that goes away before the INTA cycle leaves no stale
 * latch behind (the hardware would answer with a spurious IRQ15). */
static void update_cascade(struct pic8259 *pic)
{
	struct pic_chip *m = &pic->chip[0];
	if (chip_get_irq(&pic->chip[1]) >= 0) {
		m->irr |= 1u << 2;
		m->last_irr |= 1u << 2;
	} else {
		m->irr &= ~(1u << 2);
		m->last_irr &= ~(1u << 2);
	}
}

void pic_set_irq(struct pic8259 *pic, unsigned irq, bool level)
{
	if (irq >= 16)
		return;
	chip_set_line(&pic->chip[irq >> 3], irq & 7, level);
	update_cascade(pic);
}

int pic_pending_vector(struct pic8259 *pic)
{
	int irq = chip_get_irq(&pic->chip[0]);
	if (irq < 0)
		return -1;
	if (irq == 2) {
		int irq2 = chip_get_irq(&pic->chip[1]);
		return pic->chip[1].irq_base + (irq2 >= 0 ? irq2 : 7);
	}
	return pic->chip[0].irq_base + irq;
}

static void chip_intack(struct pic_chip *c, unsigned irq)
{
	uint8_t bit = (uint8_t)(1u << irq);
	if (c->auto_eoi) {
		if (c->rotate_on_auto_eoi)
			c->priority_add = (uint8_t)((irq + 1) & 7);
	} else {
		c->isr |= bit;
	}
	/* A level-triggered request stays in IRR while its line is high. */
	if (!(c->elcr & bit))
		c->irr &= ~bit;
}

int pic_ack(struct pic8259 *pic)
{
	struct pic_chip *m = &pic->chip[0], *s = &pic->chip[1];
	int vector;
	int irq = chip_get_irq(m);

	if (irq >= 0) {
		chip_intack(m, (unsigned)irq);
		if (irq == 2) {
			int irq2 = chip_get_irq(s);
			if (irq2 >= 0)
				chip_intack(s, (unsigned)irq2);
			else
				irq2 = 7; /* spurious on the slave */
			vector = s->irq_base + irq2;
		} else {
			vector = m->irq_base + irq;
		}
	} else {
		vector = m->irq_base + 7; /* spurious on the master */
	}
	update_cascade(pic);
	return vector;
}

/* Poll command (OCW3 P=1): the next read of either port acknowledges the
 * highest request and returns 0x80 | irq, or 0 if there is none. */
static uint8_t chip_poll(struct pic8259 *pic, struct pic_chip *c)
{
	c->poll = false;
	int irq = chip_get_irq(c);
	if (irq < 0)
		return 0;
	chip_intack(c, (unsigned)irq);
	update_cascade(pic);
	return (uint8_t)(0x80 | irq);
}

static void eoi_bit(struct pic_chip *c, unsigned irq, bool rotate)
{
	c->isr &= ~(1u << irq);
	if (rotate)
		c->priority_add = (uint8_t)((irq + 1) & 7);
}

static void write_command(struct pic_chip *c, uint8_t v)
{
	if (v & 0x10) {
		/* ICW1: starts initialisation. IMR, ISR, IRR edge memory are
		 * cleared, IRQ7 gets the lowest priority, slave ID 7... */
		chip_reset(c);
		c->init_state = 1;
		c->init4 = v & 0x01;
		c->single_mode = v & 0x02;
		/* LTIM (bit 3) is ignored on a PC: the ELCR decides. */
		return;
	}
	if (v & 0x08) {
		/* OCW3 */
		if (v & 0x04)
			c->poll = true;
		if (v & 0x02)
			c->read_isr = v & 0x01;
		if (v & 0x40)
			c->special_mask = (v >> 5) & 1;
		return;
	}
	/* OCW2: R SL EOI | L2-L0 */
	unsigned cmd = v >> 5, irq = v & 7;
	unsigned p;
	switch (cmd) {
	case 0: /* rotate in auto-EOI mode: clear */
	case 4: /* ... set */
		c->rotate_on_auto_eoi = cmd == 4;
		break;
	case 1: /* non-specific EOI */
	case 5: /* rotate on non-specific EOI */
		p = get_priority(c, c->isr);
		if (p != 8)
			eoi_bit(c, (p + c->priority_add) & 7, cmd == 5);
		break;
	case 3: /* specific EOI */
		eoi_bit(c, irq, false);
		break;
	case 6: /* set priority: irq becomes the lowest */
		c->priority_add = (uint8_t)((irq + 1) & 7);
		break;
	case 7: /* rotate on specific EOI */
		eoi_bit(c, irq, true);
		break;
	default: /* 2: no operation */
		break;
	}
}

static void write_data(struct pic_chip *c, uint8_t v)
{
	switch (c->init_state) {
	case 0: /* OCW1 */
		c->imr = v;
		break;
	case 1: /* ICW2: vector base; the low three bits are the IRQ */
		c->irq_base = v & 0xf8;
		c->init_state = c->single_mode ? (c->init4 ? 3 : 0) : 2;
		break;
	case 2: /* ICW3: cascade wiring; the PC's is fixed (slave on IRQ2) */
		c->init_state = c->init4 ? 3 : 0;
		break;
	case 3: /* ICW4: uPM, AEOI, buffered mode, SFNM */
		c->auto_eoi = (v >> 1) & 1;
		c->special_fully_nested = (v >> 4) & 1;
		c->init_state = 0;
		break;
	}
}

void pic_firmware_setup(struct pic8259 *pic)
{
	/* the words the BIOS writes, through the same paths as a guest's */
	static const uint8_t icw[2][4] = {
		{ 0x11, PIC_FIRMWARE_MASTER_BASE, 0x04, 0x01 },
		{ 0x11, PIC_FIRMWARE_SLAVE_BASE, 0x02, 0x01 },
	};
	static const uint8_t imr[2] = { PIC_FIRMWARE_MASTER_IMR, PIC_FIRMWARE_SLAVE_IMR };
	for (int i = 0; i < 2; i++) {
		struct pic_chip *c = &pic->chip[i];
		write_command(c, icw[i][0]);
		for (int k = 1; k < 4; k++)
			write_data(c, icw[i][k]);
		write_data(c, imr[i]);   /* OCW1 */
	}
	update_cascade(pic);
}

int pic_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pic8259 *pic = opaque;
	uint64_t value = 0;

	/* Wider accesses act as byte accesses to consecutive ports; a byte
	 * outside this chip's two ports reads 0xff and is dropped on write. */
	for (unsigned i = 0; i < size; i++) {
		uint64_t port = addr + i;
		struct pic_chip *c;
		if ((port & ~1ull) == PIC_MASTER_BASE)
			c = &pic->chip[0];
		else if ((port & ~1ull) == PIC_SLAVE_BASE)
			c = &pic->chip[1];
		else {
			value |= 0xffull << (8 * i);
			continue;
		}
		bool data_port = port & 1;
		if (is_write) {
			uint8_t v = (uint8_t)(*data >> (8 * i));
			if (data_port)
				write_data(c, v);
			else
				write_command(c, v);
			update_cascade(pic);
		} else {
			uint8_t b;
			if (c->poll)
				b = chip_poll(pic, c);
			else if (data_port)
				b = c->imr;
			else
				b = c->read_isr ? c->isr : c->irr;
			value |= (uint64_t)b << (8 * i);
		}
	}
	if (!is_write)
		*data = value;
	return IO_OK;
}

int pic_elcr_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pic8259 *pic = opaque;
	uint64_t value = 0;

	for (unsigned i = 0; i < size; i++) {
		uint64_t off = addr + i - PIC_ELCR_BASE;
		if (off >= PIC_ELCR_PORTS) {
			value |= 0xffull << (8 * i);
			continue;
		}
		struct pic_chip *c = &pic->chip[off];
		if (is_write)
			c->elcr = (uint8_t)(*data >> (8 * i)) & c->elcr_mask;
		else
			value |= (uint64_t)c->elcr << (8 * i);
	}
	if (!is_write)
		*data = value;
	else
		update_cascade(pic);
	return IO_OK;
}
