/* Intel VT-x: a VM's EPT (guest RAM only) and its I/O and MSR bitmaps
 * (deny by default). */
#include "core/cpu.h"
#include "core/pmem.h"
#include "dev/lapic.h"
#include "lib/string.h"
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

/* x2APIC MSRs a vCPU in virtualized x2APIC mode reads from its virtual-APIC
 * page without an exit (APIC-register virtualization reads any MSR of
 * 0x800-0x8FF the bitmap lets through there, 64 bits at (MSR & 0xFF) << 4):
 * the registers the model keeps in the page (dev/lapic.h). ICR (which the
 * page would hold as 64 bits at 0x300), PPR, the current count, the
 * write-only and the absent registers still exit. */
static bool x2apic_read_from_page(uint32_t msr)
{
	unsigned off = (msr & 0xff) << 4;
	if (off >= LAPIC_ISR && off < LAPIC_IRR + 0x80)
		return true;   /* ISR, TMR, IRR */
	if (off >= LAPIC_LVT_TIMER && off <= LAPIC_LVT_ERROR)
		return true;
	switch (off) {
	case LAPIC_ID: case LAPIC_VERSION: case LAPIC_TPR: case LAPIC_LDR: case LAPIC_SVR:
	case LAPIC_ESR: case LAPIC_TIMER_INIT: case LAPIC_TIMER_DIV:
		return true;
	default:
		return false;
	}
}

/* The MSR bitmap of a vCPU in virtualized x2APIC mode: the VM's, and the
 * reads above; with virtual-interrupt delivery the CPU performs the writes
 * of TPR, EOI and SELF IPI itself (and raises their #GPs). */
static int x2apic_msr_bitmap(struct vm *vm)
{
	vm->msrpm_x2apic_pa = pmem_alloc(ept_format.msr_bitmap_bytes, 4096);
	if (!vm->msrpm_x2apic_pa)
		return -1;
	uint8_t *bm = (uint8_t *)(uintptr_t)vm->msrpm_x2apic_pa;
	memcpy(bm, (void *)(uintptr_t)vm->msrpm_pa, ept_format.msr_bitmap_bytes);
	for (uint32_t msr = MSR_X2APIC_FIRST; msr <= MSR_X2APIC_LAST; msr++) {
		uint32_t r = ept_format.msr_low_read_bit + msr, w = ept_format.msr_low_write_bit + msr;
		if (x2apic_read_from_page(msr))
			bm[r / 8] &= (uint8_t)~(1u << (r % 8));
		if (msr == LAPIC_X2APIC_MSR(LAPIC_TPR) || msr == LAPIC_X2APIC_MSR(LAPIC_EOI) ||
		    msr == LAPIC_X2APIC_MSR(LAPIC_SELF_IPI))
			bm[w / 8] &= (uint8_t)~(1u << (w % 8));
	}
	return 0;
}

/* The APIC-access page: the CPU recognizes the guest's accesses to it after
 * the EPT translation, so the EPT maps it at 0xFEE00000 (through a PD and a
 * PT of its own: guest RAM ends below 3 GiB) while a vCPU of the VM has its
 * xAPIC virtualized (vmx_apic_access_map). What the CPU does not
 * virtualize exits before touching it: it stays all-ones. */
static int apic_access_page(struct vm *vm)
{
	uint64_t *l4 = (uint64_t *)(uintptr_t)vm->npt_root;
	uint64_t *l3 = (uint64_t *)(uintptr_t)(l4[0] & ~0xfffull);
	if (l3[LAPIC_BASE >> 30])
		return -1;
	vm->apic_access_pa = pmem_alloc(4096, 4096);
	vm->apic_access_pd = pmem_alloc(4096, 4096);
	vm->apic_access_pt = pmem_alloc(4096, 4096);
	if (!vm->apic_access_pa || !vm->apic_access_pd || !vm->apic_access_pt)
		return -1;
	memset((void *)(uintptr_t)vm->apic_access_pa, 0xff, 4096);
	memset((void *)(uintptr_t)vm->apic_access_pd, 0, 4096);
	memset((void *)(uintptr_t)vm->apic_access_pt, 0, 4096);
	uint64_t *pd = (uint64_t *)(uintptr_t)vm->apic_access_pd;
	pd[(LAPIC_BASE >> 21) & 511] = vm->apic_access_pt | EPT_RWX;
	l3[LAPIC_BASE >> 30] = vm->apic_access_pd | EPT_RWX;
	return 0;
}

void vmx_apic_access_map(struct vm *vm, bool present)
{
	uint64_t *pte = (uint64_t *)(uintptr_t)vm->apic_access_pt + ((LAPIC_BASE >> 12) & 511);
	uint64_t e = present ? vm->apic_access_pa | EPT_RWX | EPT_MEMTYPE_WB : 0;
	if (*pte == e)
		return;
	*pte = e;
	if (!present)   /* (a present entry is not cached while absent) */
		vmx_forget_old_translations(vm);
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
	if (vm->opt->vmx_tpr_shadow && vm->opt->vmx_apicv && vmx_caps.apicv_xapic &&
	    (apic_access_page(vm) || (vmx_caps.apicv_x2apic && x2apic_msr_bitmap(vm))))
		return -1;
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
	if (vm->apic_access_pd) {
		uint64_t *l4 = (uint64_t *)(uintptr_t)vm->npt_root;
		((uint64_t *)(uintptr_t)(l4[0] & ~0xfffull))[LAPIC_BASE >> 30] = 0;
	}
	uint64_t *pages[] = { &vm->apic_access_pa, &vm->apic_access_pd, &vm->apic_access_pt };
	for (unsigned i = 0; i < 3; i++)
		if (*pages[i]) {
			pmem_free(*pages[i], 4096);
			*pages[i] = 0;
		}
	if (vm->msrpm_x2apic_pa) {
		pmem_free(vm->msrpm_x2apic_pa, ept_format.msr_bitmap_bytes);
		vm->msrpm_x2apic_pa = 0;
	}
	vm_maps_destroy(vm, &ept_format);
}
