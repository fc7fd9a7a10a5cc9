/* The VT-x backend's inline hooks (the list is in vmm/vendor.h): guest state
 * is in VMCS fields, reached with VMREAD/VMWRITE, except RAX and the other
 * GPRs the exit stub saves into struct vcpu. */
#ifndef VMM_VMX_ARCH_EXIT_H
#define VMM_VMX_ARCH_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/state_switch.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

#define VMX_ALWAYS_INLINE static inline __attribute__((always_inline))

/* VMCALL: 0f 01 c1 (the CPU reports its length; kept for the common code) */
INSN_PATTERN insn_hypercall = { 3, { 0x0f, 0x01, 0xc1 } };
#define VENDOR_TRIPLE_FAULT_EXIT "VM exit 2"

/* The switch sets compiled as straight paths (vmm/light.h): the bench's
 * configurations (svm.vmload has no VT-x meaning). */
#define VENDOR_LIGHT_SETS(X, ...) \
	LIGHT_BENCH_SETS(X, , 0, __VA_ARGS__) X(all_off, SW_ALL_OFF, __VA_ARGS__)

/* EPT violation qualification: bit 2 instruction fetch, bit 7 guest linear
 * address valid, bit 8 (with bit 7) the access was to the translated
 * address, not a page walk. */
#define EPT_QUAL_FETCH        (1ull << 2)
#define EPT_QUAL_LINEAR_VALID (1ull << 7)
#define EPT_QUAL_FINAL_ACCESS (1ull << 8)

/* ---- guest registers ---- */

static inline uint64_t *vendor_rax(struct vcpu *v) { return &v->regs.rax; }
static inline uint64_t *vendor_light_rsp(struct vcpu *v) { (void)v; return 0; }
static inline uint64_t vendor_rsp(struct vcpu *v) { (void)v; return vmread(VMCS_GUEST_RSP); }
static inline void vendor_set_rsp(struct vcpu *v, uint64_t rsp) { (void)v; vmwrite(VMCS_GUEST_RSP, rsp); }
static inline uint64_t vendor_guest_rip(struct vcpu *v) { (void)v; return vmread(VMCS_GUEST_RIP); }
static inline void vendor_set_rip(struct vcpu *v, uint64_t rip) { (void)v; vmwrite(VMCS_GUEST_RIP, rip); }
static inline uint64_t vendor_rflags(struct vcpu *v) { (void)v; return vmread(VMCS_GUEST_RFLAGS); }
static inline void vendor_set_rflags(struct vcpu *v, uint64_t f) { (void)v; vmwrite(VMCS_GUEST_RFLAGS, f); }
static inline bool vendor_guest_tf(struct vcpu *v) { (void)v; return vmread(VMCS_GUEST_RFLAGS) & RFLAGS_TF; }
static inline uint64_t vendor_cs_base(struct vcpu *v) { (void)v; return vmread(VMCS_GUEST_CS_BASE); }
/* SS.DPL is the CPL */
static inline unsigned vendor_cpl(struct vcpu *v) { (void)v; return (vmread(VMCS_GUEST_SS_AR) >> 5) & 3; }

/* The guest's CR2 is the CPU's own: VT-x does not switch it. */
static inline void vendor_set_guest_cr2(struct vcpu *v, uint64_t cr2)
{
	(void)v;
	asm volatile("mov %0, %%cr2" ::"r"(cr2));
}

/* The guest's CR4 as it reads it, for the bits CPUID mirrors (OSXSAVE,
 * PKE): those are the guest's own in GUEST_CR4, never host-owned (a CPU
 * that cannot have them set in VMX operation leaves them 0 there, and a
 * guest write that sets them gets #GP, vmm/vmx/exits.c). */
static inline uint64_t vendor_guest_cr4(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_CR4);
}

/* RDTSC/RDTSCP in the guest read the host's TSC plus this (TSC offsetting
 * is on for every vCPU, vmm/vmx/vcpu.c). */
static inline void vendor_set_tsc_offset(struct vcpu *v, int64_t off)
{
	(void)v;
	vmwrite(VMCS_TSC_OFFSET, (uint64_t)off);
}

static inline void vendor_guest_paging(struct vcpu *v, struct guest_paging *pg)
{
	(void)v;
	uint64_t ar = vmread(VMCS_GUEST_CS_AR);
	pg->cr0 = vmread(VMCS_GUEST_CR0);
	pg->cr3 = vmread(VMCS_GUEST_CR3);
	pg->cr4 = vmread(VMCS_GUEST_CR4);
	pg->efer = vmread(VMCS_GUEST_EFER);
	pg->cs_long = (pg->efer & EFER_LMA) && (ar & VMX_AR_L);
	pg->cs_32 = ar & VMX_AR_DB;
}

static inline void vendor_seg_bases(struct vcpu *v, uint64_t base[6])
{
	(void)v;
	for (unsigned i = 0; i < 6; i++)   /* ES CS SS DS FS GS: the VMCS order too */
		base[i] = vmread(VMCS_GUEST_ES_BASE + 2 * i);
}

/* ---- the exit ---- */

/* The CPU reports the exiting instruction's length, prefixes included: read
 * it where the RIP is written (VMREADs are not moved by the compiler, and
 * a value read early would have to survive the handler's work). */
VMX_ALWAYS_INLINE bool vendor_next_rip(struct vcpu *v, struct insn_pattern p,
				       const unsigned sw, uint64_t *next)
{
	(void)v;
	(void)p;
	(void)sw;
	*next = 0;   /* unused: vendor_skip_insn reads the VMCS */
	return true;
}

VMX_ALWAYS_INLINE void vendor_skip_insn(struct vcpu *v, uint64_t next)
{
	(void)v;
	(void)next;
	vmwrite(VMCS_GUEST_RIP, vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN));
}

/* Port, size and direction from the exit qualification (io=fast). */
VMX_ALWAYS_INLINE void vendor_exit_io(struct vcpu *v, struct io_intercept *io)
{
	uint32_t q = (uint32_t)vmread(VMCS_EXIT_QUALIFICATION);   /* bits 63:32 are 0 for I/O */
	io->port = q >> VMX_IOQ_PORT_SHIFT;
	io->size = (q & VMX_IOQ_SIZE_MASK) + 1;
	io->in = q & VMX_IOQ_IN;
	io->string = q & VMX_IOQ_STRING;
	io->rep = q & VMX_IOQ_REP;
	(void)v;
}

static inline uint64_t vendor_exit_io_next_rip(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN);
}

static inline bool vendor_exit_msr_write(struct vcpu *v)
{
	(void)v;
	return (vmread(VMCS_EXIT_REASON) & 0xffff) == VMX_EXIT_WRMSR;
}

static inline bool vendor_exit_in_event_delivery(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_IDT_VECTORING_INFO) & VMX_INTR_INFO_VALID;
}

static inline uint64_t vendor_exit_npf_gpa(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_PHYS_ADDR);
}

static inline void vendor_exit_npf(struct vcpu *v, struct npf_info *f)
{
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	f->gpa = vmread(VMCS_GUEST_PHYS_ADDR);
	f->final_access = !(q & EPT_QUAL_LINEAR_VALID) || (q & EPT_QUAL_FINAL_ACCESS);
	f->fetch = q & EPT_QUAL_FETCH;
	f->in_event_delivery = vendor_exit_in_event_delivery(v);
}

/* ---- events ---- */

static inline void vendor_inject_exception(struct vcpu *v, unsigned vector, bool has_err,
					   uint32_t err)
{
	(void)v;
	/* no error code is delivered in real mode (unrestricted guest, PE=0) */
	if (has_err && !(vmread(VMCS_GUEST_CR0) & CR0_PE))
		has_err = false;
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_HW_EXCEPTION | vector |
					      (has_err ? VMX_INTR_INFO_ERRCODE : 0));
	if (has_err)
		vmwrite(VMCS_ENTRY_EXCEPTION_ERRCODE, err);
}

static inline bool vendor_intr_injectable(struct vcpu *v)
{
	(void)v;
	return !(vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_INFO_VALID) &&
	       (vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF) &&
	       !(vmread(VMCS_GUEST_INTERRUPTIBILITY) &
		 (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS));
}

static inline void vendor_inject_intr(struct vcpu *v, uint8_t vector)
{
	(void)v;
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_EXT_INTR | vector);
}

/* Interrupt-window exiting: an exit as soon as the guest can take one. */
static inline void vendor_intr_window(struct vcpu *v, bool want)
{
	uint32_t proc = want ? v->arch.proc | PROC_INTR_WINDOW_EXITING
			     : v->arch.proc & ~PROC_INTR_WINDOW_EXITING;
	if (proc != v->arch.proc) {
		v->arch.proc = proc;
		vmwrite(VMCS_PROC_CONTROLS, proc);
	}
}

static inline bool vendor_intr_window_requested(struct vcpu *v)
{
	return v->arch.proc & PROC_INTR_WINDOW_EXITING;
}

/* An injection goes in at VM entry, whatever happens next: never in flight. */
static inline bool vendor_intr_in_flight(struct vcpu *v)
{
	(void)v;
	return false;
}

/* With the TPR shadow a MOV to CR8 changes VTPR without an exit; the CPU
 * exits (TPR below threshold) when VTPR[7:4] drops below the threshold: the
 * class of the interrupt the TPR holds back, or 0. The threshold never
 * exceeds VTPR[7:4] (lapic_tpr_blocked_class reads it), which VM entry
 * requires. */
void vmx_apicv_sync(struct vcpu *v);

static inline void vendor_apic_sync(struct vcpu *v)
{
	if (lapic_cpu_delivers(&v->lapic)) {
		vmx_apicv_sync(v);
		return;
	}
	if (!v->arch.tpr_shadow)
		return;
	uint32_t threshold = lapic_tpr_blocked_class(&v->lapic);
	if (threshold != v->arch.tpr_threshold) {
		v->arch.tpr_threshold = threshold;
		vmwrite(VMCS_TPR_THRESHOLD, threshold);
	}
}

/* NMIs: the guest's interruptibility state holds its NMI blocking (virtual
 * NMIs: the CPU sets it when it delivers one and clears it at the IRET). */
static inline bool vendor_nmi_blocked(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_INTERRUPTIBILITY) & VMX_INTERRUPTIBILITY_NMI;
}

/* Blocking by STI too: some CPUs refuse an NMI injected there (SDM 26.3.1.5). */
static inline bool vendor_nmi_injectable(struct vcpu *v)
{
	(void)v;
	return !(vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_INFO_VALID) &&
	       !(vmread(VMCS_GUEST_INTERRUPTIBILITY) &
		 (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS | VMX_INTERRUPTIBILITY_NMI));
}

static inline void vendor_inject_nmi(struct vcpu *v)
{
	(void)v;
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_NMI | 2);
}

/* NMI-window exiting: an exit as soon as the guest can take an NMI. Without
 * virtual NMIs there is none: every exit re-checks while an NMI waits. */
static inline void vendor_nmi_window(struct vcpu *v, bool want)
{
	if (want && !v->arch.vnmi)
		v->pending |= VCPU_PENDING_RECHECK;
	uint32_t proc = want && v->arch.vnmi ? v->arch.proc | PROC_NMI_WINDOW_EXITING
					     : v->arch.proc & ~PROC_NMI_WINDOW_EXITING;
	if (proc != v->arch.proc) {
		v->arch.proc = proc;
		vmwrite(VMCS_PROC_CONTROLS, proc);
	}
}

static inline void vendor_clear_interrupt_shadow(struct vcpu *v)
{
	(void)v;
	uint64_t is = vmread(VMCS_GUEST_INTERRUPTIBILITY);
	if (is & (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS))
		vmwrite(VMCS_GUEST_INTERRUPTIBILITY,
			is & ~(uint64_t)(VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS));
}

/* ---- the heavy path ---- */

static inline uint64_t vendor_exit_code(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_EXIT_REASON) & 0xffff;
}

/* Stops the VM with one line naming the entry check that failed. */
void vmx_report_entry_failure(struct vcpu *v, unsigned insn_error, uint32_t reason);

/* A failed VM entry is reported; an event whose delivery the exit
 * interrupted (IDT-vectoring information) is delivered again. */
static inline bool vendor_heavy_begin(struct vcpu *v)
{
	if (v->arch.entry_failed) {
		v->arch.entry_failed = 0;
		vmx_report_entry_failure(v, (unsigned)vmread(VMCS_INSN_ERROR), 0);
		return false;
	}
	uint32_t reason = (uint32_t)vmread(VMCS_EXIT_REASON);
	if (reason & VMX_EXIT_REASON_ENTRY_FAIL) {
		vmx_report_entry_failure(v, 0, reason);
		return false;
	}
	uint64_t idt = vmread(VMCS_IDT_VECTORING_INFO);
	if ((idt & VMX_INTR_INFO_VALID) && reason != VMX_EXIT_TRIPLE_FAULT) {
		vmwrite(VMCS_ENTRY_INTR_INFO, idt & ~(uint64_t)(1u << 12));
		if (idt & VMX_INTR_INFO_ERRCODE)
			vmwrite(VMCS_ENTRY_EXCEPTION_ERRCODE, vmread(VMCS_IDT_VECTORING_ERRCODE));
		/* an NMI whose delivery exited left virtual-NMI blocking on, and
		 * an NMI is not injected into blocking (SDM 27.2.3, 26.3.1.5) */
		if ((idt & VMX_INTR_TYPE_MASK) == VMX_INTR_TYPE_NMI)
			vmwrite(VMCS_GUEST_INTERRUPTIBILITY, vmread(VMCS_GUEST_INTERRUPTIBILITY) &
							     ~(uint64_t)VMX_INTERRUPTIBILITY_NMI);
	}
	return true;
}

static inline void vendor_guest_msrs_enter(struct vcpu *v)
{
	smsr_load_guest(v);
	v->arch.smsr_in_cpu = true;
}

static inline void vendor_guest_msrs_leave(struct vcpu *v)
{
	/* msr=always switched them on this exit already */
	if (v->vm->opt->msr_lazy)
		smsr_save_guest_load_host(v);
	v->arch.smsr_in_cpu = false;
}

/* ---- state switched per exit by the "always" switches ---- */

/* svm.vmload has no VMX meaning: there is no VMLOAD state. */
VMX_ALWAYS_INLINE void vendor_vmload_leave(struct vcpu *v) { (void)v; }
VMX_ALWAYS_INLINE void vendor_vmload_enter(struct vcpu *v) { (void)v; }

/* The VMCS holds DR7 but not DR6: DR0-3 and DR6 are switched by hand. */
VMX_ALWAYS_INLINE void vendor_dr_save_guest_load_host(struct vcpu *v)
{
	dr03_save_guest_load_host(v);
	asm volatile("mov %%dr6, %0" : "=r"(v->arch.guest_dr6));
	asm volatile("mov %0, %%dr6" ::"r"(0xffff0ff0ull));   /* the host's DR6 at rest */
}

VMX_ALWAYS_INLINE void vendor_dr_load_guest(struct vcpu *v)
{
	dr03_load_guest(v);
	asm volatile("mov %0, %%dr6" ::"r"(v->arch.guest_dr6));
}

/* Intel's architectural counters, as many as CPUID 0xA reports (at most 4). */
VMX_ALWAYS_INLINE void vendor_pmu_save_guest_load_host(struct vcpu *v)
{
	pmu_save_guest_load_host(v, MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0, vmx_caps.pmu_counters);
}

VMX_ALWAYS_INLINE void vendor_pmu_load_guest(struct vcpu *v)
{
	pmu_load_guest(v, MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0, vmx_caps.pmu_counters);
}

#endif
