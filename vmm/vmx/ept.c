/* Intel VT-x: a VM's EPT (guest RAM only) and its I/O and MSR bitmaps
 * (deny by default). */
#include "core/cpu.h"
#include "core/pmem.h"
#include "vmm/vm_maps.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

/* The MSR bitmap: read-low, read-high, write-low, write-high, 1 KiB each;
 * "low" covers MSRs 0-0x1FFF, "high" 0xC0000000-0xC0001FFF. */
static const struct vm_map_format ept_format = {
	.table_flags = EPT_RWX,
	.leaf_flags = EPT_RWX | EPT_MEMTYPE_WB | EPT_LARGE,
	.io_bitmap_bytes = 2 * 4096,   /* I/O bitmaps A (ports 0-0x7fff) and B */
	.msr_bitmap_bytes = 4096,
	.msr_low_read_bit = 0,
	.msr_low_write_bit = 2048 * 8,
	.msr_high_read_bit = 1024 * 8,
	.msr_high_write_bit = 3072 * 8,
	.msr_stride = 1,
};

uint64_t vmx_eptp(const struct vm *vm)
{
	return vm->npt_root | EPTP_WB | EPTP_WALK4;
}

int vendor_vm_init(struct vm *vm)
{
	if (vm_maps_create(vm, &ept_format))
		return -1;
	/* every port and MSR exits, except the guest-owned MSRs: FS/GS.base
	 * and SYSENTER_*, which the VMCS saves and loads on every exit and
	 * entry, and with msr=lazy KERNEL_GS_BASE, STAR, LSTAR, CSTAR, SFMASK,
	 * which stay in the CPU through the light loop and are read back with
	 * RDMSR at the heavy exit (smsr_save_guest_load_host), */
	vm_maps_pass_guest_msrs(vm, &ept_format);
	/* and TSC_AUX, as on SVM: the guest owns it (RDTSCP reads it), the host
	 * never uses it, and each vCPU starts with it 0 (vmm/cpu_state.h) */
	vm_maps_pass_msr(vm, &ept_format, MSR_TSC_AUX);
	return 0;
}

void vmx_forget_old_translations(struct vm *vm)
{
	if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_ALL)
		invept(2, 0);
	else if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_SINGLE)
		invept(1, vmx_eptp(vm));
	if (vmx_caps.vpid)
		invvpid(2, 0);
}

void vendor_vm_destroy(struct vm *vm)
{
	vm_maps_destroy(vm, &ept_format);
}
