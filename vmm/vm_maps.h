/* What the CPU consults for a VM without asking lightpath: the second-stage
 * page tables (AMD nested page tables, Intel EPT), which map guest RAM and
 * nothing else (GPA 0..mem_size onto the VM's host memory, 2 MiB pages),
 * and the I/O and MSR permission bitmaps, which start as "intercept
 * everything". The two vendors' formats share their layout and differ in
 * bits and sizes only. */
#ifndef VMM_VM_MAPS_H
#define VMM_VM_MAPS_H

#include <stdint.h>

struct vm;

struct vm_map_format {
	uint64_t table_flags;      /* second-stage table entries */
	uint64_t leaf_flags;       /* 2 MiB leaf entries */
	uint64_t io_bitmap_bytes;  /* vm->iopm_pa */
	uint64_t msr_bitmap_bytes; /* vm->msrpm_pa */
	/* MSRs 0-0x1FFF and 0xC0000000-0xC0001FFF in the MSR bitmap: the bit
	 * of each range's first read and write intercept, and the bits between
	 * two MSRs */
	uint32_t msr_low_read_bit, msr_low_write_bit;
	uint32_t msr_high_read_bit, msr_high_write_bit, msr_stride;
};

/* Builds the tables into vm->npt_root and deny-by-default bitmaps. Returns
 * negative when out of memory or when mem_size is not whole 2 MiB pages (a
 * partial last page would map host memory). */
int vm_maps_create(struct vm *vm, const struct vm_map_format *f);
void vm_maps_destroy(struct vm *vm, const struct vm_map_format *f);
/* Lets the guest read and write an MSR of 0-0x1FFF or 0xC0000000-0xC0001FFF
 * itself. */
void vm_maps_pass_msr(struct vm *vm, const struct vm_map_format *f, uint32_t msr);
/* Passes through the guest-owned MSRs (docs/SECURITY.md,
 * case 18): FS/GS.base and SYSENTER_CS/ESP/EIP always, and
 * STAR, LSTAR, CSTAR, SFMASK, KERNEL_GS_BASE with msr=lazy. Both backends
 * keep all of them per guest without seeing the guest's writes (VMSAVE,
 * VMCS fields, RDMSR at the lazy switch); msr=always keeps the syscall
 * five intercepted (v->guest_smsr their home). */
void vm_maps_pass_guest_msrs(struct vm *vm, const struct vm_map_format *f);

#endif
