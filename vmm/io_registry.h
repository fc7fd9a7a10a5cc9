/* The VM's device registries (vmm/io_registry.c): which device serves a
 * port, an MMIO address above RAM, an MSR. The port lookups the exits make
 * are inline. */
#ifndef VMM_IO_REGISTRY_H
#define VMM_IO_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vm.h"

/* port_map entries: the index of the port's range in io[], with this bit set
 * when the light path must not call it: nobody is there (index 0), or the
 * device runs on the heavy path only (io_range.light false). The light path
 * tests this one bit before anything else. */
#define VM_PORT_SLOW 0x80u

/* A port nobody claimed: reads all-ones, writes are dropped; both counted.
 * Returns IO_OK. */
int vm_port_unclaimed(struct vcpu *v, uint64_t *data, bool is_write) __attribute__((cold));

/* The device range of `port`, or NULL when nobody claimed the port
 * (vm_port_unclaimed answers it). */
static inline const struct io_range *vm_port_range(const struct vm *vm, uint16_t port)
{
	unsigned idx = vm->port_map[port] & ~VM_PORT_SLOW;
	return __builtin_expect(idx != 0, 1) ? &vm->io[idx].r : 0;
}

/* One port access as a device sees it (the heavy path and the emulator; the
 * light path tests VM_PORT_SLOW itself): *data in/out. Returns IO_OK,
 * IO_VM_END or negative. */
static inline int vm_port_access(struct vcpu *v, uint16_t port, uint64_t *data, unsigned size,
				 bool is_write)
{
	const struct io_range *r = vm_port_range(v->vm, port);
	if (!r)
		return vm_port_unclaimed(v, data, is_write);
	return r->fn(r->dev, port, data, size, is_write);
}

int vm_register_io(struct vm *vm, const struct io_range *r);
int vm_register_mmio(struct vm *vm, const struct io_range *r);
const struct io_range *vm_find_mmio(const struct vm *vm, uint64_t gpa);
/* One device access as the instruction emulator makes it: *data in/out,
 * size 1/2/4(/8 for MMIO). Nobody there: reads all-ones, writes dropped
 * (counted as denied). Returns IO_OK, IO_VM_END or a negative error. */
int vm_mmio_access(struct vcpu *v, uint64_t gpa, uint64_t *data, unsigned size, bool is_write);
/* Before any vm_register_msr: every MSR #GPs (vm_msr_denied). */
void vm_msrs_init(struct vm *vm);
/* MSRs base .. base+count-1 go to fn, except those an earlier call already
 * gave a handler (the first registration wins). Returns 0, or -1 with
 * nothing registered when the range is not inside one architectural block
 * (vmm/msr_map.h) or VM_MAX_MSR_HANDLERS distinct functions are taken. */
int vm_register_msr(struct vm *vm, uint32_t base, uint32_t count, msr_handler_fn fn);
/* The handler of the MSRs nobody registered: counts the access, #GP. */
int vm_msr_denied(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write);

#endif
