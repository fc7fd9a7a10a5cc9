/* I/O APIC redirection logic. */
#include "dev/ioapic.h"

#include "lib/string.h"

void ioapic_init(void *opaque, struct dev_host *h)
{
	struct ioapic *io = opaque;
	(void)h;
	memset(io, 0, sizeof(*io));
	io->base = IOAPIC_BASE;
	for (unsigned i = 0; i < IOAPIC_PINS; i++)
		io->rte[i] = IOAPIC_RTE_MASKED;
}

void ioapic_set_deliver(struct ioapic *io, ioapic_deliver_fn deliver, void *ctx)
{
	io->deliver = deliver;
	io->deliver_ctx = ctx;
}

const struct dev_desc ioapic_desc = {
	.name = "ioapic", .mmio = true,
	DEV_RANGES({ .base = IOAPIC_BASE, .len = IOAPIC_SIZE, .fn = ioapic_mmio, .light = true }),
	.init = ioapic_init,
};

static void send(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->rte[pin];
	struct ioapic_irq irq = {
		.pin = pin,
		.vector = (uint8_t)(e & IOAPIC_RTE_VECTOR),
		.delivery_mode = (uint8_t)IOAPIC_RTE_DELMODE(e),
		.logical = e & IOAPIC_RTE_DESTMODE,
		.dest = IOAPIC_RTE_DEST(e),
		.level = e & IOAPIC_RTE_LEVEL,
	};
	io->delivered++;
	if (io->deliver)
		io->deliver(io->deliver_ctx, &irq);
}

/* Delivers a level pin that is asserted, unmasked and not waiting for its
 * EOI. Edge pins are delivered from ioapic_set_irq only. */
static void service_level(struct ioapic *io, unsigned pin)
{
	uint64_t e = io->rte[pin];
	if (!(e & IOAPIC_RTE_LEVEL) || (e & (IOAPIC_RTE_MASKED | IOAPIC_RTE_REMOTE_IRR)))
		return;
	if (!(io->lines & (1u << pin)))
		return;
	io->rte[pin] |= IOAPIC_RTE_REMOTE_IRR;
	send(io, pin);
}

void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level)
{
	if (pin >= IOAPIC_PINS)
		return;
	uint32_t bit = 1u << pin;
	bool was = io->lines & bit;
	if (level)
		io->lines |= bit;
	else
		io->lines &= ~bit;

	uint64_t e = io->rte[pin];
	if (e & IOAPIC_RTE_LEVEL)
		service_level(io, pin);
	else if (level && !was && !(e & IOAPIC_RTE_MASKED))
		send(io, pin);
}

void ioapic_eoi(struct ioapic *io, uint8_t vector)
{
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		uint64_t e = io->rte[pin];
		if ((e & IOAPIC_RTE_VECTOR) != vector || !(e & IOAPIC_RTE_LEVEL))
			continue;
		io->rte[pin] &= ~IOAPIC_RTE_REMOTE_IRR;
		service_level(io, pin);
	}
}

bool ioapic_nmi_pin(const struct ioapic *io)
{
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		if (!(io->rte[pin] & IOAPIC_RTE_MASKED) &&
		    IOAPIC_RTE_DELMODE(io->rte[pin]) == IOAPIC_DM_NMI)
			return true;
	return false;
}

uint32_t ioapic_read_reg(struct ioapic *io, uint8_t index)
{
	switch (index) {
	case IOAPIC_REG_ID:
	case IOAPIC_REG_ARB:
		return (uint32_t)io->id << 24;
	case IOAPIC_REG_VERSION:
		return ((IOAPIC_PINS - 1) << 16) | IOAPIC_VERSION;
	default:
		if (index >= IOAPIC_REG_REDTBL && index < IOAPIC_REG_REDTBL + 2 * IOAPIC_PINS) {
			unsigned pin = (index - IOAPIC_REG_REDTBL) >> 1;
			return (uint32_t)(io->rte[pin] >> ((index & 1) ? 32 : 0));
		}
		return 0xffffffffu; /* no register there */
	}
}

void ioapic_write_reg(struct ioapic *io, uint8_t index, uint32_t value)
{
	if (index == IOAPIC_REG_ID) {
		io->id = (value >> 24) & 0xf;
		return;
	}
	if (index < IOAPIC_REG_REDTBL || index >= IOAPIC_REG_REDTBL + 2 * IOAPIC_PINS)
		return; /* version, arbitration: read-only */

	unsigned pin = (index - IOAPIC_REG_REDTBL) >> 1;
	uint64_t e = io->rte[pin], n;
	if (index & 1)
		n = (e & 0xffffffffull) | ((uint64_t)value << 32);
	else
		n = (e & 0xffffffff00000000ull) | value;
	n = (n & IOAPIC_RTE_RW_MASK) | (e & IOAPIC_RTE_REMOTE_IRR);
	/* Remote IRR only means something for a level-triggered pin. */
	if (!(n & IOAPIC_RTE_LEVEL))
		n &= ~IOAPIC_RTE_REMOTE_IRR;
	io->rte[pin] = n;
	/* Unmasking (or switching to level) an asserted level pin delivers. */
	service_level(io, pin);
}

int ioapic_mmio(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct ioapic *io = opaque;
	uint64_t off = addr - io->base;

	if (is_write) {
		if (off == IOAPIC_REGSEL)
			io->regsel = (uint8_t)*data;
		else if (off == IOAPIC_IOWIN && size >= 4)
			ioapic_write_reg(io, io->regsel, (uint32_t)*data);
		return IO_OK;
	}
	uint64_t v = 0;
	if (off == IOAPIC_REGSEL)
		v = io->regsel;
	else if (off >= IOAPIC_IOWIN && off < IOAPIC_IOWIN + 4)
		v = ioapic_read_reg(io, io->regsel) >> (8 * (off - IOAPIC_IOWIN));
	if (size < 8)
		v &= (1ull << (8 * size)) - 1;
	*data = v;
	return IO_OK;
}
