/* The services both paths of an exit use, whatever the backend: the
 * hypercall ABI, CPUID as the guest sees it, port and MSR dispatch to the
 * registered devices, and the exit statistics. The pieces the light path
 * runs are inline. (What an exit means is its row: vmm/exit_table.h.) */
#ifndef VMM_EXIT_H
#define VMM_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vendor.h"
#include "vmm/io_registry.h"
#include "vmm/vm.h"

/* Hypercall: nr in *rax, args in regs; result in *rax (and rbx/rcx).
 * Returns true when the light loop must be left (the exit is done). */
bool exit_hypercall_slow(struct vcpu *v, uint64_t *rax);

static inline void exit_hypercall(struct vcpu *v, uint64_t *rax)
{
	if (__builtin_expect(*rax == LP_HC_NULL, 1))
		*rax = 0;
	else
		exit_hypercall_slow(v, rax);
}

/* CPUID as the guest sees it now: the host's through the policy
 * (vmm/cpuid.h), lightpath's leaves, and the bits that follow the guest's
 * state (vmm/cpuid.c). */
void exit_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t out[4]);

/* Fills the vCPU's CPUID cache (call after the VM's options are set and
 * its local APIC exists). */
void exit_cpuid_cache_init(struct vcpu *v);

/* IA32_APIC_BASE's global enable changed: the APIC bits of the cache follow. */
void exit_cpuid_apic_changed(struct vcpu *v);

/* Leaves that take a subleaf in ECX are never cached. */
#define CPUID_BASIC_SUBLEAVES ((1u << 4) | (1u << 7) | (1u << 0xb) | (1u << 0xd) | (1u << 0xf) | \
			       (1u << 0x10) | (1u << 0x12) | (1u << 0x14) | (1u << 0x17) |        \
			       (1u << 0x18) | (1u << 0x1b) | (1u << 0x1d) | (1u << 0x1e) | (1u << 0x1f))
#define CPUID_EXT_SUBLEAVES   ((1u << 0x1d) | (1u << 0x1e))
/* Leaf 1 is cached but its OSXSAVE bit is the guest's CR4.OSXSAVE, which
 * the guest changes without an exit: it leaves the plain copy (exit_do_cpuid
 * adds the bit), so that every other cached leaf keeps the same
 * instructions. */
#define CPUID_BASIC_UNCACHED  (CPUID_BASIC_SUBLEAVES | (1u << 1))

/* The cached answer for a leaf, or 0 when it must be computed. */
static inline const uint32_t *exit_cpuid_cached(const struct vcpu *v, uint32_t leaf)
{
	if (leaf < v->cpuid_basic_n)
		return (CPUID_BASIC_UNCACHED >> leaf) & 1 ? 0 : v->cpuid_basic[leaf];
	uint32_t ext = leaf - 0x80000000u;
	if (ext < v->cpuid_ext_n)
		return (CPUID_EXT_SUBLEAVES >> ext) & 1 ? 0 : v->cpuid_ext[ext];
	return 0;
}

/* A CPUID answer into the guest's RAX/RBX/RCX/RDX. */
static inline __attribute__((always_inline)) void exit_cpuid_store(struct vcpu *v,
								   const uint32_t *out)
{
	*vendor_rax(v) = out[0];
	v->regs.rbx = out[1];
	v->regs.rcx = out[2];
	v->regs.rdx = out[3];
}

/* CPUID for a leaf exit_cpuid_cached has no answer for. */
void exit_do_cpuid_uncached(struct vcpu *v);

/* CPUID with the guest's registers: leaf in RAX (where the backend keeps
 * it), subleaf in RCX; results in RAX/RBX/RCX/RDX. */
static inline __attribute__((always_inline)) void exit_do_cpuid(struct vcpu *v)
{
	const uint32_t *out = exit_cpuid_cached(v, (uint32_t)*vendor_rax(v));
	if (__builtin_expect(!out, 0))
		exit_do_cpuid_uncached(v);
	else
		exit_cpuid_store(v, out);
}

/* Bytes an access of `size` (1, 2 or 4) covers. */
static inline uint64_t port_size_mask(unsigned size)
{
	static const uint32_t size_mask[8] = { 0, 0xff, 0xffff, 0, 0xffffffffu, 0, 0, 0 };
	return size_mask[size & 7];
}

/* The value an IN of `size` leaves in RAX: a 4-byte IN zero-extends into
 * RAX, narrower ones merge. */
static inline uint64_t port_in_result(uint64_t rax, unsigned size, uint64_t d)
{
	if (size == 4)
		return (uint32_t)d;
	uint64_t mask = port_size_mask(size);
	return (rax & ~mask) | (d & mask);
}

/* Port I/O to the device at io[idx] (present, light or not), RAX as the
 * guest's operand. Returns IO_OK, IO_VM_END or negative. */
static inline __attribute__((always_inline)) int
exit_port_io_at(struct vcpu *v, uint64_t idx, unsigned port, unsigned size, bool in, uint64_t *rax)
{
	const struct io_range *r = &v->vm->io[idx].r;
	if (in) {
		/* size kept beside d, in memory the callee could reach: read back
		 * after the call, it needs no callee-saved register, so neither
		 * direction pays for one */
		struct { uint64_t d, size; } in_op = { 0, size };
		int ret = r->fn(r->dev, port, &in_op.d, size, false);
		*rax = port_in_result(*rax, (unsigned)in_op.size, in_op.d);
		return ret;
	}
	uint64_t d = *rax & port_size_mask(size);
	return r->fn(r->dev, port, &d, size, true);
}

/* Port I/O to whatever is at `port` (the heavy path). */
static inline int exit_port_io(struct vcpu *v, uint16_t port, unsigned size, bool in, uint64_t *rax)
{
	uint64_t d = in ? 0 : *rax & port_size_mask(size);
	int ret = vm_port_access(v, port, &d, size, !in);
	if (in)
		*rax = port_in_result(*rax, size, d);
	return ret;
}

/* RDMSR/WRMSR through the registered handlers. Returns 0, negative when
 * the guest must get #GP (unknown MSR or invalid value), or MSR_NEEDS_LOCK. */
static inline __attribute__((always_inline)) int
exit_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	/* one lookup whatever the MSR; nobody's goes to vm_msr_denied */
	struct vm *vm = v->vm;
	return vm->msr_fn[msr_map_get(&vm->msr_map, msr)](v, msr, val, is_write);
}

/* RDMSR/WRMSR with the guest's registers (ECX, EDX:EAX; RAX lives where the
 * backend keeps it). Returns 0 when done, negative when the guest got #GP
 * instead (RIP stays on the instruction), or MSR_NEEDS_LOCK: nothing was
 * done, the heavy path (which holds the VM lock) must do it. */
static inline __attribute__((always_inline)) int exit_do_msr(struct vcpu *v, bool is_write)
{
	uint64_t *rax = vendor_rax(v);
	/* RDMSR's only input is ECX */
	uint64_t val = is_write ? (*rax & 0xffffffffull) | (v->regs.rdx << 32) : 0;
	int r = exit_msr(v, (uint32_t)v->regs.rcx, &val, is_write);
	if (__builtin_expect(r, 0)) {
		if (r == MSR_NEEDS_LOCK)
			return r;
		vendor_inject_exception(v, 13, true, 0);
		return -1;
	}
	if (!is_write) {
		*rax = val & 0xffffffffull;
		v->regs.rdx = val >> 32;
	}
	return 0;
}

/* Registers the MSRs every VM has (EFER, PAT, syscall MSRs, MTRR default
 * type...), vmm/exit_msr.c. */
void exit_register_msrs(struct vm *vm);

/* Registers the CPU's own MSRs a guest rarely touches (IA32_TSC,
 * IA32_TSC_ADJUST where CPUID shows it, the performance counters, DEBUGCTL). */
void exit_register_cpu_msrs(struct vm *vm);

/* RDPMC with the guest's ECX: 0 and the counter's value (always 0: a VM
 * has counters that never count), or negative for #GP(0) (a counter the
 * CPU does not have, or CPL > 0 with CR4.PCE clear). */
int exit_rdpmc(struct vcpu *v, uint64_t *val);

/* Prints the VM's exit statistics table (all its vCPUs together), and with
 * several vCPUs a line per vCPU with its IPIs. */
void exit_print_stats(struct vm *vm);
/* An LP_EXIT_* reason's name in the statistics ("cpuid"). */
const char *exit_reason_name(unsigned reason);

#endif
