/* HPET (IA-PC HPET specification 1.0a) at MMIO 0xFED00000, one 4 KiB page:
 * a 64-bit main counter at 100 MHz (period 10,000,000 fs, as QEMU's) and
 * three comparators, timer 0 periodic-capable, all 64-bit and able to run
 * in 32-bit mode. A PC has one; Linux registers its counter as a
 * clocksource early (time_init) and its clocksource watchdog then counts
 * with it instead of jiffies, which lose ticks when exits are slow.
 *
 * The main counter is derived from the VM's clock (dev/device.h), like the
 * PIT and the PM timer, so that the guest's TSC and its HPET agree; a
 * guest's counter read is a clock read (clock_access(c, true)), so that
 * lightpath's clock polling sees Linux's calibrations that read it.
 *
 * Registers (32-bit accesses to offset 0 or 4 of a 64-bit register, 64-bit
 * accesses to offset 0; anything else reads 0 and is ignored, as are
 * reserved registers and read-only bits):
 *   0x000 capabilities: REV_ID 1, NUM_TIM_CAP 2 (3 timers), COUNT_SIZE_CAP
 *         1, LEG_RT_CAP 1, VENDOR_ID 0x8086 (QEMU's), period in fs;
 *   0x010 ENABLE_CNF (counter runs, timers interrupt), LEG_RT_CNF;
 *   0x020 interrupt status: Tn_INT_STS for level-triggered timers, set at
 *         each match (even with Tn_INT_ENB_CNF clear), write 1 to clear;
 *   0x0F0 main counter: writable while halted (a write while it runs is
 *         ignored: the specification leaves it undefined);
 *   0x100 + 0x20 n  timer n config: INT_TYPE (level), INT_ENB, TYPE
 *         (periodic, timer 0 only), VAL_SET, 32MODE, INT_ROUTE (a route
 *         not in Tn_INT_ROUTE_CAP is not taken: the field keeps its value);
 *         no FSB delivery (FSB_INT_DEL_CAP 0, the FSB route reads 0);
 *   0x108 + 0x20 n  comparator: in periodic mode a write sets the period
 *         (and, with VAL_SET, which the write clears, the comparator too);
 *         32-bit mode truncates both and ignores writes to the high half.
 *
 * A timer matches when the counter (its low 32 bits in 32-bit mode)
 * reaches the comparator; a one-shot timer matches again after the counter
 * wrapped (2^32 ticks in 32-bit mode, never in 64-bit mode); a periodic one
 * adds the period to its comparator (a period of 0 leaves it: it behaves
 * as a one-shot). Each fire costs one division however many periods went
 * by. Edge-triggered timers send one edge per match; matches that come
 * while the last edge still waits for the CPU are kept (up to
 * HPET_MAX_LATE) and sent as it takes them, as the PIT does, so that a
 * guest counting ticks loses none (periods under HPET_MIN_KEPT_PERIOD
 * merge instead). Level-triggered timers hold their line while their
 * status bit is set.
 *
 * Routing: with LEG_RT_CNF set, timer 0 drives ISA IRQ0 (the 8259's IRQ0
 * and I/O APIC pin 2, the MADT's override) and timer 1 IRQ8; the PIT's
 * IRQ0 is cut off (the `legacy` hook; the RTC raises no IRQ8 at all).
 * Otherwise timer n drives I/O APIC pin Tn_INT_ROUTE_CNF, one of
 * HPET_ROUTE_CAP (pins 20-23, which no other device uses), and never the
 * 8259s. */
#ifndef DEV_HPET_H
#define DEV_HPET_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define HPET_BASE        0xfed00000ull
#define HPET_SIZE        0x1000u
#define HPET_HZ          100000000ull
#define HPET_PERIOD_FS   10000000u      /* 10^15 / HPET_HZ */
#define HPET_TIMERS      3u
#define HPET_VENDOR_ID   0x8086u
#define HPET_MIN_TICK    128u           /* the ACPI table's minimum clock tick */
#define HPET_ROUTE_CAP   0x00f00000u    /* I/O APIC pins 20-23 */
#define HPET_MAX_LATE    0x10000u       /* edges kept for a guest that takes none */
/* Periods shorter than this (100 us) are not kept edge by edge: their
 * matches merge into one waiting edge, as on hardware, so that a guest's
 * timer every few ticks cannot build a backlog that keeps an interrupt
 * waiting at every instruction (the hypervisor runs a timer at most every
 * 50 us). */
#define HPET_MIN_KEPT_PERIOD 10000u

/* Register offsets. */
#define HPET_REG_CAP        0x000u
#define HPET_REG_CONFIG     0x010u
#define HPET_REG_STATUS     0x020u
#define HPET_REG_COUNTER    0x0f0u
#define HPET_REG_TIMER(n)   (0x100u + 0x20u * (n))
#define HPET_TIMER_CONFIG   0x00u
#define HPET_TIMER_CMP      0x08u
#define HPET_TIMER_FSB      0x10u

/* Capabilities register. */
#define HPET_CAP_REV_ID      0x01u
#define HPET_CAP_NUM_TIM_SHIFT 8
#define HPET_CAP_COUNT_SIZE  (1u << 13)
#define HPET_CAP_LEG_RT      (1u << 15)
#define HPET_CAP_VENDOR_SHIFT 16
#define HPET_CAP_LOW         (HPET_CAP_REV_ID | ((HPET_TIMERS - 1) << HPET_CAP_NUM_TIM_SHIFT) | \
			      HPET_CAP_COUNT_SIZE | HPET_CAP_LEG_RT | \
			      (HPET_VENDOR_ID << HPET_CAP_VENDOR_SHIFT))

/* General configuration. */
#define HPET_CFG_ENABLE      (1u << 0)
#define HPET_CFG_LEGACY      (1u << 1)

/* Timer n configuration. */
#define HPET_TN_LEVEL        (1u << 1)
#define HPET_TN_INT_ENB      (1u << 2)
#define HPET_TN_PERIODIC     (1u << 3)
#define HPET_TN_PER_CAP      (1u << 4)    /* RO */
#define HPET_TN_SIZE_CAP     (1u << 5)    /* RO: 64-bit */
#define HPET_TN_VAL_SET      (1u << 6)
#define HPET_TN_32MODE       (1u << 8)
#define HPET_TN_ROUTE_SHIFT  9
#define HPET_TN_ROUTE_MASK   (0x1fu << HPET_TN_ROUTE_SHIFT)
#define HPET_TN_FSB_EN       (1u << 14)   /* not supported: reads 0 */
#define HPET_TN_FSB_CAP      (1u << 15)   /* RO: 0 */

#define HPET_LEGACY_IRQ0     0u           /* ISA IRQs of timers 0 and 1 */
#define HPET_LEGACY_IRQ8     8u

struct hpet;

struct hpet_timer {
	struct hpet *hpet;
	unsigned n;
	uint32_t config;       /* the low half's writable bits as written */
	uint64_t cmp;          /* comparator (accumulator when periodic) */
	uint64_t period;       /* the last value written, in periodic mode */
	uint64_t due;          /* next match, in ticks since hpet.tsc_base */
	bool due_never;        /* no match ahead in 2^64 ticks */
	uint32_t late;         /* edges due and not sent yet */
	struct vm_timer timer;
};

/* Called when LEG_RT_CNF changes: `on` cuts the PIT's IRQ0 off. */
typedef void (*hpet_legacy_fn)(void *ctx, bool on);

struct hpet {
	struct dev_host *host;
	struct guest_clock *clock;
	uint64_t tsc_hz;
	uint32_t config;        /* general configuration */
	uint32_t status;        /* Tn_INT_STS */
	uint64_t counter_base;  /* the counter at tsc_base (running), or its value (halted) */
	uint64_t tsc_base;      /* the VM's time when the counter last started */
	uint32_t lines;         /* GSIs the HPET holds high (level timers) */
	uint32_t late_any;      /* bit n: timer n has late edges */
	hpet_legacy_fn legacy;
	void *legacy_ctx;
	struct hpet_timer t[HPET_TIMERS];
	/* statistics and tests */
	uint64_t matches;       /* comparator matches, all timers */
	uint64_t edges;         /* edges sent */
	uint64_t edges_late;    /* of those, sent after their time */
	uint64_t edges_dropped; /* matches no interrupt controller passed on */
	uint64_t bad_accesses;  /* odd sizes and misaligned accesses */
};

/* Halted, counter 0, every timer disabled, edge, one-shot, route 0, no
 * legacy hook. */
void hpet_init(void *dev, struct dev_host *host);
/* What a change of LEG_RT_CNF calls (the platform's route to the PIT); 0:
 * nothing. */
void hpet_set_legacy(struct hpet *h, hpet_legacy_fn legacy, void *ctx);

/* MMIO callback (dev/device.h shape; dev is the struct hpet). */
int hpet_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
/* The page at HPET_BASE; a light device (its 32-bit MOVs are decoded on the
 * light path, anything else goes to the emulator). */
extern const struct dev_desc hpet_desc;

/* The main counter at `now` (the VM's time). */
uint64_t hpet_counter_at(const struct hpet *h, uint64_t now);

/* The CPU took an interrupt: send the next late edge of each timer that has
 * one (one test when none has). */
void hpet_irq_retry(struct hpet *h);
static inline void hpet_irq_taken(struct hpet *h)
{
	if (h->late_any)
		hpet_irq_retry(h);
}

/* Register access by offset, 32 or 64 bits (the MMIO callback without the
 * clock read rules), for tests. */
uint64_t hpet_read(struct hpet *h, unsigned off, unsigned size, uint64_t now);
void hpet_write(struct hpet *h, unsigned off, unsigned size, uint64_t val, uint64_t now);

#endif
