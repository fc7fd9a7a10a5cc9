/* HPET after the IA-PC HPET specification 1.0a (dev/hpet.h has the model).
 *
 * Time is kept as ticks since tsc_base (when the counter last started),
 * which never wrap in practice (2^64 ticks at 100 MHz are 5,800 years):
 * the counter is counter_base plus that, modulo 2^64, and each timer's next
 * match (`due`) is in the same ticks, so a counter the guest set just below
 * 2^64 wraps as on hardware without disturbing the comparisons. */
#include "dev/hpet.h"

#include "dev/tick_math.h"
#include "lib/string.h"

#define WRAP32 (1ull << 32)

static void timer_fire(struct vm_timer *vt, uint64_t now);

/* The HPET drives the lines its routing selects, within what its
 * capabilities allow (IRQ0 and IRQ8 in legacy replacement, I/O APIC pins
 * 20-23 otherwise: timer_gsi). */
static void gsi_set(const struct hpet *h, unsigned gsi, bool level)
{
	struct irq_line l = { .host = h->host, .gsi = (uint8_t)gsi };
	irq_line_set(&l, level);
}

static enum irq_edge_state gsi_edge_state(const struct hpet *h, unsigned gsi)
{
	struct irq_line l = { .host = h->host, .gsi = (uint8_t)gsi };
	return irq_line_edge_state(&l);
}

void hpet_init(void *opaque, struct dev_host *host)
{
	struct hpet *h = opaque;
	memset(h, 0, sizeof(*h));
	h->host = host;
	h->clock = dev_clock(host);
	h->tsc_hz = platform_tsc_hz();
	if (!h->tsc_hz)
		h->tsc_hz = TICK_DEFAULT_TSC_HZ;
	for (unsigned n = 0; n < HPET_TIMERS; n++) {
		struct hpet_timer *t = &h->t[n];
		t->hpet = h;
		t->n = n;
		t->cmp = ~0ull;          /* the comparators' reset value */
		t->due_never = true;
		vm_timer_init(&t->timer, host, timer_fire, t);
	}
}

void hpet_set_legacy(struct hpet *h, hpet_legacy_fn legacy, void *ctx)
{
	h->legacy = legacy;
	h->legacy_ctx = ctx;
}

const struct dev_desc hpet_desc = {
	.name = "hpet", .mmio = true,
	.lock_free = true,   /* its counter read; the rest the platform hands on */
	/* light: its plain 32-bit MOVs are decoded on the light path like the
	 * APICs' (Linux's clocksource watchdog and calibrations read the
	 * counter; a heavy trip per read made the watchdog skip rounds) */
	DEV_RANGES({ .base = HPET_BASE, .len = HPET_SIZE, .fn = hpet_mmio, .light = true }),
	.init = hpet_init,
};

static bool running(const struct hpet *h)
{
	return h->config & HPET_CFG_ENABLE;
}

/* Ticks since tsc_base at `now`. */
static uint64_t elapsed(const struct hpet *h, uint64_t now)
{
	if (now <= h->tsc_base)
		return 0;
	return muldiv64(now - h->tsc_base, HPET_HZ, h->tsc_hz);
}

uint64_t hpet_counter_at(const struct hpet *h, uint64_t now)
{
	return running(h) ? h->counter_base + elapsed(h, now) : h->counter_base;
}

/* The VM's time at which `ticks` since tsc_base are reached, 0 for never. */
static uint64_t tsc_at(const struct hpet *h, uint64_t ticks)
{
	uint64_t d = muldiv64_ceil(ticks, h->tsc_hz, HPET_HZ);
	if (d == UINT64_MAX || h->tsc_base + d < h->tsc_base)
		return 0;
	return h->tsc_base + d;
}

static bool is_periodic(const struct hpet_timer *t)
{
	return t->config & HPET_TN_PERIODIC;   /* only writable on timer 0 */
}

/* The GSI timer n drives, if any: legacy routing for timers 0 and 1, else
 * its route when the capability allows it. */
static bool timer_gsi(const struct hpet *h, unsigned n, unsigned *gsi)
{
	if ((h->config & HPET_CFG_LEGACY) && n < 2) {
		*gsi = n == 0 ? HPET_LEGACY_IRQ0 : HPET_LEGACY_IRQ8;
		return true;
	}
	unsigned route = (h->t[n].config & HPET_TN_ROUTE_MASK) >> HPET_TN_ROUTE_SHIFT;
	if (!((HPET_ROUTE_CAP >> route) & 1))
		return false;
	*gsi = route;
	return true;
}

/* Drives the lines of level-triggered timers: high while the counter runs,
 * the timer's interrupt is enabled and its status bit is set. Timers
 * sharing a line OR their levels. */
static void update_lines(struct hpet *h)
{
	uint32_t want = 0;
	for (unsigned n = 0; n < HPET_TIMERS; n++) {
		const struct hpet_timer *t = &h->t[n];
		unsigned gsi;
		if (running(h) && (t->config & HPET_TN_LEVEL) && (t->config & HPET_TN_INT_ENB) &&
		    (h->status & (1u << n)) && timer_gsi(h, n, &gsi))
			want |= 1u << gsi;
	}
	uint32_t changed = want ^ h->lines;
	h->lines = want;
	for (unsigned gsi = 0; changed; gsi++, changed >>= 1)
		if (changed & 1)
			gsi_set(h, gsi, (want >> gsi) & 1);
}

static void drop_late(struct hpet *h, unsigned n)
{
	h->edges_dropped += h->t[n].late;
	h->t[n].late = 0;
	h->late_any &= ~(1u << n);
}

/* Sends timer n's next edge if the CPU took the last one (`taken`: it just
 * took an interrupt), as the PIT does: one edge at a time; with nothing
 * passing the line on, one edge goes and the rest are dropped. */
static void send_edges(struct hpet *h, unsigned n, bool taken)
{
	struct hpet_timer *t = &h->t[n];
	unsigned gsi;
	if (!t->late) {
		h->late_any &= ~(1u << n);
		return;
	}
	if (!running(h) || !(t->config & HPET_TN_INT_ENB) || !timer_gsi(h, n, &gsi) ||
	    (h->lines & (1u << gsi))) {
		drop_late(h, n);   /* nowhere to go, or a level timer holds the line high */
		return;
	}
	switch (gsi_edge_state(h, gsi)) {
	case IRQ_EDGE_MASKED:
		h->edges_dropped += t->late - 1;
		t->late = 1;
		break;
	case IRQ_EDGE_WAITING:
		h->late_any |= 1u << n;
		return;
	default:
		if (taken || t->late > 1)   /* not the match that just came */
			h->edges_late++;
		break;
	}
	t->late--;
	h->edges++;
	if (t->late)
		h->late_any |= 1u << n;
	else
		h->late_any &= ~(1u << n);
	gsi_set(h, gsi, true);
	gsi_set(h, gsi, false);
}

void hpet_irq_retry(struct hpet *h)
{
	for (unsigned n = 0; n < HPET_TIMERS; n++)
		if (h->late_any & (1u << n))
			send_edges(h, n, true);
}

/* `count` matches of timer n happened; at most `keep` edges wait. */
static void matched(struct hpet *h, unsigned n, uint64_t count, uint32_t keep)
{
	struct hpet_timer *t = &h->t[n];
	h->matches += count;
	if (t->config & HPET_TN_LEVEL) {
		h->status |= 1u << n;   /* set even with the interrupt disabled */
		update_lines(h);
		return;
	}
	if (!(t->config & HPET_TN_INT_ENB))
		return;
	uint64_t late = t->late + count;
	t->late = late > keep ? keep : (uint32_t)late;
	send_edges(h, n, false);
}

static void arm(struct hpet *h, struct hpet_timer *t)
{
	vm_timer_cancel(&t->timer);
	if (!running(h) || t->due_never)
		return;
	uint64_t at = tsc_at(h, t->due);
	if (at)
		vm_timer_arm(&t->timer, at);
}

/* The next match from the comparator, counting from `now`. A comparator
 * equal to the counter matches at once. */
static void program(struct hpet *h, unsigned n, uint64_t now)
{
	struct hpet_timer *t = &h->t[n];
	if (!running(h)) {
		vm_timer_cancel(&t->timer);
		return;
	}
	uint64_t e = elapsed(h, now), c = h->counter_base + e, d;
	if (t->config & HPET_TN_32MODE)
		d = (uint32_t)((uint32_t)t->cmp - (uint32_t)c);
	else
		d = t->cmp - c;
	t->due = e + d;
	t->due_never = t->due < e;
	arm(h, t);
}

/* Timer n's match is due at `e` ticks (e >= due): the matches since, the
 * comparator moved on (periodic) and the next match. One division however
 * many periods went by; a period of 0 makes it a one-shot. */
static void expire(struct hpet *h, unsigned n, uint64_t e)
{
	struct hpet_timer *t = &h->t[n];
	bool mode32 = t->config & HPET_TN_32MODE;
	uint64_t period = mode32 ? (uint32_t)t->period : t->period, count = 1;
	uint32_t keep = HPET_MAX_LATE;
	if (is_periodic(t) && period) {
		uint64_t k = (e - t->due) / period + 1;
		if (k > UINT64_MAX / period) {
			t->due_never = true;
		} else {
			uint64_t step = k * period;
			t->cmp = mode32 ? (uint32_t)(t->cmp + step) : t->cmp + step;
			t->due_never = t->due + step < t->due;
			t->due += step;
			count = k;
			if (period < HPET_MIN_KEPT_PERIOD)
				keep = 1;   /* merged: one edge waits at most */
		}
	} else if (mode32) {
		t->due_never = t->due + WRAP32 < t->due;   /* again when the low half wraps */
		t->due += WRAP32;
	} else {
		t->due_never = true;                       /* after 2^64 ticks */
	}
	matched(h, n, count, keep);
	arm(h, t);
}

static void timer_fire(struct vm_timer *vt, uint64_t now)
{
	struct hpet_timer *t = vt->opaque;
	struct hpet *h = t->hpet;
	if (!running(h) || t->due_never)
		return;
	uint64_t e = elapsed(h, now);
	if (e < t->due) {
		arm(h, t);   /* early by rounding: the rest */
		return;
	}
	expire(h, t->n, e);
}

/* Matches that are due but whose timer has not fired yet (the hypervisor
 * runs timers at exits): taken before an access, so that the guest sees
 * them as it would on hardware, and a write does not lose them. */
static void catch_up(struct hpet *h, uint64_t now)
{
	if (!running(h))
		return;
	uint64_t e = elapsed(h, now);
	for (unsigned n = 0; n < HPET_TIMERS; n++) {
		struct hpet_timer *t = &h->t[n];
		if (t->timer.armed && !t->due_never && e >= t->due)
			expire(h, n, e);
	}
}

static void write_general_config(struct hpet *h, uint32_t val, uint64_t now)
{
	uint32_t old = h->config, new = val & (HPET_CFG_ENABLE | HPET_CFG_LEGACY);
	if (!(old & HPET_CFG_ENABLE) && (new & HPET_CFG_ENABLE)) {
		h->config = new;
		h->tsc_base = now;       /* counting on from counter_base */
		for (unsigned n = 0; n < HPET_TIMERS; n++)
			program(h, n, now);
	} else if ((old & HPET_CFG_ENABLE) && !(new & HPET_CFG_ENABLE)) {
		h->counter_base = hpet_counter_at(h, now);
		h->config = new;
		for (unsigned n = 0; n < HPET_TIMERS; n++) {
			vm_timer_cancel(&h->t[n].timer);
			drop_late(h, n);
		}
	} else {
		h->config = new;
	}
	if ((old ^ new) & HPET_CFG_LEGACY) {
		drop_late(h, 0);         /* timers 0 and 1 change lines */
		drop_late(h, 1);
		if (h->legacy)
			h->legacy(h->legacy_ctx, new & HPET_CFG_LEGACY);
	}
	update_lines(h);
}

static void write_timer_config(struct hpet *h, unsigned n, uint32_t val, uint64_t now)
{
	struct hpet_timer *t = &h->t[n];
	uint32_t old = t->config;
	uint32_t wmask = HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_VAL_SET | HPET_TN_32MODE |
			 HPET_TN_ROUTE_MASK | (n == 0 ? HPET_TN_PERIODIC : 0);
	uint32_t new = val & wmask;
	unsigned route = (new & HPET_TN_ROUTE_MASK) >> HPET_TN_ROUTE_SHIFT;
	if (!((HPET_ROUTE_CAP >> route) & 1))   /* not a pin it can drive: not taken */
		new = (new & ~HPET_TN_ROUTE_MASK) | (old & HPET_TN_ROUTE_MASK);
	t->config = new;
	if ((new & HPET_TN_32MODE) && !(old & HPET_TN_32MODE)) {
		t->cmp = (uint32_t)t->cmp;
		t->period = (uint32_t)t->period;
	}
	if (!(new & HPET_TN_LEVEL))
		h->status &= ~(1u << n);   /* the status is for level interrupts */
	uint32_t delivery = HPET_TN_LEVEL | HPET_TN_INT_ENB | HPET_TN_ROUTE_MASK;
	if ((old ^ new) & delivery || !(new & HPET_TN_INT_ENB))
		drop_late(h, n);
	program(h, n, now);
	update_lines(h);
}

/* In periodic mode a write sets the period, and with VAL_SET the
 * comparator too; VAL_SET clears after any comparator write. */
static void write_cmp(struct hpet *h, unsigned n, uint64_t val, uint64_t mask, uint64_t now)
{
	struct hpet_timer *t = &h->t[n];
	if (t->config & HPET_TN_32MODE)
		mask &= 0xffffffffull;   /* a 32-bit comparator: the high half is ignored */
	if (!mask)
		return;
	if (!is_periodic(t) || (t->config & HPET_TN_VAL_SET))
		t->cmp = (t->cmp & ~mask) | (val & mask);
	t->period = (t->period & ~mask) | (val & mask);
	t->config &= ~HPET_TN_VAL_SET;
	program(h, n, now);
}

static uint64_t read_reg(struct hpet *h, unsigned reg, uint64_t now)
{
	switch (reg) {
	case HPET_REG_CAP:
		return (uint64_t)HPET_PERIOD_FS << 32 | HPET_CAP_LOW;
	case HPET_REG_CONFIG:
		return h->config;
	case HPET_REG_STATUS:
		return h->status;
	case HPET_REG_COUNTER:
		return hpet_counter_at(h, now);
	}
	if (reg < HPET_REG_TIMER(0) || reg >= HPET_REG_TIMER(HPET_TIMERS))
		return 0;   /* reserved */
	const struct hpet_timer *t = &h->t[(reg - HPET_REG_TIMER(0)) / 0x20];
	switch ((reg - HPET_REG_TIMER(0)) % 0x20) {
	case HPET_TIMER_CONFIG:
		return (uint64_t)HPET_ROUTE_CAP << 32 | t->config | HPET_TN_SIZE_CAP |
		       (t->n == 0 ? HPET_TN_PER_CAP : 0);
	case HPET_TIMER_CMP:
		return t->cmp;
	default:
		return 0;   /* FSB route (no FSB delivery), reserved */
	}
}

/* `mask` says which half (or both) the guest wrote; val is in place. */
static void write_reg(struct hpet *h, unsigned reg, uint64_t val, uint64_t mask, uint64_t now)
{
	bool low = mask & 1;
	switch (reg) {
	case HPET_REG_CONFIG:
		if (low)
			write_general_config(h, (uint32_t)val, now);
		return;
	case HPET_REG_STATUS:
		if (low) {
			h->status &= ~((uint32_t)val & ((1u << HPET_TIMERS) - 1));
			update_lines(h);
		}
		return;
	case HPET_REG_COUNTER:
		if (!running(h))   /* writable while halted only */
			h->counter_base = (h->counter_base & ~mask) | (val & mask);
		return;
	}
	if (reg < HPET_REG_TIMER(0) || reg >= HPET_REG_TIMER(HPET_TIMERS))
		return;
	unsigned n = (reg - HPET_REG_TIMER(0)) / 0x20;
	switch ((reg - HPET_REG_TIMER(0)) % 0x20) {
	case HPET_TIMER_CONFIG:
		if (low)   /* the high half is the read-only route capability */
			write_timer_config(h, n, (uint32_t)val, now);
		return;
	case HPET_TIMER_CMP:
		write_cmp(h, n, val, mask, now);
		return;
	default:
		return;
	}
}

uint64_t hpet_read(struct hpet *h, unsigned off, unsigned size, uint64_t now)
{
	catch_up(h, now);
	uint64_t v = read_reg(h, off & ~7u, now);
	if (size == 8)
		return v;
	return (uint32_t)(v >> (8 * (off & 4)));
}

void hpet_write(struct hpet *h, unsigned off, unsigned size, uint64_t val, uint64_t now)
{
	catch_up(h, now);
	unsigned shift = 8 * (off & 4);
	uint64_t mask = size == 8 ? ~0ull : 0xffffffffull << shift;
	if (size != 8)
		val = (uint64_t)(uint32_t)val << shift;
	write_reg(h, off & ~7u, val, mask, now);
}

/* Only 32-bit accesses at offset 0 or 4 of a register and 64-bit ones at
 * offset 0 are defined; others read 0 and change nothing. */
static bool access_ok(unsigned off, unsigned size)
{
	return off < HPET_SIZE && ((size == 4 && !(off & 3)) || (size == 8 && !(off & 7)));
}

int hpet_mmio(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct hpet *h = opaque;
	uint64_t off64 = addr - HPET_BASE;
	unsigned off = (unsigned)off64;
	if (off64 >= HPET_SIZE || !access_ok(off, size)) {
		h->bad_accesses++;
		if (!is_write)
			*data = 0;
		return IO_OK;
	}
	/* a counter read is a clock read: polling may start or serve it */
	bool counter_read = !is_write && (off & ~7u) == HPET_REG_COUNTER;
	uint64_t now = clock_access(h->clock, counter_read);
	if (is_write)
		hpet_write(h, off, size, *data, now);
	else
		*data = hpet_read(h, off, size, now);
	return IO_OK;
}
