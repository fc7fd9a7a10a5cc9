/* The VM's device registries: port ranges (a port map the light path reads
 * with one load), MMIO ranges above RAM, and MSR handlers (vmm/msr_map.h). */
#include "vmm/io_registry.h"

#include "core/console.h"
#include "vmm/vm.h"

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
	return r->fn(r->dev, gpa, data, size, is_write);
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
