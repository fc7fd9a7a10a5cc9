/* What spec=on does on a given CPU: a pure function of its CPUID words (and
 * IA32_ARCH_CAPABILITIES), so the host unit tests can run it for CPUs this
 * machine cannot emulate. */
#include "vmm/spec_ctrl.h"

#define ARCH_CAP_IBRS_ALL (1ull << 1)   /* enhanced IBRS */
#define ARCH_CAP_PBRSB_NO (1ull << 24)  /* no post-barrier RSB prediction */

static struct spec_plan plan_intel(const struct spec_cpu *c, bool spec)
{
	struct spec_plan p = { 0 };
	uint32_t edx = c->leaf7_edx;
	p.caps.spec_ctrl = edx & SPEC_LEAF7_IBRS_IBPB;
	p.caps.ibpb = edx & SPEC_LEAF7_IBRS_IBPB;
	p.caps.spec_ctrl_valid = (p.caps.spec_ctrl ? SPEC_CTRL_IBRS : 0) |
				 ((edx & SPEC_LEAF7_STIBP) ? SPEC_CTRL_STIBP : 0) |
				 ((edx & SPEC_LEAF7_SSBD) ? SPEC_CTRL_SSBD : 0);
	uint64_t cap = (edx & SPEC_LEAF7_ARCH_CAP) ? c->arch_capabilities : 0;
	if ((cap & ARCH_CAP_IBRS_ALL) && p.caps.spec_ctrl) {
		/* enhanced IBRS, left on: RSB entries from the guest cannot steer
		 * the host, but the last CALL before the exit can (PBRSB) */
		if (spec)
			p.host_spec_ctrl = SPEC_CTRL_IBRS;
		if (cap & ARCH_CAP_PBRSB_NO) {
			p.caps.rsb = SPEC_RSB_NONE;
			p.rsb_why = "none (enhanced IBRS, no PBRSB)";
		} else {
			p.caps.rsb = SPEC_RSB_LITE;
			p.rsb_why = "one CALL (enhanced IBRS with PBRSB)";
		}
		return p;
	}
	p.caps.rsb = SPEC_RSB_FULL;
	p.rsb_why = "32 entries (no enhanced IBRS)";
	return p;
}

static struct spec_plan plan_amd(const struct spec_cpu *c, bool spec)
{
	struct spec_plan p = { 0 };
	uint32_t ebx = c->ext8_ebx;
	p.caps.ibpb = ebx & SPEC_EXT8_IBPB;
	p.caps.spec_ctrl_valid = ((ebx & SPEC_EXT8_IBRS) ? SPEC_CTRL_IBRS : 0) |
				 ((ebx & SPEC_EXT8_STIBP) ? SPEC_CTRL_STIBP : 0) |
				 ((ebx & SPEC_EXT8_SSBD) ? SPEC_CTRL_SSBD : 0);
	p.caps.spec_ctrl = p.caps.spec_ctrl_valid != 0;
	if (c->ext21_eax & SPEC_EXT21_AUTO_IBRS) {
		/* Automatic IBRS: the host is IBRS-protected and the CPU clears
		 * the RSB at #VMEXIT itself */
		p.enable_auto_ibrs = spec;
		p.caps.rsb = SPEC_RSB_NONE;
		p.rsb_why = "none (Automatic IBRS clears it)";
		return p;
	}
	p.caps.rsb = SPEC_RSB_FULL;
	p.rsb_why = "32 entries (no Automatic IBRS)";
	return p;
}

struct spec_plan spec_plan(const struct spec_cpu *c, bool spec)
{
	return c->intel ? plan_intel(c, spec) : plan_amd(c, spec);
}
