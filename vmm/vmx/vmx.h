/* Inside the VMX backend: the capabilities read at boot, shared by the
 * setup code and the VM-entry failure report. */
#ifndef VMM_VMX_VMX_H
#define VMM_VMX_VMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/spec_ctrl.h"

struct vcpu;

/* A control word's allowed settings: bits in `must` are fixed to 1, bits
 * outside `may` are fixed to 0 (the capability MSR's low/high halves). */
struct vmx_ctl_cap {
	uint32_t must, may;
};

struct vmx_caps {
	uint64_t basic, misc, ept_vpid;
	struct vmx_ctl_cap pin, proc, proc2, exit, entry;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	bool vpid;
	bool tpr_shadow;         /* "use TPR shadow" may be set */
	/* APIC virtualization (docs/VMX.md): APIC-access page, APIC-register
	 * virtualization and virtual-interrupt delivery, for an xAPIC-mode
	 * guest; with "virtualize x2APIC mode", for an x2APIC-mode one too */
	bool apicv_xapic, apicv_x2apic;
	unsigned pmu_counters;   /* general-purpose counters switched (CPUID 0xA), at most 4 */
	uint32_t watchdog_ticks; /* VMX-preemption timer value for WATCHDOG_MS, 0: no timer */
};

extern struct vmx_caps vmx_caps;

/* The light loop and exit stub variants (vmm/vmx/entry.S): the spec= ones
 * (vmm/spec_ctrl.h), then each again as a Bochs twin (vmm/vmx/bochs.c). */
#define VMX_ENTRY_VARIANTS (2 * SPEC_ENTRY_VARIANTS)

/* Bochs 2.7's virtual-interrupt defect is worked around (vmm/vmx/bochs.c):
 * decided once, at boot, before any VMCS is set up. */
extern bool vmx_bochs_quirk;
struct lp_options;
/* Decides vmx_bochs_quirk (vmx.bochs_quirk=, and what the firmware and the
 * CPU say) and prints the line saying so. After the capabilities are read. */
void vmx_bochs_quirk_init(const struct lp_options *o, bool apicv);
/* Called by the Bochs twins of the light loop before each VM entry. */
void vmx_bochs_guest_entry(void);

/* The host gets the CPU back at least this often, whatever the guest does:
 * the VMX-preemption timer (Bochs does not exit a guest that runs with IF=0
 * on a host interrupt, although external-interrupt exiting should). */
#define WATCHDOG_MS 10

/* The control word lightpath wants, adjusted to what the CPU allows; `want`
 * bits it cannot have are reported by the caller. */
static inline uint32_t ctl_adjust(struct vmx_ctl_cap c, uint32_t want)
{
	return (want | c.must) & c.may;
}

struct vm;
/* The EPT pointer of a VM (vmm/vmx/ept.c). */
uint64_t vmx_eptp(const struct vm *vm);
/* On the CPU a vCPU is set up on: the same EPTP or VPID may have served an
 * earlier VM there; its translations are forgotten. */
void vmx_forget_old_translations(struct vm *vm);
/* Maps the VM's APIC-access page at 0xFEE00000 in its EPT, or unmaps it
 * (the model's MMIO then answers there again). */
void vmx_apic_access_map(struct vm *vm, bool present);

/* The host GDT and TSS a VM exit loads (vmm/vmx/cpu.c). */
#define VMX_HOST_SEL_CODE 0x08
#define VMX_HOST_SEL_DATA 0x10
#define VMX_HOST_SEL_TSS  0x18
/* This CPU's GDT and TSS (a page of its own on every CPU: core/percpu.h). */
void vmx_host_tables(uint64_t *gdt, uint64_t *tss);

/* After a failed VM entry (VMfail with `insn_error`, or an exit reason with
 * bit 31 set), checks the current VMCS against the entry checks lightpath
 * knows and writes one line naming the first field that breaks one. */
void vmx_explain_entry_failure(unsigned insn_error, uint32_t exit_reason, char *buf, size_t len);

#endif
