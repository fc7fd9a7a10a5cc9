/* 16550A UART (COM1 at 0x3f8, IRQ 4): guest output goes to the host
 * console, host input can be queued into a small receive FIFO. The
 * transmitter is always empty: a byte written has left, LSR.THRE never
 * clears, and the THR-empty interrupt is raised again at once. */
#ifndef DEV_UART16550_H
#define DEV_UART16550_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define UART16550_COM1_IRQ  4u
#define UART16550_COM1_BASE 0x3f8u
#define UART16550_PORTS     8u
#define UART16550_RX_FIFO   16u /* the 16550A's receive FIFO depth */

/* Register offsets from the base port. */
#define UART_RBR 0 /* read, DLAB=0: receive buffer */
#define UART_THR 0 /* write, DLAB=0: transmit holding */
#define UART_DLL 0 /* DLAB=1: divisor latch low */
#define UART_IER 1 /* DLAB=0: interrupt enable */
#define UART_DLM 1 /* DLAB=1: divisor latch high */
#define UART_IIR 2 /* read: interrupt identification */
#define UART_FCR 2 /* write: FIFO control */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI   0x01 /* receive data available */
#define UART_IER_THRI  0x02 /* transmit holding register empty */
#define UART_IER_MASK  0x0f

#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI   0x02
#define UART_IIR_RDI    0x04
#define UART_IIR_FIFO   0xc0 /* FIFOs enabled (reads as 16550A) */

#define UART_FCR_ENABLE   0x01
#define UART_FCR_CLEAR_RX 0x02
#define UART_FCR_CLEAR_TX 0x04

#define UART_LCR_DLAB  0x80

#define UART_MCR_DTR   0x01
#define UART_MCR_RTS   0x02
#define UART_MCR_OUT1  0x04
#define UART_MCR_OUT2  0x08
#define UART_MCR_LOOP  0x10
#define UART_MCR_MASK  0x1f

#define UART_LSR_DR    0x01 /* data ready */
#define UART_LSR_OE    0x02 /* overrun: a byte was lost */
#define UART_LSR_THRE  0x20
#define UART_LSR_TEMT  0x40

#define UART_MSR_CTS   0x10
#define UART_MSR_DSR   0x20
#define UART_MSR_RI    0x40
#define UART_MSR_DCD   0x80

struct uart16550 {
	struct dev_host *host;   /* its output goes to the VM's console */
	struct irq_line irq;
	uint16_t base;
	uint8_t dll, dlm;
	uint8_t ier;
	uint8_t fcr;
	uint8_t lcr;
	uint8_t mcr;
	uint8_t lsr_errors; /* sticky LSR error bits, cleared by reading LSR */
	uint8_t msr;        /* modem status outside loopback */
	uint8_t scr;
	bool thri_pending;  /* THR-empty interrupt condition, cleared by IIR read */
	bool irq_level;     /* what the interrupt output drives now */
	uint8_t rx_fifo[UART16550_RX_FIFO];
	uint8_t rx_head;    /* index of the oldest byte */
	uint8_t rx_count;
};

void uart16550_init(void *dev, struct dev_host *h);

/* Port callback (dev/device.h shape); dev is the struct uart16550.
 * Accesses wider than one byte act as byte accesses to consecutive
 * registers, low byte first, as an 8-bit ISA device sees them; bytes that
 * fall past the 8 ports are dropped on write and read as 0xff. */
int uart16550_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

extern const struct dev_desc uart16550_desc;

/* Host -> guest input: queues one byte. Returns false (and sets LSR.OE) when
 * the FIFO is full and the byte was dropped. */
bool uart16550_receive(struct uart16550 *dev, uint8_t byte);

#endif
