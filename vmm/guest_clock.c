#include "vmm/guest_clock.h"

#include <stddef.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/tsc.h"
#include "dev/tick_math.h"
#include "lib/string.h"
#include "vmm/guest_mem.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vm_timers.h"

static struct vm *clock_vm(struct guest_clock *c)
{
	return (struct vm *)((char *)c - offsetof(struct vm, clock));
}

#define GAP_NEVER (1ull << 63)   /* a gap no read has (146 years at 2 GHz) */

static uint64_t tsc_to_ms(uint64_t t)
{
	return muldiv64(t, 1000, tsc_hz());
}

/* How far the VM's time is behind the host's: what polling hid. */
static int64_t lag(const struct vm *vm, uint64_t host)
{
	const struct guest_clock *c = &vm->clock;
	if (c->polling)
		return (int64_t)(host - c->vt);
	return -c->offset;
}

/* vCPU v's TSC offset in its VMCB/VMCS: the VM's time plus the guest's own
 * IA32_TSC offset (each vCPU's). On v's CPU (a VMCS is current there). */
static void apply_vcpu_offset(struct vcpu *v)
{
	/* modulo 2^64: the guest's part is any value it wrote to IA32_TSC */
	vendor_set_tsc_offset(v, (int64_t)((uint64_t)v->vm->clock.offset +
					   (uint64_t)v->lapic.tsc_offset));
}

/* The VM's time moved (polling: a VM of one vCPU, guest_clock_init). */
static void apply_offset(struct vm *vm)
{
	apply_vcpu_offset(vm->vcpu);
}

static void set_offset(struct vm *vm, int64_t offset)
{
	vm->clock.offset = offset;
	apply_offset(vm);
}

void guest_clock_tsc_offset_changed(struct vcpu *v)
{
	apply_vcpu_offset(v);   /* while polling RDTSC exits and clock_rdtsc adds it */
}

/* One exit's step of the guest's time while polling: never ahead of the
 * host's time (an exit faster than a step), never standing still. */
static void advance(struct vm *vm, uint64_t host)
{
	struct guest_clock *c = &vm->clock;
	uint64_t limit = host;
	uint64_t next = c->vt + vm->clock_poll.step;
	c->vt = next <= limit ? next : c->vt < limit ? limit : c->vt + 1;
}

/* give_back: the spell hid nothing the guest timed, so its time takes up
 * the host's again where it was before the spell (a step forward, never
 * back: vt never passes host + offset while an exit costs more than a step). */
static void poll_end_spell(struct vm *vm, bool give_back)
{
	struct guest_clock *c = &vm->clock;
	struct clock_poll *p = &vm->clock_poll;
	uint64_t host = rdtsc();
	int64_t before = c->offset;
	advance(vm, host);   /* the exit that ends it costs a step too */
	int64_t offset = (int64_t)(c->vt - host);
	set_offset(vm, give_back && offset < before ? before : offset);
	if (c->offset < before)
		p->hidden += (uint64_t)(before - c->offset);
	c->polling = false;
	c->touched = false;
	c->gap_min = p->gap_min;     /* reads may start it again */
	c->gap_span = p->gap_span;
	vendor_rdtsc_exiting(vm->vcpu, false);
	vm_timer_cancel(&p->idle_timer);
	vm_timers_reprogram(vm);   /* device timers count in host time again */
}

static void poll_end(struct vm *vm)
{
	poll_end_spell(vm, false);
}

/* The guest made no exit for p->idle of host time while polling: it is not
 * polling any more, whatever it does (computing, or spinning until an
 * interrupt comes, which needs its time to pass). */
static void idle_fire(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = t->opaque;
	struct clock_poll *p = &vm->clock_poll;
	if (!vm->clock.polling)
		return;
	if (now - p->last_exit >= p->idle)
		poll_end(vm);
	else
		vm_timer_arm(t, p->last_exit + p->idle);
}

void guest_clock_init(struct vm *vm)
{
	struct guest_clock *c = &vm->clock;
	struct clock_poll *p = &vm->clock_poll;
	memset(c, 0, sizeof(*c));
	memset(p, 0, sizeof(*p));
	p->gap_min = GAP_NEVER;   /* never, unless the CPU can do it and clock=poll */
	p->gap_span = 0;
	/* one polling state per VM: a VM of several vCPUs keeps clock=host */
	if (vendor_has_tsc_control() && vm->opt->clock_poll && vm->nr_vcpus == 1) {
		p->gap_min = tsc_from_ns(CLOCK_POLL_GAP_MIN_NS);
		p->gap_span = tsc_from_ns(CLOCK_POLL_GAP_MAX_NS) - p->gap_min;
	}
	c->gap_min = p->gap_min;
	c->gap_span = p->gap_span;
	c->last_read = rdtsc() - p->gap_min - p->gap_span - 1;   /* the first read starts nothing */
	p->step = tsc_from_ns(CLOCK_POLL_STEP_NS);
	if (!p->step)
		p->step = 1;
	p->idle = tsc_from_ns(CLOCK_POLL_IDLE_NS);
	p->max_lag = tsc_from_ns(CLOCK_POLL_MAX_LAG_MS * 1000000ull);
	vm_timer_init(&p->idle_timer, vm->pc, idle_fire, vm);
	p->idle_timer.host_clock = true;
	c->next_due = UINT64_MAX;
}

/* A clock read found the VM's earliest device timer due, and the host timer
 * has not run it yet (under QEMU it comes tens of milliseconds late on a busy
 * host): the reading vCPU's hazard check runs the VM's timers, so that what
 * they raise is delivered before the guest goes on from the time it read. */
static void timers_due(void)
{
	struct vcpu *v = exit_vcpu();
	if (v)
		v->pending |= VCPU_PENDING_TIMERS;
}

uint64_t clock_read_slow(struct guest_clock *c, uint64_t host)
{
	struct vm *vm = clock_vm(c);
	struct clock_poll *p = &vm->clock_poll;
	/* 0 when clock_read_fast came for a due timer (it moved last_read):
	 * a gap no range holds but polling's, which takes every read */
	uint64_t gap = host - c->last_read;
	c->last_read = host;
	if (c->polling) {
		c->touched = true;
		return c->vt;
	}
	uint64_t now = host + (uint64_t)c->offset;
	if (now >= c->next_due)
		timers_due();
	if (gap - c->gap_min > c->gap_span)
		return now;
	if (c->gap_min != p->gap_min) {
		/* after a spell without RDTSC: reads more than the range apart
		 * (it stopped polling) may start polling again */
		c->gap_min = p->gap_min;
		c->gap_span = p->gap_span;
		return now;
	}
	if (lag(vm, host) >= (int64_t)p->max_lag) {
		c->gap_min = GAP_NEVER;   /* hid enough: never again in this VM */
		c->gap_span = 0;
		return now;
	}
	/* at least what the guest can have read before this exit */
	c->vt = now;
	c->polling = true;
	c->gap_min = 0;   /* every read takes clock_read_slow now */
	c->gap_span = UINT64_MAX;
	c->touched = true;
	p->quiet = 0;
	p->probe = 0;
	p->probe_rdtsc = false;
	p->rdtsc_exit = false;
	p->last_exit = host;
	p->polls++;
	vendor_rdtsc_exiting(vm->vcpu, true);
	vm->vcpu->pending |= VCPU_PENDING_CLOCK;
	vm_timer_arm(&p->idle_timer, host + p->idle);   /* reprograms the host timer */
	return c->vt;
}

void guest_clock_after_exit(struct vcpu *v)
{
	struct vm *vm = v->vm;
	struct guest_clock *c = &vm->clock;
	struct clock_poll *p = &vm->clock_poll;
	if (!c->polling)
		return;
	bool device = c->touched && !p->rdtsc_exit;
	p->probe_rdtsc |= p->rdtsc_exit;
	if (p->probe < CLOCK_POLL_PROBE_EXITS && ++p->probe == CLOCK_POLL_PROBE_EXITS &&
	    !p->probe_rdtsc) {
		/* it polls without timing the reads with the TSC: nothing to hide,
		 * and the probe's exits (a host stall among them, under load)
		 * must not leave its time behind the host's: a busy wait that
		 * prints as it goes starts a spell per line, and lost 3-15% of
		 * its time that way (clock-under-load) */
		c->touched = false;
		p->rdtsc_exit = false;
		p->untimed++;
		poll_end_spell(vm, true);
		c->gap_min = p->gap_min + p->gap_span + 1;   /* until it stops polling */
		c->gap_span = UINT64_MAX - c->gap_min;
		return;
	}
	c->touched = false;
	p->rdtsc_exit = false;
	if (device) {
		p->quiet = 0;
	} else {
		const struct exit_row *row = exit_row_of(vendor_exit_code(v));
		unsigned reason = row ? row->stat : LP_EXIT_OTHER;
		if (reason == LP_EXIT_INTR || reason == LP_EXIT_VINTR) {   /* not the guest's doing */
			v->pending |= VCPU_PENDING_CLOCK;
			return;
		}
		if (++p->quiet > CLOCK_POLL_QUIET_EXITS) {   /* it stopped reading its clocks */
			poll_end(vm);
			return;
		}
	}
	p->exits++;
	p->last_exit = rdtsc();
	advance(vm, p->last_exit);
	if (lag(vm, p->last_exit) >= (int64_t)p->max_lag) {
		p->lag_capped = true;
		poll_end(vm);
		c->gap_min = GAP_NEVER;   /* and it does not start again */
		c->gap_span = 0;
		return;
	}
	v->pending |= VCPU_PENDING_CLOCK;
	if (c->vt >= c->next_due)
		vm_timers_run(vm);   /* device timers run on the guest's time */
}

void guest_clock_halt(struct vm *vm)
{
	if (vm->clock.polling)
		poll_end(vm);
}

void guest_clock_print_stats(struct vm *vm)
{
	const struct clock_poll *p = &vm->clock_poll;
	if (!p->polls)
		return;
	kprintf("  clock: the guest polled its clocks %lu times (%lu without RDTSC), %lu exits "
		"(%lu RDTSC); %lu ms hidden, %ld ms behind now%s\n", p->polls, p->untimed,
		p->exits, p->rdtscs, tsc_to_ms(p->hidden), (long)tsc_to_ms((uint64_t)lag(vm, rdtsc())),
		p->lag_capped ? " (capped)" : "");
}

void guest_clock_rdtsc(struct vcpu *v, bool rdtscp)
{
	struct vm *vm = v->vm;
	uint64_t t = clock_now(&vm->clock) + (uint64_t)v->lapic.tsc_offset;
	if (vm->clock.polling) {
		vm->clock_poll.rdtscs++;
		vm->clock_poll.rdtsc_exit = true;
	}
	*vendor_rax(v) = (uint32_t)t;
	v->regs.rdx = t >> 32;
	if (rdtscp)
		v->regs.rcx = (uint32_t)rdmsr(MSR_TSC_AUX);   /* the guest's: passed through */
}

/* RDTSC (when the light path did not take it) and RDTSCP. */
static void clock_rdtsc(struct vcpu *v, struct insn_pattern insn, bool rdtscp)
{
	uint64_t next = vendor_next_rip_slow(v, insn);
	if (!next)
		return;
	guest_clock_rdtsc(v, rdtscp);
	vendor_set_rip(v, next);
	exit_insn_completed(v);   /* the STI/MOV SS shadow ends; RFLAGS.TF: the step is due */
}

/* QEMU 7.2 reports an intercepted RDTSCP with the RDTSC exit code (its
 * RDTSCP helper calls the RDTSC one): the bytes at RIP tell them apart. */
static bool rdtscp_at_rip(struct vcpu *v)
{
	struct guest_paging pg;
	uint8_t buf[15];
	vendor_guest_paging(v, &pg);
	uint64_t lin = (pg.cs_long ? 0 : vendor_cs_base(v)) + vendor_guest_rip(v);
	size_t got = guest_read_linear(v->vm, &pg, pg.cs_long ? lin : (lin & 0xffffffffull), buf,
				       sizeof(buf));
	return insn_length_with_prefixes(buf, got, pg.cs_long, insn_rdtscp.op, insn_rdtscp.len);
}

void heavy_rdtsc(struct vcpu *v)
{
	if (rdtscp_at_rip(v))
		clock_rdtsc(v, insn_rdtscp, true);
	else
		clock_rdtsc(v, insn_rdtsc, false);
}

void heavy_rdtscp(struct vcpu *v)
{
	clock_rdtsc(v, insn_rdtscp, true);
}
