/* 16550A UART model: one field per register, one switch on the offset. */
#include "dev/uart16550.h"

#include "lib/string.h"

void uart16550_init(void *opaque, struct dev_host *h)
{
	struct uart16550 *dev = opaque;
	memset(dev, 0, sizeof(*dev));
	dev->host = h;
	dev->irq = dev_irq_line(h, uart16550_desc.irq);
	dev->base = UART16550_COM1_BASE;
	dev->dll = 12; /* 9600 baud, the usual firmware setting */
	dev->mcr = UART_MCR_OUT2;
	/* Carrier, data set ready and clear to send: a cable is plugged in. */
	dev->msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
}

const struct dev_desc uart16550_desc = {
	.name = "uart16550",
	.irq = UART16550_COM1_IRQ,
	DEV_RANGES({ .base = UART16550_COM1_BASE, .len = UART16550_PORTS,
		   .fn = uart16550_io, .light = true }),
	.init = uart16550_init,
};

/* The interrupt output: IRQ 4 on a PC, gated by MCR.OUT2 as the board wires it. */
static void update_irq(struct uart16550 *dev)
{
	bool level = (dev->mcr & UART_MCR_OUT2) &&
		     (((dev->ier & UART_IER_RDI) && dev->rx_count) ||
		      ((dev->ier & UART_IER_THRI) && dev->thri_pending));
	if (level != dev->irq_level) {
		dev->irq_level = level;
		irq_line_set(&dev->irq, level);
	}
}

bool uart16550_receive(struct uart16550 *dev, uint8_t byte)
{
	if (dev->rx_count == UART16550_RX_FIFO) {
		dev->lsr_errors |= UART_LSR_OE;
		return false;
	}
	dev->rx_fifo[(dev->rx_head + dev->rx_count) % UART16550_RX_FIFO] = byte;
	dev->rx_count++;
	update_irq(dev);
	return true;
}

static uint8_t rx_pop(struct uart16550 *dev)
{
	if (!dev->rx_count)
		return 0;
	uint8_t byte = dev->rx_fifo[dev->rx_head];
	dev->rx_head = (uint8_t)((dev->rx_head + 1) % UART16550_RX_FIFO);
	dev->rx_count--;
	return byte;
}

static void rx_clear(struct uart16550 *dev)
{
	dev->rx_head = 0;
	dev->rx_count = 0;
}

static uint8_t read_iir(struct uart16550 *dev)
{
	uint8_t fifo = (dev->fcr & UART_FCR_ENABLE) ? UART_IIR_FIFO : 0;
	if ((dev->ier & UART_IER_RDI) && dev->rx_count)
		return fifo | UART_IIR_RDI;
	if ((dev->ier & UART_IER_THRI) && dev->thri_pending) {
		/* Reading IIR while it reports THRE clears that condition. */
		dev->thri_pending = false;
		return fifo | UART_IIR_THRI;
	}
	return fifo | UART_IIR_NO_INT;
}

/* In loopback the modem outputs feed the modem inputs (Linux's 8250 probe
 * checks this: MCR=LOOP|OUT2|RTS must read back MSR=DCD|CTS). */
static uint8_t read_msr(const struct uart16550 *dev)
{
	if (!(dev->mcr & UART_MCR_LOOP))
		return dev->msr;
	uint8_t m = 0;
	if (dev->mcr & UART_MCR_RTS)
		m |= UART_MSR_CTS;
	if (dev->mcr & UART_MCR_DTR)
		m |= UART_MSR_DSR;
	if (dev->mcr & UART_MCR_OUT1)
		m |= UART_MSR_RI;
	if (dev->mcr & UART_MCR_OUT2)
		m |= UART_MSR_DCD;
	return m;
}

static uint8_t read_reg(struct uart16550 *dev, unsigned off)
{
	bool dlab = dev->lcr & UART_LCR_DLAB;
	uint8_t lsr;

	switch (off) {
	case UART_RBR:
		return dlab ? dev->dll : rx_pop(dev);
	case UART_IER:
		return dlab ? dev->dlm : dev->ier;
	case UART_IIR:
		return read_iir(dev);
	case UART_LCR:
		return dev->lcr;
	case UART_MCR:
		return dev->mcr;
	case UART_LSR:
		/* Transmission is instantaneous: the transmitter is always empty. */
		lsr = UART_LSR_THRE | UART_LSR_TEMT | dev->lsr_errors;
		if (dev->rx_count)
			lsr |= UART_LSR_DR;
		dev->lsr_errors = 0;
		return lsr;
	case UART_MSR:
		return read_msr(dev);
	case UART_SCR:
		return dev->scr;
	default:
		return 0xff;
	}
}

static void write_reg(struct uart16550 *dev, unsigned off, uint8_t v)
{
	bool dlab = dev->lcr & UART_LCR_DLAB;

	switch (off) {
	case UART_THR:
		if (dlab) {
			dev->dll = v;
		} else {
			if (dev->mcr & UART_MCR_LOOP)
				uart16550_receive(dev, v);
			else
				dev_console_putc(dev->host, (char)v);
			dev->thri_pending = true;
		}
		break;
	case UART_IER:
		if (dlab) {
			dev->dlm = v;
		} else {
			/* Enabling THRI with an empty transmitter raises it at once. */
			if ((v & UART_IER_THRI) && !(dev->ier & UART_IER_THRI))
				dev->thri_pending = true;
			dev->ier = v & UART_IER_MASK;
		}
		break;
	case UART_FCR:
		if (v & UART_FCR_CLEAR_RX)
			rx_clear(dev);
		/* Only the enable and trigger-level bits are kept. */
		dev->fcr = v & 0xc9;
		break;
	case UART_LCR:
		dev->lcr = v;
		break;
	case UART_MCR:
		dev->mcr = v & UART_MCR_MASK;
		break;
	case UART_LSR:
	case UART_MSR:
		break; /* read-only; writes are for factory test */
	case UART_SCR:
		dev->scr = v;
		break;
	default:
		break;
	}
}

int uart16550_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct uart16550 *dev = opaque;
	uint64_t off = addr - dev->base;
	uint64_t value = 0;

	for (unsigned i = 0; i < size; i++, off++) {
		if (is_write) {
			if (off < UART16550_PORTS)
				write_reg(dev, (unsigned)off, (uint8_t)(*data >> (8 * i)));
		} else {
			uint64_t b = off < UART16550_PORTS ? read_reg(dev, (unsigned)off) : 0xff;
			value |= b << (8 * i);
		}
	}
	if (!is_write)
		*data = value;
	update_irq(dev);
	return IO_OK;
}
