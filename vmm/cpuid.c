/* CPUID as the VM sees it on this host: the host's words through the policy
 * (vmm/cpuid_policy.c), lightpath's own leaves, and the bits that follow the
 * guest's state. The per-vCPU cache (vmm/vm.h) holds the leaves without
 * subleaves; the light path copies from it (vmm/exit.h). */
#include "vmm/cpuid.h"

#include "core/cpu.h"
#include "core/xstate.h"
#include "vmm/exit.h"
#include "vmm/spec_ctrl.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

static struct cpuid_host host;
static bool host_read;

static uint32_t spec_leaf7_edx(void)
{
	return (spec_caps.spec_ctrl && spec_caps.ibpb ? 1u << 26 : 0) |
	       (spec_caps.spec_ctrl_valid & SPEC_CTRL_STIBP ? 1u << 27 : 0) |
	       (spec_caps.spec_ctrl_valid & SPEC_CTRL_SSBD ? 1u << 31 : 0);
}

static uint32_t spec_ext8_ebx(void)
{
	return (spec_caps.ibpb ? SPEC_EXT8_IBPB : 0) |
	       (spec_caps.spec_ctrl_valid & SPEC_CTRL_IBRS ? SPEC_EXT8_IBRS : 0) |
	       (spec_caps.spec_ctrl_valid & SPEC_CTRL_STIBP ? SPEC_EXT8_STIBP : 0) |
	       (spec_caps.spec_ctrl_valid & SPEC_CTRL_SSBD ? SPEC_EXT8_SSBD : 0);
}

const struct cpuid_host *cpuid_host(void)
{
	if (host_read)
		return &host;
	uint32_t r[4];
	cpuid(0, 0, r);
	host.max_basic = r[0];
	host.intel = cpuid_vendor_is_intel(r);
	cpuid(0x80000000u, 0, r);
	host.max_ext = r[0] >= 0x80000000u ? r[0] : 0x80000000u;
	host.spec_leaf7_edx = host.intel ? spec_leaf7_edx() : 0;
	host.spec_ext8_ebx = host.intel ? 0 : spec_ext8_ebx();
	/* never a component lightpath does not reset between VMs */
	host.xcr0 = xstate_xcr0_supported & CPUID_XCR0_ALLOWED;
	uint32_t offset[64] = { 0 }, size[64] = { 0 };
	for (unsigned i = 2; i < 64; i++)
		if (host.xcr0 >> i & 1) {
			cpuid(0xd, i, r);
			size[i] = r[0];
			offset[i] = r[1];
			host.xsave_comp_size[i] = r[0];
			host.xsave_comp_align |= (uint64_t)(r[2] >> 1 & 1) << i;
		}
	host.xsave_size = cpuid_xsave_size(host.xcr0, offset, size);
	host_read = true;
	return &host;
}

void cpuid_vm_view(uint32_t leaf, uint32_t subleaf, uint32_t r[4])
{
	const struct cpuid_host *h = cpuid_host();
	cpuid(leaf, subleaf, r);
	cpuid_policy_apply(h, leaf, subleaf, r);
}

void exit_do_cpuid_uncached(struct vcpu *v)
{
	uint32_t leaf = (uint32_t)*vendor_rax(v), out[4];
	if (leaf == 1) {
		/* the cached leaf (its APIC bit kept current; every CPU with long
		 * mode has leaf 1) plus CR4.OSXSAVE (bit 18) as CPUID.1:ECX bit 27
		 * where XSAVE (bit 26) is shown */
		const uint32_t *l1 = v->cpuid_basic[1];
		uint32_t osxsave = (uint32_t)(vendor_guest_cr4(v) >> 18) & (l1[2] >> 26) & 1;
		out[0] = l1[0];
		out[1] = l1[1];
		out[2] = l1[2] | osxsave << 27;
		out[3] = l1[3];
	} else {
		exit_cpuid(v, leaf, (uint32_t)v->regs.rcx, out);
	}
	exit_cpuid_store(v, out);
}

void exit_cpuid(struct vcpu *v, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
	if ((leaf & 0xffff0000u) == LP_CPUID_BASE) {
		out[0] = out[1] = out[2] = out[3] = 0;
		if (leaf == LP_CPUID_BASE) {
			out[0] = LP_CPUID_MAX;
			out[1] = LP_CPUID_SIG_EBX;
			out[2] = LP_CPUID_SIG_ECX;
			out[3] = LP_CPUID_SIG_EDX;
		} else if (leaf == LP_CPUID_INFO) {
			out[0] = LP_ABI_VERSION;
			out[1] = options_config_bits(v->vm->opt);
		}
		return;
	}
	if (leaf == 1 && v->cpuid_basic_n > 1) {
		/* the cache keeps the APIC bit current; OSXSAVE is CR4's now */
		for (unsigned i = 0; i < 4; i++)
			out[i] = v->cpuid_basic[1][i];
	} else {
		cpuid_vm_view(leaf, subleaf, out);
		if (leaf == 0xb || leaf == 0x1f)
			out[3] = v->lapic.id;          /* x2APIC ID */
		else if (leaf == 0xd && subleaf == 1 && cpuid_host()->xcr0)
			/* computed, not the CPU's: Bochs 2.7 gives the standard
			 * form's size there. The guest's XCR0 lives in the CPU
			 * (vmm/cpu_state.h); its IA32_XSS is 0. */
			out[1] = cpuid_xsave_compacted_size(xgetbv(0) & cpuid_host()->xcr0,
							    cpuid_host()->xsave_comp_size,
							    cpuid_host()->xsave_comp_align);
		else if (leaf == 0x8000001eu)
			out[0] = v->lapic.id;          /* extended APIC ID */
	}
	cpuid_guest_state(leaf, subleaf, out, vendor_guest_cr4(v));
}

void exit_cpuid_cache_init(struct vcpu *v)
{
	uint32_t r[4];
	v->cpuid_basic_n = v->cpuid_ext_n = 0;
	cpuid_vm_view(0, 0, r);
	v->cpuid_basic_n = r[0] + 1 < CPUID_CACHED_LEAVES ? r[0] + 1 : CPUID_CACHED_LEAVES;
	for (uint32_t l = 0; l < v->cpuid_basic_n; l++)
		cpuid_vm_view(l, 0, v->cpuid_basic[l]);
	cpuid_vm_view(0x80000000u, 0, r);
	uint32_t n = r[0] >= 0x80000000u ? r[0] - 0x80000000u + 1 : 0;
	v->cpuid_ext_n = n < CPUID_CACHED_LEAVES ? n : CPUID_CACHED_LEAVES;
	for (uint32_t l = 0; l < v->cpuid_ext_n; l++)
		cpuid_vm_view(0x80000000u + l, 0, v->cpuid_ext[l]);
	/* the vCPU's initial APIC ID (the policy leaves 0) */
	if (v->cpuid_basic_n > 1)
		v->cpuid_basic[1][1] |= v->lapic.id << 24;
	if (v->cpuid_ext_n > 0x1e)
		v->cpuid_ext[0x1e][0] = v->lapic.id;
	exit_cpuid_apic_changed(v);
}

/* CPUID.1:EDX.APIC (and AMD's copy in CPUID.80000001H:EDX) is
 * IA32_APIC_BASE's global enable (SDM vol. 3 10.4.3, APM vol. 2 16.3.1). */
void exit_cpuid_apic_changed(struct vcpu *v)
{
	bool en = lapic_hw_enabled(&v->lapic);
	if (v->cpuid_basic_n > 1)
		v->cpuid_basic[1][3] = (v->cpuid_basic[1][3] & ~CPUID1_EDX_APIC) |
				       (en ? CPUID1_EDX_APIC : 0);
	if (v->cpuid_ext_n > 1 && !cpuid_host()->intel)
		v->cpuid_ext[1][3] = (v->cpuid_ext[1][3] & ~CPUID81_EDX_APIC) |
				     (en ? CPUID81_EDX_APIC : 0);
}
