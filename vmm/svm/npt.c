/* AMD SVM: a VM's nested page tables (guest RAM only) and its I/O and MSR
 * permission maps (deny by default). */
#include "core/cpu.h"
#include "core/pmem.h"
#include "lib/string.h"
#include "vmm/stage2.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

#define NPT_RWU   0x7ull               /* present, writable, user (NPT walks are user accesses) */
#define NPT_LARGE (NPT_RWU | 0x80ull)  /* ... a 2 MiB page */

#define IOPM_BYTES  (3 * 4096)
#define MSRPM_BYTES (2 * 4096)

/* The MSR permission map has two bits per MSR (read, write); MSRs
 * 0xC0000000-0xC0001FFF start at byte 0x800. */
static void msrpm_pass_through(uint8_t *msrpm, uint32_t msr)
{
	unsigned bit = (msr - 0xc0000000u) * 2;
	msrpm[0x800 + bit / 8] &= (uint8_t)~(3u << (bit % 8));
}

int vendor_vm_init(struct vm *vm)
{
	vm->iopm_pa = pmem_alloc(IOPM_BYTES, 4096);
	vm->msrpm_pa = pmem_alloc(MSRPM_BYTES, 4096);
	if (!vm->iopm_pa || !vm->msrpm_pa || stage2_map_ram(vm, NPT_RWU, NPT_LARGE))
		return -1;
	/* deny by default: every port and MSR intercepted... */
	memset((void *)(uintptr_t)vm->iopm_pa, 0xff, IOPM_BYTES);
	uint8_t *msrpm = (uint8_t *)(uintptr_t)vm->msrpm_pa;
	memset(msrpm, 0xff, MSRPM_BYTES);
	/* ...except FS.base/GS.base: VMLOAD state that Linux rewrites on every
	 * context switch; the guest's values live in the CPU (lazy) or the VMCB. */
	msrpm_pass_through(msrpm, MSR_FS_BASE);
	msrpm_pass_through(msrpm, MSR_GS_BASE);
	/* ...and TSC_AUX, which only RDTSCP/RDPID read: the guest owns the
	 * register, the host never uses it. */
	msrpm_pass_through(msrpm, MSR_TSC_AUX);
	return 0;
}

void vendor_vm_destroy(struct vm *vm)
{
	stage2_free(vm);
	pmem_free(vm->iopm_pa, IOPM_BYTES);
	pmem_free(vm->msrpm_pa, MSRPM_BYTES);
}
