/* Intel VT-x: every exit lightpath intercepts, in one table (what each exit
 * means is in vmm/exit_table.h), and the exits the VMCS's controls can
 * produce, which the table is checked against at boot. Needs no vCPU
 * state: the unit tests build it too. */
#include "vmm/exit_table.h"
#include "vmm/vmx/exits.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"

/* Every exit the VMCS's controls enable, in exit-reason order. */
const struct exit_row vendor_exit_table[] = {
	EXIT_ROW(VMX_EXIT_EXCEPTION_NMI, VMX_EXIT_EXCEPTION_NMI, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vmx_heavy_exception),
	EXIT_HOST_INTR(VMX_EXIT_EXT_INTR),
	EXIT_TRIPLE_FAULT(VMX_EXIT_TRIPLE_FAULT),
	EXIT_INTR_WINDOW(VMX_EXIT_INTR_WINDOW),
	EXIT_NMI_WINDOW(VMX_EXIT_NMI_WINDOW),
	EXIT_ROW(VMX_EXIT_TASK_SWITCH, VMX_EXIT_TASK_SWITCH, LP_EXIT_OTHER, LIGHT_NONE,
		 vmx_heavy_task_switch),
	EXIT_CPUID(VMX_EXIT_CPUID),
	EXIT_VIRT_INSN(VMX_EXIT_GETSEC, VMX_EXIT_GETSEC),
	EXIT_HLT(VMX_EXIT_HLT),
	EXIT_INVD(VMX_EXIT_INVD),
	EXIT_RDPMC(VMX_EXIT_RDPMC),
	EXIT_RDTSC(VMX_EXIT_RDTSC),
	EXIT_HYPERCALL(VMX_EXIT_VMCALL),
	EXIT_VIRT_INSN(VMX_EXIT_VMCLEAR, VMX_EXIT_VMXON),   /* VMCLEAR ... VMXON */
	EXIT_ROW(VMX_EXIT_CR_ACCESS, VMX_EXIT_CR_ACCESS, LP_EXIT_OTHER, LIGHT_NONE,
		 vmx_heavy_cr_access),
	EXIT_DR_ACCESS(VMX_EXIT_MOV_DR, VMX_EXIT_MOV_DR),
	EXIT_IO(VMX_EXIT_IO),
	EXIT_RDMSR(VMX_EXIT_RDMSR),
	EXIT_WRMSR(VMX_EXIT_WRMSR),
	EXIT_NOT_OFFERED(VMX_EXIT_MWAIT, VMX_EXIT_MWAIT),
	EXIT_NOT_OFFERED(VMX_EXIT_MONITOR, VMX_EXIT_MONITOR),
	EXIT_ROW(VMX_EXIT_TPR_BELOW_THRESHOLD, VMX_EXIT_TPR_BELOW_THRESHOLD, LP_EXIT_VINTR,
		 LIGHT_NONE, vmx_heavy_tpr_below),
	EXIT_ROW(VMX_EXIT_APIC_ACCESS, VMX_EXIT_APIC_ACCESS, LP_EXIT_NPF, LIGHT_NONE,
		 vmx_heavy_apic_access),
	EXIT_ROW(VMX_EXIT_EOI_INDUCED, VMX_EXIT_EOI_INDUCED, LP_EXIT_OTHER, LIGHT_NONE,
		 vmx_heavy_eoi_induced),
	EXIT_NESTED_FAULT(VMX_EXIT_EPT_VIOLATION),
	EXIT_ROW(VMX_EXIT_EPT_MISCONFIG, VMX_EXIT_EPT_MISCONFIG, LP_EXIT_NPF, LIGHT_NONE,
		 vmx_heavy_ept_misconfig),
	EXIT_VIRT_INSN(VMX_EXIT_INVEPT, VMX_EXIT_INVEPT),
	EXIT_RDTSCP(VMX_EXIT_RDTSCP),
	/* the watchdog (vmx.h, WATCHDOG_MS): a host-interrupt window, light;
	 * vendor_host_interrupt_window re-arms it */
	EXIT_HOST_INTR(VMX_EXIT_PREEMPTION_TIMER),
	EXIT_VIRT_INSN(VMX_EXIT_INVVPID, VMX_EXIT_INVVPID),
	EXIT_XSETBV(VMX_EXIT_XSETBV),
	EXIT_ROW(VMX_EXIT_APIC_WRITE, VMX_EXIT_APIC_WRITE, LP_EXIT_NPF, LIGHT_NONE,
		 vmx_heavy_apic_write),
	EXIT_WBINVD(VMX_EXIT_WBINVD),
	EXIT_VIRT_INSN(VMX_EXIT_VMFUNC, VMX_EXIT_VMFUNC),
};
const unsigned vendor_exit_table_rows = sizeof(vendor_exit_table) / sizeof(vendor_exit_table[0]);

enum { PIN, PROC, PROC2 };

/* The exits a control bit enables (SDM vol. 3C, 25.1.3 and 26.6). Control
 * bits not listed enable no exit, or lightpath never sets them. */
static const struct {
	uint8_t word;
	uint8_t reason;
	uint32_t bit;
	const char *name;
} control_exits[] = {
	{ PIN, VMX_EXIT_EXT_INTR, PIN_EXT_INTR_EXITING, "external-interrupt exiting" },
	{ PIN, VMX_EXIT_EXCEPTION_NMI, PIN_NMI_EXITING, "NMI exiting" },
	{ PIN, VMX_EXIT_PREEMPTION_TIMER, PIN_PREEMPTION_TIMER, "the VMX-preemption timer" },
	{ PROC, VMX_EXIT_INTR_WINDOW, PROC_INTR_WINDOW_EXITING, "interrupt-window exiting" },
	{ PROC, VMX_EXIT_HLT, PROC_HLT_EXITING, "HLT exiting" },
	{ PROC, VMX_EXIT_INVLPG, PROC_INVLPG_EXITING, "INVLPG exiting" },
	{ PROC, VMX_EXIT_MWAIT, PROC_MWAIT_EXITING, "MWAIT exiting" },
	{ PROC, VMX_EXIT_RDPMC, PROC_RDPMC_EXITING, "RDPMC exiting" },
	{ PROC, VMX_EXIT_RDTSC, PROC_RDTSC_EXITING, "RDTSC exiting" },
	{ PROC, VMX_EXIT_CR_ACCESS, PROC_CR3_LOAD_EXITING, "CR3-load exiting" },
	{ PROC, VMX_EXIT_CR_ACCESS, PROC_CR3_STORE_EXITING, "CR3-store exiting" },
	{ PROC, VMX_EXIT_CR_ACCESS, PROC_CR8_LOAD_EXITING, "CR8-load exiting" },
	{ PROC, VMX_EXIT_CR_ACCESS, PROC_CR8_STORE_EXITING, "CR8-store exiting" },
	{ PROC, VMX_EXIT_TPR_BELOW_THRESHOLD, PROC_USE_TPR_SHADOW, "use TPR shadow" },
	{ PROC, VMX_EXIT_NMI_WINDOW, PROC_NMI_WINDOW_EXITING, "NMI-window exiting" },
	{ PROC, VMX_EXIT_MOV_DR, PROC_MOV_DR_EXITING, "MOV-DR exiting" },
	{ PROC, VMX_EXIT_IO, PROC_UNCOND_IO_EXITING, "unconditional I/O exiting" },
	{ PROC, VMX_EXIT_IO, PROC_USE_IO_BITMAPS, "use I/O bitmaps" },
	{ PROC, VMX_EXIT_MONITOR, PROC_MONITOR_EXITING, "MONITOR exiting" },
	{ PROC2, VMX_EXIT_APIC_ACCESS, PROC2_VIRTUALIZE_APIC_ACCESS, "virtualize APIC accesses" },
	{ PROC2, VMX_EXIT_EPT_VIOLATION, PROC2_ENABLE_EPT, "enable EPT" },
	{ PROC2, VMX_EXIT_EPT_MISCONFIG, PROC2_ENABLE_EPT, "enable EPT" },
	{ PROC2, VMX_EXIT_WBINVD, PROC2_WBINVD_EXITING, "WBINVD exiting" },
	{ PROC2, VMX_EXIT_APIC_WRITE, PROC2_APIC_REGISTER_VIRT, "APIC-register virtualization" },
	{ PROC2, VMX_EXIT_EOI_INDUCED, PROC2_VIRTUAL_INTR_DELIVERY, "virtual-interrupt delivery" },
};

/* Exits in VMX non-root operation whatever the controls (SDM vol. 3C,
 * 26.1.2), and RDMSR/WRMSR, which the MSR bitmaps only narrow. Not listed:
 * INIT, SIPI, SMIs and RSM, which lightpath never sends or enables while a
 * guest runs, and the failed VM entries (reasons 33, 34, 41), which
 * vendor_heavy_begin takes before the table. */
static const struct exit_span always_exits[] = {
	{ VMX_EXIT_TRIPLE_FAULT, VMX_EXIT_TRIPLE_FAULT, "a triple fault" },
	{ VMX_EXIT_TASK_SWITCH, VMX_EXIT_TASK_SWITCH, "a task switch" },
	{ VMX_EXIT_CPUID, VMX_EXIT_GETSEC, "CPUID, GETSEC" },
	{ VMX_EXIT_INVD, VMX_EXIT_INVD, "INVD" },
	{ VMX_EXIT_VMCALL, VMX_EXIT_VMXON, "VMCALL and the VMX instructions" },
	{ VMX_EXIT_RDMSR, VMX_EXIT_WRMSR, "RDMSR, WRMSR" },
	{ VMX_EXIT_INVEPT, VMX_EXIT_INVEPT, "INVEPT" },
	{ VMX_EXIT_INVVPID, VMX_EXIT_INVVPID, "INVVPID" },
	{ VMX_EXIT_XSETBV, VMX_EXIT_XSETBV, "XSETBV" },
};

unsigned vendor_intercept_spans(struct exit_span *out, unsigned max)
{
	const struct vmx_caps *c = &vmx_caps;
	/* every control a vCPU may have: its set-up's, whichever the options
	 * choose, those the run loop switches, and those the CPU forces on */
	uint32_t word[3] = { ctl_adjust(c->pin, VMX_PIN_INTERCEPTS),
			     ctl_adjust(c->proc, VMX_PROC_INTERCEPTS),
			     ctl_adjust(c->proc2, VMX_PROC2_INTERCEPTS) };
	unsigned n = 0;
	for (unsigned i = 0; i < sizeof(always_exits) / sizeof(always_exits[0]); i++)
		exit_span_add(out, max, &n, always_exits[i].first, always_exits[i].last,
			      always_exits[i].intercept);
	for (unsigned i = 0; i < sizeof(control_exits) / sizeof(control_exits[0]); i++) {
		uint32_t reason = control_exits[i].reason;
		if (word[control_exits[i].word] & control_exits[i].bit)
			exit_span_add(out, max, &n, reason, reason, control_exits[i].name);
	}
	if ((word[PROC] & PROC_RDTSC_EXITING) && (word[PROC2] & PROC2_ENABLE_RDTSCP))
		exit_span_add(out, max, &n, VMX_EXIT_RDTSCP, VMX_EXIT_RDTSCP,
			      "RDTSC exiting with RDTSCP enabled");
	if (VMX_EXC_INTERCEPTS)
		exit_span_add(out, max, &n, VMX_EXIT_EXCEPTION_NMI, VMX_EXIT_EXCEPTION_NMI,
			      "the exception bitmap");
	return n;
}
