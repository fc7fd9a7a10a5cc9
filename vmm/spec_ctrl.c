#include "vmm/spec_ctrl.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/options.h"
#include "vmm/io_registry.h"
#include "vmm/vm.h"

struct spec_caps spec_caps;
uint64_t host_spec_ctrl;




static uint32_t cpuid_reg(uint32_t leaf, unsigned reg)
{
	uint32_t r[4] = { 0 };
	cpuid(leaf & 0x80000000u, 0, r);
	if (r[0] < leaf)
		return 0;
	cpuid(leaf, 0, r);
	return r[reg];
}

void spec_init(const struct lp_options *o)
{
	struct spec_cpu cpu = { .intel = cpu_is_intel() };
	if (cpu.intel) {
		cpu.leaf7_edx = cpuid_reg(7, 3);
		if (cpu.leaf7_edx & SPEC_LEAF7_ARCH_CAP)
			cpu.arch_capabilities = rdmsr(MSR_IA32_ARCH_CAPABILITIES);
	} else {
		cpu.ext8_ebx = cpuid_reg(0x80000008u, 1);
		cpu.ext21_eax = cpuid_reg(0x80000021u, 0);
	}
	struct spec_plan plan = spec_plan(&cpu, o->spec);
	spec_caps = plan.caps;
	host_spec_ctrl = plan.host_spec_ctrl;
	if (plan.enable_auto_ibrs)
		wrmsr(MSR_EFER, rdmsr(MSR_EFER) | SPEC_EFER_AIBRSE);
	if (spec_caps.spec_ctrl && o->spec)
		wrmsr(MSR_IA32_SPEC_CTRL, host_spec_ctrl);
	if (!o->spec) {
		kprintf("lightpath: spec=off: no speculation hygiene on the exit path\n");
		return;
	}
	kprintf("lightpath: spec=on: return stack overwritten after each exit: %s; IBPB between "
		"VMs: %s; guest SPEC_CTRL switched: %s\n", plan.rsb_why,
		spec_caps.ibpb ? "yes" : "no (the CPU has no IBPB)",
		spec_caps.spec_ctrl ? "yes" : "no (the CPU has no SPEC_CTRL)");
}

void spec_init_ap(const struct lp_options *o)
{
	if (spec_caps.spec_ctrl && o->spec)
		wrmsr(MSR_IA32_SPEC_CTRL, host_spec_ctrl);
}

unsigned spec_entry_variant(const struct lp_options *o)
{
	if (!o->spec)
		return 0;
	return (unsigned)spec_caps.rsb * 2 + (spec_caps.spec_ctrl ? 1 : 0);
}

void spec_vm_switch(const struct lp_options *o)
{
	if (o->spec && spec_caps.ibpb)
		wrmsr(MSR_IA32_PRED_CMD, 1);
}

/* IA32_SPEC_CTRL: with spec=on the guest's value is kept in the vCPU and
 * the exit stub has it in the CPU only while the guest runs; with spec=off
 * it is written through (the guest's setting then stays in force in the
 * host: spec=off's "before"). Bits the CPU lacks give #GP, as on hardware. */
static int msr_spec_ctrl(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)msr;
	if (!is_write) {
		*val = v->spec_ctrl;
		return 0;
	}
	if (*val & ~spec_caps.spec_ctrl_valid)
		return -1;
	v->spec_ctrl = *val;
	if (!v->vm->opt->spec)
		wrmsr(MSR_IA32_SPEC_CTRL, *val);
	return 0;
}

/* IA32_PRED_CMD: write-only; bit 0 is IBPB, which the guest may ask for. */
static int msr_pred_cmd(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	(void)v;
	(void)msr;
	if (!is_write || (*val & ~1ull))
		return -1;
	if (*val)
		wrmsr(MSR_IA32_PRED_CMD, 1);
	return 0;
}

void spec_register_msrs(struct vm *vm)
{
	vm->vcpu->spec_ctrl = 0;   /* the reset value */
	if (spec_caps.spec_ctrl)
		vm_register_msr(vm, MSR_IA32_SPEC_CTRL, 1, msr_spec_ctrl);
	if (spec_caps.ibpb)
		vm_register_msr(vm, MSR_IA32_PRED_CMD, 1, msr_pred_cmd);
}
