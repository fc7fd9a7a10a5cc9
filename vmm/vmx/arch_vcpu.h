/* The VMX part of a vCPU: its VMCS region first (page-aligned, as VMPTRLD
 * wants), then what the backend keeps beside it. The VMCS itself is not
 * memory-mapped: fields are reached with VMREAD/VMWRITE only. */
#ifndef VMM_VMX_ARCH_VCPU_H
#define VMM_VMX_ARCH_VCPU_H

#include <stdbool.h>
#include <stdint.h>

/* Basic exit reasons the light table covers directly (the SDM defines them
 * up to 77); others share its last slot. */
#define VENDOR_EXIT_CODES 80

struct vcpu_arch {
	uint8_t vmcs[4096] __attribute__((aligned(4096)));
	/* the virtual-APIC page (TPR shadow): the local APIC's register file
	 * itself (lapic_regs_move) */
	uint8_t vapic[4096] __attribute__((aligned(4096)));
	uint8_t launched;        /* VMLAUNCH done: the stub uses VMRESUME */
	uint8_t entry_failed;    /* VMLAUNCH/VMRESUME fell through (VMfail) */
	bool smsr_in_cpu;        /* msr=lazy: the guest's syscall MSRs are in the CPU */
	uint32_t proc;           /* primary processor-based controls as written */
	uint64_t guest_dr6;      /* DR6 is not in the VMCS: switched with DR0-3 */
	bool vnmi;               /* virtual NMIs and NMI-window exiting are on */
	bool tpr_shadow;         /* CR8 reaches VTPR in vapic without an exit */
	uint32_t tpr_threshold;  /* as written (vendor_apic_sync) */
	bool apicv;              /* APIC virtualization may be used (vmx.apicv, the CPU) */
	uint32_t proc2;          /* secondary controls as written */
	uint64_t eoi_exit[4];    /* the EOI-exit bitmap as written: TMR */
	int eoi_late;            /* the late timer vector it has too, or -1 */
};

#endif
