#include "vmm/vm_maps.h"

#include "core/cpu.h"
#include "core/pmem.h"
#include "lib/string.h"
#include "vmm/state_switch.h"
#include "vmm/vm.h"

#define PAGE_2M (2ull << 20)

static uint64_t pd_pages(const struct vm *vm)
{
	return (vm->mem_size + (1ull << 30) - 1) >> 30;
}

static int map_ram(struct vm *vm, uint64_t table_flags, uint64_t leaf_flags)
{
	if (vm->mem_size & (PAGE_2M - 1))
		return -1;
	uint64_t npd = pd_pages(vm);
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

int vm_maps_create(struct vm *vm, const struct vm_map_format *f)
{
	vm->iopm_pa = pmem_alloc(f->io_bitmap_bytes, 4096);
	vm->msrpm_pa = pmem_alloc(f->msr_bitmap_bytes, 4096);
	if (!vm->iopm_pa || !vm->msrpm_pa || map_ram(vm, f->table_flags, f->leaf_flags))
		return -1;
	/* deny by default: every port and MSR intercepted */
	memset((void *)(uintptr_t)vm->iopm_pa, 0xff, f->io_bitmap_bytes);
	memset((void *)(uintptr_t)vm->msrpm_pa, 0xff, f->msr_bitmap_bytes);
	return 0;
}

void vm_maps_pass_msr(struct vm *vm, const struct vm_map_format *f, uint32_t msr)
{
	uint8_t *bm = (uint8_t *)(uintptr_t)vm->msrpm_pa;
	bool high = msr >= 0xc0000000u;
	uint32_t i = (msr & 0x1fffu) * f->msr_stride;
	uint32_t r = (high ? f->msr_high_read_bit : f->msr_low_read_bit) + i;
	uint32_t w = (high ? f->msr_high_write_bit : f->msr_low_write_bit) + i;
	bm[r / 8] &= (uint8_t)~(1u << (r % 8));
	bm[w / 8] &= (uint8_t)~(1u << (w % 8));
}

void vm_maps_pass_guest_msrs(struct vm *vm, const struct vm_map_format *f)
{
	static const uint32_t always[] = {
		MSR_FS_BASE, MSR_GS_BASE,
		MSR_IA32_SYSENTER_CS, MSR_IA32_SYSENTER_ESP, MSR_IA32_SYSENTER_EIP,
	};
	for (unsigned i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		vm_maps_pass_msr(vm, f, always[i]);
	/* msr=always: lightpath is their keeper between exits and WRMSRs
	 * them itself on every entry, so it must see (and check) each write */
	if (vm->opt->msr_lazy)
		for (unsigned i = 0; i < SMSR_COUNT; i++)
			vm_maps_pass_msr(vm, f, smsr_index[i]);
}

void vm_maps_destroy(struct vm *vm, const struct vm_map_format *f)
{
	const uint64_t *l4 = (const uint64_t *)(uintptr_t)vm->npt_root;
	const uint64_t *l3 = (const uint64_t *)(uintptr_t)(l4[0] & ~0xfffull);
	pmem_free(l3[0] & ~0xfffull, pd_pages(vm) * 4096);
	pmem_free(l4[0] & ~0xfffull, 4096);
	pmem_free(vm->npt_root, 4096);
	pmem_free(vm->iopm_pa, f->io_bitmap_bytes);
	pmem_free(vm->msrpm_pa, f->msr_bitmap_bytes);
}
