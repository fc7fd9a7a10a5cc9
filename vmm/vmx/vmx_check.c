/* Naming the field behind a failed VM entry. The CPU says only which class
 * of check failed (VM-instruction error 7 = controls, 8 = host state, exit
 * reason 0x80000021 = guest state); lightpath re-runs the checks it knows
 * (Intel SDM vol. 3, "Checks on VMX Controls and Host-State Area" and
 * "Checking and Loading Guest State") on the current VMCS and reports the
 * first field that breaks one. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "lib/printf.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

struct finding {
	uint32_t field;
	uint64_t value;
	const char *what;
};

static uint64_t rd(uint32_t f)
{
	uint64_t v = 0;
	vmread_ok(f, &v);
	return v;
}

/* Records the first failed check; returns true when this one failed. */
static bool fail(struct finding *f, uint32_t field, const char *what)
{
	if (!f->field) {
		f->field = field;
		f->value = rd(field);
		f->what = what;
	}
	return true;
}

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* The CPU's physical-address width (CPUID 0x80000008, 36 if absent). */
static unsigned phys_bits(void)
{
	uint32_t r[4];
	cpuid(0x80000000u, 0, r);
	if (r[0] < 0x80000008u)
		return 36;
	cpuid(0x80000008u, 0, r);
	return r[0] & 0xff;
}

static void check_ctl(struct finding *f, uint32_t field, struct vmx_ctl_cap c)
{
	uint32_t v = (uint32_t)rd(field);
	if ((v & c.must) != c.must)
		fail(f, field, "a bit the capability MSR fixes to 1 is clear");
	else if (v & ~c.may)
		fail(f, field, "a bit the capability MSR fixes to 0 is set");
}

static void check_controls(struct finding *f)
{
	const struct vmx_caps *c = &vmx_caps;
	check_ctl(f, VMCS_PIN_CONTROLS, c->pin);
	check_ctl(f, VMCS_PROC_CONTROLS, c->proc);
	check_ctl(f, VMCS_EXIT_CONTROLS, c->exit);
	check_ctl(f, VMCS_ENTRY_CONTROLS, c->entry);
	uint32_t proc = (uint32_t)rd(VMCS_PROC_CONTROLS);
	uint32_t proc2 = (proc & PROC_SECONDARY_CONTROLS) ? (uint32_t)rd(VMCS_PROC_CONTROLS2) : 0;
	if (proc & PROC_SECONDARY_CONTROLS)
		check_ctl(f, VMCS_PROC_CONTROLS2, c->proc2);
	if ((proc & PROC_USE_IO_BITMAPS) && (rd(VMCS_IO_BITMAP_A) & 0xfff))
		fail(f, VMCS_IO_BITMAP_A, "not 4 KiB aligned");
	if ((proc & PROC_USE_IO_BITMAPS) && (rd(VMCS_IO_BITMAP_B) & 0xfff))
		fail(f, VMCS_IO_BITMAP_B, "not 4 KiB aligned");
	if ((proc & PROC_USE_MSR_BITMAPS) && (rd(VMCS_MSR_BITMAP) & 0xfff))
		fail(f, VMCS_MSR_BITMAP, "not 4 KiB aligned");
	if (rd(VMCS_CR3_TARGET_COUNT) > ((c->misc >> 16) & 0x1ff))
		fail(f, VMCS_CR3_TARGET_COUNT, "more CR3 targets than IA32_VMX_MISC allows");
	if ((proc2 & PROC2_ENABLE_VPID) && rd(VMCS_VPID) == 0)
		fail(f, VMCS_VPID, "VPID enabled with VPID 0");
	if ((proc2 & PROC2_UNRESTRICTED_GUEST) && !(proc2 & PROC2_ENABLE_EPT))
		fail(f, VMCS_PROC_CONTROLS2, "unrestricted guest without EPT");
	if (proc2 & PROC2_ENABLE_EPT) {
		uint64_t eptp = rd(VMCS_EPT_POINTER);
		if ((eptp & 7) != EPTP_WB && (eptp & 7) != 0)
			fail(f, VMCS_EPT_POINTER, "memory type neither UC nor WB");
		if (((eptp >> 3) & 7) != 3)
			fail(f, VMCS_EPT_POINTER, "page-walk length is not 4");
		if (eptp & 0xf80)
			fail(f, VMCS_EPT_POINTER, "reserved bits 11:7 set");
	}
	uint64_t ii = rd(VMCS_ENTRY_INTR_INFO);
	if (ii & VMX_INTR_INFO_VALID) {
		unsigned type = (ii >> 8) & 7, vec = ii & 0xff;
		if (type == 1 || (type == 3 && vec > 31) || (type == 2 && vec != 2))
			fail(f, VMCS_ENTRY_INTR_INFO, "type and vector do not fit together");
		if (ii & 0x7ffff000u)
			fail(f, VMCS_ENTRY_INTR_INFO, "reserved bits 30:12 set");
	}
}

static void check_host(struct finding *f)
{
	const struct vmx_caps *c = &vmx_caps;
	uint64_t cr0 = rd(VMCS_HOST_CR0), cr4 = rd(VMCS_HOST_CR4);
	if ((cr0 & c->cr0_fixed0) != c->cr0_fixed0 || (cr0 & ~c->cr0_fixed1))
		fail(f, VMCS_HOST_CR0, "breaks IA32_VMX_CR0_FIXED0/1");
	if ((cr4 & c->cr4_fixed0) != c->cr4_fixed0 || (cr4 & ~c->cr4_fixed1))
		fail(f, VMCS_HOST_CR4, "breaks IA32_VMX_CR4_FIXED0/1");
	if (!(cr4 & CR4_PAE))
		fail(f, VMCS_HOST_CR4, "PAE clear for a 64-bit host");
	static const uint32_t sels[] = { VMCS_HOST_ES_SEL, VMCS_HOST_CS_SEL, VMCS_HOST_SS_SEL,
					 VMCS_HOST_DS_SEL, VMCS_HOST_FS_SEL, VMCS_HOST_GS_SEL,
					 VMCS_HOST_TR_SEL };
	for (unsigned i = 0; i < sizeof(sels) / sizeof(sels[0]); i++)
		if (rd(sels[i]) & 7)
			fail(f, sels[i], "RPL or TI not 0");
	if (rd(VMCS_HOST_CS_SEL) == 0)
		fail(f, VMCS_HOST_CS_SEL, "selector 0");
	if (rd(VMCS_HOST_TR_SEL) == 0)
		fail(f, VMCS_HOST_TR_SEL, "selector 0");
	static const uint32_t bases[] = { VMCS_HOST_FS_BASE, VMCS_HOST_GS_BASE, VMCS_HOST_TR_BASE,
					  VMCS_HOST_GDTR_BASE, VMCS_HOST_IDTR_BASE, VMCS_HOST_RIP,
					  VMCS_HOST_SYSENTER_ESP, VMCS_HOST_SYSENTER_EIP };
	for (unsigned i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (!canonical(rd(bases[i])))
			fail(f, bases[i], "not canonical");
	uint32_t exit_ctl = (uint32_t)rd(VMCS_EXIT_CONTROLS);
	if (!(exit_ctl & EXIT_HOST_ADDR_SPACE_SIZE))
		fail(f, VMCS_EXIT_CONTROLS, "host address-space size clear for a 64-bit host");
	if (exit_ctl & EXIT_LOAD_EFER) {
		uint64_t efer = rd(VMCS_HOST_EFER);
		if (efer & ~(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE))
			fail(f, VMCS_HOST_EFER, "reserved bits set");
		if (!(efer & EFER_LMA) || !(efer & EFER_LME))
			fail(f, VMCS_HOST_EFER, "LMA/LME clear for a 64-bit host");
	}
}

/* One segment register n (ES..TR order) outside virtual-8086 mode: in
 * protected mode, and with unrestricted guest in real mode too (an AP's
 * start at its STARTUP vector), where the SDM checks the same access
 * rights (and DPLs, check_guest). ug: unrestricted guest, which alone
 * allows a CS of type 3 (a real-mode data segment). */
static void check_seg(struct finding *f, unsigned n, bool ia32e, bool ug)
{
	static const char *const seg_names[8] = { "ES", "CS", "SS", "DS", "FS", "GS", "LDTR", "TR" };
	(void)seg_names;
	uint32_t arf = VMCS_GUEST_ES_AR + 2 * n, limf = VMCS_GUEST_ES_LIMIT + 2 * n;
	uint32_t ar = (uint32_t)rd(arf), limit = (uint32_t)rd(limf);
	if (ar & VMX_AR_UNUSABLE) {
		if (n == 1 || n == 7)
			fail(f, arf, "CS and TR cannot be unusable");
		return;
	}
	if (ar & 0xfffe0f00u)
		fail(f, arf, "reserved access-rights bits set");
	if (!(ar & 0x80))
		fail(f, arf, "not present");
	bool g = ar & (1u << 15);
	if ((limit & 0xfff) != 0xfff && g)
		fail(f, arf, "G set but limit bits 11:0 not all 1");
	if ((limit >> 20) && !g)
		fail(f, arf, "G clear but limit above 1 MiB");
	unsigned type = ar & 15;
	if (n == 1) {
		if (!(ar & 0x10) || !(type & 8 || (type == 3 && ug)))
			fail(f, arf, ug ? "CS is not a code segment (type 9, 11, 13, 15 or 3)"
					: "CS is not a code segment (type 9, 11, 13 or 15)");
		if (type == 3 && (ar & 0x60))
			fail(f, arf, "CS of type 3 (real mode) with DPL not 0");
		if (ia32e && (ar & (1u << 13)) && (ar & (1u << 14)))
			fail(f, arf, "CS has both L and D/B set");
	} else if (n == 7) {
		if ((ar & 0x10) || (type != 11 && (ia32e || type != 3)))
			fail(f, arf, "TR is not a busy TSS");
	} else if (n == 6) {
		if ((ar & 0x10) || type != 2)
			fail(f, arf, "LDTR is not an LDT");
	} else {
		if (!(ar & 0x10) || ((type & 8) && !(type & 2)))
			fail(f, arf, "data segment type not accessed/readable");
		if (n == 2 && type != 3 && type != 7)
			fail(f, arf, "SS is not a writable data segment");
	}
}

/* Virtual-8086 mode: every segment but LDTR and TR is what a real-mode
 * load of its selector gives (base selector << 4, limit 0xffff, AR 0xf3). */
static void check_seg_v86(struct finding *f)
{
	for (unsigned n = 0; n < 6; n++) {
		uint32_t sel = (uint32_t)rd(VMCS_GUEST_ES_SEL + 2 * n);
		if (rd(VMCS_GUEST_ES_BASE + 2 * n) != (uint64_t)sel << 4)
			fail(f, VMCS_GUEST_ES_BASE + 2 * n, "virtual-8086 mode: base is not selector << 4");
		if (rd(VMCS_GUEST_ES_LIMIT + 2 * n) != 0xffff)
			fail(f, VMCS_GUEST_ES_LIMIT + 2 * n, "virtual-8086 mode: limit is not 0xffff");
		if (rd(VMCS_GUEST_ES_AR + 2 * n) != 0xf3)
			fail(f, VMCS_GUEST_ES_AR + 2 * n, "virtual-8086 mode: access rights are not 0xf3");
	}
	for (unsigned n = 6; n < 8; n++)
		check_seg(f, n, false, true);
}

static void check_guest(struct finding *f)
{
	const struct vmx_caps *c = &vmx_caps;
	uint32_t proc2 = (uint32_t)rd(VMCS_PROC_CONTROLS2);
	uint32_t entry = (uint32_t)rd(VMCS_ENTRY_CONTROLS);
	bool ug = proc2 & PROC2_UNRESTRICTED_GUEST;
	bool ia32e = entry & ENTRY_IA32E_MODE_GUEST;
	uint64_t cr0 = rd(VMCS_GUEST_CR0), cr4 = rd(VMCS_GUEST_CR4);
	uint64_t fixed0 = c->cr0_fixed0 & (ug ? ~(CR0_PE | CR0_PG) : ~0ull);
	if ((cr0 & fixed0) != fixed0 || (cr0 & ~c->cr0_fixed1))
		fail(f, VMCS_GUEST_CR0, "breaks IA32_VMX_CR0_FIXED0/1");
	if ((cr0 & CR0_PG) && !(cr0 & CR0_PE))
		fail(f, VMCS_GUEST_CR0, "PG set without PE");
	if ((cr4 & c->cr4_fixed0) != c->cr4_fixed0 || (cr4 & ~c->cr4_fixed1))
		fail(f, VMCS_GUEST_CR4, "breaks IA32_VMX_CR4_FIXED0/1");
	if (ia32e && (!(cr0 & CR0_PG) || !(cr4 & CR4_PAE)))
		fail(f, VMCS_ENTRY_CONTROLS, "IA-32e mode guest without CR0.PG and CR4.PAE");
	if (!ia32e && (cr4 & CR4_PCIDE))
		fail(f, VMCS_GUEST_CR4, "PCIDE set outside IA-32e mode");
	if (rd(VMCS_GUEST_CR3) >> phys_bits())
		fail(f, VMCS_GUEST_CR3, "bits beyond the physical-address width set");
	if ((entry & ENTRY_LOAD_DEBUG_CONTROLS) && (rd(VMCS_GUEST_DR7) >> 32))
		fail(f, VMCS_GUEST_DR7, "bits 63:32 set");
	if (entry & ENTRY_LOAD_EFER) {
		uint64_t efer = rd(VMCS_GUEST_EFER);
		if (efer & ~(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE))
			fail(f, VMCS_GUEST_EFER, "reserved bits set");
		if (!!(efer & EFER_LMA) != ia32e)
			fail(f, VMCS_GUEST_EFER, "LMA differs from the IA-32e mode guest entry control");
		if ((cr0 & CR0_PG) && !!(efer & EFER_LME) != !!(efer & EFER_LMA))
			fail(f, VMCS_GUEST_EFER, "LME differs from LMA with paging on");
	}
	if (entry & ENTRY_LOAD_PAT) {
		uint64_t pat = rd(VMCS_GUEST_PAT);
		for (unsigned i = 0; i < 8; i++) {
			unsigned t = (pat >> (8 * i)) & 0xff;
			if (t == 2 || t == 3 || t > 7)
				fail(f, VMCS_GUEST_PAT, "an entry holds an invalid memory type");
		}
	}
	uint64_t rfl = rd(VMCS_GUEST_RFLAGS);
	/* (real mode without unrestricted guest already broke CR0's fixed bits) */
	if ((cr0 & CR0_PE) && (rfl & RFLAGS_VM)) {
		check_seg_v86(f);
	} else {
		for (unsigned n = 0; n < 8; n++)
			check_seg(f, n, ia32e, ug);
		uint32_t cs_ar = (uint32_t)rd(VMCS_GUEST_CS_AR), ss_ar = (uint32_t)rd(VMCS_GUEST_SS_AR);
		unsigned cs_type = cs_ar & 15, cs_dpl = (cs_ar >> 5) & 3, ss_dpl = (ss_ar >> 5) & 3;
		/* non-conforming code: SS.DPL = CS.DPL; conforming: CS.DPL <= SS.DPL */
		if (!(ss_ar & VMX_AR_UNUSABLE) && (cs_type == 9 || cs_type == 11) && cs_dpl != ss_dpl)
			fail(f, VMCS_GUEST_SS_AR, "SS.DPL differs from CS.DPL");
		if (!(ss_ar & VMX_AR_UNUSABLE) && (cs_type == 13 || cs_type == 15) && cs_dpl > ss_dpl)
			fail(f, VMCS_GUEST_CS_AR, "conforming CS with DPL above SS.DPL");
		if (!(ss_ar & VMX_AR_UNUSABLE) && (!(cr0 & CR0_PE) || cs_type == 3) && ss_dpl)
			fail(f, VMCS_GUEST_SS_AR, "SS.DPL not 0 with CR0.PE clear or a CS of type 3");
	}
	uint32_t cs_ar = (uint32_t)rd(VMCS_GUEST_CS_AR);
	uint64_t rip = rd(VMCS_GUEST_RIP);
	if (!(ia32e && (cs_ar & (1u << 13))) && (rip >> 32))
		fail(f, VMCS_GUEST_RIP, "bits 63:32 set outside 64-bit mode");
	if (!(rfl & 2) || (rfl & 0xffffffffffc08028ull))
		fail(f, VMCS_GUEST_RFLAGS, "bit 1 clear or a reserved bit set");
	if (ia32e && (rfl & RFLAGS_VM))
		fail(f, VMCS_GUEST_RFLAGS, "VM set in IA-32e mode");
	uint64_t act = rd(VMCS_GUEST_ACTIVITY_STATE), is = rd(VMCS_GUEST_INTERRUPTIBILITY);
	if (act > 3)
		fail(f, VMCS_GUEST_ACTIVITY_STATE, "not a defined activity state");
	if (is & ~0x1full)
		fail(f, VMCS_GUEST_INTERRUPTIBILITY, "reserved bits set");
	if ((is & 3) == 3)
		fail(f, VMCS_GUEST_INTERRUPTIBILITY, "blocking by both STI and MOV SS");
	if ((is & 1) && !(rfl & RFLAGS_IF))
		fail(f, VMCS_GUEST_INTERRUPTIBILITY, "blocking by STI with RFLAGS.IF clear");
	uint64_t ii = rd(VMCS_ENTRY_INTR_INFO);
	if ((ii & VMX_INTR_INFO_VALID) && ((ii >> 8) & 7) == 0 && ((is & 3) || !(rfl & RFLAGS_IF)))
		fail(f, VMCS_ENTRY_INTR_INFO, "external interrupt injected while the guest blocks it");
	if (rd(VMCS_LINK_POINTER) != ~0ull)
		fail(f, VMCS_LINK_POINTER, "not all ones (no shadow VMCS is used)");
	if (!canonical(rd(VMCS_GUEST_FS_BASE)))
		fail(f, VMCS_GUEST_FS_BASE, "not canonical");
	if (!canonical(rd(VMCS_GUEST_GS_BASE)))
		fail(f, VMCS_GUEST_GS_BASE, "not canonical");
	/* in IA-32e mode the CPU uses these bases as 64-bit linear addresses */
	static const uint32_t bases64[] = { VMCS_GUEST_TR_BASE, VMCS_GUEST_LDTR_BASE,
					    VMCS_GUEST_GDTR_BASE, VMCS_GUEST_IDTR_BASE };
	for (unsigned i = 0; i < sizeof(bases64) / sizeof(bases64[0]); i++)
		if (!canonical(rd(bases64[i])))
			fail(f, bases64[i], "not canonical");
	if (rd(VMCS_GUEST_GDTR_LIMIT) >> 16)
		fail(f, VMCS_GUEST_GDTR_LIMIT, "above 0xffff");
	if (rd(VMCS_GUEST_IDTR_LIMIT) >> 16)
		fail(f, VMCS_GUEST_IDTR_LIMIT, "above 0xffff");
}

void vmx_explain_entry_failure(unsigned insn_error, uint32_t exit_reason, char *buf, size_t len)
{
	struct finding f = { 0, 0, 0 };
	const char *cls;
	char head[96];
	if (exit_reason) {
		unsigned basic = exit_reason & 0xffff;
		cls = basic == VMX_EXIT_INVALID_GUEST_STATE ? "invalid guest state"
		      : basic == VMX_EXIT_MSR_LOADING    ? "MSR loading"
							 : "machine check";
		snprintf(head, sizeof(head), "VM entry failed: %s (exit reason 0x%x)", cls, exit_reason);
		check_guest(&f);
	} else {
		snprintf(head, sizeof(head), "VM entry failed: VM-instruction error %u (%s)", insn_error,
			 vmx_insn_error_name(insn_error));
		if (insn_error == 7)
			check_controls(&f);
		else if (insn_error == 8)
			check_host(&f);
	}
	if (f.field) {
		const char *name = vmcs_field_name(f.field);
		snprintf(buf, len, "%s: field %s (0x%x) = 0x%lx: %s", head, name ? name : "?", f.field,
			 f.value, f.what);
	} else {
		snprintf(buf, len, "%s: no check lightpath knows names the field", head);
	}
}
