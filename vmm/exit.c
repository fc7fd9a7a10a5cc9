#include "vmm/exit.h"

#include "core/console.h"
#include "core/cpu.h"
#include "lib/printf.h"
#include "vmm/vcpu_exit.h"

/* LP_HC_TIMER expiry: the vector becomes a pending virtual interrupt. */
static void test_timer_fire(struct vm_timer *t, uint64_t now)
{
	(void)now;
	struct vm *vm = dev_host_vm(t->host);
	exit_raise_test_irq(vm->vcpu, (uint8_t)(uintptr_t)t->opaque);
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
		vm_timer_init(&vm->test_timer, vm->pc, test_timer_fire, (void *)(uintptr_t)vec);
		vm->test_timer.host_clock = true;
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

/* share in tenths of a percent, printed as "45.1%" */
static void print_share(char *buf, unsigned len, uint64_t part, uint64_t whole)
{
	uint64_t t = whole ? (part * 1000 + whole / 2) / whole : 0;
	snprintf(buf, len, "%u.%u%%", (unsigned)(t / 10), (unsigned)(t % 10));
}

void exit_print_stats(const struct vcpu *v)
{
	uint64_t total = 0, heavy = 0;
	char share[16];
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		total += v->stats.exits[i];
		heavy += v->stats.heavy[i];
	}
	kprintf("lightpath: vm%u: exit statistics\n", v->vm->id);
	kprintf("  %-16s %8s %7s %10s %10s\n", "reason", "exits", "share", "light", "heavy");
	for (unsigned i = 0; i < LP_EXIT_COUNT; i++) {
		if (!v->stats.exits[i])
			continue;
		print_share(share, sizeof(share), v->stats.exits[i], total);
		kprintf("  %-16s %8lu %7s %10lu %10lu\n", reason_names[i], v->stats.exits[i], share,
			v->stats.exits[i] - v->stats.heavy[i], v->stats.heavy[i]);
	}
	print_share(share, sizeof(share), total - heavy, total);
	kprintf("  %-16s %8lu %7s %10lu %10lu   light %s\n", "total", total, "100.0%",
		total - heavy, heavy, share);
	kprintf("  denied: %lu port reads, %lu port writes, %lu MSR accesses\n",
		v->stats.denied_port_reads, v->stats.denied_port_writes, v->stats.denied_msrs);
	if (v->stats.emulated || v->stats.denied_mmio_reads || v->stats.denied_mmio_writes)
		kprintf("  emulated: %lu instructions; unclaimed MMIO: %lu reads, %lu writes\n",
			v->stats.emulated, v->stats.denied_mmio_reads, v->stats.denied_mmio_writes);
	guest_clock_print_stats(v->vm);
}
