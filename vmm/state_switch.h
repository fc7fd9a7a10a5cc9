/* The vendor-neutral pieces of the state switch both backends do on heavy
 * exits (or on every exit, for a switch set to "always"): the syscall MSRs
 * (msr=lazy|always), debug registers DR0-3 (dr=lazy|always) and the
 * performance counters (pmu=lazy|always). */
#ifndef VMM_STATE_SWITCH_H
#define VMM_STATE_SWITCH_H

#include "core/cpu.h"
#include "vmm/vm.h"

/* MSR numbers of enum syscall_msr, and the host's values (read once). */
extern const uint32_t smsr_index[SMSR_COUNT];
extern uint64_t host_smsr[SMSR_COUNT];

/* Reads the host's syscall MSRs; call once the CPU is set up. */
void state_switch_init(void);
/* An AP takes the boot CPU's values, so that host_smsr holds every CPU's
 * (lightpath never uses SYSCALL: any common value would do) and the exit
 * path needs no per-CPU copy. */
void state_switch_init_ap(void);
/* The enum syscall_msr slot of `msr`, or -1. */
int smsr_slot(uint32_t msr);

static inline void smsr_save_guest_load_host(struct vcpu *v)
{
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		v->guest_smsr[i] = rdmsr(smsr_index[i]);
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		wrmsr(smsr_index[i], host_smsr[i]);
}

static inline void smsr_load_guest(struct vcpu *v)
{
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		wrmsr(smsr_index[i], v->guest_smsr[i]);
}

static inline void dr03_save_guest_load_host(struct vcpu *v)
{
	asm volatile("mov %%dr0, %0" : "=r"(v->guest_dr[0]));
	asm volatile("mov %%dr1, %0" : "=r"(v->guest_dr[1]));
	asm volatile("mov %%dr2, %0" : "=r"(v->guest_dr[2]));
	asm volatile("mov %%dr3, %0" : "=r"(v->guest_dr[3]));
	/* the host uses no breakpoints: its DR0-3 are zero */
	asm volatile("mov %0, %%dr0; mov %0, %%dr1; mov %0, %%dr2; mov %0, %%dr3" ::"r"(0ull));
}

static inline void dr03_load_guest(struct vcpu *v)
{
	asm volatile("mov %0, %%dr0" ::"r"(v->guest_dr[0]));
	asm volatile("mov %0, %%dr1" ::"r"(v->guest_dr[1]));
	asm volatile("mov %0, %%dr2" ::"r"(v->guest_dr[2]));
	asm volatile("mov %0, %%dr3" ::"r"(v->guest_dr[3]));
}

/* The first n (at most 4) counters: event selects at MSRs ctl0.., counters
 * at ctr0.. (AMD's legacy PerfEvtSel/PerfCtr, Intel's PERFEVTSEL/PMC). */
static inline void pmu_save_guest_load_host(struct vcpu *v, uint32_t ctl0, uint32_t ctr0,
					    unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		v->guest_pmu[i] = rdmsr(ctl0 + i);
		v->guest_pmu[4 + i] = rdmsr(ctr0 + i);
	}
	for (unsigned i = 0; i < n; i++) {
		wrmsr(ctl0 + i, v->host_pmu[i]);
		wrmsr(ctr0 + i, v->host_pmu[4 + i]);
	}
}

static inline void pmu_load_guest(struct vcpu *v, uint32_t ctl0, uint32_t ctr0, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		wrmsr(ctl0 + i, v->guest_pmu[i]);
		wrmsr(ctr0 + i, v->guest_pmu[4 + i]);
	}
}

/* The VM starts with the host's counter values as its own. */
static inline void pmu_init(struct vcpu *v, uint32_t ctl0, uint32_t ctr0, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		v->host_pmu[i] = v->guest_pmu[i] = rdmsr(ctl0 + i);
		v->host_pmu[4 + i] = v->guest_pmu[4 + i] = rdmsr(ctr0 + i);
	}
}

#endif
