/* The MSRs every VM has, with the checks the CPU makes on a WRMSR: a guest
 * value that would fault the real register gives the guest #GP and never
 * reaches the host's WRMSR. Where the guest's value lives (VMCB, VMCS, the
 * CPU itself) is the backend's business (vendor_msr_*). */
#include "core/cpu.h"
#include "vmm/exit.h"
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

static int msr_efer(struct vcpu *v, uint64_t *val, bool is_write)
{
	uint64_t efer = vendor_efer_read(v);
	if (!is_write) {
		*val = efer;
		return 0;
	}
	if (*val & ~(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE))
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

/* EFER, PAT, the syscall MSRs and SYSENTER_*: state the backend keeps. */
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
	/* The guest's value lives in exactly one place; writing anywhere else is
	 * seed 000's double-fault bug (the write is lost at the next switch).
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

void exit_register_msrs(struct vm *vm)
{
	/* first: the benchmark's MSR is looked up first */
	vm->mtrr_def_type = 0;
	vm_register_msr(vm, MSR_IA32_MTRR_DEF_TYPE, 1, msr_mtrr_def_type);
	vm_register_msr(vm, MSR_EFER, 5, msr_cpu_state);              /* EFER, STAR..SFMASK */
	vm_register_msr(vm, MSR_KERNEL_GS_BASE, 1, msr_cpu_state);
	vm_register_msr(vm, MSR_IA32_SYSENTER_CS, 3, msr_cpu_state);  /* CS, ESP, EIP */
	vm_register_msr(vm, MSR_IA32_PAT, 1, msr_cpu_state);
	vm_register_msr(vm, MSR_IA32_MTRRCAP, 1, msr_mtrrcap);
	vm_register_msr(vm, MSR_AMD_NB_CFG, 1, msr_nb_cfg);
}
