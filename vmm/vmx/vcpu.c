/* Intel VT-x: a vCPU's VMCS at its start state (controls derived from the
 * capability MSRs, host state, the multiboot guest state), and the guest
 * MSRs whose home is the VMCS or the CPU. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "core/spinlock.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/linux_boot.h"
#include "vmm/spec_ctrl.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

/* Where a VM exit lands (HOST_RIP), one stub per spec= variant and its
 * Bochs twin (vmm/vmx/entry.S, in the order vmm/vmx/vmx.h gives). */
void vmx_exit_stub(void), vmx_exit_stub_spec_ctrl(void), vmx_exit_stub_rsb_lite(void),
	vmx_exit_stub_rsb_lite_spec_ctrl(void), vmx_exit_stub_rsb_full(void),
	vmx_exit_stub_rsb_full_spec_ctrl(void), vmx_exit_stub_bochs(void),
	vmx_exit_stub_spec_ctrl_bochs(void), vmx_exit_stub_rsb_lite_bochs(void),
	vmx_exit_stub_rsb_lite_spec_ctrl_bochs(void), vmx_exit_stub_rsb_full_bochs(void),
	vmx_exit_stub_rsb_full_spec_ctrl_bochs(void);
static void (*const vmx_exit_stubs[VMX_ENTRY_VARIANTS])(void) = {
	vmx_exit_stub, vmx_exit_stub_spec_ctrl, vmx_exit_stub_rsb_lite,
	vmx_exit_stub_rsb_lite_spec_ctrl, vmx_exit_stub_rsb_full, vmx_exit_stub_rsb_full_spec_ctrl,
	vmx_exit_stub_bochs, vmx_exit_stub_spec_ctrl_bochs, vmx_exit_stub_rsb_lite_bochs,
	vmx_exit_stub_rsb_lite_spec_ctrl_bochs, vmx_exit_stub_rsb_full_bochs,
	vmx_exit_stub_rsb_full_spec_ctrl_bochs,
};

/* ---- vCPU start state (multiboot: 32-bit protected mode, paging off) ---- */

/* VMWRITEs of the setup; the first failure is remembered and reported.
 * VMs are set up on their own CPUs at the same time: one at a time here. */
static uint32_t setup_bad_field;
static unsigned setup_bad_error;
static struct spinlock setup_lock;

static void vmcs_set(uint32_t field, uint64_t value)
{
	if (!vmwrite_ok(field, value) && !setup_bad_field) {
		setup_bad_field = field;
		setup_bad_error = (unsigned)vmread(VMCS_INSN_ERROR);
	}
}

/* The end of a set-up begun with spin_lock(&setup_lock) and
 * setup_bad_field = 0: a failed VMWRITE stops the VM with one line. */
static void setup_end(struct vm *vm)
{
	uint32_t bad_field = setup_bad_field;
	unsigned bad_error = setup_bad_error;
	spin_unlock(&setup_lock);
	if (bad_field) {
		const char *name = vmcs_field_name(bad_field);
		vm_fault(vm, "VMWRITE to %s (0x%x) failed: VM-instruction error %u (%s)",
			 name ? name : "an unnamed field", bad_field, bad_error,
			 vmx_insn_error_name(bad_error));
	}
}

static void set_seg(unsigned n, uint16_t sel, uint32_t ar, uint32_t limit, uint64_t base)
{
	vmcs_set(VMCS_GUEST_ES_SEL + 2 * n, sel);
	vmcs_set(VMCS_GUEST_ES_AR + 2 * n, ar);
	vmcs_set(VMCS_GUEST_ES_LIMIT + 2 * n, limit);
	vmcs_set(VMCS_GUEST_ES_BASE + 2 * n, base);
}

enum { SEG_ES_N, SEG_CS_N, SEG_SS_N, SEG_DS_N, SEG_FS_N, SEG_GS_N, SEG_LDTR_N, SEG_TR_N };

/* CR0/CR4 bits the guest may not choose: fixed to 1 or 0 by VMX. With
 * unrestricted guest PE and PG are the guest's own. */
static uint64_t cr0_host_owned(void)
{
	return (vmx_caps.cr0_fixed0 & ~(CR0_PE | CR0_PG)) | ~vmx_caps.cr0_fixed1;
}

static uint64_t cr4_host_owned(void)
{
	return vmx_caps.cr4_fixed0 | ~vmx_caps.cr4_fixed1;
}

static void host_state_init(const struct vcpu *v)
{
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } idtr;
	asm volatile("sidt %0" : "=m"(idtr));
	vmcs_set(VMCS_HOST_CR0, read_cr0());
	vmcs_set(VMCS_HOST_CR3, read_cr3());
	vmcs_set(VMCS_HOST_CR4, read_cr4());
	vmcs_set(VMCS_HOST_CS_SEL, VMX_HOST_SEL_CODE);
	vmcs_set(VMCS_HOST_SS_SEL, VMX_HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_DS_SEL, VMX_HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_ES_SEL, VMX_HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_FS_SEL, 0);
	vmcs_set(VMCS_HOST_GS_SEL, 0);
	vmcs_set(VMCS_HOST_TR_SEL, VMX_HOST_SEL_TSS);
	vmcs_set(VMCS_HOST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmcs_set(VMCS_HOST_GS_BASE, rdmsr(MSR_GS_BASE));
	/* this CPU's own GDT and TSS: the vCPU is set up on the CPU it runs on */
	uint64_t gdt, tss;
	vmx_host_tables(&gdt, &tss);
	vmcs_set(VMCS_HOST_TR_BASE, tss);
	vmcs_set(VMCS_HOST_GDTR_BASE, gdt);
	vmcs_set(VMCS_HOST_IDTR_BASE, idtr.base);
	vmcs_set(VMCS_HOST_SYSENTER_CS, rdmsr(MSR_IA32_SYSENTER_CS));
	vmcs_set(VMCS_HOST_SYSENTER_ESP, rdmsr(MSR_IA32_SYSENTER_ESP));
	vmcs_set(VMCS_HOST_SYSENTER_EIP, rdmsr(MSR_IA32_SYSENTER_EIP));
	vmcs_set(VMCS_HOST_EFER, rdmsr(MSR_EFER));
	if (vmx_caps.exit.may & EXIT_LOAD_PAT)
		vmcs_set(VMCS_HOST_PAT, rdmsr(MSR_IA32_PAT));
	vmcs_set(VMCS_HOST_RIP, (uint64_t)(uintptr_t)vmx_exit_stubs[v->entry_variant]);
	/* HOST_RSP is written by the stub, which knows its stack */
}

void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx)
{
	struct vm *vm = v->vm;
	const struct lp_options *o = vm->opt;
	const struct vmx_caps *c = &vmx_caps;
	uint64_t vmcs_pa = (uint64_t)(uintptr_t)v->arch.vmcs;
	/* Set up again (an AP's STARTUP after its first set-up, or after an
	 * INIT): the VMCS is active on this CPU, which may hold part of it;
	 * its region may be written only once VMCLEAR has made it inactive. */
	if (!vmclear(vmcs_pa)) {
		vm_fault(vm, "VMCLEAR of the VMCS at 0x%lx failed", vmcs_pa);
		return;
	}
	lapic_regs_move_back(&v->lapic);   /* out of arch.vapic, cleared here */
	memset(&v->arch, 0, sizeof(v->arch));
	*(uint32_t *)v->arch.vmcs = (uint32_t)c->basic & 0x7fffffffu;
	if (!vmclear(vmcs_pa) || !vmptrld(vmcs_pa)) {
		vm_fault(vm, "VMCLEAR/VMPTRLD of the VMCS at 0x%lx failed", vmcs_pa);
		return;
	}
	vmx_forget_old_translations(vm);
	spin_lock(&setup_lock);
	setup_bad_field = 0;

	/* controls: what lightpath needs, adjusted to the capability MSRs.
	 * NMI exiting always: a physical NMI is the host's (vmx_heavy_exception),
	 * never the guest's. Virtual NMIs (which need NMI exiting) make the CPU
	 * keep the guest's NMI blocking, and NMI-window exiting says when it
	 * ends; without them a waiting NMI goes in at the first exit after the
	 * guest's IRET. */
	uint32_t vnmi = PIN_NMI_EXITING | PIN_VIRTUAL_NMIS;
	v->arch.vnmi = (c->pin.may & vnmi) == vnmi && (c->proc.may & PROC_NMI_WINDOW_EXITING);
	bool watchdog = c->watchdog_ticks != 0;
	vmcs_set(VMCS_PIN_CONTROLS, ctl_adjust(c->pin, PIN_EXT_INTR_EXITING | PIN_NMI_EXITING |
					       (v->arch.vnmi ? vnmi : 0) |
					       (watchdog ? PIN_PREEMPTION_TIMER : 0)));
	if (watchdog)   /* counts on across exits (saved), re-armed when it fires */
		vmcs_set(VMCS_PREEMPTION_TIMER, c->watchdog_ticks);
	/* CR8 is the emulated local APIC's TPR: without CR8 exiting or a TPR
	 * shadow a guest's MOV CR8 would reach the CPU's own TPR. With the
	 * shadow the APIC's TPR is VTPR (lapic_regs_move), which CR8 reads and
	 * writes without an exit (vendor_apic_sync: the exit it needs). */
	v->arch.tpr_shadow = c->tpr_shadow && o->vmx_tpr_shadow;
	if (v->arch.tpr_shadow) {
		lapic_regs_move(&v->lapic, (uint32_t *)v->arch.vapic);
		vmcs_set(VMCS_VIRTUAL_APIC_PAGE, (uint64_t)(uintptr_t)v->arch.vapic);
		vmcs_set(VMCS_TPR_THRESHOLD, 0);
	}
	/* APIC virtualization (docs/VMX.md "APIC virtualization"): the CPU
	 * reads the register file from the virtual-APIC page, delivers from
	 * its IRR and performs EOIs itself; the mode decides which controls
	 * (vendor_apic_mode_changed, at the end of the set-up) */
	v->arch.apicv = v->arch.tpr_shadow && o->vmx_apicv && c->apicv_xapic;
	v->arch.eoi_late = -1;
	if (v->arch.apicv) {
		vmcs_set(VMCS_APIC_ACCESS_ADDR, vm->apic_access_pa);
		for (unsigned i = 0; i < 4; i++)
			vmcs_set(VMCS_EOI_EXIT_BITMAP0 + 2 * i, 0);
		vmcs_set(VMCS_GUEST_INTR_STATUS, 0);
	}
	/* TSC offsetting: the guest's IA32_TSC writes (vmm/exit_msr.c) and the
	 * VM's clock (vmm/guest_clock.h) */
	uint32_t proc = PROC_HLT_EXITING | PROC_USE_IO_BITMAPS | PROC_USE_MSR_BITMAPS |
			PROC_USE_TSC_OFFSETTING |
			PROC_SECONDARY_CONTROLS | (o->dr_lazy ? PROC_MOV_DR_EXITING : 0) |
			(v->arch.tpr_shadow ? PROC_USE_TPR_SHADOW : VMX_PROC_CR8_EXITS) |
			VMX_PROC_GUEST_INSN_EXITS;   /* docs/SECURITY.md: what a guest can execute */
	v->arch.proc = ctl_adjust(c->proc, proc);
	if (!o->dr_lazy && (v->arch.proc & PROC_MOV_DR_EXITING))
		vm_fault(vm, "dr=always needs MOV-DR exiting off, but this CPU forces it on");
	vmcs_set(VMCS_PROC_CONTROLS, v->arch.proc);
	uint32_t proc2 = PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST |
			 (c->vpid ? PROC2_ENABLE_VPID : 0) |
			 (c->proc2.may & PROC2_ENABLE_RDTSCP) |   /* else RDTSCP would #UD */
			 (c->proc2.may & PROC2_ENABLE_INVPCID) |  /* else INVPCID would #UD */
			 PROC2_WBINVD_EXITING;
	v->arch.proc2 = ctl_adjust(c->proc2, proc2);
	vmcs_set(VMCS_PROC_CONTROLS2, v->arch.proc2);
	uint32_t exit_ctl = EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER |
			    EXIT_SAVE_DEBUG_CONTROLS | (watchdog ? EXIT_SAVE_PREEMPTION_TIMER : 0) |
			    (c->exit.may & (EXIT_SAVE_PAT | EXIT_LOAD_PAT));
	vmcs_set(VMCS_EXIT_CONTROLS, ctl_adjust(c->exit, exit_ctl));
	uint32_t entry_ctl = ENTRY_LOAD_EFER | ENTRY_LOAD_DEBUG_CONTROLS |
			     (c->entry.may & ENTRY_LOAD_PAT);
	vmcs_set(VMCS_ENTRY_CONTROLS, ctl_adjust(c->entry, entry_ctl) & ~ENTRY_IA32E_MODE_GUEST);
	vmcs_set(VMCS_EXCEPTION_BITMAP, VMX_EXC_INTERCEPTS);
	vmcs_set(VMCS_PF_ERROR_MASK, 0);
	vmcs_set(VMCS_PF_ERROR_MATCH, 0);
	vmcs_set(VMCS_CR3_TARGET_COUNT, 0);
	vmcs_set(VMCS_EXIT_MSR_STORE_COUNT, 0);
	vmcs_set(VMCS_EXIT_MSR_LOAD_COUNT, 0);
	vmcs_set(VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	vmcs_set(VMCS_IO_BITMAP_A, vm->iopm_pa);
	vmcs_set(VMCS_IO_BITMAP_B, vm->iopm_pa + 4096);
	vmcs_set(VMCS_MSR_BITMAP, vm->msrpm_pa);
	vmcs_set(VMCS_EPT_POINTER, vmx_eptp(vm));
	if (c->vpid)
		vmcs_set(VMCS_VPID, 1 + vm->id % 0xfffeu);
	vmcs_set(VMCS_TSC_OFFSET, 0);
	vmcs_set(VMCS_LINK_POINTER, ~0ull);

	/* CR0/CR4: the guest sees the read shadows; the bits VMX fixes stay
	 * host-owned (a guest write that changes one exits) */
	uint64_t cr0 = CR0_PE | CR0_ET;
	vmcs_set(VMCS_CR0_GUEST_HOST_MASK, cr0_host_owned());
	vmcs_set(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_set(VMCS_GUEST_CR0, (cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	vmcs_set(VMCS_CR4_GUEST_HOST_MASK, cr4_host_owned());
	vmcs_set(VMCS_CR4_READ_SHADOW, 0);
	vmcs_set(VMCS_GUEST_CR4, c->cr4_fixed0 & c->cr4_fixed1);
	vmcs_set(VMCS_GUEST_CR3, 0);

	/* flat 32-bit segments (access rights: G, D/B, P, S, type) */
	set_seg(SEG_CS_N, 0x10, 0xc09b, 0xffffffffu, 0);
	set_seg(SEG_DS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_ES_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_SS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_FS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_GS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_TR_N, 0, 0x008b, 0xffff, 0);
	set_seg(SEG_LDTR_N, 0, VMX_AR_UNUSABLE, 0, 0);
	vmcs_set(VMCS_GUEST_GDTR_BASE, 0);
	vmcs_set(VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmcs_set(VMCS_GUEST_IDTR_BASE, 0);
	vmcs_set(VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmcs_set(VMCS_GUEST_EFER, 0);
	if (c->entry.may & ENTRY_LOAD_PAT)
		vmcs_set(VMCS_GUEST_PAT, 0x0007040600070406ull);
	vmcs_set(VMCS_GUEST_DEBUGCTL, 0);
	vmcs_set(VMCS_GUEST_DR7, 0x400);
	vmcs_set(VMCS_GUEST_RFLAGS, 2);
	vmcs_set(VMCS_GUEST_RIP, entry);
	vmcs_set(VMCS_GUEST_RSP, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_CS, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_ESP, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_EIP, 0);
	vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmcs_set(VMCS_GUEST_ACTIVITY_STATE, 0);
	vmcs_set(VMCS_GUEST_PENDING_DBG, 0);
	/* the spec= variant (exit_vcpu_init), or its Bochs twin: HOST_RIP's
	 * stub and the loop vendor_enter_guest runs (vmx_light_loops) */
	v->entry_variant = spec_entry_variant(o) + (vmx_bochs_quirk ? SPEC_ENTRY_VARIANTS : 0);
	host_state_init(v);
	setup_end(vm);
	lapic_set_cpu_delivers(&v->lapic, false);
	vendor_apic_mode_changed(v);

	memset(&v->regs, 0, sizeof(v->regs));
	v->regs.rax = eax;
	v->regs.rbx = ebx;
	v->arch.guest_dr6 = 0xffff0ff0;

	pmu_init(v, MSR_IA32_PERFEVTSEL0, MSR_IA32_PMC0, c->pmu_counters);
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		v->guest_smsr[i] = 0;
}

/* APIC virtualization follows the guest's APIC mode: xAPIC through the
 * APIC-access page, x2APIC through "virtualize x2APIC mode" (where the CPU
 * has it) with its own MSR bitmap, each with APIC-register virtualization
 * and virtual-interrupt delivery; a disabled APIC, or x2APIC on a CPU
 * without that control, goes back to injection and the emulated APIC. */
void vendor_apic_mode_changed(struct vcpu *v)
{
	if (!v->arch.apicv)
		return;
	struct vm *vm = v->vm;
	const struct lapic *a = &v->lapic;
	uint32_t virt = 0;
	if (lapic_hw_enabled(a) && !lapic_x2apic(a))
		virt = PROC2_VIRTUALIZE_APIC_ACCESS | PROC2_APIC_REGISTER_VIRT |
		       PROC2_VIRTUAL_INTR_DELIVERY;
	else if (lapic_x2apic(a) && vmx_caps.apicv_x2apic)
		virt = PROC2_VIRTUALIZE_X2APIC | PROC2_APIC_REGISTER_VIRT | PROC2_VIRTUAL_INTR_DELIVERY;
	/* (the EPT entry is the VM's: with several vCPUs it stays) */
	vmx_apic_access_map(vm, vm->nr_vcpus > 1 || (virt & PROC2_VIRTUALIZE_APIC_ACCESS));
	vmwrite(VMCS_MSR_BITMAP, (virt & PROC2_VIRTUALIZE_X2APIC) ? vm->msrpm_x2apic_pa : vm->msrpm_pa);
	uint32_t all = PROC2_VIRTUALIZE_APIC_ACCESS | PROC2_VIRTUALIZE_X2APIC |
		       PROC2_APIC_REGISTER_VIRT | PROC2_VIRTUAL_INTR_DELIVERY;
	v->arch.proc2 = (v->arch.proc2 & ~all) | virt;
	vmwrite(VMCS_PROC_CONTROLS2, v->arch.proc2);
	lapic_set_cpu_delivers(&v->lapic, virt != 0);
	v->arch.tpr_threshold = 0;   /* (unused with virtual-interrupt delivery) */
	vmwrite(VMCS_TPR_THRESHOLD, 0);
	v->pending |= VCPU_PENDING_RECHECK;   /* vendor_apic_sync, and what waits */
}

/* After each delivery decision with virtual-interrupt delivery: RVI and
 * SVI are the highest vectors of the page's IRR and ISR (the model's
 * accepts, and a reset, change them behind the CPU's back), and the
 * EOI-exit bitmap is TMR, so that the EOI of a level-triggered vector
 * exits for the I/O APIC (and the timer's, while the model holds late
 * periodic expiries). Bochs 2.7 delivers a pending virtual interrupt
 * with RFLAGS.IF=0 when a host interrupt arrives (event.cc takes the
 * unmasked host interrupt's path, which prefers the virtual one): while
 * the guest cannot take one, interrupt-window exiting keeps it from being
 * recognized (the SDM's evaluation of pending virtual interrupts), and the
 * window's exit lets it in. A virtual interrupt the guest makes pending
 * itself while IF=0 (a self-IPI, an EOI or TPR write that uncovers one) is
 * out of reach (docs/VMX.md). */
void vmx_apicv_sync(struct vcpu *v)
{
	struct lapic *a = &v->lapic;
	uint64_t status = vmread(VMCS_GUEST_INTR_STATUS);
	unsigned svi = (unsigned)(status >> 8) & 0xff;   /* the CPU keeps it, but for a reset */
	if (lapic_apicv_changed(a) & LAPIC_CHANGED_ISR) {
		int s = lapic_highest_vec(a, LAPIC_ISR);
		svi = s < 0 ? 0 : (unsigned)s;
	}
	int rvi = lapic_highest_vec(a, LAPIC_IRR);
	uint64_t want = (rvi < 0 ? 0u : (unsigned)rvi) | svi << 8;
	if (want != status)
		vmwrite(VMCS_GUEST_INTR_STATUS, want);
	int late = lapic_eoi_exit_vector(a);
	if ((lapic_apicv_changed(a) & LAPIC_CHANGED_TMR) || late != v->arch.eoi_late) {
		v->arch.eoi_late = late;
		for (unsigned i = 0; i < 4; i++) {
			uint64_t tmr = lapic_tmr_quad(a, i);
			if (late >= 0 && (unsigned)late >> 6 == i)
				tmr |= 1ull << (late & 63);
			if (tmr != v->arch.eoi_exit[i]) {
				v->arch.eoi_exit[i] = tmr;
				vmwrite(VMCS_EOI_EXIT_BITMAP0 + 2 * i, tmr);
			}
		}
	}
	lapic_apicv_changes_seen(a);
	if (rvi < 0 || ((vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF) &&
			!(vmread(VMCS_GUEST_INTERRUPTIBILITY) &
			  (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS))))
		return;
	if (((unsigned)rvi & 0xf0) > (lapic_ppr(a) & 0xf0))
		vendor_intr_window(v, true);
}

/* The state INIT leaves and a STARTUP IPI starts (SDM vol. 3 9.1.1, table
 * 9-1): real mode at CS = vector << 8, IP 0, CR0 = 0x60000010, EDX the
 * processor signature (unrestricted guest runs real mode as it is). */
void vendor_vcpu_init_sipi(struct vcpu *v, uint8_t vector)
{
	const struct vmx_caps *c = &vmx_caps;
	vendor_vcpu_init(v, 0, 0, 0);
	spin_lock(&setup_lock);
	setup_bad_field = 0;
	uint64_t cr0 = CR0_CD | CR0_NW | CR0_ET;
	vmcs_set(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_set(VMCS_GUEST_CR0, (cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	set_seg(SEG_CS_N, (uint16_t)(vector << 8), 0x009b, 0xffff, (uint64_t)vector << 12);
	set_seg(SEG_DS_N, 0, 0x0093, 0xffff, 0);
	set_seg(SEG_ES_N, 0, 0x0093, 0xffff, 0);
	set_seg(SEG_SS_N, 0, 0x0093, 0xffff, 0);
	set_seg(SEG_FS_N, 0, 0x0093, 0xffff, 0);
	set_seg(SEG_GS_N, 0, 0x0093, 0xffff, 0);
	set_seg(SEG_LDTR_N, 0, 0x0082, 0xffff, 0);
	vmcs_set(VMCS_GUEST_RIP, 0);
	setup_end(v->vm);
	guest_clock_tsc_offset_changed(v);   /* INIT leaves the TSC as it was */
	v->regs.rdx = v->cpuid_basic_n > 1 ? v->cpuid_basic[1][0] : 0;
}

void vendor_vcpu_release(struct vcpu *v)
{
	/* on its CPU: the VMCS's cached state goes back to memory */
	vmclear((uint64_t)(uintptr_t)v->arch.vmcs);
}

/* A GDT descriptor's attributes in the VMCS access-rights format (type, S,
 * DPL, P in bits 7:0; AVL, L, D/B, G in bits 15:12), with the accessed
 * bit set: VM entry wants it in every usable code and data segment, and a
 * CPU loading the selector would have set it. */
static uint32_t desc_ar(uint64_t desc)
{
	return (uint32_t)(((desc >> 40) & 0xff) | (((desc >> 52) & 0xf) << 12)) | 1u;
}

static uint32_t desc_limit(uint64_t desc)
{
	uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
	return (desc & (1ull << 55)) ? (limit << 12) | 0xfff : limit;
}

/* The boot protocol's 64-bit entry (vmm/linux_boot.h): long mode with the
 * loader's identity map, flat segments from its GDT, RSI the zero page. */
void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st)
{
	const struct vmx_caps *c = &vmx_caps;
	vendor_vcpu_init(v, st->rip, 0, 0);
	if (v->vm->ended)
		return;
	spin_lock(&setup_lock);
	setup_bad_field = 0;
	/* the guest sees its own CR0/CR4 in the read shadows; the CPU runs
	 * with VMX's fixed bits added (CR0.NE, CR4.VMXE) */
	vmcs_set(VMCS_CR0_READ_SHADOW, st->cr0);
	vmcs_set(VMCS_GUEST_CR0, (st->cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	vmcs_set(VMCS_CR4_READ_SHADOW, st->cr4);
	vmcs_set(VMCS_GUEST_CR4, (st->cr4 | c->cr4_fixed0) & c->cr4_fixed1);
	vmcs_set(VMCS_GUEST_CR3, st->cr3);
	/* EFER.LMA and the IA-32e entry control must agree */
	vmcs_set(VMCS_GUEST_EFER, st->efer);
	if (st->efer & EFER_LMA)
		vmcs_set(VMCS_ENTRY_CONTROLS, vmread(VMCS_ENTRY_CONTROLS) | ENTRY_IA32E_MODE_GUEST);
	set_seg(SEG_CS_N, st->cs, desc_ar(st->cs_desc), desc_limit(st->cs_desc), 0);
	uint32_t ds_ar = desc_ar(st->ds_desc), ds_limit = desc_limit(st->ds_desc);
	set_seg(SEG_DS_N, st->ds, ds_ar, ds_limit, 0);
	set_seg(SEG_ES_N, st->ds, ds_ar, ds_limit, 0);
	set_seg(SEG_SS_N, st->ds, ds_ar, ds_limit, 0);
	set_seg(SEG_FS_N, st->ds, ds_ar, ds_limit, 0);
	set_seg(SEG_GS_N, st->ds, ds_ar, ds_limit, 0);
	vmcs_set(VMCS_GUEST_GDTR_BASE, st->gdt_base);
	vmcs_set(VMCS_GUEST_GDTR_LIMIT, st->gdt_limit);
	vmcs_set(VMCS_GUEST_IDTR_BASE, 0);
	vmcs_set(VMCS_GUEST_IDTR_LIMIT, 0);
	vmcs_set(VMCS_GUEST_RFLAGS, st->rflags);
	vmcs_set(VMCS_GUEST_RIP, st->rip);
	vmcs_set(VMCS_GUEST_RSP, st->rsp);
	setup_end(v->vm);
	v->regs.rax = 0;
	v->regs.rbx = 0;
	v->regs.rsi = st->rsi;
}

void vendor_dr_intercept_off(struct vcpu *v)
{
	v->arch.proc &= ~PROC_MOV_DR_EXITING;
	vmwrite(VMCS_PROC_CONTROLS, v->arch.proc);
}

/* ---- MSRs whose guest copy lives in the VMCS or in the CPU ---- */

uint64_t vendor_efer_read(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_EFER);
}

void vendor_efer_write(struct vcpu *v, uint64_t efer)
{
	(void)v;
	vmwrite(VMCS_GUEST_EFER, efer);   /* LMA must match the IA-32e entry control: kept */
}

int vendor_msr_pat(struct vcpu *v, uint64_t *val, bool is_write)
{
	(void)v;
	if (!(vmx_caps.entry.may & ENTRY_LOAD_PAT))
		return -1;   /* no PAT switching: the guest gets no PAT */
	if (is_write)
		vmwrite(VMCS_GUEST_PAT, *val);
	else
		*val = vmread(VMCS_GUEST_PAT);
	return 0;
}

static uint32_t vmcs_sysenter_field(uint32_t msr)
{
	switch (msr) {
	case MSR_IA32_SYSENTER_CS: return VMCS_GUEST_SYSENTER_CS;
	case MSR_IA32_SYSENTER_ESP: return VMCS_GUEST_SYSENTER_ESP;
	case MSR_IA32_SYSENTER_EIP: return VMCS_GUEST_SYSENTER_EIP;
	}
	return 0;
}

int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	uint32_t field = vmcs_sysenter_field(msr);
	if (field) {
		if (is_write)
			vmwrite(field, *val);
		else
			*val = vmread(field);
		return 0;
	}
	int slot = smsr_slot(msr);
	if (slot < 0)
		return -1;
	/* msr=lazy inside the light loop: the CPU holds it, so WRMSR goes there
	 * and a following SYSCALL sees it at once */
	if (v->arch.smsr_in_cpu) {
		if (is_write)
			wrmsr(msr, *val);
		else
			*val = rdmsr(msr);
		return 0;
	}
	if (is_write)
		v->guest_smsr[slot] = *val;   /* loaded into the CPU before VMRESUME */
	else
		*val = v->guest_smsr[slot];
	return 0;
}
