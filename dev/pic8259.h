/* The two cascaded 8259A PICs of a PC (master at 0x20/0x21, slave at
 * 0xA0/0xA1 on the master's IRQ2) and the PIIX edge/level control registers
 * (ELCR, 0x4D0/0x4D1). ICW1-ICW4 initialisation, OCW1 masks, OCW2 EOI
 * (non-specific, specific, rotations), OCW3 (IRR/ISR read select, poll,
 * special mask), auto-EOI, special fully nested mode, edge and level lines.
 *
 * For the interrupt model: devices drive ISA lines with pic_set_irq();
 * pic_pending_vector() says whether the PIC asserts INTR and with which
 * vector; pic_ack() is the INTA cycle (IRR -> ISR, returns the vector). */
#ifndef DEV_PIC8259_H
#define DEV_PIC8259_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define PIC_MASTER_BASE 0x20u
#define PIC_SLAVE_BASE  0xa0u
#define PIC_ELCR_BASE   0x4d0u
#define PIC_PORTS       2u   /* each chip: command (base) and data (base + 1) */
#define PIC_ELCR_PORTS  2u   /* 0x4d0 master IRQ0-7, 0x4d1 slave IRQ8-15 */

/* ELCR bits that are writable: IRQ0, 1, 2 (master) and 8, 13 (slave) are
 * always edge-triggered on the PIIX. */
#define PIC_ELCR_MASK_MASTER 0xf8u
#define PIC_ELCR_MASK_SLAVE  0xdeu

struct pic_chip {
	uint8_t irr;         /* interrupt request register */
	uint8_t isr;         /* in-service register */
	uint8_t imr;         /* interrupt mask register (OCW1) */
	uint8_t last_irr;    /* line levels seen, for edge detection */
	uint8_t elcr;        /* 1 = level-triggered */
	uint8_t elcr_mask;
	uint8_t irq_base;    /* ICW2: vector of IRQ0 of this chip */
	uint8_t priority_add;/* the lowest-priority IRQ is priority_add - 1 (rotation) */
	uint8_t init_state;  /* 0 = ready, 1-3 = waiting for ICW2-ICW4 */
	bool init4;          /* ICW1.IC4: an ICW4 follows */
	bool single_mode;    /* ICW1.SNGL: no ICW3 */
	bool read_isr;       /* OCW3 RR/RIS: command port reads ISR (else IRR) */
	bool poll;           /* OCW3 P: the next read is a poll */
	bool special_mask;   /* OCW3 SMM */
	bool auto_eoi;       /* ICW4 AEOI */
	bool rotate_on_auto_eoi;
	bool special_fully_nested; /* ICW4 SFNM */
	bool is_master;
};

struct pic8259 {
	struct pic_chip chip[2]; /* [0] master, [1] slave */
};

/* Power-up state: neither chip initialised (no vector base, nothing masked). */
void pic_init(void *dev, struct dev_host *h);

/* The state a PC BIOS hands to the OS (SeaBIOS's pic_setup), which every VM
 * starts in: both chips initialised with ICW1 0x11 (edge, cascade, ICW4
 * follows), ICW3 0x04/0x02 and ICW4 0x01 (8086 mode, normal EOI), vector
 * bases 0x08 and 0x70, and every IRQ masked but the cascade. The BIOS's
 * bases overlap the CPU's exception vectors (IRQ0 would be #DF): with the
 * masks no device interrupt reaches the CPU until the guest unmasks one,
 * normally after reprogramming the bases. Call after pic_init(). */
#define PIC_FIRMWARE_MASTER_BASE 0x08u
#define PIC_FIRMWARE_SLAVE_BASE  0x70u
#define PIC_FIRMWARE_MASTER_IMR  0xfbu   /* IRQ2, the cascade, unmasked */
#define PIC_FIRMWARE_SLAVE_IMR   0xffu
void pic_firmware_setup(struct pic8259 *pic);

/* Port callbacks (dev/device.h shape); dev is the struct pic8259.
 * pic_io serves both chips: register it for 0x20-0x21 and 0xa0-0xa1. */
int pic_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
int pic_elcr_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

/* Three ranges: the master at 0x20, the slave at 0xa0, the ELCR at 0x4d0. */
extern const struct dev_desc pic8259_desc;

/* ISA line irq (0-15) driven to level. Edge-triggered lines latch on the
 * rising edge, level-triggered ones (ELCR) follow the level. */
void pic_set_irq(struct pic8259 *pic, unsigned irq, bool level);

/* The vector the PIC presents on INTR, or -1 if INTR is not asserted. */
int pic_pending_vector(struct pic8259 *pic);

/* The interrupt-acknowledge cycle: the highest-priority request moves from
 * IRR to ISR (not with auto-EOI) and its vector is returned. With nothing
 * pending it returns the spurious vector (IRQ7 of the master, or IRQ15 for
 * a slave request that went away), as the hardware does. */
int pic_ack(struct pic8259 *pic);

#endif
