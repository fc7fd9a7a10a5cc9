/* 8254 programmable interval timer (ports 0x40-0x43) and the PC's port 0x61
 * (system control port B: channel 2 gate, speaker enable, refresh toggle,
 * channel 2 OUT). Counts at 1.193182 MHz of the VM's time (dev_clock), the
 * clock the guest's TSC reads too: a guest that times the PIT with RDTSC
 * (Linux's TSC calibration) finds exactly platform_tsc_hz().
 *
 * Modes 0-5 (6 and 7 alias 2 and 3), LSB/MSB/LSB-then-MSB access, the
 * counter-latch command and the read-back command (count and status), after
 * the Intel 82C54 data sheet: in mode 0 the first byte of a two-byte count
 * stops the count and sets OUT low; the gate pauses modes 0 and 4, stops
 * modes 2 and 3 with OUT high and restarts them when it rises, and starts
 * (or restarts) modes 1 and 5. Channel 0's OUT drives ISA IRQ0: at each
 * rising edge the PIT pulses the line (irq_line_set(irq, true) then
 * false), scheduled with a vm_timer. Edges that fall due while the last one
 * still waits for the CPU (IF=0, a long exit, a late host timer) are counted
 * and sent one by one as the CPU takes them, so that a guest counting timer
 * interrupts (Linux's jiffies) loses none; edges on a line no interrupt
 * controller passes on are dropped, as on a PC. Channel 2's OUT is port 0x61
 * bit 5, its gate port 0x61 bit 0; channels 0 and 1 are always gated on.
 * While the HPET's legacy replacement route is on (pit_irq_replace), channel
 * 0 keeps counting but its IRQ0 edges are dropped: the HPET's timer 0 owns
 * IRQ0 then, as on a PC.
 * BCD counting is recorded in the status but counts are binary (as in QEMU).
 *
 * After reset every channel is in mode 3 with count 65536 and counting, as
 * the BIOS leaves it, but channel 0 raises no IRQ0 until the guest loads a
 * count (no BIOS tick: nothing to wake a guest that did not ask for it). */
#ifndef DEV_PIT8254_H
#define DEV_PIT8254_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define PIT_BASE      0x40u
#define PIT_PORTS     4u
#define PIT_PORT61    0x61u
#define PIT_HZ        1193182ull
#define PIT_IRQ       0u       /* ISA IRQ of channel 0 */

/* Port 0x61 bits. */
#define PORT61_GATE2     0x01u
#define PORT61_SPEAKER   0x02u
#define PORT61_RW_MASK   0x0fu /* gate, speaker, parity/IOCHK enables */
#define PORT61_REFRESH   0x10u
#define PORT61_OUT2      0x20u

#define PIT_MAX_LATE  0x10000u /* IRQ0 edges kept for a guest that takes none */

struct pit_channel {
	uint32_t count;          /* reload value, 1..0x10000 (0 written = 0x10000) */
	uint64_t load_tsc;       /* when counting started (adjusted for pauses) */
	uint64_t write_tsc;      /* when the count was written (null count until a tick) */
	bool loaded;             /* a count was written since the control word */
	bool gate;
	bool stopped;            /* not counting since stop_tsc: gate low, or mode 0
				    between the two bytes of a new count (held) */
	bool held;               /* mode 0, first byte of a new count written: OUT low */
	bool triggered;          /* modes 1 and 5: a rising gate started the count */
	uint64_t stop_tsc;
	uint8_t mode, rw_mode, bcd;
	uint8_t read_state, write_state, write_latch;
	uint16_t latched_count;
	uint8_t count_latched;   /* 0, or the rw state of the latched count */
	bool status_latched;
	uint8_t status;
};

struct pit8254 {
	struct irq_line irq;     /* channel 0's OUT: IRQ0 on a PC */
	struct guest_clock *clock;
	uint64_t tsc_hz;
	uint64_t tsc_at_init;
	struct pit_channel ch[3];
	uint8_t port61;          /* the RW bits of port 0x61 */
	struct vm_timer timer;   /* channel 0's next IRQ0 edge */
	uint64_t irq_edges;      /* rising edges of OUT0 since the load, counted */
	uint32_t irq_late;       /* of those, edges not sent yet */
	uint64_t irqs;           /* IRQ0 pulses sent */
	uint64_t irqs_late;      /* of those, sent after their time (the CPU had not
				    taken the previous one) */
	uint64_t irqs_dropped;   /* edges no interrupt controller passed on */
	bool irq_replaced;       /* the HPET's legacy route cut IRQ0 off */
};

void pit_init(void *dev, struct dev_host *h);

/* Port callbacks (dev/device.h shape); dev is the struct pit8254. */
int pit_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
int pit_port61_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

/* Two ranges: 0x40-0x43, and 0x61. */
extern const struct dev_desc pit8254_desc;

/* Channel n's counter and OUT at `now` (the VM's time). */
uint16_t pit_get_count(struct pit8254 *pit, unsigned n, uint64_t now);
bool pit_get_out(struct pit8254 *pit, unsigned n, uint64_t now);

/* The HPET's LEG_RT_CNF: `replaced` cuts channel 0 off IRQ0 (its late
 * edges are dropped), clear connects it again. */
void pit_irq_replace(struct pit8254 *pit, bool replaced);

/* The CPU took an interrupt: if IRQ0 edges are late, send the next one now
 * that the last may have been taken (called on every interrupt the
 * hypervisor injects; one test when nothing is late). */
void pit_irq_retry(struct pit8254 *pit);
static inline void pit_irq_taken(struct pit8254 *pit)
{
	if (pit->irq_late)
		pit_irq_retry(pit);
}

#endif
