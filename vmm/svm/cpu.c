/* AMD SVM: the CPU checks, EFER.SVME and the host save areas, and the parts
 * of the run loop that touch GIF and the VMLOAD state. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/pmem.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

uint64_t svm_host_vmstate_pa;
bool svm_has_nrip;

const char *vendor_name(void)
{
	return "AMD SVM";
}

int vendor_cpu_init(const struct lp_options *opt)
{
	(void)opt;
	uint32_t r[4];
	cpuid(0x80000000, 0, r);
	uint32_t max_ext = r[0];
	bool svm = false, npt = false;
	if (max_ext >= 0x80000001) {
		cpuid(0x80000001, 0, r);
		svm = r[2] & (1u << 2);
	}
	if (svm && max_ext >= 0x8000000a) {
		cpuid(0x8000000a, 0, r);
		npt = r[3] & 1u;
		svm_has_nrip = r[3] & (1u << 3);
	}
	if (!svm || !npt) {
		kprintf("lightpath: this CPU has no AMD SVM with nested paging\n");
		return -1;
	}
	if (rdmsr(MSR_VM_CR) & (1u << 4)) {
		kprintf("lightpath: SVM is disabled by the firmware (VM_CR.SVMDIS is set)\n");
		return -1;
	}
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	uint64_t hsave = pmem_alloc(4096, 4096);
	svm_host_vmstate_pa = pmem_alloc(4096, 4096);
	if (!hsave || !svm_host_vmstate_pa) {
		kprintf("lightpath: error: out of memory setting up SVM\n");
		return -1;
	}
	wrmsr(MSR_VM_HSAVE_PA, hsave);
	svm_vmsave(svm_host_vmstate_pa);
	state_switch_init();
	kprintf("lightpath: AMD SVM with nested paging; next RIP from %s\n",
		svm_has_nrip ? "the CPU (NRIP save)" : "lightpath's own decoding (no NRIP save)");
	return 0;
}

unsigned vendor_switch_bits(const struct lp_options *o)
{
	return (o->vmload_lazy ? 0 : SW_VMLOAD_ALWAYS) | (svm_has_nrip ? SW_NRIP : 0);
}

void vendor_enter_guest(struct vcpu *v)
{
	/* Host interrupts stay pending while GIF=0 (all of the light loop); with
	 * RFLAGS.IF=1 at VMRUN one arriving in the guest causes an INTR exit. */
	asm volatile("clgi; sti" ::: "memory");
	v->arch.light_loop(v);   /* svm_light_loop, or the armed one (vmm/svm/debug.h) */
}

void vendor_host_interrupt_window(void)
{
	asm volatile("stgi; nop; clgi" ::: "memory");
}

void vendor_host_wait_for_interrupt(void)
{
	/* RFLAGS.IF is 1 on the heavy path (see vendor_enter_guest): without the
	 * cli, a pending timer interrupt would be taken at stgi and the hlt would
	 * then wait for one that never comes. sti's shadow makes "sti; hlt"
	 * race-free; IF is left at 1 for the next VMRUN. */
	asm volatile("cli; stgi; sti; hlt; cli; clgi; sti" ::: "memory");
}
