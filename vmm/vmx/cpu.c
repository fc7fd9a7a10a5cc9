/* Intel VT-x: the CPU checks against the capability MSRs, VMXON with the
 * host GDT/TSS a VM exit needs, and the parts of the run loop that touch
 * host interrupts and the syscall MSRs. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/tsc.h"
#include "lib/printf.h"
#include "vmm/spec_ctrl.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

/* The light loop, one per spec= variant and its Bochs twin (vmm/vmx/entry.S,
 * in the order vmm/vmx/vmx.h gives); its exit stub is in vmx_exit_stubs
 * (vmm/vmx/vcpu.c). */
typedef void vmx_light_loop_fn(struct vcpu *v);
vmx_light_loop_fn vmx_light_loop, vmx_light_loop_spec_ctrl, vmx_light_loop_rsb_lite,
	vmx_light_loop_rsb_lite_spec_ctrl, vmx_light_loop_rsb_full, vmx_light_loop_rsb_full_spec_ctrl,
	vmx_light_loop_bochs, vmx_light_loop_spec_ctrl_bochs, vmx_light_loop_rsb_lite_bochs,
	vmx_light_loop_rsb_lite_spec_ctrl_bochs, vmx_light_loop_rsb_full_bochs,
	vmx_light_loop_rsb_full_spec_ctrl_bochs;
static vmx_light_loop_fn *const vmx_light_loops[VMX_ENTRY_VARIANTS] = {
	vmx_light_loop, vmx_light_loop_spec_ctrl, vmx_light_loop_rsb_lite,
	vmx_light_loop_rsb_lite_spec_ctrl, vmx_light_loop_rsb_full, vmx_light_loop_rsb_full_spec_ctrl,
	vmx_light_loop_bochs, vmx_light_loop_spec_ctrl_bochs, vmx_light_loop_rsb_lite_bochs,
	vmx_light_loop_rsb_lite_spec_ctrl_bochs, vmx_light_loop_rsb_full_bochs,
	vmx_light_loop_rsb_full_spec_ctrl_bochs,
};

struct vmx_caps vmx_caps;

#define STR_(x) #x
#define STR(x) STR_(x)

/* VM exits load TR from HOST_TR_SEL, which must not be 0: the boot GDT has
 * no TSS, so the backend installs its own GDT (the boot code/data
 * descriptors plus a TSS) before VMXON. */
#define HOST_TSS_SIZE    104u   /* a 64-bit TSS without an I/O bitmap */
#define HOST_GDT_ENTRIES 5u     /* null, code, data, the TSS's two slots */

const char *vendor_name(void)
{
	return "Intel VT-x";
}

/* Each CPU needs a GDT of its own: LTR marks the TSS descriptor busy, and
 * a second CPU's LTR of a busy TSS faults. */
static void load_host_gdt(uint64_t *gdt, uint8_t *tss_bytes)
{
	uint64_t tss = (uint64_t)(uintptr_t)tss_bytes;
	gdt[0] = 0;
	gdt[1] = 0x00AF9B000000FFFFull;      /* 64-bit code, as boot/entry.S */
	gdt[2] = 0x00CF93000000FFFFull;      /* data */
	gdt[3] = (HOST_TSS_SIZE - 1) | ((tss & 0xffffff) << 16) | (0x89ull << 40) |
		 (((tss >> 24) & 0xff) << 56);  /* available 64-bit TSS */
	gdt[4] = tss >> 32;
	*(uint16_t *)(tss_bytes + 102) = HOST_TSS_SIZE;   /* no I/O bitmap */
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } d = {
		HOST_GDT_ENTRIES * 8 - 1, (uint64_t)(uintptr_t)gdt
	};
	asm volatile("lgdt %0" ::"m"(d));
	asm volatile("ltr %w0" ::"r"(VMX_HOST_SEL_TSS));
}

/* IA32_FEATURE_CONTROL is per CPU: lock it with VMX on where the firmware
 * left it open; NULL, or why VMX is off. */
static const char *feature_control_enable(void)
{
	uint64_t fc = rdmsr(MSR_IA32_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK))
		wrmsr(MSR_IA32_FEATURE_CONTROL,
		      fc | FEATURE_CONTROL_LOCK | FEATURE_CONTROL_VMX_OUTSIDE_SMX);
	else if (!(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX))
		return "VMX is disabled by the firmware (IA32_FEATURE_CONTROL is locked "
		       "without VMX outside SMX)";
	return 0;
}

/* VMXON: CR0/CR4 must meet the fixed bits (NE, VMXE). */
static bool vmx_on(uint64_t region)
{
	const struct vmx_caps *c = &vmx_caps;
	uint64_t cr0 = (read_cr0() | c->cr0_fixed0) & c->cr0_fixed1;
	uint64_t cr4 = (read_cr4() | c->cr4_fixed0 | CR4_VMXE) & c->cr4_fixed1;
	asm volatile("mov %0, %%cr0" ::"r"(cr0));
	asm volatile("mov %0, %%cr4" ::"r"(cr4));
	*(uint32_t *)(uintptr_t)region = (uint32_t)c->basic & 0x7fffffffu;
	return vmxon(region);
}

static struct vmx_ctl_cap ctl_cap(uint32_t msr)
{
	uint64_t v = rdmsr(msr);
	return (struct vmx_ctl_cap){ (uint32_t)v, (uint32_t)(v >> 32) };
}

static int vmx_fail(const char *what)
{
	kprintf("lightpath: %s\n", what);
	return -1;
}

int vendor_cpu_init(const struct lp_options *opt)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!cpu_is_intel() || !(r[2] & (1u << 5)))
		return vmx_fail("this CPU has no Intel VMX");
	const char *why = feature_control_enable();
	if (why)
		return vmx_fail(why);

	struct vmx_caps *c = &vmx_caps;
	c->basic = rdmsr(MSR_IA32_VMX_BASIC);
	bool true_ctls = c->basic & VMX_BASIC_TRUE_CTLS;
	c->pin = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_PINBASED : MSR_IA32_VMX_PINBASED_CTLS);
	c->proc = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_PROCBASED : MSR_IA32_VMX_PROCBASED_CTLS);
	c->exit = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_EXIT : MSR_IA32_VMX_EXIT_CTLS);
	c->entry = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_ENTRY : MSR_IA32_VMX_ENTRY_CTLS);
	c->misc = rdmsr(MSR_IA32_VMX_MISC);
	c->cr0_fixed0 = rdmsr(MSR_IA32_VMX_CR0_FIXED0);
	c->cr0_fixed1 = rdmsr(MSR_IA32_VMX_CR0_FIXED1);
	c->cr4_fixed0 = rdmsr(MSR_IA32_VMX_CR4_FIXED0);
	c->cr4_fixed1 = rdmsr(MSR_IA32_VMX_CR4_FIXED1);
	if (!(c->proc.may & PROC_SECONDARY_CONTROLS))
		return vmx_fail("this CPU's VMX has no secondary controls (no EPT)");
	c->proc2 = ctl_cap(MSR_IA32_VMX_PROCBASED_CTLS2);
	if (!(c->proc2.may & PROC2_ENABLE_EPT))
		return vmx_fail("this CPU's VMX has no EPT");
	c->ept_vpid = rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
	if ((c->ept_vpid & (EPT_CAP_PAGEWALK4 | EPT_CAP_WB | EPT_CAP_2M)) !=
	    (EPT_CAP_PAGEWALK4 | EPT_CAP_WB | EPT_CAP_2M))
		return vmx_fail("this CPU's EPT lacks 4-level walks, write-back memory or 2 MiB pages");
	if (!(c->proc2.may & PROC2_UNRESTRICTED_GUEST))
		return vmx_fail("this CPU's VMX has no unrestricted guest (needed to start multiboot "
				"guests in 32-bit protected mode with paging off)");
	if (!(c->pin.may & PIN_EXT_INTR_EXITING))
		return vmx_fail("this CPU's VMX has no external-interrupt exiting");
	uint32_t need_proc = PROC_HLT_EXITING | PROC_USE_IO_BITMAPS | PROC_USE_MSR_BITMAPS |
			     PROC_MOV_DR_EXITING | PROC_INTR_WINDOW_EXITING;
	if ((c->proc.may & need_proc) != need_proc)
		return vmx_fail("this CPU's VMX lacks HLT exiting, I/O or MSR bitmaps, MOV-DR exiting "
				"or interrupt-window exiting");
	c->tpr_shadow = c->proc.may & PROC_USE_TPR_SHADOW;
	uint32_t apicv = PROC2_VIRTUALIZE_APIC_ACCESS | PROC2_APIC_REGISTER_VIRT |
			 PROC2_VIRTUAL_INTR_DELIVERY;
	c->apicv_xapic = c->tpr_shadow && (c->proc2.may & apicv) == apicv;
	apicv = PROC2_VIRTUALIZE_X2APIC | PROC2_APIC_REGISTER_VIRT | PROC2_VIRTUAL_INTR_DELIVERY;
	c->apicv_x2apic = c->tpr_shadow && (c->proc2.may & apicv) == apicv;
	if (!c->tpr_shadow && (c->proc.may & VMX_PROC_CR8_EXITS) != VMX_PROC_CR8_EXITS)
		return vmx_fail("this CPU's VMX has neither a TPR shadow nor CR8 exiting (a guest's "
				"MOV to CR8 would reach the CPU's own TPR)");
	uint32_t need_exit = EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER;
	uint32_t need_entry = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	if ((c->exit.may & need_exit) != need_exit || (c->entry.may & need_entry) != need_entry)
		return vmx_fail("this CPU's VMX cannot switch IA32_EFER on VM entry and exit");
	if ((c->proc.must & (PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING | PROC_INVLPG_EXITING)))
		return vmx_fail("this CPU's VMX forces CR3/INVLPG exiting (no true controls)");
	if ((c->proc.may & VMX_PROC_GUEST_INSN_EXITS) != VMX_PROC_GUEST_INSN_EXITS ||
	    !(c->proc2.may & PROC2_WBINVD_EXITING))
		return vmx_fail("this CPU's VMX cannot intercept MONITOR, MWAIT, RDPMC or WBINVD");
	c->vpid = (c->proc2.may & PROC2_ENABLE_VPID) &&
		  (c->ept_vpid & (VPID_CAP_INVVPID | VPID_CAP_INVVPID_ALL)) ==
			  (VPID_CAP_INVVPID | VPID_CAP_INVVPID_ALL);
	/* the preemption timer counts the TSC divided by 2^MISC[4:0] */
	if ((c->pin.may & PIN_PREEMPTION_TIMER) && (c->exit.may & EXIT_SAVE_PREEMPTION_TIMER)) {
		uint64_t ticks = (tsc_hz() / (1000 / WATCHDOG_MS)) >> (c->misc & 0x1f);
		c->watchdog_ticks = ticks > 0xffffffffu ? 0xffffffffu : ticks ? (uint32_t)ticks : 1;
	}
	cpuid(0, 0, r);
	if (r[0] >= 0xa) {
		cpuid(0xa, 0, r);
		c->pmu_counters = (r[0] & 0xff) ? (r[0] >> 8) & 0xff : 0;
		if (c->pmu_counters > 4)
			c->pmu_counters = 4;
	}

	state_switch_init();   /* the host's syscall MSRs, which every CPU loads */
	if (vendor_cpu_alloc(this_cpu()) < 0)
		return vmx_fail("error: out of memory setting up VMX");
	const char *why_not = vendor_cpu_virt_on(this_cpu());
	if (why_not)
		return vmx_fail(why_not);
	/* how the guest's local APIC reaches the CPU (docs/VMX.md) */
	bool use_apicv = opt->vmx_tpr_shadow && opt->vmx_apicv;
	char apic_how[160];
	snprintf(apic_how, sizeof(apic_how), "%s%s",
		 !use_apicv || !c->apicv_xapic
			 ? "interrupts injected, the APIC emulated on exits"
			 : c->apicv_x2apic
				   ? "APIC virtualization (APIC-access page, x2APIC and register "
				     "virtualization, virtual-interrupt delivery)"
				   : "APIC virtualization in xAPIC mode (APIC-access page, register "
				     "virtualization, virtual-interrupt delivery), injection in x2APIC mode",
		 !c->apicv_xapic ? " (the CPU has no APIC virtualization)"
		 : !opt->vmx_tpr_shadow ? " (vmx.tpr=exit)" : !opt->vmx_apicv ? " (vmx.apicv=off)" : "");
	kprintf("lightpath: Intel VMX with EPT and unrestricted guest%s%s; next RIP from the "
		"VM-exit instruction length; %u PMU counters; %s; svm.vmload has no VMX meaning "
		"and is ignored\n", c->vpid ? ", VPID" : "",
		!c->tpr_shadow ? ", CR8 exiting (no TPR shadow)"
		: opt->vmx_tpr_shadow ? ", TPR shadow" : ", CR8 exiting (vmx.tpr=exit)",
		c->pmu_counters,
		c->watchdog_ticks ? "a VMX-preemption-timer watchdog every " STR(WATCHDOG_MS) " ms"
				  : "no VMX-preemption timer (no watchdog)");
	kprintf("lightpath: VMX local APIC: %s\n", apic_how);
	vmx_bochs_quirk_init(opt, use_apicv && c->apicv_xapic);
	return 0;
}

/* An AP's VMXON region and the page with its GDT (at 0) and TSS (at 64);
 * the VMCS of a vCPU pinned to it names them (vmx_host_tables). */
#define AP_TSS_OFFSET 64
_Static_assert(HOST_GDT_ENTRIES * 8 <= AP_TSS_OFFSET, "GDT and TSS share a page");

void vmx_host_tables(uint64_t *gdt, uint64_t *tss)
{
	const struct percpu *pc = this_cpu();
	*gdt = pc->virt_pa[1];
	*tss = pc->virt_pa[1] + AP_TSS_OFFSET;
}

int vendor_cpu_alloc(struct percpu *pc)
{
	pc->virt_pa[0] = pmem_alloc(4096, 4096);
	pc->virt_pa[1] = pmem_alloc(4096, 4096);
	return pc->virt_pa[0] && pc->virt_pa[1] ? 0 : -1;
}

const char *vendor_cpu_virt_on(struct percpu *pc)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!(r[2] & (1u << 5)))
		return "this CPU has no Intel VMX";
	const char *why = feature_control_enable();
	if (why)
		return why;
	uint8_t *page = (uint8_t *)(uintptr_t)pc->virt_pa[1];
	load_host_gdt((uint64_t *)page, page + AP_TSS_OFFSET);
	state_switch_init_ap();   /* the boot CPU's syscall MSRs */
	if (!vmx_on(pc->virt_pa[0]))
		return "VMXON failed";
	return 0;
}

unsigned vendor_switch_bits(const struct lp_options *o)
{
	(void)o;   /* svm.vmload has no VMX meaning; the CPU reports every length */
	return 0;
}

void vendor_enter_guest(struct vcpu *v)
{
	vmx_light_loops[v->entry_variant](v);
}

/* A VM exit clears RFLAGS.IF, and with external-interrupt exiting a host
 * interrupt arriving in the guest exits (reason 1) and stays pending in the
 * local APIC: the exit's handler opens a window for it here. That window is
 * what the VMX-preemption-timer watchdog guarantees (vmx.h, WATCHDOG_MS),
 * so the watchdog starts counting again from here (the current VMCS is the
 * exiting vCPU's); its own exit is handled as a host interrupt. */
void vendor_host_interrupt_window(void)
{
	if (vmx_caps.watchdog_ticks)
		vmwrite(VMCS_PREEMPTION_TIMER, vmx_caps.watchdog_ticks);
	asm volatile("sti; nop; cli" ::: "memory");
}

void vendor_host_idle_state(void)
{
	asm volatile("cli" ::: "memory");
}

void vendor_host_wait_for_interrupt(void)
{
	/* sti's one-instruction shadow makes "sti; hlt" race-free */
	asm volatile("sti; hlt; cli" ::: "memory");
}
