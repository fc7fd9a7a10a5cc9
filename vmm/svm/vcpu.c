/* AMD SVM: a vCPU's VMCB at its start state (multiboot or Linux), and the
 * guest MSRs whose home is the VMCB or the VMLOAD state. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "core/percpu.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/linux_boot.h"
#include "vmm/state_switch.h"
#include "vmm/svm/debug.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

static void set_seg(struct vmcb_seg *s, uint16_t sel, uint16_t attrib, uint32_t limit, uint64_t base)
{
	s->sel = sel;
	s->attrib = attrib;
	s->limit = limit;
	s->base = base;
}

/* Multiboot start state: 32-bit protected mode, paging off. */
void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	memset(vmcb, 0, sizeof(*vmcb));
	v->arch.vmstate_in_cpu = false;
	v->arch.host_vmstate_pa = this_cpu()->virt_pa[1];   /* runs on the vCPU's CPU */
	v->arch.host_cr_guard = false;   /* the light table is the plain one */
	svm_host_cr_capture();
	/* CR8 is the emulated local APIC's TPR (never V_TPR: QEMU aborts on a
	 * MOV to CR8 while V_IRQ is set, docs/SECURITY.md case 15) */
	vmcb->intercept_cr = SVM_CR_INTERCEPTS;
	/* exceptions whose delivery can fault again forever inside the CPU:
	 * intercepted, so that each round is a VM exit (reflected, vmm/svm/exits.c) */
	vmcb->intercept_exc = SVM_EXC_INTERCEPTS;
	/* a physical NMI is the host's (exit 0x61, heavy_host_nmi), never the
	 * guest's; the NMIs lightpath injects are not intercepted */
	vmcb->intercept_misc1 = SVM_MISC1_INTERCEPTS;
	vmcb->intercept_misc2 = SVM_MISC2_INTERCEPTS;
	vmcb->iopm_base_pa = v->vm->iopm_pa;
	vmcb->msrpm_base_pa = v->vm->msrpm_pa;
	vmcb->asid = 1;
	vmcb->tlb_control = 1;                  /* flush this ASID on the first VMRUN */
	vmcb->int_ctl = SVM_INT_CTL_V_INTR_MASKING | (svm_has_vnmi ? SVM_INT_CTL_V_NMI_ENABLE : 0);
	v->arch.nmi_blocked = v->arch.nmi_iret_seen = v->arch.nmi_stepping = false;
	vmcb->np_enable = 1;
	vmcb->n_cr3 = v->vm->npt_root;

	set_seg(&vmcb->cs, 0x10, 0xc9b, 0xffffffffu, 0);
	set_seg(&vmcb->ds, 0x18, 0xc93, 0xffffffffu, 0);
	vmcb->es = vmcb->ss = vmcb->fs = vmcb->gs = vmcb->ds;
	set_seg(&vmcb->tr, 0, 0x08b, 0xffff, 0);
	set_seg(&vmcb->ldtr, 0, 0x082, 0xffff, 0);
	set_seg(&vmcb->gdtr, 0, 0, 0xffff, 0);
	set_seg(&vmcb->idtr, 0, 0, 0xffff, 0);
	vmcb->efer = EFER_SVME;
	vmcb->cr0 = CR0_PE | CR0_ET;
	vmcb->cr3 = 0;
	vmcb->cr4 = 0;
	vmcb->dr6 = 0xffff0ff0;
	vmcb->dr7 = 0x400;
	svm_dr_update(v);                       /* DR intercepts, the light loop */
	vmcb->rflags = 2;
	vmcb->rip = entry;
	vmcb->rax = eax;
	vmcb->g_pat = 0x0007040600070406ull;
	memset(&v->regs, 0, sizeof(v->regs));
	v->regs.rbx = ebx;

	pmu_init(v, MSR_PERF_CTL0, MSR_PERF_CTR0, 4);
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		v->guest_smsr[i] = 0;
	svm_host_cr_watch(v);
}

/* The state INIT leaves and a STARTUP IPI starts (APM vol. 2 15.27.8,
 * table 14-1): real mode at CS = vector << 8, IP 0, CR0 = 0x60000010, EDX
 * the processor signature. */
void vendor_vcpu_init_sipi(struct vcpu *v, uint8_t vector)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	vendor_vcpu_init(v, 0, 0, 0);
	set_seg(&vmcb->cs, (uint16_t)(vector << 8), 0x09b, 0xffff, (uint64_t)vector << 12);
	set_seg(&vmcb->ds, 0, 0x093, 0xffff, 0);
	vmcb->es = vmcb->ss = vmcb->fs = vmcb->gs = vmcb->ds;
	vmcb->cr0 = CR0_CD | CR0_NW | CR0_ET;
	vmcb->rip = 0;
	vmcb->rax = 0;
	v->regs.rdx = v->cpuid_basic_n > 1 ? v->cpuid_basic[1][0] : 0;
	guest_clock_tsc_offset_changed(v);   /* INIT leaves the TSC as it was */
	svm_host_cr_watch(v);
}

void vendor_vcpu_release(struct vcpu *v)
{
	(void)v;   /* nothing of a VMCB stays in the CPU */
}

/* A GDT descriptor's attribute bits in the VMCB's 12-bit format. */
static uint16_t desc_attrib(uint64_t desc)
{
	return (uint16_t)(((desc >> 40) & 0xff) | (((desc >> 52) & 0xf) << 8));
}

static uint32_t desc_limit(uint64_t desc)
{
	uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
	return (desc & (1ull << 55)) ? (limit << 12) | 0xfff : limit;
}

void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	vendor_vcpu_init(v, st->rip, 0, 0);
	set_seg(&vmcb->cs, st->cs, desc_attrib(st->cs_desc), desc_limit(st->cs_desc), 0);
	set_seg(&vmcb->ds, st->ds, desc_attrib(st->ds_desc), desc_limit(st->ds_desc), 0);
	vmcb->es = vmcb->ss = vmcb->fs = vmcb->gs = vmcb->ds;
	set_seg(&vmcb->gdtr, 0, 0, st->gdt_limit, st->gdt_base);
	set_seg(&vmcb->idtr, 0, 0, 0, 0);
	vmcb->cr0 = st->cr0;
	vmcb->cr3 = st->cr3;
	vmcb->cr4 = st->cr4;
	vmcb->efer = st->efer | EFER_SVME;
	vmcb->rflags = st->rflags;
	vmcb->rip = st->rip;
	vmcb->rsp = st->rsp;
	vmcb->rax = 0;
	v->regs.rbx = 0;
	v->regs.rsi = st->rsi;
	svm_host_cr_watch(v);   /* long mode: CR0 writes are watched */
}

/* Only DR7 writes (and DR0-3 writes while a breakpoint is enabled) still
 * exit: vmm/svm/debug.c. */
void vendor_dr_intercept_off(struct vcpu *v)
{
	svm_dr_update(v);
}

/* ---- MSRs that live in the VMCB or the VMLOAD state ---- */

uint64_t vendor_efer_read(struct vcpu *v)
{
	return v->arch.vmcb.efer & ~EFER_SVME;   /* nested SVM is not offered */
}

void vendor_efer_write(struct vcpu *v, uint64_t efer)
{
	v->arch.vmcb.efer = efer | EFER_SVME;     /* VMRUN needs SVME on */
	svm_host_cr_watch(v);                     /* EFER.LME may have changed */
}

int vendor_msr_pat(struct vcpu *v, uint64_t *val, bool is_write)
{
	if (is_write)
		v->arch.vmcb.g_pat = *val;
	else
		*val = v->arch.vmcb.g_pat;
	return 0;
}

static uint64_t *vmcb_vmstate_field(struct vmcb *vmcb, uint32_t msr)
{
	switch (msr) {
	case MSR_STAR: return &vmcb->star;
	case MSR_LSTAR: return &vmcb->lstar;
	case MSR_CSTAR: return &vmcb->cstar;
	case MSR_SFMASK: return &vmcb->sfmask;
	case MSR_KERNEL_GS_BASE: return &vmcb->kernel_gs_base;
	case MSR_IA32_SYSENTER_CS: return &vmcb->sysenter_cs;
	case MSR_IA32_SYSENTER_ESP: return &vmcb->sysenter_esp;
	case MSR_IA32_SYSENTER_EIP: return &vmcb->sysenter_eip;
	}
	return 0;
}

int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (v->arch.vmstate_in_cpu) {     /* between VMLOAD and VMSAVE: the CPU holds it */
		if (is_write)
			wrmsr(msr, *val);
		else
			*val = rdmsr(msr);
		return 0;
	}
	uint64_t *f = vmcb_vmstate_field(&v->arch.vmcb, msr);
	if (!f)
		return -1;
	if (is_write)
		*f = *val;
	else
		*val = *f;
	return 0;
}

const char *vendor_interrupt_state(struct vcpu *v)
{
	static char buf[112];
	const struct vmcb *vmcb = &v->arch.vmcb;
	snprintf(buf, sizeof(buf), "rflags.IF %u, shadow %u, eventinj 0x%lx, v_irq %u (vector 0x%x), "
		 "vintr %u", (unsigned)((vmcb->rflags >> 9) & 1), (unsigned)(vmcb->int_state & 1),
		 vmcb->eventinj, (unsigned)((vmcb->int_ctl >> 8) & 1),
		 (unsigned)((vmcb->int_ctl & SVM_INT_CTL_V_INTR_VECTOR) >> SVM_INT_CTL_V_INTR_VECTOR_SHIFT),
		 (unsigned)!!(vmcb->intercept_misc1 & SVM_INTERCEPT_VINTR));
	return buf;
}

/* The local APIC is emulated in every mode. */
void vendor_apic_mode_changed(struct vcpu *v)
{
	(void)v;
}

void vendor_rdtsc_exiting(struct vcpu *v, bool on)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (on) {
		vmcb->intercept_misc1 |= SVM_INTERCEPT_RDTSC;
		vmcb->intercept_misc2 |= SVM_INTERCEPT_RDTSCP;
	} else {
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_RDTSC;
		vmcb->intercept_misc2 &= ~SVM_INTERCEPT_RDTSCP;
	}
}

bool vendor_has_tsc_control(void)
{
	return true;   /* the TSC offset and the RDTSC intercepts are basic SVM */
}
