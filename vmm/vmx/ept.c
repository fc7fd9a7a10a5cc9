/* Intel VT-x: a VM's EPT (guest RAM only) and its I/O and MSR bitmaps
 * (deny by default). */
#include "core/cpu.h"
#include "core/pmem.h"
#include "lib/string.h"
#include "vmm/stage2.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

#define IO_BITMAPS_BYTES (2 * 4096)   /* A (ports 0-0x7fff) and B */
#define MSR_BITMAP_BYTES 4096

uint64_t vmx_eptp(const struct vm *vm)
{
	return vm->npt_root | EPTP_WB | EPTP_WALK4;
}

/* The MSR bitmap: read-low, read-high, write-low, write-high, 1 KiB each;
 * "high" covers MSRs 0xC0000000-0xC0001FFF. */
static void msr_bitmap_pass_through(uint8_t *bm, uint32_t msr)
{
	unsigned bit = msr - 0xc0000000u;
	bm[1024 + bit / 8] &= (uint8_t)~(1u << (bit % 8));
	bm[3072 + bit / 8] &= (uint8_t)~(1u << (bit % 8));
}

int vendor_vm_init(struct vm *vm)
{
	vm->iopm_pa = pmem_alloc(IO_BITMAPS_BYTES, 4096);
	vm->msrpm_pa = pmem_alloc(MSR_BITMAP_BYTES, 4096);
	if (!vm->iopm_pa || !vm->msrpm_pa ||
	    stage2_map_ram(vm, EPT_RWX, EPT_RWX | EPT_MEMTYPE_WB | EPT_LARGE))
		return -1;
	/* deny by default: every port and MSR exits... */
	memset((void *)(uintptr_t)vm->iopm_pa, 0xff, IO_BITMAPS_BYTES);
	uint8_t *msrbm = (uint8_t *)(uintptr_t)vm->msrpm_pa;
	memset(msrbm, 0xff, MSR_BITMAP_BYTES);
	/* ...except FS.base/GS.base, which the VMCS switches on every entry and
	 * exit: the guest reads and writes its own */
	msr_bitmap_pass_through(msrbm, MSR_FS_BASE);
	msr_bitmap_pass_through(msrbm, MSR_GS_BASE);

	/* The same EPTP or VPID may have served an earlier VM: forget its
	 * translations. */
	if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_ALL)
		invept(2, 0);
	else if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_SINGLE)
		invept(1, vmx_eptp(vm));
	if (vmx_caps.vpid)
		invvpid(2, 0);
	return 0;
}

void vendor_vm_destroy(struct vm *vm)
{
	vmclear((uint64_t)(uintptr_t)vm->vcpu->arch.vmcs);
	stage2_free(vm);
	pmem_free(vm->iopm_pa, IO_BITMAPS_BYTES);
	pmem_free(vm->msrpm_pa, MSR_BITMAP_BYTES);
}
