/* Vendor-neutral exit handling: what a hypercall, CPUID, port or MSR access
 * means, shared by the backends. The light-path pieces are inline so that a
 * backend's exit switch compiles into one straight path. */
#ifndef VMM_EXIT_H
#define VMM_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

/* Hypercall: nr in *rax, args in regs; result in *rax (and rbx/rcx).
 * Returns true when the exit must continue on the heavy path. */
bool exit_hypercall_slow(struct vcpu *v, uint64_t *rax);

static inline bool exit_hypercall(struct vcpu *v, uint64_t *rax)
{
	if (__builtin_expect(*rax == LP_HC_NULL, 1)) {
		*rax = 0;
		return false;
	}
	return exit_hypercall_slow(v, rax);
}

/* CPUID as the guest sees it: the host's, filtered, plus lightpath's leaves. */
void exit_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

/* Fills the vCPU's CPUID cache (call after the VM's options are set). */
void exit_cpuid_cache_init(struct vcpu *v);

/* Leaves that take a subleaf in ECX are never cached. */
#define CPUID_BASIC_SUBLEAVES ((1u << 4) | (1u << 7) | (1u << 0xb) | (1u << 0xd) | (1u << 0xf) | \
			       (1u << 0x10) | (1u << 0x12) | (1u << 0x14) | (1u << 0x17) |        \
			       (1u << 0x18) | (1u << 0x1b) | (1u << 0x1d) | (1u << 0x1e) | (1u << 0x1f))
#define CPUID_EXT_SUBLEAVES   ((1u << 0x1d) | (1u << 0x1e))

/* The cached answer for a leaf, or 0 when it must be computed. */
static inline const uint32_t *exit_cpuid_cached(const struct vcpu *v, uint32_t leaf)
{
	if (leaf < v->cpuid_basic_n)
		return (CPUID_BASIC_SUBLEAVES >> leaf) & 1 ? 0 : v->cpuid_basic[leaf];
	uint32_t ext = leaf - 0x80000000u;
	if (ext < v->cpuid_ext_n)
		return (CPUID_EXT_SUBLEAVES >> ext) & 1 ? 0 : v->cpuid_ext[ext];
	return 0;
}

/* Port I/O to the registered device. *rax is updated for IN (only the low
 * `size` bytes change, a 4-byte IN zero-extends). Returns IO_OK or IO_VM_END. */
static inline int exit_port_io(struct vcpu *v, uint16_t port, unsigned size, bool in, uint64_t *rax)
{
	/* bytes an access of `size` (1, 2 or 4) covers */
	static const uint32_t size_mask[8] = { 0, 0xff, 0xffff, 0, 0xffffffffu, 0, 0, 0 };
	uint64_t mask = size_mask[size & 7];
	uint64_t d = in ? 0 : *rax & mask;
	int ret = vm_port_access(v, port, &d, size, !in);
	/* a 4-byte IN zero-extends into RAX; narrower ones merge */
	if (in)
		*rax = size == 4 ? (uint32_t)d : ((*rax & ~mask) | (d & mask));
	return ret;
}

/* RDMSR/WRMSR through the registered handlers. Returns 0, or negative when
 * the guest must get #GP (unknown MSR or invalid value). */
static inline int exit_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	struct vm *vm = v->vm;
	for (unsigned i = 0; i < vm->nr_msr; i++) {
		const struct msr_range *m = &vm->msr[i];
		if (msr - m->base < m->count)
			return m->fn(v, msr, val, is_write);
	}
	v->stats.denied_msrs++;
	return -1;
}

/* Registers the MSRs every VM has (EFER, PAT, syscall MSRs, MTRR default type...). */
void exit_register_msrs(struct vm *vm);

/* Prints the exit statistics table for a vCPU. */
void exit_print_stats(const struct vcpu *v);

#endif
