/* 8254 PIT after the Intel 82C54 data sheet (and QEMU's i8254 for the
 * read/write state machine). */
#include "dev/pit8254.h"

#include "dev/tick_math.h"
#include "lib/string.h"

enum { RW_LATCH = 0, RW_LSB = 1, RW_MSB = 2, RW_WORD0 = 3, RW_WORD1 = 4 };

static void irq_timer_fire(struct vm_timer *t, uint64_t now);

void pit_init(void *opaque, struct dev_host *h)
{
	struct pit8254 *pit = opaque;
	memset(pit, 0, sizeof(*pit));
	pit->irq = dev_irq_line(h, pit8254_desc.irq);
	pit->clock = dev_clock(h);
	pit->tsc_hz = platform_tsc_hz();
	if (!pit->tsc_hz)
		pit->tsc_hz = TICK_DEFAULT_TSC_HZ;
	pit->tsc_at_init = clock_now(pit->clock);
	vm_timer_init(&pit->timer, h, irq_timer_fire, pit);
	for (unsigned i = 0; i < 3; i++) {
		struct pit_channel *c = &pit->ch[i];
		c->mode = 3;
		c->rw_mode = c->read_state = c->write_state = RW_WORD0;
		c->count = 0x10000;
		c->gate = i != 2;
		c->stopped = !c->gate;    /* mode 3 with the gate low */
		c->loaded = true;
		c->load_tsc = c->write_tsc = c->stop_tsc = pit->tsc_at_init;
	}
}

const struct dev_desc pit8254_desc = {
	.name = "pit8254",
	.irq = PIT_IRQ,
	DEV_RANGES({ .base = PIT_BASE, .len = PIT_PORTS, .fn = pit_io, .light = true },
		   { .base = PIT_PORT61, .len = 1, .fn = pit_port61_io, .name = "port61", .light = true }),
	.init = pit_init,
};

/* Modes 1 and 5 count only once a rising gate has triggered them. */
static bool gate_triggered(const struct pit_channel *c)
{
	return c->triggered || (c->mode != 1 && c->mode != 5);
}

/* PIT input clock ticks counted by channel c at `now`. */
static uint64_t ticks(const struct pit8254 *pit, const struct pit_channel *c, uint64_t now)
{
	uint64_t t = c->stopped ? c->stop_tsc : now;
	if (t < c->load_tsc || !gate_triggered(c))
		return 0;
	return muldiv64(t - c->load_tsc, PIT_HZ, pit->tsc_hz);
}

static uint64_t tsc_at_tick(const struct pit8254 *pit, const struct pit_channel *c, uint64_t tick)
{
	return c->load_tsc + muldiv64_ceil(tick, pit->tsc_hz, PIT_HZ);
}

static uint16_t count_at(const struct pit_channel *c, uint64_t d)
{
	switch (c->mode) {
	case 0: case 1: case 4: case 5:
		return (uint16_t)(c->count - d);          /* wraps through 0 */
	case 3:
		/* counts down by two, twice per period */
		return (uint16_t)(c->count - ((2 * d) % c->count));
	default: /* 2 */
		return (uint16_t)(c->count - (d % c->count));
	}
}

uint16_t pit_get_count(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (!c->loaded || !gate_triggered(c))
		return (uint16_t)c->count;
	return count_at(c, ticks(pit, c, now));
}

bool pit_get_out(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (!c->loaded)
		return c->mode != 0;    /* mode 0: low from the control word on */
	if (c->held)
		return false;           /* mode 0, half a new count written */
	if (!gate_triggered(c))
		return true;            /* modes 1 and 5 wait for the gate, OUT high */
	if (c->stopped && !c->gate && (c->mode == 2 || c->mode == 3))
		return true;            /* a low gate holds OUT high */
	uint64_t d = ticks(pit, c, now);
	switch (c->mode) {
	case 0: /* interrupt on terminal count: high once the count reaches 0 */
		return d >= c->count;
	case 1: /* hardware one-shot: low from the trigger to terminal count */
		return d >= c->count;
	case 2: /* rate generator: low for one clock when the count is 1 */
		return c->count < 2 || d % c->count != c->count - 1;
	case 3: /* square wave: high for the first half of each period */
		return d % c->count < (c->count + 1) / 2;
	default: /* 4, 5: strobe: low for one clock at terminal count */
		return d != c->count;
	}
}

/* Rising edges of channel 0's OUT in ticks 1..d since the load. */
static uint64_t edges_until(const struct pit_channel *c, uint64_t d)
{
	switch (c->mode) {
	case 0:
		return d >= c->count;
	case 2:
	case 3:
		return d / c->count;
	case 4:
		return d >= (uint64_t)c->count + 1;
	default:   /* 1, 5: channel 0's gate never rises */
		return 0;
	}
}

/* The tick (since load) of channel 0's next OUT rising edge after tick d,
 * or 0 if there is none. */
static uint64_t next_rising(const struct pit_channel *c, uint64_t d)
{
	switch (c->mode) {
	case 0:
		return d < c->count ? c->count : 0;
	case 2:
	case 3:
		return (d / c->count + 1) * c->count;
	case 4:
		return d < (uint64_t)c->count + 1 ? c->count + 1 : 0;
	default:
		return 0;
	}
}

/* Sends the next edge due if the CPU has taken the last one (`taken`: it
 * just took an interrupt); if nothing passes IRQ0 on to the CPU, sends one
 * and drops the rest (a PC loses those). One pulse at most: the next waits
 * until the CPU takes this one. */
static void irq_send(struct pit8254 *pit, bool taken)
{
	if (!pit->irq_late)
		return;
	if (pit->irq_replaced) {   /* the HPET drives IRQ0 */
		pit->irqs_dropped += pit->irq_late;
		pit->irq_late = 0;
		return;
	}
	switch (irq_line_edge_state(&pit->irq)) {
	case IRQ_EDGE_MASKED:
		/* the edge still reaches the pins (a masked 8259 latches it in
		 * IRR), but the CPU takes none of those: no backlog */
		pit->irqs_dropped += pit->irq_late - 1;
		pit->irq_late = 1;
		break;
	case IRQ_EDGE_WAITING:
		return;
	default:
		if (taken || pit->irq_late > 1)   /* not the edge that just came */
			pit->irqs_late++;
		break;
	}
	pit->irq_late--;
	pit->irqs++;
	/* an edge: the PIC latches it, the I/O APIC delivers it */
	irq_line_set(&pit->irq, true);
	irq_line_set(&pit->irq, false);
}

void pit_irq_replace(struct pit8254 *pit, bool replaced)
{
	pit->irq_replaced = replaced;
	if (replaced)
		irq_send(pit, false);   /* drops what was late */
}

void pit_irq_retry(struct pit8254 *pit)
{
	irq_send(pit, true);
}

/* Counts the edges channel 0 made up to `now`, sends what it can and arms
 * the timer for the next edge. */
static void irq_update(struct pit8254 *pit, uint64_t now)
{
	struct pit_channel *c = &pit->ch[0];
	vm_timer_cancel(&pit->timer);
	if (!c->loaded || c->held)
		return;
	uint64_t d = ticks(pit, c, now), e = edges_until(c, d);
	if (e > pit->irq_edges) {
		uint64_t late = pit->irq_late + (e - pit->irq_edges);
		pit->irq_late = late > PIT_MAX_LATE ? PIT_MAX_LATE : (uint32_t)late;
	}
	pit->irq_edges = e;
	irq_send(pit, false);
	uint64_t next = next_rising(c, d);
	if (!next)
		return;
	vm_timer_arm(&pit->timer, tsc_at_tick(pit, c, next));
}

static void irq_timer_fire(struct vm_timer *t, uint64_t now)
{
	irq_update(t->opaque, now);
}

static void load_count(struct pit8254 *pit, unsigned n, uint32_t v, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	c->count = v ? v : 0x10000;
	c->loaded = true;
	c->held = false;
	c->write_tsc = now;
	/* modes 1 and 5 load on the next trigger; 2 and 3 reload at the end of
	 * the current period, but start counting at once the first time */
	c->triggered = false;
	c->load_tsc = now;
	c->stopped = !c->gate && c->mode != 1 && c->mode != 5;
	c->stop_tsc = now;
	if (n == 0) {
		pit->irq_edges = 0;
		irq_update(pit, now);
	}
}

static void latch_count(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (c->count_latched)
		return; /* the first latch holds until read */
	c->latched_count = pit_get_count(pit, n, now);
	c->count_latched = c->rw_mode;
}

/* Null count: a count written (or the control word) that has not reached
 * the counting element yet: until the next clock, or the trigger. */
static bool null_count(const struct pit8254 *pit, const struct pit_channel *c, uint64_t now)
{
	if (!c->loaded || c->held || !gate_triggered(c))
		return true;
	uint64_t t = c->stopped ? c->stop_tsc : now;
	return t < c->write_tsc || muldiv64(t - c->write_tsc, PIT_HZ, pit->tsc_hz) == 0;
}

static void latch_status(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (c->status_latched)
		return;
	c->status = (uint8_t)((pit_get_out(pit, n, now) << 7) | (null_count(pit, c, now) << 6) |
			      (c->rw_mode << 4) | (c->mode << 1) | c->bcd);
	c->status_latched = true;
}

static void write_control(struct pit8254 *pit, uint8_t v, uint64_t now)
{
	unsigned n = v >> 6;
	if (n == 3) {
		/* read-back: bit 5 = 0 latches counts, bit 4 = 0 latches status,
		 * bits 1-3 select the channels */
		for (unsigned i = 0; i < 3; i++) {
			if (!(v & (2u << i)))
				continue;
			if (!(v & 0x20))
				latch_count(pit, i, now);
			if (!(v & 0x10))
				latch_status(pit, i, now);
		}
		return;
	}
	struct pit_channel *c = &pit->ch[n];
	unsigned access = (v >> 4) & 3;
	if (access == RW_LATCH) {
		latch_count(pit, n, now);
		return;
	}
	c->rw_mode = (uint8_t)access;
	c->read_state = c->write_state = (uint8_t)access;
	c->mode = (v >> 1) & 7;
	if (c->mode > 5)
		c->mode -= 4;       /* 6 -> 2, 7 -> 3 */
	c->bcd = v & 1;
	/* The counter stops until a new count is written. */
	c->loaded = false;
	c->held = false;
	c->count_latched = 0;
	if (n == 0)
		vm_timer_cancel(&pit->timer);
}

/* Mode 0, the first byte of a two-byte count: the count stops, OUT goes low. */
static void hold_count(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (c->mode != 0 || !c->loaded || c->held)
		return;
	if (!c->stopped) {
		c->stopped = true;
		c->stop_tsc = now;
	}
	c->held = true;
	if (n == 0)
		vm_timer_cancel(&pit->timer);
}

static void write_data(struct pit8254 *pit, unsigned n, uint8_t v, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	switch (c->write_state) {
	case RW_LSB:
		load_count(pit, n, v, now);
		break;
	case RW_MSB:
		load_count(pit, n, (uint32_t)v << 8, now);
		break;
	case RW_WORD0:
		c->write_latch = v;
		c->write_state = RW_WORD1;
		hold_count(pit, n, now);
		break;
	default: /* RW_WORD1 */
		load_count(pit, n, c->write_latch | ((uint32_t)v << 8), now);
		c->write_state = RW_WORD0;
		break;
	}
}

static uint8_t read_data(struct pit8254 *pit, unsigned n, uint64_t now)
{
	struct pit_channel *c = &pit->ch[n];
	if (c->status_latched) {
		c->status_latched = false;
		return c->status;
	}
	if (c->count_latched) {
		switch (c->count_latched) {
		case RW_MSB:
			c->count_latched = 0;
			return (uint8_t)(c->latched_count >> 8);
		case RW_WORD0:
			c->count_latched = RW_MSB;
			return (uint8_t)c->latched_count;
		default: /* RW_LSB */
			c->count_latched = 0;
			return (uint8_t)c->latched_count;
		}
	}
	uint16_t count = pit_get_count(pit, n, now);
	switch (c->read_state) {
	case RW_MSB:
		return (uint8_t)(count >> 8);
	case RW_WORD0:
		c->read_state = RW_WORD1;
		return (uint8_t)count;
	case RW_WORD1:
		c->read_state = RW_WORD0;
		return (uint8_t)(count >> 8);
	default: /* RW_LSB */
		return (uint8_t)count;
	}
}

int pit_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pit8254 *pit = opaque;
	uint64_t now = clock_access(pit->clock, !is_write), value = 0;

	for (unsigned i = 0; i < size; i++) {
		uint64_t off = addr + i - PIT_BASE;
		if (off >= PIT_PORTS) {
			value |= 0xffull << (8 * i);
			continue;
		}
		if (is_write) {
			uint8_t v = (uint8_t)(*data >> (8 * i));
			if (off == 3)
				write_control(pit, v, now);
			else
				write_data(pit, (unsigned)off, v, now);
		} else if (off < 3) {
			value |= (uint64_t)read_data(pit, (unsigned)off, now) << (8 * i);
		} else {
			value |= 0xffull << (8 * i); /* the control word is write-only */
		}
	}
	if (!is_write)
		*data = value;
	return IO_OK;
}

static void set_gate2(struct pit8254 *pit, bool gate, uint64_t now)
{
	struct pit_channel *c = &pit->ch[2];
	if (gate == c->gate)
		return;
	c->gate = gate;
	if (!c->loaded)
		return;
	switch (c->mode) {
	case 0:
	case 4:
		/* the gate enables and disables counting */
		if (!gate) {
			if (!c->stopped) {
				c->stopped = true;
				c->stop_tsc = now;
			}
		} else if (c->stopped && !c->held) {
			c->load_tsc += now - c->stop_tsc;
			c->stopped = false;
		}
		break;
	case 2:
	case 3:
		/* a low gate stops the count (OUT high), a rising one reloads it */
		if (!gate) {
			c->stopped = true;
			c->stop_tsc = now;
		} else {
			c->stopped = false;
			c->load_tsc = now;
		}
		break;
	default:
		/* 1, 5: a rising gate (re)starts the count */
		if (gate) {
			c->triggered = true;
			c->load_tsc = now;
		}
		break;
	}
}

int pit_port61_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct pit8254 *pit = opaque;
	(void)addr;
	uint64_t now = clock_access(pit->clock, !is_write);

	if (is_write) {
		uint8_t v = (uint8_t)*data;
		pit->port61 = v & PORT61_RW_MASK;
		set_gate2(pit, v & PORT61_GATE2, now);
		return IO_OK;
	}
	/* The DRAM refresh request toggles every 15.085 us. */
	uint64_t periods = muldiv64(now - pit->tsc_at_init, 1000000000ull, pit->tsc_hz * 15085);
	uint64_t v = pit->port61 | ((periods & 1) ? PORT61_REFRESH : 0) |
		     (pit_get_out(pit, 2, now) ? PORT61_OUT2 : 0);
	if (size > 1)
		v |= ~0ull << 8; /* only one port here */
	if (size < 8)
		v &= (1ull << (8 * size)) - 1;
	*data = v;
	return IO_OK;
}
