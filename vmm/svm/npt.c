/* AMD SVM: a VM's nested page tables (guest RAM only) and its I/O and MSR
 * permission maps (deny by default). */
#include "core/cpu.h"
#include "core/pmem.h"
#include "vmm/vendor_setup.h"
#include "vmm/vm.h"
#include "vmm/vm_maps.h"

#define NPT_RWU   0x7ull               /* present, writable, user (NPT walks are user accesses) */
#define NPT_LARGE (NPT_RWU | 0x80ull)  /* ... a 2 MiB page */

/* The MSR permission map has two bits per MSR (read, write); MSRs
 * 0-0x1FFF start at byte 0, 0xC0000000-0xC0001FFF at byte 0x800. */
static const struct vm_map_format npt_format = {
	.table_flags = NPT_RWU,
	.leaf_flags = NPT_LARGE,
	.io_bitmap_bytes = 3 * 4096,   /* IOPM */
	.msr_bitmap_bytes = 2 * 4096,  /* MSRPM */
	.msr_low_read_bit = 0,
	.msr_low_write_bit = 1,
	.msr_high_read_bit = 0x800 * 8,
	.msr_high_write_bit = 0x800 * 8 + 1,
	.msr_stride = 2,
};

int vendor_vm_init(struct vm *vm)
{
	if (vm_maps_create(vm, &npt_format))
		return -1;
	/* every port and MSR is intercepted, except the guest-owned MSRs: all
	 * of them VMLOAD state (FS/GS.base, KERNEL_GS_BASE, STAR, LSTAR, CSTAR,
	 * SFMASK, SYSENTER_*), in the CPU from VMLOAD to VMSAVE and in the
	 * VMCB otherwise, so VMSAVE keeps whatever the guest wrote without an
	 * exit, whether it runs at the heavy exit (svm.vmload=lazy) or at every
	 * exit (always); msr=always keeps the syscall ones intercepted, */
	vm_maps_pass_guest_msrs(vm, &npt_format);
	/* and TSC_AUX, which only RDTSCP/RDPID read: the guest owns the
	 * register, the host never uses it. */
	vm_maps_pass_msr(vm, &npt_format, MSR_TSC_AUX);
	return 0;
}

void vendor_vm_destroy(struct vm *vm)
{
	vm_maps_destroy(vm, &npt_format);
}
