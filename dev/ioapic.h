/* I/O APIC (82093AA layout, version 0x11, 24 pins) at 0xFEC00000: IOREGSEL
 * at offset 0x00, IOWIN at 0x10; registers ID (0), version (1), arbitration
 * (2) and the redirection table (0x10 + 2n low, 0x11 + 2n high).
 *
 * Edge-triggered pins deliver on a rising edge of an unmasked pin (an edge
 * while masked is lost, as on the hardware). Level-triggered pins deliver
 * while the line is high, set Remote IRR, and deliver again after the EOI
 * (ioapic_eoi) if the line is still high. Pin polarity is stored but not
 * applied: devices drive lines as asserted/deasserted.
 *
 * Delivery goes to the callback the hypervisor sets at init (one vCPU: the
 * hypervisor passes fixed/lowest-priority interrupts to lapic_accept()). */
#ifndef DEV_IOAPIC_H
#define DEV_IOAPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define IOAPIC_BASE     0xfec00000ull
#define IOAPIC_SIZE     0x1000u  /* the MMIO window registered */
#define IOAPIC_PINS     24u
#define IOAPIC_VERSION  0x11u

#define IOAPIC_REGSEL   0x00u
#define IOAPIC_IOWIN    0x10u

#define IOAPIC_REG_ID      0x00u
#define IOAPIC_REG_VERSION 0x01u
#define IOAPIC_REG_ARB     0x02u
#define IOAPIC_REG_REDTBL  0x10u

/* Redirection entry bits. */
#define IOAPIC_RTE_VECTOR      0xffull
#define IOAPIC_RTE_DELMODE(e)  (((e) >> 8) & 7)
#define IOAPIC_RTE_DESTMODE    (1ull << 11)  /* 1 = logical */
#define IOAPIC_RTE_DELIVS      (1ull << 12)  /* RO */
#define IOAPIC_RTE_POLARITY    (1ull << 13)  /* 1 = active low */
#define IOAPIC_RTE_REMOTE_IRR  (1ull << 14)  /* RO */
#define IOAPIC_RTE_LEVEL       (1ull << 15)
#define IOAPIC_RTE_MASKED      (1ull << 16)
#define IOAPIC_RTE_DEST(e)     ((uint8_t)((e) >> 56))
/* Writable bits: everything but delivery status and Remote IRR. */
#define IOAPIC_RTE_RW_MASK     (0xff00000000000000ull | 0x1afffull)

enum ioapic_delivery_mode {
	IOAPIC_DM_FIXED = 0, IOAPIC_DM_LOWEST = 1, IOAPIC_DM_SMI = 2,
	IOAPIC_DM_NMI = 4, IOAPIC_DM_INIT = 5, IOAPIC_DM_EXTINT = 7,
};

/* One interrupt message, as the I/O APIC sends it to the local APICs. */
struct ioapic_irq {
	unsigned pin;
	uint8_t vector;
	uint8_t delivery_mode;  /* enum ioapic_delivery_mode */
	bool logical;           /* destination mode */
	uint8_t dest;           /* APIC ID (physical) or logical mask */
	bool level;             /* trigger mode: the LAPIC sets TMR for it */
};

typedef void (*ioapic_deliver_fn)(void *ctx, const struct ioapic_irq *irq);

struct ioapic {
	uint64_t base;
	uint8_t id;             /* bits 27:24 of the ID register */
	uint8_t regsel;
	uint32_t lines;         /* pin levels as driven */
	uint64_t rte[IOAPIC_PINS];
	ioapic_deliver_fn deliver;
	void *deliver_ctx;
	uint64_t delivered;     /* messages sent, for statistics and tests */
};

/* ID 0, all pins masked, edge, vector 0; it sends nothing until
 * ioapic_set_deliver says where to. */
void ioapic_init(void *dev, struct dev_host *h);
/* Where its messages go (the platform's APIC bus); 0: nowhere. */
void ioapic_set_deliver(struct ioapic *io, ioapic_deliver_fn deliver, void *ctx);

/* MMIO callback (dev/device.h shape; dev is the struct ioapic). 32-bit
 * accesses to IOREGSEL and IOWIN; a byte write to IOREGSEL works too. Other
 * offsets read 0 and ignore writes. */
int ioapic_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc ioapic_desc;

/* GSI `pin` driven to level (asserted = true). */
void ioapic_set_irq(struct ioapic *io, unsigned pin, bool level);

/* The local APIC reports an EOI for a level-triggered vector: clears Remote
 * IRR of every level pin with that vector and re-delivers those whose line
 * is still asserted. */
void ioapic_eoi(struct ioapic *io, uint8_t vector);

/* Is any pin unmasked in NMI delivery mode (a device could raise an NMI)? */
bool ioapic_nmi_pin(const struct ioapic *io);

/* Register access by index, for tests and a debugger. */
uint32_t ioapic_read_reg(struct ioapic *io, uint8_t index);
void ioapic_write_reg(struct ioapic *io, uint8_t index, uint32_t value);

#endif
