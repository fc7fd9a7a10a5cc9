#include "vmm/vm.h"

#include <stdarg.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/smp.h"
#include "core/timer.h"
#include "core/tsc.h"
#include "dev/pc_irq.h"
#include "dev/tick_math.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/cpu_state.h"
#include "vmm/exit.h"
#include "vmm/exit_cost.h"
#include "vmm/firmware.h"
#include "vmm/guest_clock.h"
#include "vmm/spec_ctrl.h"
#include "vmm/vcpu_exit.h"
#include "vmm/linux_boot.h"
#include "vmm/loader.h"
#include "vmm/platform.h"
#include "vmm/vendor.h"

int vm_register_io(struct vm *vm, const struct io_range *r)
{
	/* index 0 means "nobody", so ranges start at 1 */
	if (vm->nr_io + 1 >= VM_MAX_IO_RANGES || r->base + r->len > 65536)
		return -1;
	unsigned idx = ++vm->nr_io;
	vm->io[idx].r = *r;
	for (uint64_t p = r->base; p < r->base + r->len; p++)
		vm->port_map[p] = (uint8_t)(idx | (r->light ? 0 : VM_PORT_SLOW));
	return 0;
}

int vm_port_unclaimed(struct vcpu *v, uint64_t *data, bool is_write)
{
	if (is_write) {
		v->stats.denied_port_writes++;
	} else {
		v->stats.denied_port_reads++;
		*data = ~0ull;
	}
	return IO_OK;
}

int vm_register_mmio(struct vm *vm, const struct io_range *r)
{
	if (vm->nr_mmio == VM_MAX_MMIO_RANGES || r->base < vm->mem_size)
		return -1;
	vm->mmio[vm->nr_mmio++] = *r;
	return 0;
}

const struct io_range *vm_find_mmio(const struct vm *vm, uint64_t gpa)
{
	for (unsigned i = 0; i < vm->nr_mmio; i++)
		if (gpa - vm->mmio[i].base < vm->mmio[i].len)
			return &vm->mmio[i];
	return 0;
}

int vm_mmio_access(struct vcpu *v, uint64_t gpa, uint64_t *data, unsigned size, bool is_write)
{
	const struct io_range *r = vm_find_mmio(v->vm, gpa);
	if (!r) {
		if (v->vm->unclaimed_stop) {
			vm_fault(v->vm, "guest-physical %s of 0x%lx, outside its RAM and devices "
				 "(unclaimed=stop)", is_write ? "write" : "read", gpa);
			return IO_VM_END;
		}
		if (is_write) {
			v->stats.denied_mmio_writes++;
		} else {
			v->stats.denied_mmio_reads++;
			*data = ~0ull;
		}
		return IO_OK;
	}
	return r->fn(v, gpa, data, size, is_write, r->opaque);
}

int vm_msr_denied(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	(void)val;
	(void)is_write;
	v->stats.denied_msrs++;
	return -1;
}

void vm_msrs_init(struct vm *vm)
{
	vm->msr_fn[0] = vm_msr_denied;   /* msr_map's 0 */
	vm->nr_msr_fn = 1;
}

int vm_register_msr(struct vm *vm, uint32_t base, uint32_t count, msr_handler_fn fn)
{
	/* one index per function: a function serves several ranges */
	unsigned h = 1;
	while (h < vm->nr_msr_fn && vm->msr_fn[h] != fn)
		h++;
	if (h == VM_MAX_MSR_HANDLERS || msr_map_set(&vm->msr_map, base, count, h)) {
		/* lightpath's own mistake: say so; those MSRs #GP */
		kprintf("lightpath: vm%u: MSRs 0x%x..+%u not registered (%s)\n", vm->id, base,
			count, h == VM_MAX_MSR_HANDLERS ? "too many handlers" : "not inside one block");
		return -1;
	}
	if (h == vm->nr_msr_fn)
		vm->msr_fn[vm->nr_msr_fn++] = fn;
	return 0;
}

void vm_end(struct vm *vm, unsigned status, const char *why)
{
	if (vm->ended)
		return;
	vm->ended = true;
	vm->status = status;
	vm->end_reason = why;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_notify(vm->vcpus[i]);   /* every light loop must stop now */
	/* An ended VM has no timers (vm_timer_arm refuses them): a heavy-path
	 * wait for the next timer, such as a blocking HLT, ends too. */
	vm_timers_cancel_all(vm);
}

/* Empties the VM's timer list in one pass: each entry is disarmed by the
 * list, not looked up, so the loop ends whatever state the timers are in. */
void vm_timers_cancel_all(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_timers; i++)
		vm->timers[i]->armed = false;
	vm->nr_timers = 0;
	if (!vm->timers_firing)
		vm_timers_reprogram(vm);
}

void vcpu_notify(struct vcpu *t)
{
	if (t->host_cpu == this_cpu()) {
		t->pending |= VCPU_PENDING_RECHECK;
		return;
	}
	__atomic_store_n(&t->kicked, true, __ATOMIC_RELEASE);
	smp_kick(t->host_cpu);
}

void vm_fault(struct vm *vm, const char *fmt, ...)
{
	char buf[KPRINTF_LINE_MAX];   /* a longer reason is cut (visibly) by kprintf */
	va_list ap;
	if (vm->ended)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("lightpath: vm%u: stopped: %s\n", vm->id, buf);
	vm_end(vm, LP_STATUS_VM_FAULT, "stopped");
	vm->end_reason = 0; /* already reported */
}

static bool console_visible(char c)
{
	unsigned char u = (unsigned char)c;
	return c == '\t' || (u >= 0x20 && u != 0x7f);
}

/* VMs running now (between their start and their end), by id, and the one
 * console input goes to (-1: none yet; the next VM to start takes it). Both
 * under the console lock. */
#define VM_MAX_IDS 16
static struct vm *running[VM_MAX_IDS];
static unsigned nr_running;
static int input_vm = -1;

static void vm_prefix(struct vm *vm, char *buf, size_t len)
{
	snprintf(buf, len, "[vm%u] ", vm->id);
}

/* Writes what VM `vm` held back (console lock held): on its own open line,
 * or on a fresh line behind the prefix. */
static void vm_line_flush(struct vm *vm)
{
	unsigned me = vm->id + 1;
	if (!vm->out_len)
		return;
	if (console_line_open_by_other(me) || console_at_line_start()) {
		char prefix[16];
		if (!console_at_line_start())
			console_putc('\n');
		vm_prefix(vm, prefix, sizeof(prefix));
		for (const char *p = prefix; *p; p++)
			console_putc_as(me, *p);
	}
	for (unsigned i = 0; i < vm->out_len; i++)
		console_putc_as(me, vm->out_line[i]);
	vm->out_len = 0;
}

static void vm_line_add(struct vm *vm, const char *s)
{
	while (*s && vm->out_len < VM_LINE_MAX)
		vm->out_line[vm->out_len++] = *s++;
}

void vm_console_putc(struct vm *vm, char c)
{
	/* Every line that holds guest bytes starts with "[vmN] " (lightpath's
	 * own lines start with "lightpath:" or blanks), so nothing a guest
	 * prints can pass for the hypervisor's output in a log split at '\n'.
	 * A bare '\r' followed by a visible character gets the prefix again,
	 * for a terminal, which went back to column 0 (not before an escape
	 * sequence: that would break the guest's cursor control). */
	unsigned me = vm->id + 1;
	char prefix[16];
	console_lock();
	vm->out_quiet = 0;
	if (!vm_side_by_side) {
		/* one VM at a time: straight to the console, as typed */
		if (console_line_open_by_other(me))
			console_putc('\n');
		if (console_at_line_start() || (vm->console_after_cr && console_visible(c))) {
			vm_prefix(vm, prefix, sizeof(prefix));
			for (const char *p = prefix; *p; p++)
				console_putc_as(me, *p);
		}
		vm->console_after_cr = c == '\r';
		console_putc_as(me, c);
		console_unlock();
		return;
	}
	/* VMs side by side: the line is held until it ends, so that lines of
	 * VMs running at once are never mixed (nor cut by lightpath's lines);
	 * a line too long for the buffer goes out in pieces, each a line of
	 * its own. */
	if (vm->out_len && vm->console_after_cr && console_visible(c)) {
		vm_prefix(vm, prefix, sizeof(prefix));
		vm_line_add(vm, prefix);
	}
	vm->console_after_cr = c == '\r';
	vm->out_line[vm->out_len++] = c;
	if (c == '\n') {
		vm_line_flush(vm);
	} else if (vm->out_len + 16 >= VM_LINE_MAX) {
		vm_line_flush(vm);
		console_putc('\n');
		vm->console_after_cr = false;
	}
	console_unlock();
}

void vm_console_idle(struct vm *vm)
{
	/* an unfinished line (a shell's prompt) that has waited 100 ms goes
	 * out while no other VM runs, or when its VM has console input (the
	 * user is typing to it): it may then be cut by a later line */
	if (!vm->out_len || ++vm->out_quiet < VM_LINE_QUIET_POLLS)
		return;
	console_lock();
	if (nr_running <= 1 || input_vm == (int)vm->id)
		vm_line_flush(vm);
	console_unlock();
}

static void vm_running_add(struct vm *vm)
{
	console_lock();
	if (vm->id < VM_MAX_IDS)
		running[vm->id] = vm;
	nr_running++;
	if (input_vm < 0) {
		input_vm = (int)vm->id;
		if (vm_side_by_side)   /* which VM started first is a race: say it */
			kprintf("lightpath: console input goes to vm%u now\n", vm->id);
	}
	console_unlock();
}

/* The next running VM after `id`, in id order, wrapping; -1 if none. */
static int next_running(unsigned id)
{
	for (unsigned k = 1; k <= VM_MAX_IDS; k++) {
		unsigned n = (id + k) % VM_MAX_IDS;
		if (running[n] && n != id)
			return (int)n;
	}
	return -1;
}

static void vm_running_remove(struct vm *vm)
{
	console_lock();
	if (vm->id < VM_MAX_IDS && running[vm->id] != vm) {   /* never added */
		console_unlock();
		return;
	}
	if (vm->id < VM_MAX_IDS)
		running[vm->id] = 0;
	nr_running--;
	if (input_vm == (int)vm->id) {
		input_vm = next_running(vm->id);
		if (input_vm >= 0 && vm_side_by_side)
			kprintf("lightpath: console input goes to vm%d now (vm%u ended)\n", input_vm,
				vm->id);
	}
	console_unlock();
}

bool vm_side_by_side;

bool vm_console_input_mine(const struct vm *vm)
{
	return __atomic_load_n(&input_vm, __ATOMIC_RELAXED) == (int)vm->id;
}

void vm_console_switch(struct vm *vm)
{
	console_lock();
	int next = next_running(vm->id);
	if (next < 0) {
		kprintf("lightpath: console input stays with vm%u (no other VM is running)\n", vm->id);
	} else {
		input_vm = next;
		kprintf("lightpath: console input goes to vm%d now\n", next);
	}
	console_unlock();
}

#define TIMER_MIN_PERIOD_US 50u

/* When a device timer due at `deadline` in the VM's time is due in host
 * TSC: the VM's time is the host's plus the offset, or (polling) advances
 * only at exits: then guest_clock_after_exit runs it, and it has no host
 * deadline (0). Monotonic in `deadline`, so the earliest device timer is
 * also the earliest in host time. */
static uint64_t guest_deadline_to_host(const struct vm *vm, uint64_t deadline)
{
	if (vm->clock.polling)
		return 0;
	int64_t off = vm->clock.offset;   /* 0 or less: the time polling hid */
	if (!off)                         /* no polling yet: the common case */
		return deadline;
	uint64_t h = deadline - (uint64_t)off;
	if (off < 0 && h < deadline)
		return UINT64_MAX;   /* beyond the host TSC's range: never */
	if ((off > 0 && h > deadline) || !h)
		return 1;   /* before the host TSC's start: due */
	return h;
}

/* The host timer for the VM's earliest timer: the earliest of each clock
 * found first, the VM's one converted once. */
void vm_timers_reprogram(struct vm *vm)
{
	uint64_t next = 0, next_guest = UINT64_MAX;
	for (unsigned i = 0; i < vm->nr_timers; i++) {
		const struct vm_timer *t = vm->timers[i];
		uint64_t d = t->deadline_tsc;   /* never 0: vm_timer_arm */
		if (!t->host_clock)
			next_guest = d < next_guest ? d : next_guest;
		else if (!next || d < next)
			next = d;
	}
	vm->clock.next_due = next_guest;   /* a clock read past it runs the timers */
	if (next_guest != UINT64_MAX) {
		uint64_t h = guest_deadline_to_host(vm, next_guest);
		if (h && vm->timer_lead.on && h != UINT64_MAX) {   /* timer=lead: ahead of it */
			uint64_t lead = vm->timer_lead.lead;
			vm->timer_lead.programmed = lead;
			h = h > lead ? h - lead : 1;
		}
		if (h && (!next || h < next))
			next = h;
	}
	timer_program(next);
}

static void timer_unlink(struct vm *vm, struct vm_timer *t)
{
	for (unsigned i = 0; i < vm->nr_timers; i++) {
		if (vm->timers[i] == t) {
			vm->timers[i] = vm->timers[--vm->nr_timers];
			return;
		}
	}
}

void vm_timer_arm(struct vm_timer *t, uint64_t deadline_tsc)
{
	struct vm *vm = dev_host_vm(t->host);
	if (vm->ended) {   /* nothing runs for a VM that has ended */
		vm_timer_cancel(t);
		return;
	}
	if (!t->armed) {   /* an armed one only moves */
		if (vm->nr_timers == VM_MAX_TIMERS)
			panic("vm%u: more than %u timers armed", vm->id, VM_MAX_TIMERS);
		vm->timers[vm->nr_timers++] = t;
	}
	t->armed = true;
	t->deadline_tsc = deadline_tsc ? deadline_tsc : 1;
	if (!vm->timers_firing)
		vm_timers_reprogram(vm);
}

void vm_timer_cancel(struct vm_timer *t)
{
	if (!t->armed)
		return;
	struct vm *vm = dev_host_vm(t->host);
	t->armed = false;
	timer_unlink(vm, t);
	if (!vm->timers_firing)
		vm_timers_reprogram(vm);
}

/* After timers fired: a device's interrupt reached its vCPU through
 * irq_line_set and the APIC bus, which notified it; a local APIC timer
 * only set its own IRR, so its vCPU is told here. */
static void vm_timers_fired(struct vm *vm)
{
	if (vm->nr_vcpus == 1) {
		vm->vcpu->pending |= VCPU_PENDING_RECHECK;
		return;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (lapic_irr_nonempty(&vm->vcpus[i]->lapic))
			vcpu_notify(vm->vcpus[i]);
}

bool vm_timers_run(struct vm *vm)
{
	bool any = false;
	/* one TSC read for both clocks: the host's and the VM's same instant */
	uint64_t host = rdtsc(), guest = clock_at(&vm->clock, host);
	uint64_t min_gap = vm->timer_min_gap;
	/* timer=lead: a device timer due within the lead fires now, as at its
	 * deadline (vmm/timer_lead.h); `ahead` is the VM's time it fires by */
	uint64_t lead = vm->clock.polling ? 0 : timer_lead_window(&vm->timer_lead);
	uint64_t ahead = guest + lead;
	vm->timers_firing = true;   /* a fire() that (re)arms a timer: reprogrammed below */
	for (unsigned i = 0; i < vm->nr_timers;) {
		struct vm_timer *t = vm->timers[i];
		uint64_t due = t->deadline_tsc;
		if (due > (t->host_clock ? host : ahead)) {
			i++;
			continue;
		}
		uint64_t now = host;
		if (!t->host_clock) {
			now = guest;
			if (due > guest) {   /* within the lead */
				now = due;
				timer_lead_fired_early(&vm->timer_lead, due);
			} else if (lead) {
				timer_lead_fired_late(&vm->timer_lead, guest - due);
			}
		}
		t->armed = false;
		timer_unlink(vm, t);      /* fire() may re-arm it */
		t->fire(t, now);
		/* a guest's periodic timer re-arming itself within a few ticks would
		 * keep an interrupt pending at every VMRUN and starve the guest (and
		 * every later VM): at most one expiry per TIMER_MIN_PERIOD_US (of the
		 * timer's own clock) */
		if (t->armed && t->deadline_tsc < now + min_gap)
			t->deadline_tsc = now + min_gap;
		any = true;
		i = 0;
		if (!t->host_clock && !vm->clock.polling)
			guest = clock_now(&vm->clock);   /* fire() may have ended polling */
		if (vm->clock.polling)   /* or started it: the VM's time stops at exits */
			lead = 0;
		ahead = guest + lead;
	}
	vm->timers_firing = false;
	vm_timers_reprogram(vm);
	if (any)   /* a device timer may have raised an interrupt */
		vm_timers_fired(vm);
	return any;
}

void vm_timer_lead_wait_slow(struct vm *vm)
{
	struct timer_lead *l = &vm->timer_lead;
	/* The early fires compared their deadlines with the host's time plus
	 * the offset (the lead is 0 while the guest polls its clocks), and the
	 * offset changes only when polling ends: the same time here, whatever
	 * polling did since. Waited in host ticks, never longer than the bound. */
	uint64_t host = rdtsc();
	uint64_t wait = timer_lead_arrived(l, host + (uint64_t)vm->clock.offset);
	uint64_t until = host + (wait < l->max ? wait : l->max);
	while (rdtsc() < until)
		asm volatile("pause" ::: "memory");
}

void vm_timer_lead_print_stats(const struct vm *vm)
{
	const struct timer_lead *l = &vm->timer_lead;
	if (!l->early && !l->missed)
		return;
	kprintf("  timer lead: %lu timers fired ahead of their deadline, %lu past it; %lu waits "
		"(%lu us in all), %lu found the deadline passed; lead %lu ns\n", l->early, l->missed,
		l->waits, muldiv64(l->waited, 1000000, tsc_hz()), l->late,
		muldiv64(l->lead, 1000000000ull, tsc_hz()));
}

uint64_t platform_tsc_hz(void)
{
	return tsc_hz();
}

/* The PCI functions the VM's firmware tables describe (vmm/firmware.h). */
static unsigned vm_pci_functions(const struct vm *vm)
{
	return (vm->disk ? FW_PCI_DISK : 0) | (vm->net ? FW_PCI_NET : 0);
}

static void vm_create_devices(struct vm *vm)
{
	vm->timer_min_gap = tsc_hz() / (1000000 / TIMER_MIN_PERIOD_US);
	_Static_assert(TIMER_LEAD_MAX_NS < TIMER_MIN_PERIOD_US * 1000 / 2,
		       "a timer re-armed by its early fire must not be due within the lead");
	vm->timer_lead = (struct timer_lead){
		.on = vm->opt->timer_lead && vm->nr_vcpus == 1,
		.lead = tsc_from_ns(TIMER_LEAD_START_NS),
		.max = tsc_from_ns(TIMER_LEAD_MAX_NS),
		.margin = tsc_from_ns(TIMER_LEAD_MARGIN_NS) + 1,
	};
	guest_clock_init(vm);          /* first: the timer devices keep its address */
	platform_create(vm);
}

static void time_limit_fire(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = t->opaque;
	(void)now;
	vm_fault(vm, "time limit of %u s reached", vm->time_limit_s);
}

/* The VM's time limit, counted from its start: a VM timer, so that a guest
 * spinning without exits is stopped too (the host timer interrupts it). */
static void time_limit_start(struct vm *vm, unsigned seconds)
{
	if (!seconds)
		return;
	vm->time_limit_s = seconds;
	vm_timer_init(&vm->time_limit, vm->pc, time_limit_fire, vm);
	vm->time_limit.host_clock = true;
	kprintf("lightpath: vm%u: time limit %u s\n", vm->id, seconds);
	vm_timer_arm(&vm->time_limit, rdtsc() + (uint64_t)seconds * tsc_hz());
}

/* What another CPU left for this vCPU (vcpu_notify): posted IPIs, frames
 * on the VM's network link. */
void vcpu_take_notices(struct vcpu *v)
{
	if (!__atomic_exchange_n(&v->kicked, false, __ATOMIC_ACQUIRE))
		return;   /* a poster sets kicked after its vector (vcpu_notify) */
	for (unsigned w = 0; w < 8; w++) {
		uint32_t bits = __atomic_exchange_n(&v->posted[w], 0, __ATOMIC_ACQUIRE);
		while (bits) {
			unsigned b = (unsigned)__builtin_ctz(bits);
			bits &= bits - 1;
			lapic_accept(&v->lapic, (uint8_t)(w * 32 + b), false);
		}
	}
	platform_take_kicks(v->vm);
	v->pending |= VCPU_PENDING_RECHECK;
}

static void vcpu_heavy_enter(struct vcpu *v)
{
	vm_lock(v->vm);
	vcpu_take_notices(v);
}

/* The guest runs, in the light loop, until it leaves it. */
static inline __attribute__((always_inline)) void vcpu_guest_run(struct vcpu *v)
{
	vcpu_state_enter(v);
	vendor_enter_guest(v);
	vcpu_state_leave(v);
}

/* The outer (heavy) loop around the backend's light loop (docs/EXITS.md),
 * until the VM ends or an INIT resets the vCPU; one copy per (smp, cost),
 * so that a VM that does not measure has no instruction for it. */
static inline __attribute__((always_inline)) void vcpu_loop(struct vcpu *v, const bool smp,
							    const bool cost)
{
	struct vm *vm = v->vm;
	if (!smp) {   /* one vCPU: no lock, no INIT; the loop it always had */
		while (!vm->ended) {
			vcpu_guest_run(v);
			exit_heavy(v);
			if (cost)
				exit_cost_heavy_done(v);
		}
	} else {
		for (bool stop = false; !stop;) {
			vcpu_guest_run(v);
			vcpu_heavy_enter(v);
			exit_heavy(v);
			if (cost)
				exit_cost_heavy_done(v);
			stop = vm->ended || v->lapic.init_pending;
			vm_unlock(vm);
		}
	}
}

static void vcpu_run(struct vcpu *v)
{
	bool smp = v->vm->nr_vcpus > 1, cost = v->cost && v->cost->cost;
	unsigned panic_ap = v->vm->opt->test_panic_ap;
	this_cpu()->current = v;
	if (panic_ap && panic_ap == this_cpu()->cpu_id)   /* a test option, 0 (off) by default */
		panic("test.panic_ap=%u: CPU %u panics as it starts running vm%u's vCPU", panic_ap,
		      panic_ap, v->vm->id);
	vcpu_cpu_state_reset(v);   /* nothing the previous VM left in the CPU */
	if (!smp && !cost)
		vcpu_loop(v, false, false);
	else if (!smp)
		vcpu_loop(v, false, true);
	else if (!cost)
		vcpu_loop(v, true, false);
	else
		vcpu_loop(v, true, true);
	this_cpu()->current = 0;
}

/* Wait-for-SIPI, with the VM lock held: until a STARTUP IPI came (true:
 * the vCPU starts at its vector) or the VM ended. The CPU halts; a kick
 * (vcpu_notify) or its timer wakes it, and it runs the VM's timers like a
 * halted vCPU. */
static bool vcpu_wait_sipi(struct vcpu *v)
{
	struct vm *vm = v->vm;
	v->lapic.init_pending = false;
	while (!vm->ended && !v->lapic.sipi_pending) {
		vm_unlock(vm);
		vendor_host_wait_for_interrupt();
		vm_lock(vm);
		vcpu_take_notices(v);   /* fixed IPIs to a waiting APIC are dropped */
		vm_timers_run(vm);
		if (v->lapic.init_pending)   /* another INIT: still waiting */
			v->lapic.init_pending = false;
	}
	v->lapic.sipi_pending = false;
	return !vm->ended;
}

/* A vCPU's life on its CPU: run (vCPU 0 from the loaded image, the others
 * from their first STARTUP), and after an INIT wait for the next STARTUP
 * and run from its vector in real mode, until the VM ends. */
static void vcpu_life(struct vcpu *v)
{
	struct vm *vm = v->vm;
	for (;;) {
		if (v->started)
			vcpu_run(v);
		if (vm->ended)
			break;
		vm_lock(vm);
		bool start = vcpu_wait_sipi(v);
		uint8_t vector = v->lapic.sipi_vector;
		vm_unlock(vm);
		if (!start)
			break;
		vendor_vcpu_init_sipi(v, vector);
		v->started = true;
	}
}

/* An AP vCPU's work item on its own CPU (posted by vm_run). */
static void vcpu_ap_main(void *arg)
{
	struct vcpu *v = arg;
	this_cpu()->vcpu_owned = v;
	vendor_vcpu_init(v, 0, 0, 0);   /* its VMCB/VMCS, on this CPU */
	vcpu_life(v);
	vendor_vcpu_release(v);
	this_cpu()->vcpu_owned = 0;
	__atomic_store_n(&v->finished, true, __ATOMIC_RELEASE);
	vendor_host_idle_state();
}

static void report_end(struct vm *vm)
{
	if (vm->end_reason)
		kprintf("lightpath: vm%u: ended with status %u (%s)\n", vm->id, vm->status,
			vm->end_reason);
}

/* Debug events of the guest that reached lightpath (core/idt.c): none
 * should on hardware; said if any did. */
static void report_debug_events_dropped(struct vm *vm)
{
	unsigned n = this_cpu()->guest_debug_events_dropped;
	this_cpu()->guest_debug_events_dropped = 0;
	if (n)
		kprintf("lightpath: vm%u: %u debug exceptions of the guest (breakpoints or single "
			"steps) reached lightpath and were dropped\n", vm->id, n);
}

/* Loads the guest image and what a PC's firmware leaves in memory (the
 * BIOS data area, the EBDA, the ACPI tables: vmm/firmware.h), the same for
 * every guest; fills a one-line description for the log. */
static int load_guest(struct vm *vm, const struct vm_spec *spec, char *what, size_t whatlen,
		      char *err, size_t errlen)
{
	struct vcpu *v = vm->vcpu;
	uint8_t *ram = gpa_to_host(vm, 0, vm->mem_size);
	uint64_t rsdp;
	if (!spec->linux_kernel) {
		struct loaded_guest g;
		if (load_multiboot_elf(ram, vm->mem_size, spec->image, spec->image_size, spec->cmdline,
				       spec->modules, spec->nr_modules, &g, err, errlen))
			return -1;
		if (firmware_build(ram, vm->mem_size, vm->nr_vcpus, vm_pci_functions(vm), &rsdp)) {
			snprintf(err, errlen, "could not write the BIOS data area and ACPI tables");
			return -1;
		}
		int n = snprintf(what, whatlen, "%s, entry 0x%lx", g.format, g.entry);
		if (g.nr_modules && n > 0 && (size_t)n < whatlen)
			snprintf(what + n, whatlen - (size_t)n, ", %u module%s", g.nr_modules,
				 g.nr_modules == 1 ? "" : "s");
		vendor_vcpu_init(v, g.entry, MB_BOOT_MAGIC, g.info_gpa);
		return 0;
	}
	struct e820_entry map[FW_MAP_ENTRIES];
	unsigned nmap = firmware_memory_map(vm->mem_size, map);
	struct linux_boot_state st;
	if (linux_boot_prepare(ram, vm->mem_size, spec->image, spec->image_size, spec->initrd,
			       spec->initrd_size, spec->cmdline, map, nmap, &st, err, errlen))
		return -1;
	if (firmware_build(ram, vm->mem_size, vm->nr_vcpus, vm_pci_functions(vm), &rsdp)) {
		snprintf(err, errlen, "could not write the BIOS data area and ACPI tables");
		return -1;
	}
	linux_boot_set_rsdp(ram, &st, rsdp);
	snprintf(what, whatlen, "Linux bzImage, boot protocol %u.%02u, initrd %lu KiB",
		 st.version >> 8, st.version & 0xff, spec->initrd_size >> 10);
	vendor_vcpu_init_linux(v, &st);
	return 0;
}

/* The VM's vCPUs: vCPU i has APIC ID i and runs on host CPU run_on[i]
 * (vmm/guests.c chose them); vcpus[0] is the boot vCPU. False when out of
 * memory (those allocated stay for vcpus_free). */
static bool vcpus_alloc(struct vm *vm, const struct vm_spec *spec)
{
	for (unsigned i = 0; i < spec->cpus; i++) {
		struct vcpu *v = (struct vcpu *)(uintptr_t)pmem_alloc(sizeof(struct vcpu), 4096);
		if (!v)
			return false;
		memset(v, 0, sizeof(*v));
		v->vm = vm;
		v->host_cpu = smp_cpus[spec->run_on[i]];
		v->started = i == 0;
		vm->vcpus[vm->nr_vcpus++] = v;
	}
	vm->vcpu = vm->vcpus[0];
	return true;
}

static void vcpus_free(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		exit_cost_free(vm->vcpus[i]);
		pmem_free((uint64_t)(uintptr_t)vm->vcpus[i], sizeof(struct vcpu));
	}
}

/* Posts every AP vCPU to its CPU; one that cannot be posted stops the VM. */
static void vcpus_post(struct vm *vm)
{
	vm->vcpus_posted = true;
	for (unsigned i = 1; i < vm->nr_vcpus; i++) {
		struct vcpu *v = vm->vcpus[i];
		if (!smp_run_on(v->host_cpu->cpu_id, vcpu_ap_main, v)) {
			v->finished = true;
			vm_lock(vm);
			vm_fault(vm, "vCPU %u could not be started on CPU %u", i, v->host_cpu->cpu_id);
			vm_unlock(vm);
		}
	}
}

/* After the VM's end: waits until every AP vCPU's CPU is done with it. */
static void vcpus_wait_finished(struct vm *vm)
{
	for (unsigned i = 1; i < vm->nr_vcpus; i++)
		while (!__atomic_load_n(&vm->vcpus[i]->finished, __ATOMIC_ACQUIRE))
			asm volatile("pause" ::: "memory");
}

bool vm_cpu_panicked(void)
{
	struct percpu *pc = this_cpu();
	struct vcpu *v = pc->vcpu_owned;
	if (!v)
		return false;
	struct vm *vm = v->vm;
	unsigned i = 0;
	while (i < vm->nr_vcpus && vm->vcpus[i] != v)
		i++;
	if (vm->nr_vcpus > 1 && vm->lock_cpu == pc)   /* it panicked holding it */
		vm_unlock(vm);
	vm_lock(vm);
	vm_fault(vm, "CPU %u panicked while it ran vCPU %u; that CPU is out of use from now on",
		 pc->cpu_id, i);
	__atomic_store_n(&v->finished, true, __ATOMIC_RELEASE);
	vm_unlock(vm);
	if (i)
		return false;   /* vm_run, on vCPU 0's CPU, ends the VM as usual */
	if (vm->vcpus_posted)
		vcpus_wait_finished(vm);
	vm_running_remove(vm);
	return true;
}

static void report_cpus(struct vm *vm)
{
	if (vm->nr_vcpus == 1) {
		kprintf("lightpath: vm%u: runs on CPU %u\n", vm->id, vm->vcpu->host_cpu->cpu_id);
		return;
	}
	char list[4 * VM_MAX_VCPUS + 1];
	unsigned n = 0;
	for (unsigned i = 0; i < vm->nr_vcpus && n + 5 < sizeof(list); i++)
		n += (unsigned)snprintf(list + n, sizeof(list) - n, "%s%u", i ? "," : "",
					vm->vcpus[i]->host_cpu->cpu_id);
	kprintf("lightpath: vm%u: %u vCPUs on CPUs %s (vCPU i on the i-th)\n", vm->id, vm->nr_vcpus,
		list);
}

unsigned vm_run(unsigned id, const struct vm_spec *spec, const struct lp_options *opt)
{
	char err[200], what[96];
	uint64_t vm_pages = (sizeof(struct vm) + 0xfff) & ~0xfffull;
	struct vm *vm = (struct vm *)(uintptr_t)pmem_alloc(vm_pages, 4096);
	uint64_t mem = (uint64_t)spec->mem_mb << 20;
	uint64_t mem_hpa = pmem_alloc(mem, 2u << 20);
	if (vm)
		memset(vm, 0, sizeof(*vm));
	if (!vm || !mem_hpa || !vcpus_alloc(vm, spec)) {
		kprintf("lightpath: vm%u: not enough memory for a %u MiB VM (%lu MiB free)\n", id,
			spec->mem_mb, pmem_free_bytes() >> 20);
		if (mem_hpa)
			pmem_free(mem_hpa, mem);
		if (vm) {
			vcpus_free(vm);
			pmem_free((uint64_t)(uintptr_t)vm, vm_pages);
		}
		return LP_STATUS_HV_ERROR;
	}
	vm->id = id;
	vm->name = spec->name;
	vm->cmdline = spec->cmdline;
	vm->opt = opt;
	vm->unclaimed_stop = spec->has_unclaimed ? spec->unclaimed_stop : !opt->unclaimed_pc;
	vm->disk = spec->disk;
	vm->disk_size = spec->disk_size;
	vm->disk_ro = spec->disk_ro;
	vm->net = spec->net;
	vm->has_mac = spec->has_mac;
	memcpy(vm->mac, spec->mac, sizeof(vm->mac));
	vm->mem_hpa = mem_hpa;
	vm->mem_size = mem;
	struct vcpu *v = vm->vcpu;
	this_cpu()->vcpu_owned = v;

	unsigned status;
	if (!platform_alloc(vm)) {
		kprintf("lightpath: vm%u: not enough memory for its devices (%lu MiB free)\n", id,
			pmem_free_bytes() >> 20);
		status = LP_STATUS_HV_ERROR;
		goto out;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (!exit_cost_alloc(vm->vcpus[i])) {
			kprintf("lightpath: vm%u: not enough memory for stats=cost/sites (%lu MiB free)\n",
				id, pmem_free_bytes() >> 20);
			status = LP_STATUS_HV_ERROR;
			goto out;
		}
	vm_msrs_init(vm);
	exit_register_msrs(vm);
	spec_register_msrs(vm);
	vm_create_devices(vm);
	exit_register_cpu_msrs(vm);
	if (vendor_vm_init(vm)) {
		kprintf("lightpath: vm%u: cannot set up the VM (out of memory)\n", id);
		status = LP_STATUS_HV_ERROR;
		goto out;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		exit_vcpu_init(vm->vcpus[i]);
	if (load_guest(vm, spec, what, sizeof(what), err, sizeof(err))) {
		kprintf("lightpath: vm%u: cannot load guest image '%s': %s\n", id, spec->image_name,
			err);
		vendor_vcpu_release(v);
		vendor_vm_destroy(vm);
		status = LP_STATUS_VM_FAULT;
		goto out;
	}
	kprintf("lightpath: vm%u: loaded %s (%s), %u MiB, cmdline \"%s\"\n", id, spec->name, what,
		spec->mem_mb, spec->cmdline);
	if (vm_side_by_side)
		report_cpus(vm);
	platform_start(vm);
	spec_vm_switch(opt);         /* the previous VM cannot steer this one's branches */
	time_limit_start(vm, spec->has_timeout ? spec->timeout_s : opt->vm_timeout_s);
	vm_running_add(vm);
	vcpus_post(vm);
	vcpu_life(v);
	vendor_vcpu_release(v);
	vcpus_wait_finished(vm);
	vm_timers_cancel_all(vm);
	console_lock();              /* its last lines and table together */
	vm_line_flush(vm);           /* its unfinished line; kprintf ends it */
	report_end(vm);
	report_debug_events_dropped(vm);
	host_nmis_report();          /* one that came while lightpath ran, GIF=1 */
	if (opt->stats)
		exit_print_stats(vm);
	console_unlock();
	vm_running_remove(vm);
	vendor_vm_destroy(vm);
	status = vm->status;
out:
	this_cpu()->vcpu_owned = 0;
	platform_free(vm);
	pmem_free(mem_hpa, mem);
	vcpus_free(vm);
	pmem_free((uint64_t)(uintptr_t)vm, vm_pages);
	return status;
}
