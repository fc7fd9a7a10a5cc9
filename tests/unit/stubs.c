#include "tests/unit/stubs.h"

#include <stdlib.h>
#include <string.h>

int fake_host_storage;

struct irq_line stub_irq(unsigned gsi)
{
	return (struct irq_line){ .host = FAKE_HOST, .gsi = (uint8_t)gsi };
}

struct irq_line dev_irq_line(struct dev_host *h, unsigned gsi)
{
	(void)h;
	return stub_irq(gsi);
}

uint64_t stub_ram_size;
unsigned stub_nr_vcpus;
struct rtc_time stub_wall_clock;

uint64_t dev_ram_size(struct dev_host *h)
{
	(void)h;
	return stub_ram_size;
}

unsigned dev_nr_vcpus(struct dev_host *h)
{
	(void)h;
	return stub_nr_vcpus;
}

void dev_wall_clock(struct dev_host *h, struct rtc_time *t)
{
	(void)h;
	*t = stub_wall_clock;
}

char stub_console[4096];
unsigned stub_console_len;
struct dev_host *stub_console_host;

unsigned stub_vm_end_calls;
unsigned stub_vm_end_status;
const char *stub_vm_end_why;
struct dev_host *stub_vm_end_host;

uint64_t stub_tsc;
uint64_t stub_tsc_hz;
struct guest_clock stub_clock;
unsigned stub_clock_polls;
enum irq_edge_state stub_irq_edge_state;

bool stub_irq_level[STUB_IRQ_LINES];
unsigned stub_irq_raises[STUB_IRQ_LINES];
unsigned stub_irq_calls;

struct vm_timer *stub_timers[STUB_MAX_TIMERS];
unsigned stub_nr_timers;
unsigned stub_timer_arms;
unsigned stub_timer_cancels;   /* of an armed timer */

void stubs_reset(void)
{
	stub_ram_size = 32ull << 20;
	stub_nr_vcpus = 1;
	stub_wall_clock = (struct rtc_time){ 2026, 1, 1, 0, 0, 0 };
	memset(stub_console, 0, sizeof(stub_console));
	stub_console_len = 0;
	stub_console_host = NULL;
	stub_vm_end_calls = 0;
	stub_vm_end_status = 0;
	stub_vm_end_why = NULL;
	stub_vm_end_host = NULL;
	stub_tsc = 0;
	stub_tsc_hz = 0;
	memset(&stub_clock, 0, sizeof(stub_clock));
	stub_clock.gap_min = 1ull << 63;   /* never polls */
	stub_clock.next_due = UINT64_MAX;  /* no timer the hypervisor runs */
	stub_clock_polls = 0;
	stub_irq_edge_state = IRQ_EDGE_FREE;
	memset(stub_irq_level, 0, sizeof(stub_irq_level));
	memset(stub_irq_raises, 0, sizeof(stub_irq_raises));
	stub_irq_calls = 0;
	/* Forget armed timers without touching them: they may belong to a
	 * previous test's device that no longer exists. Devices clear their
	 * own timer at init. */
	stub_nr_timers = 0;
	stub_timer_arms = 0;
	stub_timer_cancels = 0;
}

void dev_console_putc(struct dev_host *h, char c)
{
	stub_console_host = h;
	if (stub_console_len + 1 < sizeof(stub_console))
		stub_console[stub_console_len++] = c;
}

void dev_vm_end(struct dev_host *h, unsigned status, const char *why)
{
	stub_vm_end_calls++;
	stub_vm_end_host = h;
	stub_vm_end_status = status;
	stub_vm_end_why = why;
}

uint64_t platform_tsc(void)
{
	return stub_tsc;
}

uint64_t platform_tsc_hz(void)
{
	return stub_tsc_hz;
}

struct guest_clock *dev_clock(struct dev_host *h)
{
	(void)h;
	return &stub_clock;
}

uint64_t clock_read_slow(struct guest_clock *c, uint64_t host)
{
	stub_clock_polls++;
	c->last_read = host;   /* clock_read_fast leaves it to the slow path */
	return host + (uint64_t)c->offset;
}

enum irq_edge_state irq_line_edge_state(const struct irq_line *l)
{
	(void)l;
	return stub_irq_edge_state;
}

void irq_line_set(const struct irq_line *l, bool level)
{
	unsigned gsi = l->gsi;
	stub_irq_calls++;
	if (gsi >= STUB_IRQ_LINES)
		return;
	stub_irq_level[gsi] = level;
	if (level)
		stub_irq_raises[gsi]++;
}

static void timer_unlink(struct vm_timer *t)
{
	for (unsigned i = 0; i < stub_nr_timers; i++) {
		if (stub_timers[i] == t) {
			stub_timers[i] = stub_timers[--stub_nr_timers];
			return;
		}
	}
}

void vm_timer_arm(struct vm_timer *t, uint64_t deadline_tsc)
{
	stub_timer_arms++;
	if (!t->armed) {
		if (stub_nr_timers == STUB_MAX_TIMERS)
			abort();
		stub_timers[stub_nr_timers++] = t;
	}
	t->armed = true;
	t->deadline_tsc = deadline_tsc ? deadline_tsc : 1;
}

void vm_timer_cancel(struct vm_timer *t)
{
	if (!t->armed)
		return;
	stub_timer_cancels++;
	t->armed = false;
	timer_unlink(t);
}

uint64_t stubs_next_deadline(void)
{
	uint64_t next = 0;
	for (unsigned i = 0; i < stub_nr_timers; i++)
		if (!next || stub_timers[i]->deadline_tsc < next)
			next = stub_timers[i]->deadline_tsc;
	return next;
}

unsigned stubs_advance_to(uint64_t tsc)
{
	unsigned fires = 0;
	for (;;) {
		struct vm_timer *t = NULL;
		for (unsigned i = 0; i < stub_nr_timers; i++)
			if (!t || stub_timers[i]->deadline_tsc < t->deadline_tsc)
				t = stub_timers[i];
		if (!t || t->deadline_tsc > tsc)
			break;
		if (t->deadline_tsc > stub_tsc)
			stub_tsc = t->deadline_tsc;
		t->armed = false;
		timer_unlink(t);
		t->fire(t, stub_tsc);
		fires++;
		if (fires > 1000000)
			abort(); /* a timer that re-arms in the past forever */
	}
	if (tsc > stub_tsc)
		stub_tsc = tsc;
	return fires;
}

uint8_t stub_ram[STUB_RAM_SIZE];

static bool stub_ram_in(void *ctx, uint64_t gpa, uint64_t len)
{
	(void)ctx;
	return gpa < STUB_RAM_SIZE && len <= STUB_RAM_SIZE - gpa;
}

static int stub_ram_read(void *ctx, uint64_t gpa, void *dst, size_t len)
{
	if (!stub_ram_in(ctx, gpa, len))
		return -1;
	memcpy(dst, stub_ram + gpa, len);
	return 0;
}

static int stub_ram_write(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	if (!stub_ram_in(ctx, gpa, len))
		return -1;
	memcpy(stub_ram + gpa, src, len);
	return 0;
}

static uint8_t *stub_ram_base(void *ctx)
{
	(void)ctx;
	return stub_ram;
}

/* With `ram`, as the hypervisor's: the queues use it for their rings (the
 * virtqueue tests' own memory has none and so tests the accessor path). */
const struct vq_guest_mem stub_ram_mem = { NULL, stub_ram_in, stub_ram_read, stub_ram_write,
					   stub_ram_base };

bool stub_desc_range_is(const struct dev_desc *d, unsigned i, uint64_t base, uint64_t len,
			io_handler_fn fn, bool light)
{
	if (i >= d->nr_ranges)
		return false;
	const struct dev_range *r = &d->ranges[i];
	return r->base == base && r->len == len && r->fn == fn && r->light == light;
}
