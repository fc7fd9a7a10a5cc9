/* The VM lock's waits (vmm/vm.h, vm_lock): spin, then halt.
 *
 * A CPU that waits for the VM lock spins with PAUSE. On a machine of its
 * own that is all it needs: lightpath owns its CPUs and holds the lock for
 * an exit's handling. Under an emulator or a hypervisor that shares the
 * host's CPUs, the holder's CPU can be descheduled while it holds the lock,
 * and the waiter's spinning then takes the host CPU the holder needs. Under
 * QEMU on a loaded 2-core host (one hand run), a Linux guest of 2 vCPUs spent more time
 * waiting for the lock than its run lasted (172 s of waits in a 115 s run,
 * up to 60 ms at once), and Linux found its CPUs stuck for 20 s and more
 * (soft lockups). So after VM_LOCK_SPIN_NS the waiter halts its CPU, which
 * gives the host CPU back, and the holder's vm_unlock wakes it (the wake
 * IPI). */
#include "vmm/vm.h"

#include "core/cpu.h"
#include "core/smp.h"
#include "core/tsc.h"
#include "vmm/vendor_setup.h"
#include "vmm/vm_timers.h"

/* Longer than the lock is held on a machine of its own (an exit's heavy
 * handling): there the waiter never halts. */
#define VM_LOCK_SPIN_NS 20000u

static bool lock_is_mine(const struct vm *vm, uint32_t ticket)
{
	return __atomic_load_n(&vm->lock.serving, __ATOMIC_ACQUIRE) == ticket;
}

_Static_assert(SMP_MAX_CPUS <= 64, "lock_halted has a bit per CPU");

void vm_lock_wait(struct vm *vm, uint32_t ticket, bool may_halt)
{
	uint64_t start = rdtsc(), spin_until = start + tsc_from_ns(VM_LOCK_SPIN_NS);
	struct percpu *cpu = this_cpu();
	uint64_t me = 1ull << cpu->cpu_id;
	unsigned halts = 0, timer_interrupts = cpu->timer_interrupts;
	while (!lock_is_mine(vm, ticket)) {
		if (!may_halt || rdtsc() < spin_until) {
			asm volatile("pause" ::: "memory");   /* core/smp.c says why PAUSE */
			continue;
		}
		/* The bit before the look at `serving`, as vm_unlock stores
		 * `serving` before it looks at the bits: one of the two sees the
		 * other. A wake IPI sent after the look waits in the CPU until
		 * the halt lets it in, and ends it. */
		__atomic_fetch_or(&vm->lock_halted, me, __ATOMIC_SEQ_CST);
		if (!lock_is_mine(vm, ticket)) {
			vendor_host_wait_for_interrupt();
			halts++;
		}
		__atomic_fetch_and(&vm->lock_halted, ~me, __ATOMIC_RELAXED);
	}
	uint64_t waited = rdtsc() - start;   /* the lock is ours: the counts are too */
	vm->lock_waits++;
	vm->lock_halts += halts;
	vm->lock_wait += waited;
	if (waited > vm->lock_wait_max)
		vm->lock_wait_max = waited;
	/* The host timer's interrupt came in a halt: taken there (it only
	 * acknowledges), it did not run the timers it was for, which would
	 * wait for whatever exit ran them next (a review found this). */
	if (may_halt && cpu->timer_interrupts != timer_interrupts) {
		vm->lock_cpu = cpu;   /* (vm_lock_take says so too, after) */
		vm_timers_run(vm);
	}
}

void vm_lock_wake_halted(struct vm *vm)
{
	uint64_t halted = __atomic_load_n(&vm->lock_halted, __ATOMIC_RELAXED);
	/* every halted waiter looks again; the one whose turn it is goes on */
	while (halted) {
		unsigned cpu = (unsigned)__builtin_ctzll(halted);
		halted &= halted - 1;
		if (cpu < SMP_MAX_CPUS && smp_cpus[cpu])
			smp_kick(smp_cpus[cpu]);
	}
}
