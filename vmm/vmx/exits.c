/* Intel VT-x: every exit lightpath intercepts, in one table (what the exit
 * means is in the exit core, vmm/vcpu_exit.h), and the exits only this
 * backend has: control-register accesses and failed VM entries. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "core/idt.h"
#include "lib/printf.h"
#include "vmm/platform_intr.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/exits.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

/* Register operand n (x86 encoding order) of a CR access, on the heavy path
 * (every GPR but RSP is in v->regs there). */
static uint64_t *gpr_slot(struct vcpu *v, unsigned n)
{
	struct guest_regs *r = &v->regs;
	uint64_t *const slots[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, 0, &r->rbp, &r->rsi,
				       &r->rdi, &r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13,
				       &r->r14, &r->r15 };
	return slots[n & 15];
}

/* MOV to or from CR8 (CR8-load/store exiting): the local APIC's TPR
 * (vmm/platform_intr.c). Outside 64-bit mode there is no CR8 on Intel. */
static void vmx_cr8_access(struct vcpu *v, bool to_cr8, unsigned reg)
{
	uint64_t *slot = reg == 4 ? 0 : gpr_slot(v, reg);
	if (to_cr8) {
		if (platform_cr8_write(v, slot ? *slot : vendor_rsp(v))) {
			vendor_inject_exception(v, 13, true, 0);
			return;
		}
	} else if (slot) {
		*slot = platform_cr8_read(v);
	} else {
		vendor_set_rsp(v, platform_cr8_read(v));
	}
	vmwrite(VMCS_GUEST_RIP, vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN));
	exit_insn_completed(v);
}

/* An emulated CR0 write that changes PG with EFER.LME=1 switches IA-32e
 * mode as the MOV would: EFER.LMA and the "IA-32e mode guest" entry control
 * follow PG (left alone, the next VM entry failed; docs/SECURITY.md, case
 * 12). False for the #GP a CPU raises: paging on with CR4.PAE=0, paging off
 * with CR4.PCIDE=1, either while CS.L=1. */
static bool vmx_cr0_paging_switch(uint64_t cr0)
{
	uint64_t old = vmread(VMCS_GUEST_CR0), efer = vmread(VMCS_GUEST_EFER);
	if (!((old ^ cr0) & CR0_PG) || !(efer & EFER_LME))
		return true;
	if (vmread(VMCS_GUEST_CS_AR) & VMX_AR_L)
		return false;
	uint32_t entry = (uint32_t)vmread(VMCS_ENTRY_CONTROLS);
	if (cr0 & CR0_PG) {
		if (!(vmread(VMCS_GUEST_CR4) & CR4_PAE))
			return false;
		efer |= EFER_LMA;
		entry |= ENTRY_IA32E_MODE_GUEST;
	} else {
		if (vmread(VMCS_GUEST_CR4) & CR4_PCIDE)
			return false;
		efer &= ~EFER_LMA;
		entry &= ~ENTRY_IA32E_MODE_GUEST;
	}
	vmwrite(VMCS_GUEST_EFER, efer);
	vmwrite(VMCS_ENTRY_CONTROLS, entry);
	if (vmx_caps.vpid)
		invvpid(2, 0);   /* the MOV would have flushed this VPID's translations */
	return true;
}

/* MOV to CR0/CR4 that changed a host-owned bit: the guest's view goes to the
 * read shadow, the CPU gets it with the VMX-fixed bits applied; MOV to or
 * from CR8. */
void vmx_heavy_cr_access(struct vcpu *v)
{
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	unsigned cr = q & 15, type = (q >> 4) & 3, reg = (q >> 8) & 15;
	if (cr == 8 && type <= 1) {
		vmx_cr8_access(v, type == 0, reg);
		return;
	}
	if (type != 0 || (cr != 0 && cr != 4)) {
		vm_fault(v->vm, "unexpected control-register access (qualification 0x%lx) at rip 0x%lx",
			 q, vendor_guest_rip(v));
		return;
	}
	uint64_t val = reg == 4 ? vendor_rsp(v) : *gpr_slot(v, reg);
	const struct vmx_caps *c = &vmx_caps;
	if (cr == 0) {
		if ((val >> 32) || ((val & CR0_PG) && !(val & CR0_PE)) ||
		    ((val & CR0_NW) && !(val & CR0_CD)) || !vmx_cr0_paging_switch(val)) {
			vendor_inject_exception(v, 13, true, 0);
			return;
		}
		vmwrite(VMCS_CR0_READ_SHADOW, val);
		vmwrite(VMCS_GUEST_CR0, (val | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	} else {
		/* VMXE is hidden from the guest (no nested VMX); other bits the CPU
		 * cannot have: #GP */
		if ((val & ~c->cr4_fixed1 & ~CR4_VMXE) || (val & CR4_VMXE)) {
			vendor_inject_exception(v, 13, true, 0);
			return;
		}
		vmwrite(VMCS_CR4_READ_SHADOW, val);
		vmwrite(VMCS_GUEST_CR4, (val | c->cr4_fixed0) & c->cr4_fixed1);
	}
	vmwrite(VMCS_GUEST_RIP, vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN));
	exit_insn_completed(v);
}

/* A hardware task switch: VT-x exits on every one, and lightpath does not
 * emulate them (docs/SECURITY.md, "What a guest can execute"). */
void vmx_heavy_task_switch(struct vcpu *v)
{
	static const char *const how[4] = { "CALL", "IRET", "JMP", "task gate" };
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	vm_fault(v->vm, "hardware task switch (%s to TSS selector 0x%lx) at rip 0x%lx: not emulated "
		 "on VT-x", how[(q >> 30) & 3], q & 0xffff, vendor_guest_rip(v));
}

void vmx_heavy_ept_misconfig(struct vcpu *v)
{
	vm_fault(v->vm, "EPT misconfiguration at guest-physical 0x%lx (a lightpath bug)",
		 vmread(VMCS_GUEST_PHYS_ADDR));
}

/* #DB as the CPU would have delivered it. The CPU left RIP where the
 * exception puts it (an instruction breakpoint is a fault, a data breakpoint
 * or single step a trap), but on a #DB exit it does not write DR6: the
 * exit qualification holds the bits (B0-B3, BD, BS), which go into the
 * guest's DR6 the way a delivery sets them (B0-B3 replaced, BD/BS added).
 * INT1 (ICEBP) exits before it completes, as a privileged software
 * exception: it is delivered again as one, with its length. */
static void vmx_reflect_db(struct vcpu *v, uint32_t info)
{
	if ((info & VMX_INTR_TYPE_MASK) == VMX_INTR_TYPE_PRIV_SW_EXCEPTION) {
		vmwrite(VMCS_ENTRY_INSN_LEN, vmread(VMCS_EXIT_INSN_LEN));
		vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_PRIV_SW_EXCEPTION | 1);
		return;
	}
	uint64_t bits = vmread(VMCS_EXIT_QUALIFICATION) & VMX_DBQ_DR6_BITS;
	if (v->vm->opt->dr_lazy && !v->dr_dirty)
		heavy_dr_first_use(v);   /* DR6 is the guest's now: switched from here on */
	v->arch.guest_dr6 = (v->arch.guest_dr6 & ~DR6_B0_B3) | DR6_INIT | bits;
	/* A single step under STI or MOV SS blocking: the CPU does not record
	 * the pending BS on this exit, and VM entry insists on it (as KVM does) */
	if ((vmread(VMCS_GUEST_RFLAGS) & RFLAGS_TF) &&
	    (vmread(VMCS_GUEST_INTERRUPTIBILITY) & (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS)))
		vmwrite(VMCS_GUEST_PENDING_DBG, vmread(VMCS_GUEST_PENDING_DBG) | VMX_PENDING_DBG_BS);
	vendor_inject_exception(v, 1, false, 0);
}

/* The guest's TF over an instruction lightpath completed: DR6.BS in the
 * guest's DR6 (switched by hand on VT-x), the STI/MOV SS shadow ended (VM
 * entry refuses TF with a shadow and no pending BS), #DB injected. */
void vendor_single_step_trap(struct vcpu *v)
{
	if (v->vm->opt->dr_lazy && !v->dr_dirty)
		heavy_dr_first_use(v);   /* DR6 is the guest's now: switched from here on */
	v->arch.guest_dr6 |= DR6_BS;
	vendor_clear_interrupt_shadow(v);
	vendor_inject_exception(v, 1, false, 0);
}

/* Exit reason 0. With NMI exiting a physical NMI exits here: it is the
 * host's, never the guest's (docs/SECURITY.md). An NMI that causes a VM
 * exit leaves NMIs blocked after it, so the host's own handler is called
 * through its gate (INT 2), whose IRET ends the blocking; the NMI is
 * reported as SVM's NMI exit is (host_nmis_report). An exception that
 * interrupted an IRET which had ended virtual-NMI blocking means the IRET
 * runs again, blocked until then (SDM 27.2.3; an EPT
 * violation does the same, but an IRET on MMIO stops the VM).
 * #DB and #AC are intercepted so that a delivery that faults again is a VM
 * exit each time; they go to the guest as the CPU would have delivered them
 * (#AC with error code 0). An event whose delivery the exit interrupted
 * (IDT-vectoring information, re-injected by vendor_heavy_begin) goes
 * first: if it raises the exception again, that is the next exit. Each
 * round lets the host's timer in, so the VM's time limit ends a delivery
 * loop. */
void vmx_heavy_exception(struct vcpu *v)
{
	uint32_t info = (uint32_t)vmread(VMCS_EXIT_INTR_INFO);
	unsigned vector = info & VMX_INTR_VECTOR_MASK;
	if ((info & VMX_INTR_TYPE_MASK) == VMX_INTR_TYPE_NMI) {
		asm volatile("int $2" ::: "memory");
		host_nmis_report();
		return;
	}
	if (v->arch.vnmi && (info & VMX_NMI_UNBLOCKED_BY_IRET))
		vmwrite(VMCS_GUEST_INTERRUPTIBILITY,
			vmread(VMCS_GUEST_INTERRUPTIBILITY) | VMX_INTERRUPTIBILITY_NMI);
	if (vector != 1 && vector != 17) {
		vendor_unexpected_exit(v);
		return;
	}
	if (!(vmread(VMCS_ENTRY_INTR_INFO) & VMX_INTR_INFO_VALID)) {
		if (vector == 1)
			vmx_reflect_db(v, info);
		else
			vendor_inject_exception(v, 17, true, 0);
	}
	heavy_host_intr(v);
}

/* The guest lowered VTPR (MOV to CR8, TPR shadow) below the class of an
 * interrupt the TPR held back (vendor_apic_sync): trap-like, the MOV is
 * done; deliver it. */
void vmx_heavy_tpr_below(struct vcpu *v)
{
	v->pending |= VCPU_PENDING_RECHECK;
}

/* APIC virtualization (vendor_apic_mode_changed). An access to the
 * APIC-access page the CPU does not virtualize (the current count, PPR,
 * a register that is not there, an odd size): fault-like, nothing done;
 * the emulator performs it on the model, as an EPT violation there would
 * have been. */
void vmx_heavy_apic_access(struct vcpu *v)
{
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	unsigned type = (q >> 12) & 0xf;   /* 0 read, 1 write, 2 fetch, 3 event delivery */
	struct npf_info f = {
		.gpa = LAPIC_BASE + (q & 0xfff),
		.final_access = type <= 3,     /* 10, 15: guest-physical (a page walk) */
		.fetch = type == 2,
		.in_event_delivery = type == 3 || type == 10,
	};
	heavy_mmio_fault(v, &f);
}

/* The EOI of a vector whose EOI-exit bit is set (level-triggered): the CPU
 * took it out of ISR; trap-like. The I/O APIC learns of it. */
void vmx_heavy_eoi_induced(struct vcpu *v)
{
	lapic_eoi_done(&v->lapic, (uint8_t)vmread(VMCS_EXIT_QUALIFICATION));
	v->pending |= VCPU_PENDING_RECHECK;
}

/* A write the CPU stored in the virtual-APIC page, trap-like (the SDM's
 * APIC-write virtualization): the model performs it and puts what the
 * register reads now back in the page (lapic_apicv_write). The CPU stores
 * a SELF IPI with an illegal vector too. */
void vmx_heavy_apic_write(struct vcpu *v)
{
	lapic_apicv_write(&v->lapic, (unsigned)vmread(VMCS_EXIT_QUALIFICATION) & 0xff0);
	v->pending |= VCPU_PENDING_RECHECK;
}

void vmx_report_entry_failure(struct vcpu *v, unsigned insn_error, uint32_t reason)
{
	char why[160];
	vmx_explain_entry_failure(insn_error, reason, why, sizeof(why));
	vm_fault(v->vm, "%s", why);
}

void vendor_unexpected_exit(struct vcpu *v)
{
	vm_fault(v->vm, "unexpected VM exit, reason %lu, qualification 0x%lx, at rip 0x%lx",
		 vendor_exit_code(v), vmread(VMCS_EXIT_QUALIFICATION), vendor_guest_rip(v));
}

/* The CPU reports every intercepted instruction's length. */
uint64_t vendor_next_rip_slow(struct vcpu *v, struct insn_pattern p)
{
	(void)v;
	(void)p;
	return vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN);
}

const char *vendor_interrupt_state(struct vcpu *v)
{
	static char buf[96];
	snprintf(buf, sizeof(buf), "rflags.IF %u, interruptibility 0x%lx, entry info 0x%lx, "
		 "window %u", (unsigned)((vmread(VMCS_GUEST_RFLAGS) >> 9) & 1),
		 vmread(VMCS_GUEST_INTERRUPTIBILITY), vmread(VMCS_ENTRY_INTR_INFO),
		 (unsigned)vendor_intr_window_requested(v));
	return buf;
}

/* RDTSCP exits with RDTSC exiting too (when RDTSCP is enabled). */
void vendor_rdtsc_exiting(struct vcpu *v, bool on)
{
	uint32_t proc = on ? v->arch.proc | PROC_RDTSC_EXITING : v->arch.proc & ~PROC_RDTSC_EXITING;
	if (proc != v->arch.proc) {
		v->arch.proc = proc;
		vmwrite(VMCS_PROC_CONTROLS, proc);
	}
}

bool vendor_has_tsc_control(void)
{
	uint32_t need = PROC_USE_TSC_OFFSETTING | PROC_RDTSC_EXITING;
	return (vmx_caps.proc.may & need) == need;
}
