#include "vmm/exit.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/tsc.h"
#include "lib/printf.h"
#include "vmm/exit_cost.h"
#include "vmm/pc_virtio.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vcpu_run.h"
#include "vmm/vm_timers.h"

/* LP_HC_TIMER expiry: the vector becomes a pending virtual interrupt. The
 * vCPU has one slot for such a vector: while an earlier one (a RAISE_IRQ
 * not yet delivered, e.g. with IF=0) holds it, the timer tries again a
 * little later instead of dropping its interrupt, which a guest halted for
 * it would never see. vcpu_notify wakes the vCPU wherever it runs. */
static void test_timer_fire(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = dev_host_vm(t->host);
	struct vcpu *v = vm->vcpu;
	if (__atomic_load_n(&v->test_irq, __ATOMIC_ACQUIRE)) {
		vm_timer_arm(t, now + vm->timer_min_gap);
		return;
	}
	__atomic_store_n(&v->test_irq, (uint8_t)(uintptr_t)t->opaque, __ATOMIC_RELEASE);
	vcpu_notify(v);
}

bool exit_hypercall_slow(struct vcpu *v, uint64_t *rax)
{
	uint64_t nr = *rax;
	switch (nr) {
	case LP_HC_STATS: {
		uint64_t sel = (uint32_t)v->regs.rbx, n = 0, heavy = 0;
		if (sel == LP_STATS_ALL) {
			for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
				n += v->stats.exits[i];
				heavy += v->stats.heavy[i];
			}
		} else if (sel < LP_EXIT_COUNT) {
			n = v->stats.exits[sel];
			heavy = v->stats.heavy[sel];
		} else {
			*rax = (uint64_t)-LP_EINVAL;
			return false;
		}
		*rax = n;
		v->regs.rbx = n - heavy;
		v->regs.rcx = heavy;
		return false;
	}
	case LP_HC_EXIT:
		vm_end(v->vm, (unsigned)v->regs.rbx, "hypercall");
		*rax = 0;
		return true;
	case LP_HC_RAISE_IRQ: {
		uint64_t vec = v->regs.rbx;
		if (vec < 32 || vec > 255)
			*rax = (uint64_t)-LP_EINVAL;
		else
			*rax = exit_raise_test_irq(v, (uint8_t)vec) ? (uint64_t)-LP_EINVAL : 0;
		return false;
	}
	case LP_HC_CONFIG:
		*rax = options_config_bits(v->vm->opt);
		return false;
	case LP_HC_NULL_HEAVY:
		*rax = 0;
		return true;
	case LP_HC_TIMER: {
		uint64_t us = v->regs.rbx, vec = v->regs.rcx;
		struct vm *vm = v->vm;
		if (!us || us > 10000000 || vec < 32 || vec > 255) {
			*rax = (uint64_t)-LP_EINVAL;
			return false;
		}
		/* one timer, re-armed in place: initialising an armed timer would
		 * leave it in the VM's list twice */
		if (!vm->test_timer.fire) {
			vm_timer_init(&vm->test_timer, vm->pc, test_timer_fire, 0);
			vm->test_timer.host_clock = true;
		}
		vm->test_timer.opaque = (void *)(uintptr_t)vec;
		vm_timer_arm(&vm->test_timer, rdtsc() + us * (platform_tsc_hz() / 1000000));
		*rax = 0;
		return false;
	}
	default:
		*rax = (uint64_t)-LP_ENOSYS;
		return false;
	}
}

static const char *const reason_names[LP_EXIT_COUNT] = {
	[LP_EXIT_HYPERCALL] = "hypercall",  [LP_EXIT_CPUID] = "cpuid",
	[LP_EXIT_IO] = "io",                [LP_EXIT_IO_STRING] = "io_string",
	[LP_EXIT_MSR_READ] = "msr_read",    [LP_EXIT_MSR_WRITE] = "msr_write",
	[LP_EXIT_HLT] = "hlt",              [LP_EXIT_DR_ACCESS] = "dr_access",
	[LP_EXIT_NPF] = "npf",              [LP_EXIT_EXCEPTION] = "exception",
	[LP_EXIT_INTR] = "intr",            [LP_EXIT_VINTR] = "vintr",
	[LP_EXIT_VIRT_INSN] = "virt_insn",  [LP_EXIT_SHUTDOWN] = "shutdown",
	[LP_EXIT_OTHER] = "other",          [LP_EXIT_RDTSC] = "rdtsc",
};

const char *exit_reason_name(unsigned reason)
{
	return reason < LP_EXIT_COUNT ? reason_names[reason] : "?";
}

/* share in tenths of a percent, printed as "45.1%" */
static void print_share(char *buf, unsigned len, uint64_t part, uint64_t whole)
{
	uint64_t t = whole ? (part * 1000 + whole / 2) / whole : 0;
	snprintf(buf, len, "%u.%u%%", (unsigned)(t / 10), (unsigned)(t % 10));
}

static void stats_add(struct exit_stats *sum, const struct exit_stats *s)
{
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		sum->exits[i] += s->exits[i];
		sum->heavy[i] += s->heavy[i];
	}
	sum->denied_port_reads += s->denied_port_reads;
	sum->denied_port_writes += s->denied_port_writes;
	sum->denied_msrs += s->denied_msrs;
	sum->denied_mmio_reads += s->denied_mmio_reads;
	sum->denied_mmio_writes += s->denied_mmio_writes;
	sum->emulated += s->emulated;
}

static uint64_t stats_total(const struct exit_stats *s, uint64_t *heavy)
{
	uint64_t total = 0;
	*heavy = 0;
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		total += s->exits[i];
		*heavy += s->heavy[i];
	}
	return total;
}

void exit_print_stats(struct vm *vm)
{
	struct exit_stats st = { 0 };
	uint64_t total, heavy;
	char share[16];
	for (unsigned i = 0; i < vm->nr_vcpus; i++)   /* the VM's: all its vCPUs' */
		stats_add(&st, &vm->vcpus[i]->stats);
	total = stats_total(&st, &heavy);
	kprintf("lightpath: vm%u: exit statistics\n", vm->id);
	kprintf("  %-16s %8s %7s %10s %10s\n", "reason", "exits", "share", "light", "heavy");
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		if (!st.exits[i])
			continue;
		print_share(share, sizeof(share), st.exits[i], total);
		kprintf("  %-16s %8lu %7s %10lu %10lu\n", reason_names[i], st.exits[i], share,
			st.exits[i] - st.heavy[i], st.heavy[i]);
	}
	print_share(share, sizeof(share), total - heavy, total);
	kprintf("  %-16s %8lu %7s %10lu %10lu   light %s\n", "total", total, "100.0%",
		total - heavy, heavy, share);
	kprintf("  denied: %lu port reads, %lu port writes, %lu MSR accesses\n",
		st.denied_port_reads, st.denied_port_writes, st.denied_msrs);
	if (st.emulated || st.denied_mmio_reads || st.denied_mmio_writes)
		kprintf("  emulated: %lu instructions; unclaimed MMIO: %lu reads, %lu writes\n",
			st.emulated, st.denied_mmio_reads, st.denied_mmio_writes);
	/* several vCPUs: each one's share, and the IPIs between them */
	for (unsigned i = 0; vm->nr_vcpus > 1 && i < vm->nr_vcpus; i++) {
		const struct vcpu *v = vm->vcpus[i];
		uint64_t t = stats_total(&v->stats, &heavy);
		print_share(share, sizeof(share), t - heavy, t);
		kprintf("  vCPU %-3u %8lu exits, light %s; IPIs sent %lu, received %lu (of them light: "
			"sent %lu)\n", i, t, share, v->ipis.sent, v->ipis.received, v->ipis.sent_light);
	}
	if (vm->nr_vcpus > 1) {
		uint64_t us = tsc_hz() / 1000000 ? tsc_hz() / 1000000 : 1;
		kprintf("  VM lock: taken %lu times, %lu of them after a wait: %lu ms in all, %lu us "
			"at most; %lu halts\n", vm->lock_takes, vm->lock_waits, vm->lock_wait / us / 1000,
			vm->lock_wait_max / us, vm->lock_halts);
	}
	guest_clock_print_stats(vm);
	vm_time_limit_print_stats(vm);
	vm_timer_lead_print_stats(vm);
	pc_virtio_print_stats(vm);
	exit_cost_print(vm);
}
