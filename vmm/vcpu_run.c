/* A vCPU's life on its host CPU: the heavy loop around the backend's light
 * loop, wait-for-SIPI after an INIT, the AP vCPUs posted to their CPUs and
 * waited for, and the kicks between CPUs (vcpu_notify). */
#include "vmm/vcpu_run.h"

#include "core/console.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/smp.h"
#include "lib/string.h"
#include "vmm/cpu_state.h"
#include "vmm/exit_cost.h"
#include "vmm/pc_virtio.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vm_timers.h"

void vcpu_notify(struct vcpu *t)
{
	if (t->host_cpu == this_cpu()) {
		t->pending |= VCPU_PENDING_RECHECK;
		return;
	}
	__atomic_store_n(&t->kicked, true, __ATOMIC_RELEASE);
	smp_kick(t->host_cpu);
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
	if (v->vm->disk || v->vm->net)   /* (no call for a VM without them) */
		pc_virtio_take_kicks(v->vm);
	v->pending |= VCPU_PENDING_RECHECK;
}

static void vcpu_heavy_enter(struct vcpu *v)
{
	vm_lock_vcpu(v->vm);
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
	this_cpu()->current = v;   /* exit_vcpu() for every exit of the run */
	__atomic_store_n(&this_cpu()->hazard, &v->pending, __ATOMIC_RELAXED);
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
	__atomic_store_n(&this_cpu()->hazard, (uint32_t *)0, __ATOMIC_RELAXED);
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
	this_cpu()->current = v;   /* the home of its timers (vm_timers_reprogram) */
	vm_timers_reprogram(vm);   /* its CPU wakes for none of the others' */
	while (!vm->ended && !v->lapic.sipi_pending) {
		vm_unlock(vm);
		vendor_host_wait_for_interrupt();
		vm_lock_vcpu(vm);
		vcpu_take_notices(v);   /* fixed IPIs to a waiting APIC are dropped */
		vm_timers_run(vm);
		if (v->lapic.init_pending)   /* another INIT: still waiting */
			v->lapic.init_pending = false;
	}
	this_cpu()->current = 0;
	v->lapic.sipi_pending = false;
	return !vm->ended;
}

/* A vCPU's life on its CPU: run (vCPU 0 from the loaded image, the others
 * from their first STARTUP), and after an INIT wait for the next STARTUP
 * and run from its vector in real mode, until the VM ends. */
void vcpu_life(struct vcpu *v)
{
	struct vm *vm = v->vm;
	for (;;) {
		if (v->started)
			vcpu_run(v);
		if (vm->ended)
			break;
		vm_lock_vcpu(vm);
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

/* The VM's vCPUs: vCPU i has APIC ID i and runs on host CPU run_on[i]
 * (vmm/guests.c chose them); vcpus[0] is the boot vCPU. False when out of
 * memory (those allocated stay for vcpus_free). */
bool vcpus_alloc(struct vm *vm, const struct vm_spec *spec)
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

void vcpus_free(struct vm *vm)
{
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		exit_cost_free(vm->vcpus[i]);
		pmem_free((uint64_t)(uintptr_t)vm->vcpus[i], sizeof(struct vcpu));
	}
}

/* Posts every AP vCPU to its CPU; one that cannot be posted stops the VM. */
void vcpus_post(struct vm *vm)
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
void vcpus_wait_finished(struct vm *vm)
{
	for (unsigned i = 1; i < vm->nr_vcpus; i++)
		while (!__atomic_load_n(&vm->vcpus[i]->finished, __ATOMIC_ACQUIRE))
			asm volatile("pause" ::: "memory");
}
