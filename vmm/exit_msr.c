/* The MSRs every VM has, with the checks the CPU makes on a WRMSR: a guest
 * value that would fault the real register gives the guest #GP and never
 * reaches the host's WRMSR. Where the guest's value lives (VMCB, VMCS, the
 * CPU itself) is the backend's business (vendor_msr_*). */
#include "core/cpu.h"
#include "vmm/cpuid.h"
#include "vmm/exit.h"
#include "vmm/io_registry.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"

/* IA32_MTRR_DEF_TYPE: type (7:0), FE (10), E (11); anything else is reserved. */
static int msr_mtrr_def_type(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	if (!is_write) {
		*val = v->vm->mtrr_def_type;
		return 0;
	}
	if (*val & ~0xcffull)
		return -1;
	v->vm->mtrr_def_type = *val;
	return 0;
}

/* IA32_MTRRCAP: write-combining, no fixed and no variable ranges, so the
 * guest's memory types come from PAT alone (guest RAM is ordinary WB RAM). */
static int msr_mtrrcap(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)v;
	(void)msr;
	if (is_write)
		return -1;
	*val = 1u << 10;
	return 0;
}

/* AMD NB_CFG: Linux sets EnableCf8ExtCfg (bit 46) for extended PCI config
 * cycles through CF8/CFC; the bus is empty, so only remember it. */
static int msr_nb_cfg(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	if (is_write)
		v->vm->nb_cfg = *val;
	else
		*val = v->vm->nb_cfg;
	return 0;
}

/* EFER bits a guest may set: those of every long-mode CPU, and FFXSR where
 * the VM's CPUID shows it (AMD). LMSLE, TCE and SVME are #GP (CPUID says
 * LMSLE is unsupported and hides TCE; no nested SVM). */
static uint64_t efer_valid(const struct vcpu *v)
{
	uint64_t ok = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
	if (v->cpuid_ext_n > 1 && (v->cpuid_ext[1][3] & CPUID81_EDX_FFXSR))
		ok |= EFER_FFXSR;
	return ok;
}

static int msr_efer(struct vcpu *v, uint64_t *val, bool is_write)
{
	uint64_t efer = vendor_efer_read(v);
	if (!is_write) {
		*val = efer;
		return 0;
	}
	if (*val & ~efer_valid(v))
		return -1;
	/* LME may change only while paging is off (AMD APM and Intel SDM: #GP) */
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	if (((*val ^ efer) & EFER_LME) && (pg.cr0 & CR0_PG))
		return -1;
	/* LMA is the CPU's to set */
	vendor_efer_write(v, (*val & ~EFER_LMA) | (efer & EFER_LMA));
	return 0;
}

/* PAT memory types 2, 3 and 8 and above are reserved. */
static bool pat_valid(uint64_t pat)
{
	for (int i = 0; i < 8; i++) {
		uint8_t type = (uint8_t)(pat >> (8 * i));
		if (type == 2 || type == 3 || type > 7)
			return false;
	}
	return true;
}

/* EFER, PAT, the syscall MSRs and SYSENTER_*: state the backend keeps.
 * The guest-owned ones (syscall MSRs with msr=lazy, SYSENTER_*) are passed
 * through (vm_maps_pass_guest_msrs): their accesses reach this handler only
 * where a switch intercepts them (msr=always), and it stays right for any
 * configuration that does. */
static int msr_cpu_state(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (msr == MSR_EFER)
		return msr_efer(v, val, is_write);
	if (msr == MSR_IA32_PAT) {
		if (is_write && !pat_valid(*val))
			return -1;
		return vendor_msr_pat(v, val, is_write);
	}
	if (is_write && (msr == MSR_LSTAR || msr == MSR_CSTAR || msr == MSR_KERNEL_GS_BASE ||
			 msr == MSR_IA32_SYSENTER_ESP || msr == MSR_IA32_SYSENTER_EIP) &&
	    !canonical_address(*val))
		return -1;
	/* reserved high halves: the guest gets #GP, never the host's WRMSR */
	if (is_write && (msr == MSR_SFMASK || msr == MSR_IA32_SYSENTER_CS) && (*val >> 32))
		return -1;
	/* The guest's value lives in exactly one place; a write anywhere else
	 * would be lost at the next switch (and the guest run on the old value).
	 * msr=always: the host's values are in the CPU whenever lightpath runs. */
	int slot = smsr_slot(msr);
	if (slot >= 0 && !v->vm->opt->msr_lazy) {
		if (is_write)
			v->guest_smsr[slot] = *val;   /* loaded into the CPU before the guest runs */
		else
			*val = v->guest_smsr[slot];
		return 0;
	}
	return vendor_msr_vmstate(v, msr, val, is_write);
}

/* ---- MSRs of the CPU that no device owns (docs/CPUID.md) ---- */

/* The guest's TSC is the VM's time (vmm/guest_clock.h: the host's TSC less
 * what polling hid) plus the guest's own offset, kept in the local APIC,
 * whose TSC-deadline timer compares with guest TSC; the CPU adds the sum of
 * both to RDTSC and RDTSCP (VMCB TSC_OFFSET, VMCS TSC offset). An armed
 * deadline is armed again against the new TSC, as the CPU compares it with
 * the TSC as it is. The timer devices (PIT, PM timer, APIC count) do not
 * move: they count the VM's time, as a PC's do not follow its TSC. */
static void tsc_offset_set(struct vcpu *v, int64_t off)
{
	v->lapic.tsc_offset = off;
	guest_clock_tsc_offset_changed(v);
	uint64_t deadline = v->lapic.tsc_deadline;
	if (deadline)
		lapic_msr(&v->lapic, MSR_TSC_DEADLINE, &deadline, true);
	v->pending |= VCPU_PENDING_RECHECK;   /* the deadline may be due now */
}

/* IA32_TSC: a read is the TSC RDTSC would give now; a write of any value
 * sets the VM's TSC from now on (the offset), and IA32_TSC_ADJUST moves by
 * as much (SDM vol. 3 17.17.3). Nothing of the host's changes. */
static int msr_tsc(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	uint64_t now = clock_now(&v->vm->clock);   /* the VM's time */
	if (!is_write) {
		*val = now + (uint64_t)v->lapic.tsc_offset;
		return 0;
	}
	if (!vm_shared_ok(v->vm))
		return MSR_NEEDS_LOCK;   /* it re-arms the TSC deadline: the VM's timers */
	/* modulo 2^64, in unsigned arithmetic: any value is a valid TSC */
	uint64_t off = *val - now;
	v->tsc_adjust += off - (uint64_t)v->lapic.tsc_offset;
	tsc_offset_set(v, (int64_t)off);
	return 0;
}

/* IA32_TSC_ADJUST (CPUID.7.0:EBX[1]): the TSC moves by what the write adds. */
static int msr_tsc_adjust(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	if (!is_write) {
		*val = v->tsc_adjust;
		return 0;
	}
	if (!vm_shared_ok(v->vm))
		return MSR_NEEDS_LOCK;
	tsc_offset_set(v, (int64_t)((uint64_t)v->lapic.tsc_offset + (*val - v->tsc_adjust)));
	v->tsc_adjust = *val;
	return 0;
}

/* Performance counters a VM without a vPMU has: those every CPU of the
 * vendor has, whatever CPUID says (AMD: PerfEvtSel0-3 and PerfCtr0-3 at
 * 0xC0010000-7; Intel: IA32_PERFEVTSEL0-1 and IA32_PMC0-1, CPUID 0AH being
 * 0). They never count: reads are 0, every write is accepted and dropped,
 * as KVM does without a vPMU. The physical counters stay the host's
 * (pmu=lazy|always switches those). */
#define MSR_AMD_PERF_LEGACY 0xC0010000u   /* PerfEvtSel0-3, PerfCtr0-3 */
#define MSR_INTEL_PMC0      0x0C1u        /* IA32_PMC0-1 */
#define MSR_INTEL_EVTSEL0   0x186u        /* IA32_PERFEVTSEL0-1 */
#define PMU_AMD_COUNTERS    4u
#define PMU_INTEL_COUNTERS  2u

/* Reads 0, drops every write: the counters that never count, and the
 * microcode revision (IA32_BIOS_SIGN_ID, below). */
static int msr_reads_zero(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)v;
	(void)msr;
	if (!is_write)
		*val = 0;
	return 0;
}

int exit_rdpmc(struct vcpu *v, uint64_t *val)
{
	uint32_t ecx = (uint32_t)v->regs.rcx;
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	/* CR4.PCE lets CPL > 0 read them (real mode is CPL 0) */
	if (vendor_cpl(v) && (pg.cr0 & CR0_PE) && !(pg.cr4 & CR4_PCE))
		return -1;
	/* Intel: ECX[30] selects the fixed counters (none), ECX[31] fast
	 * reads; AMD: counters 0-3 without PerfCtrExtCore (hidden) */
	if (ecx >= (cpuid_host()->intel ? PMU_INTEL_COUNTERS : PMU_AMD_COUNTERS))
		return -1;
	*val = 0;
	return 0;
}

/* IA32_DEBUGCTL (every CPU since the P6 and every AMD64 CPU): reads 0 and
 * takes 0, so that an OS that clears it at boot runs. LBR, BTF and the
 * rest are not emulated: setting any bit is #GP. */
static int msr_debugctl(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)v;
	(void)msr;
	if (!is_write) {
		*val = 0;
		return 0;
	}
	return *val ? -1 : 0;
}

/* IA32_MISC_ENABLE: every Intel CPU has it (no CPUID bit), and Linux's
 * verify_cpu reads it on Intel before it has an IDT, where a #GP is a
 * triple fault. Fast strings on (REP MOVS/STOS are the CPU's), BTS and
 * PEBS unavailable (no Debug Store); automatic thermal control, perfmon
 * (CPUID 0AH is 0), MONITOR (hidden), the CPUID limit and XD disable off.
 * A write of the value read is taken (an OS writing back what it read
 * runs); changing any bit is #GP: none is emulated. */
#define MSR_IA32_MISC_ENABLE 0x1a0u
#define MISC_ENABLE_VALUE    ((1ull << 0) | (1ull << 11) | (1ull << 12))

static int msr_misc_enable(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)v;
	(void)msr;
	if (!is_write) {
		*val = MISC_ENABLE_VALUE;
		return 0;
	}
	return *val == MISC_ENABLE_VALUE ? 0 : -1;
}

/* IA32_BIOS_SIGN_ID (0x8B): the microcode revision in bits 63:32. Linux
 * writes 0, runs CPUID and reads it; no update is ever loaded in a VM, so
 * every write is dropped and a read is revision 0. */
#define MSR_IA32_BIOS_SIGN_ID 0x8bu

void exit_register_cpu_msrs(struct vm *vm)
{
	const struct cpuid_host *h = cpuid_host();
	uint32_t r[4];
	vm->vcpu->tsc_adjust = 0;
	vm_register_msr(vm, MSR_IA32_TSC, 1, msr_tsc);
	cpuid_vm_view(7, 0, r);
	if (r[1] & CPUID7_EBX_TSC_ADJUST)
		vm_register_msr(vm, MSR_IA32_TSC_ADJUST, 1, msr_tsc_adjust);
	if (h->intel) {
		vm_register_msr(vm, MSR_INTEL_PMC0, PMU_INTEL_COUNTERS, msr_reads_zero);
		vm_register_msr(vm, MSR_INTEL_EVTSEL0, PMU_INTEL_COUNTERS, msr_reads_zero);
		vm_register_msr(vm, MSR_IA32_MISC_ENABLE, 1, msr_misc_enable);
		vm_register_msr(vm, MSR_IA32_BIOS_SIGN_ID, 1, msr_reads_zero);
	} else {
		vm_register_msr(vm, MSR_AMD_PERF_LEGACY, 2 * PMU_AMD_COUNTERS, msr_reads_zero);
	}
	vm_register_msr(vm, MSR_IA32_DEBUGCTL, 1, msr_debugctl);
}

void exit_register_msrs(struct vm *vm)
{
	vm->mtrr_def_type = 0;
	vm_register_msr(vm, MSR_IA32_MTRR_DEF_TYPE, 1, msr_mtrr_def_type);
	vm_register_msr(vm, MSR_EFER, 5, msr_cpu_state);              /* EFER, STAR..SFMASK */
	vm_register_msr(vm, MSR_KERNEL_GS_BASE, 1, msr_cpu_state);
	vm_register_msr(vm, MSR_IA32_SYSENTER_CS, 3, msr_cpu_state);  /* CS, ESP, EIP */
	vm_register_msr(vm, MSR_IA32_PAT, 1, msr_cpu_state);
	vm_register_msr(vm, MSR_IA32_MTRRCAP, 1, msr_mtrrcap);
	vm_register_msr(vm, MSR_AMD_NB_CFG, 1, msr_nb_cfg);
}
