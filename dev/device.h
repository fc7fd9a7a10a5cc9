/* Device model: a device describes itself (struct dev_desc, below): the
 * ports or MMIO ranges it decodes, all with one callback shape, and its
 * init. A callback gets only what it uses: the device object first, then
 * the access; it returns IO_OK to resume the guest, IO_VM_END when it ended
 * the VM, or a negative error. `light` says the callback may run on the
 * light exit path: it needs no state the heavy path restores, and what it
 * does to interrupts reaches the vCPU through irq_line_set (or the
 * platform's wrappers), which the end of every exit checks. The light path
 * hands accesses to other devices to the heavy path. */
#ifndef DEV_DEVICE_H
#define DEV_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

struct dev_host;

enum io_result {
	IO_OK = 0,
	IO_VM_END = 1,
	IO_NOT_LIGHT = 2,   /* never from a device: the light path must hand the
			       access to the heavy path (io_range.light is false) */
	IO_NEEDS_LOCK = 3,  /* never from a device: the platform's wrapper in a VM of
			       several vCPUs, on the light path: nothing was done,
			       the heavy path (VM lock held) calls again */
};

/* dev: the device object (struct io_range's dev). data: for a write, the
 * value written (low `size` bytes); for a read, the callback stores the
 * value read. size is 1, 2 or 4 for ports. No device needs the accessing
 * vCPU; the platform's wrappers that do find it themselves
 * (vmm/vm.h exit_vcpu). */
typedef int (*io_handler_fn)(void *dev, uint64_t addr, uint64_t *data, unsigned size,
			     bool is_write);

struct io_range {
	uint64_t base;
	uint64_t len;
	io_handler_fn fn;
	void *dev;          /* fn's first argument */
	bool light;
	const char *name;
};

/* A device describes itself once, in a const descriptor declared in its
 * header: the ranges it decodes, whether it may stay light in a VM of
 * several vCPUs, its interrupt line and its init. The platform
 * (vmm/platform.c) walks its table of descriptors once: it inits each
 * device object, then registers its ranges with the object as the
 * callbacks' `dev`; no device builds its ranges at run time. */
struct dev_range {
	uint64_t base;
	io_handler_fn fn;
	const char *name;   /* 0: the device's */
	uint32_t len;       /* (32 bits: a range takes 32 bytes) */
	bool light;         /* may run on the light path (see the top) */
};

struct dev_desc {
	const char *name;
	bool mmio;          /* the ranges are MMIO addresses, else ports */
	/* In a VM of several vCPUs its light ranges stay light, without the VM
	 * lock: the callback touches no shared state (the PM timer), or the
	 * platform's wrapper for such a VM hands whatever would to the heavy
	 * path (the local APIC, the HPET). Otherwise they go heavy there. */
	bool lock_free;
	uint8_t irq;        /* its interrupt line (irq_line's gsi), which its init
			       takes from dev_irq_line; unread without one */
	unsigned nr_ranges;
	const struct dev_range *ranges;
	/* Sets the object up as at power-on, taking what it needs from its host
	 * (the services below); 0: nothing to do (another descriptor of the
	 * same object inits it, or the platform does, as each vCPU's local
	 * APIC). There is no reset member: lightpath has no warm reset. A
	 * guest's reset request ends its VM (dev/i8042.c), and a new VM's
	 * devices are new objects, inited afresh. */
	void (*init)(void *dev, struct dev_host *h);
};

/* .ranges and .nr_ranges of a descriptor, from its list of ranges. */
#define DEV_RANGES(...)                                                              \
	.ranges = (const struct dev_range[]){ __VA_ARGS__ },                           \
	.nr_ranges = sizeof((const struct dev_range[]){ __VA_ARGS__ }) / sizeof(struct dev_range)

/* What a device reaches outside itself, handed to it at init: the VM it
 * belongs to, as an opaque handle (the hypervisor's is the VM's platform,
 * vmm/dev_host.c; the host unit tests provide their own), its interrupt
 * lines (struct irq_line), its timers (struct vm_timer), the VM's clock and
 * the facts a PC's firmware tables tell (RAM, CPUs, the date). A device
 * never sees struct vm or another device. */
void dev_console_putc(struct dev_host *h, char c);          /* guest serial output */
void dev_vm_end(struct dev_host *h, unsigned status, const char *why); /* stop this VM */
uint64_t dev_ram_size(struct dev_host *h);                  /* the VM's RAM, bytes from 0 */
unsigned dev_nr_vcpus(struct dev_host *h);                  /* its vCPUs (APIC IDs 0..n-1) */
struct rtc_time;
void dev_wall_clock(struct dev_host *h, struct rtc_time *t); /* the date and time now */
#if __STDC_HOSTED__
uint64_t platform_tsc(void);                            /* host TSC now */
#else
/* In the hypervisor it is one instruction: keep it inline on the light path. */
static inline uint64_t platform_tsc(void)
{
	uint32_t lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif
uint64_t platform_tsc_hz(void);                         /* host TSC frequency */

/* The VM's time, in guest TSC ticks at platform_tsc_hz(): what the guest's
 * RDTSC reads, and what every timer device counts from, so that a guest
 * finds its TSC and its timers in agreement. It is the host TSC plus an
 * offset, except while the guest polls its clocks through VM exits that are
 * slower than a PC's port reads (under an emulator): then RDTSC exits too,
 * and the guest's time advances by a fixed CLOCK_POLL_STEP per exit, as if
 * each exit cost what it costs on hardware (vmm/guest_clock.h). Devices
 * keep the pointer dev_clock() gives them and read it with clock_now() or,
 * for a guest's access to a clock device, clock_access().
 *
 * A guest's clock read that finds the VM's earliest device timer due
 * (next_due) makes the VM's timers run at the end of that exit: the host
 * timer that should have run them can come late (QEMU's comes tens of
 * milliseconds late on a busy host), and a guest must never read a time
 * past a timer's deadline with that timer's interrupt not raised yet. */
struct guest_clock {
	int64_t offset;         /* guest time = host TSC + offset, while not polling */
	uint64_t vt;            /* guest time while polling */
	uint64_t next_due;      /* the VM's earliest device timer, its time (~0: none) */
	bool polling;
	bool touched;           /* the current exit accessed a clock device */
	uint64_t last_read;     /* host TSC of the guest's last clock read */
	/* A read whose gap to the last one (host TSC) is in gap_min ..
	 * gap_min + gap_span takes clock_read_slow: it starts polling. While
	 * polling the range is everything (min 0, span ~0), so that a read
	 * tests one range, not the polling flag too; never: min 2^63, span 0. */
	uint64_t gap_min;
	uint64_t gap_span;
};

struct guest_clock *dev_clock(struct dev_host *h);
/* A read at host TSC `host` whose gap fell in the range (then last_read is
 * still the previous read's): the guest's time while polling, or polling
 * starts (out of line: it changes the vCPU's intercepts); or a read that
 * found a device timer due (last_read is this read's): the timers run at
 * the end of the exit. */
uint64_t clock_read_slow(struct guest_clock *c, uint64_t host);

/* The VM's time when the host TSC reads `host`. */
static inline uint64_t clock_at(const struct guest_clock *c, uint64_t host)
{
	return c->polling ? c->vt : host + (uint64_t)c->offset;
}

static inline uint64_t clock_now(const struct guest_clock *c)
{
	return clock_at(c, platform_tsc());
}

/* The read half of clock_access for a device's light read path: false when
 * the read must take clock_read_slow(c, *now) (then *now is the host TSC),
 * else true with the VM's time in *now. Lets the caller make the slow case
 * a tail call, so that its common path saves no registers for a call. */
static inline bool clock_read_fast(struct guest_clock *c, uint64_t *now)
{
	uint64_t host = platform_tsc();
	*now = host;
	if (__builtin_expect(host - c->last_read - c->gap_min <= c->gap_span, 0))
		return false;   /* clock_read_slow sees the gap: last_read not yet moved */
	c->last_read = host;
	uint64_t t = host + (uint64_t)c->offset;
	if (__builtin_expect(t >= c->next_due, 0))
		return false;   /* a timer is due: it fires before the guest reads on */
	*now = t;
	return true;
}

/* The guest read (`read`) or programmed a clock device: its time now. A
 * read that follows the previous one by CLOCK_POLL_GAP_MIN_NS ..
 * CLOCK_POLL_GAP_MAX_NS (a guest polling a clock through slow exits)
 * starts polling. A read costs one range test when not polling (the PM
 * timer read is a light exit that make bench measures). */
static inline uint64_t clock_access(struct guest_clock *c, bool read)
{
	uint64_t now;
	if (read)
		return clock_read_fast(c, &now) ? now : clock_read_slow(c, now);
	if (c->polling) {
		c->touched = true;
		return c->vt;
	}
	return platform_tsc() + (uint64_t)c->offset;
}

/* An interrupt line the platform wired a device to: GSI `gsi` (0-23, as on
 * the I/O APIC; the interrupt model applies the ISA overrides). The device
 * raises or lowers it; where it goes is the platform's business. */
struct irq_line {
	struct dev_host *host;
	uint8_t gsi;
};
void irq_line_set(const struct irq_line *l, bool level);
/* Where the last edge sent on an edge-triggered line stands: the CPU has not
 * taken it yet (a new edge now would merge with it), or no interrupt
 * controller passes the line to the CPU (an edge now would be lost), or
 * neither (an edge now is a new interrupt). */
enum irq_edge_state { IRQ_EDGE_FREE, IRQ_EDGE_WAITING, IRQ_EDGE_MASKED };
enum irq_edge_state irq_line_edge_state(const struct irq_line *l);
/* Interrupt line `gsi` (a descriptor's .irq) as the host wires it. */
struct irq_line dev_irq_line(struct dev_host *h, unsigned gsi);

/* Timers: the hypervisor calls fire() at or after deadline_tsc (from its
 * exit path, never from interrupt context). Deadlines and `now_tsc` are in
 * the VM's time (dev_clock), or in host TSC for the hypervisor's own timers
 * (host_clock set). A timer belongs to the VM vm_timer_init gave it. Ending
 * a VM cancels its timers, and arming one for a VM that has ended does
 * nothing. */
struct vcpu;
struct vm_timer {
	uint64_t deadline_tsc;
	void (*fire)(struct vm_timer *t, uint64_t now_tsc);
	void *opaque;
	struct dev_host *host;
	/* the vCPU whose host CPU wakes for it (a local APIC timer's own vCPU;
	 * 0: the VM's vCPU 0; vmm/vm_timers.c) */
	struct vcpu *home;
	bool armed;
	bool host_clock;
};
static inline void vm_timer_init(struct vm_timer *t, struct dev_host *h,
				 void (*fire)(struct vm_timer *t, uint64_t now_tsc), void *opaque)
{
	*t = (struct vm_timer){ .fire = fire, .opaque = opaque, .host = h };
}
void vm_timer_arm(struct vm_timer *t, uint64_t deadline_tsc);
void vm_timer_cancel(struct vm_timer *t);

#endif
