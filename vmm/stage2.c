#include "vmm/stage2.h"

#include "core/pmem.h"
#include "vmm/vm.h"

#define PAGE_2M (2ull << 20)

static uint64_t stage2_pd_pages(const struct vm *vm)
{
	return (vm->mem_size + (1ull << 30) - 1) >> 30;
}

int stage2_map_ram(struct vm *vm, uint64_t table_flags, uint64_t leaf_flags)
{
	if (vm->mem_size & (PAGE_2M - 1))
		return -1;
	uint64_t npd = stage2_pd_pages(vm);
	uint64_t pml4 = pmem_alloc(4096, 4096), pdpt = pmem_alloc(4096, 4096);
	uint64_t pd = pmem_alloc(npd * 4096, 4096);
	if (!pml4 || !pdpt || !pd)
		return -1;
	uint64_t *l4 = (uint64_t *)(uintptr_t)pml4, *l3 = (uint64_t *)(uintptr_t)pdpt;
	uint64_t *l2 = (uint64_t *)(uintptr_t)pd;
	l4[0] = pdpt | table_flags;
	for (uint64_t i = 0; i < npd; i++)
		l3[i] = (pd + i * 4096) | table_flags;
	for (uint64_t gpa = 0; gpa < vm->mem_size; gpa += PAGE_2M)
		l2[gpa >> 21] = (vm->mem_hpa + gpa) | leaf_flags;
	vm->npt_root = pml4;
	return 0;
}

void stage2_free(struct vm *vm)
{
	const uint64_t *l4 = (const uint64_t *)(uintptr_t)vm->npt_root;
	const uint64_t *l3 = (const uint64_t *)(uintptr_t)(l4[0] & ~0xfffull);
	pmem_free(l3[0] & ~0xfffull, stage2_pd_pages(vm) * 4096);
	pmem_free(l4[0] & ~0xfffull, 4096);
	pmem_free(vm->npt_root, 4096);
}
