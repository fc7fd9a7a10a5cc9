/* AMD SVM: every exit lightpath intercepts, in one table (what the exit
 * means is in the exit core, vmm/vcpu_exit.h), and the exit information
 * only this backend decodes. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/guest_mem.h"
#include "vmm/platform_intr.h"
#include "vmm/spec_ctrl.h"
#include "vmm/svm/debug.h"
#include "vmm/svm/exits.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

/* The guest's GPR n (x86 encoding order) on the heavy path. */
static uint64_t *svm_gpr(struct vcpu *v, unsigned n)
{
	struct guest_regs *r = &v->regs;
	uint64_t *const slots[16] = { &v->arch.vmcb.rax, &r->rcx, &r->rdx, &r->rbx,
				       &v->arch.vmcb.rsp, &r->rbp, &r->rsi, &r->rdi, &r->r8, &r->r9,
				       &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15 };
	return slots[n & 15];
}

/* Up to 15 bytes at CS:RIP through the guest's page tables; how many. */
static size_t fetch_at_rip(struct vcpu *v, uint8_t buf[15], struct guest_paging *pg)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	vendor_guest_paging(v, pg);
	uint64_t lin = (pg->cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
	return guest_read_linear(v->vm, pg, pg->cs_long ? lin : (lin & 0xffffffffull), buf, 15);
}

/* ---- VMEXIT_INVALID (docs/SECURITY.md, case 12) ---- */

/* CR4 bits this CPU has (a guest value with any other bit set is refused
 * by VMRUN, and faults a MOV to CR4), from CPUID as the APM defines them. */
static uint64_t cr4_supported(void)
{
	uint32_t l1[4], l7[4] = { 0, 0, 0, 0 };
	cpuid(0, 0, l1);
	if (l1[0] >= 7)
		cpuid(7, 0, l7);
	cpuid(1, 0, l1);
	uint64_t s = 0x7ff;                              /* VME ... OSXMMEXCPT */
	s |= (l7[2] >> 2 & 1) << 11;                     /* UMIP */
	s |= (l7[2] >> 16 & 1) << 12;                    /* LA57 */
	s |= (uint64_t)(l1[2] >> 5 & 1) << 13;           /* VMXE */
	s |= (uint64_t)(l1[2] >> 6 & 1) << 14;           /* SMXE */
	s |= (uint64_t)(l7[1] & 1) << 16;                /* FSGSBASE */
	s |= (uint64_t)(l1[2] >> 17 & 1) << 17;          /* PCIDE */
	s |= (uint64_t)(l1[2] >> 26 & 1) << 18;          /* OSXSAVE */
	s |= (uint64_t)(l7[1] >> 7 & 1) << 20;           /* SMEP */
	s |= (uint64_t)(l7[1] >> 20 & 1) << 21;          /* SMAP */
	s |= (uint64_t)(l7[2] >> 3 & 1) << 22;           /* PKE */
	s |= (uint64_t)(l7[2] >> 7 & 1) << 23;           /* CET */
	return s;
}

/* CR3 bits that must be 0: above the physical address width in long mode
 * (bit 63 is a MOV's no-flush flag, never stored), the high half else. */
static uint64_t cr3_reserved(uint64_t efer)
{
	uint32_t r[4];
	unsigned width = 36;
	cpuid(0x80000000u, 0, r);
	if (r[0] >= 0x80000008u) {
		cpuid(0x80000008u, 0, r);
		width = r[0] & 0xff;
	}
	return (efer & EFER_LMA) ? (~0ull << width) & ~(1ull << 63) : ~0ull << 32;
}

#define EFER_KNOWN (EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE | EFER_SVME)

/* The first of VMRUN's consistency checks (AMD APM vol. 2, 15.5.1) the
 * VMCB fails, or 0. lightpath sets the control fields itself; they are
 * checked all the same, since a failure there is a lightpath bug. */
static const char *svm_failed_check(const struct vmcb *vmcb)
{
	uint64_t efer = vmcb->efer, cr0 = vmcb->cr0, cr4 = vmcb->cr4;
	unsigned type = (vmcb->eventinj >> 8) & 7, vector = vmcb->eventinj & 0xff;
	if (!(efer & EFER_SVME))
		return "EFER.SVME=0";
	if (efer & ~EFER_KNOWN)
		return "reserved EFER bits";
	if ((cr0 & CR0_NW) && !(cr0 & CR0_CD))
		return "CR0.NW=1 with CR0.CD=0";
	if (cr0 >> 32)
		return "CR0 bits 63:32 set";
	if (vmcb->cr3 & cr3_reserved(efer))
		return "reserved CR3 bits";
	if (cr4 & ~cr4_supported())
		return "reserved CR4 bits";
	if ((vmcb->dr6 | vmcb->dr7) >> 32)
		return "DR6 or DR7 bits 63:32 set";
	if ((efer & EFER_LME) && (cr0 & CR0_PG) && !(cr4 & CR4_PAE))
		return "EFER.LME=1 and CR0.PG=1 with CR4.PAE=0";
	if ((efer & EFER_LME) && (cr0 & CR0_PG) && !(cr0 & CR0_PE))
		return "EFER.LME=1 and CR0.PG=1 with CR0.PE=0";
	if ((efer & EFER_LME) && (cr0 & CR0_PG) && (cr4 & CR4_PAE) &&
	    (vmcb->cs.attrib & SVM_SEG_ATTR_L) && (vmcb->cs.attrib & SVM_SEG_ATTR_DB))
		return "long mode with CS.L=1 and CS.D=1";
	if (!(vmcb->intercept_misc2 & SVM_INTERCEPT_VMRUN))
		return "the VMRUN intercept is clear";
	if (!vmcb->asid)
		return "ASID 0";
	if ((vmcb->eventinj & SVM_EVTINJ_VALID) &&
	    (type == 1 || type > 4 || (type == 3 && (vector > 31 || vector == 2))))
		return "an invalid event in EVENTINJ";
	return 0;
}

/* A MOV to CR3 or CR4 at RIP whose value has a reserved bit set. QEMU 7.2
 * reports that MOV as VMEXIT_INVALID (with the guest state intact, RIP at
 * the MOV) instead of raising #GP in the guest, as a CPU does. */
static bool mov_cr_reserved_at_rip(struct vcpu *v)
{
	struct guest_paging pg;
	uint8_t b[15];
	size_t got = fetch_at_rip(v, b, &pg), i = 0;
	unsigned rex = 0;
	while (i < got && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0x2e || b[i] == 0x3e ||
			   b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65))
		i++;
	if (pg.cs_long && i < got && (b[i] & 0xf0) == 0x40)
		rex = b[i++];
	if (i + 3 > got || b[i] != 0x0f || b[i + 1] != 0x22)
		return false;
	unsigned cr = ((b[i + 2] >> 3) & 7) | ((rex & 4) << 1), gpr = (b[i + 2] & 7) | ((rex & 1) << 3);
	uint64_t val = *svm_gpr(v, gpr);
	if (!pg.cs_long)
		val = (uint32_t)val;
	if (cr == 3)
		return val & cr3_reserved(v->arch.vmcb.efer) & ~(1ull << 63);
	return cr == 4 && (val & ~cr4_supported());
}

extern const uint64_t svm_vmrun_sites[SPEC_ENTRY_VARIANTS];   /* vmm/svm/entry.S */

static bool at_lightpath_vmrun(uint64_t rip)
{
	for (unsigned i = 0; i < SPEC_ENTRY_VARIANTS; i++)
		if (rip == svm_vmrun_sites[i])
			return true;
	return false;
}

/* VMEXIT_INVALID. If the VMCB passes every check and the guest is at a MOV
 * to CR3/CR4 with a reserved bit, it is QEMU's report of that MOV: #GP(0),
 * as a CPU would raise. Otherwise the VM is stopped with what VMRUN
 * refused; QEMU 7.2 has written the host's state over it when it refused
 * the guest's CR0 (checked before the guest state is loaded), which leaves
 * RIP at lightpath's VMRUN. */
void svm_heavy_invalid_state(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	if (at_lightpath_vmrun(vmcb->rip)) {
		vm_fault(v->vm, "VMRUN refused the guest state (VMEXIT_INVALID) and left the host's "
			 "state in the VMCB (QEMU 7.2): the refused values are lost; the one check "
			 "made before loading them that a guest can fail is CR0.NW=1 with CR0.CD=0");
		return;
	}
	const char *check = svm_failed_check(vmcb);
	if (!check && mov_cr_reserved_at_rip(v)) {
		vendor_inject_exception(v, 13, true, 0);
		return;
	}
	vm_fault(v->vm, "VMRUN refused the guest state (VMEXIT_INVALID): %s; rip 0x%lx cs 0x%x/0x%x "
		 "rflags 0x%lx cr0 0x%lx cr3 0x%lx cr4 0x%lx efer 0x%lx dr6 0x%lx dr7 0x%lx "
		 "eventinj 0x%lx", check ? check : "no check lightpath knows fails", vmcb->rip,
		 vmcb->cs.sel, vmcb->cs.attrib, vmcb->rflags, vmcb->cr0, vmcb->cr3, vmcb->cr4,
		 vmcb->efer, vmcb->dr6, vmcb->dr7, vmcb->eventinj);
}

/* A CR0 write in long mode, which may switch paging off (docs/SECURITY.md,
 * case 5). The guest runs it again, now without the intercept, and the host
 * CR guard looks at the result at the next exit. */
void svm_heavy_cr0_write(struct vcpu *v)
{
	svm_host_cr_guard(v, true);
	v->arch.vmcb.intercept_misc1 &= ~SVM_INTERCEPT_CR0_SEL_WRITE;
}

/* WBINVD/WBNOINVD exit, and INVD's under QEMU 7.2, which reports INVD as a
 * WBINVD exit (and ignores the INVD intercept): both are no-ops, the bytes
 * at RIP say which one to skip. */
void svm_heavy_wbinvd(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (!(svm_has_nrip && vmcb->nrip)) {
		struct guest_paging pg;
		uint8_t buf[15];
		size_t got = fetch_at_rip(v, buf, &pg);
		if (insn_length_with_prefixes(buf, got, pg.cs_long, insn_invd.op, insn_invd.len)) {
			heavy_invd(v);
			return;
		}
	}
	heavy_wbinvd(v);
}

/* MOV to or from CR8, the local APIC's TPR (vmm/platform_intr.c). Without decode
 * assists the register is in the instruction: legacy prefixes, REX (64-bit
 * mode), 0F 22 (to) or 0F 20 (from), ModRM with reg = 0 + REX.R = CR8, or
 * LOCK with reg = 0 (AMD's AltMovCr8, CPUID 0x80000001 ECX bit 4, the way
 * legacy-mode code reaches CR8). ModRM.rm is the GPR whatever ModRM.mod says. */
void svm_heavy_cr8(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool write = (uint32_t)vmcb->exitcode == SVM_EXIT_WRITE_CR8;
	struct guest_paging pg;
	uint8_t b[15];
	size_t got = fetch_at_rip(v, b, &pg);
	unsigned i = 0, rex = 0;
	bool lock = false;
	for (; i < got; i++) {
		uint8_t c = b[i];
		if (pg.cs_long && (c & 0xf0) == 0x40) {
			rex = c;
			continue;
		}
		if (c == 0xf0)
			lock = true;
		else if (c != 0x66 && c != 0x67 && c != 0x2e && c != 0x3e && c != 0x26 &&
			 c != 0x36 && c != 0x64 && c != 0x65 && c != 0xf2 && c != 0xf3)
			break;
		rex = 0;   /* a REX that is not last is ignored */
	}
	unsigned modrm = i + 3 <= got ? b[i + 2] : 0;
	unsigned cr = ((modrm >> 3) & 7) | ((rex & 4) << 1);
	if (lock && cr == 0)
		cr = 8;
	if (i + 3 > got || b[i] != 0x0f || b[i + 1] != (write ? 0x22 : 0x20) || cr != 8) {
		vm_fault(v->vm, "cannot decode the MOV %s CR8 at rip 0x%lx (%zu bytes readable)",
			 write ? "to" : "from", vmcb->rip, got);
		return;
	}
	uint64_t *reg = svm_gpr(v, (modrm & 7) | ((rex & 1) << 3));
	if (write) {
		if (platform_cr8_write(v, pg.cs_long ? *reg : (uint32_t)*reg)) {
			vendor_inject_exception(v, 13, true, 0);
			return;
		}
	} else {
		*reg = platform_cr8_read(v);
	}
	uint64_t next = svm_has_nrip && vmcb->nrip ? vmcb->nrip : vmcb->rip + i + 3;
	vmcb->rip = pg.cs_long ? next : (next & 0xffffffffull);
	exit_insn_completed(v);
}

/* ---- NMIs without vNMI (the hooks are in arch_exit.h) ---- */

void svm_nmi_step(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	v->arch.nmi_stepping = true;
	v->arch.nmi_step_iret = v->arch.nmi_blocked;   /* blocked here: RIP is at the IRET */
	v->arch.nmi_step_tf = vmcb->rflags & RFLAGS_TF;
	v->arch.nmi_step_rip = vmcb->rip;
	v->arch.nmi_step_dr6 = vmcb->dr6;
	v->arch.nmi_step_db_intercept = vmcb->intercept_exc & SVM_INTERCEPT_EXC_DB;
	vmcb->dr6 &= ~(DR6_BS | 0xfull);   /* so that the #DB says what it was for */
	vmcb->rflags |= RFLAGS_TF;
	vmcb->intercept_exc |= SVM_INTERCEPT_EXC_DB;
}

/* RFLAGS.TF (unless an IRET popped it) and the #DB intercept as they were. */
static void svm_nmi_step_end(struct vcpu *v, bool over_iret)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	v->arch.nmi_stepping = false;
	if (!v->arch.nmi_step_db_intercept)
		vmcb->intercept_exc &= ~SVM_INTERCEPT_EXC_DB;
	if (!over_iret)
		vmcb->rflags = (vmcb->rflags & ~RFLAGS_TF) | (v->arch.nmi_step_tf ? RFLAGS_TF : 0);
}

void svm_nmi_step_cancel(struct vcpu *v)
{
	svm_nmi_step_end(v, false);
	v->arch.vmcb.dr6 = v->arch.nmi_step_dr6;
}

/* The guest's NMI handler is about to IRET (the intercept comes before it
 * runs): from now on, the guest being elsewhere means it has run. An NMI
 * that waits gets its window now (a step over the IRET). */
void svm_heavy_iret(struct vcpu *v)
{
	v->arch.vmcb.intercept_misc1 &= ~SVM_INTERCEPT_IRET;
	v->arch.nmi_iret_seen = true;
	v->arch.nmi_iret_rip = v->arch.vmcb.rip;
	v->pending |= VCPU_PENDING_RECHECK;
}

/* #DB and #AC, intercepted so that a delivery that faults again is a VM exit
 * each time, go to the guest as the CPU would have delivered them: the CPU
 * has left RIP where the exception puts it (a fault at the instruction, a
 * #DB trap after it) and written the guest's DR6 into the VMCB (B0-B3, BD,
 * BS); #AC's error code is 0. An event whose delivery the exit interrupted
 * (EXITINTINFO, re-injected by vendor_heavy_begin) goes first: if it raises
 * the same exception again, that is the next exit. Each round lets the
 * host's timer in, so the VM's time limit ends a delivery loop. */
void svm_heavy_reflect_exception(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	unsigned vector = (unsigned)(vmcb->exitcode - SVM_EXIT_EXCP_BASE);
	if (!(vmcb->eventinj & SVM_EVTINJ_VALID) && !(vmcb->exitintinfo & SVM_EVTINJ_VALID))
		vendor_inject_exception(v, vector, vector == 17, 0);
	heavy_host_intr(v);
}

/* #DB: the end of an NMI step (a trap after the stepped instruction: the
 * guest moved on, and QEMU sets DR6.BS, Bochs does not), or the guest's own
 * #DB (its TF, a breakpoint), which it gets with DR6 as the CPU set it and
 * nothing of the step left in it. */
static void svm_nmi_step_result(struct vcpu *v, uint64_t hit)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool stepped = (hit & DR6_BS) || vmcb->rip != v->arch.nmi_step_rip;
	bool guest_tf = v->arch.nmi_step_tf;
	svm_nmi_step_end(v, stepped && v->arch.nmi_step_iret);
	if (stepped && v->arch.nmi_step_iret)
		v->arch.nmi_blocked = v->arch.nmi_iret_seen = false;   /* the IRET has run */
	vmcb->dr6 = v->arch.nmi_step_dr6 | (hit & ~(stepped && !guest_tf ? DR6_BS : 0));
	if (!stepped || guest_tf || (hit & 0xf))
		vendor_inject_exception(v, 1, false, 0);
	v->pending |= VCPU_PENDING_RECHECK;
}

void svm_heavy_db(struct vcpu *v)
{
	if (v->arch.nmi_stepping)
		svm_nmi_step_result(v, v->arch.vmcb.dr6);
	else
		svm_heavy_reflect_exception(v);
}

/* The step over an instruction lightpath completed: if lightpath was
 * stepping for an NMI window, that step is over (the guest's #DB only if its
 * own TF was set); otherwise the guest's TF: DR6.BS, as the CPU sets it. */
void vendor_single_step_trap(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (v->arch.nmi_stepping) {
		svm_nmi_step_result(v, DR6_BS);
		return;
	}
	vmcb->dr6 |= DR6_BS;
	vendor_clear_interrupt_shadow(v);
	vendor_inject_exception(v, 1, false, 0);
}

void vendor_unexpected_exit(struct vcpu *v)
{
	vm_fault(v->vm, "unexpected exit 0x%lx at rip 0x%lx", v->arch.vmcb.exitcode,
		 v->arch.vmcb.rip);
}

/* Without NRIP save, the bytes at RIP are read through a guest page walk and
 * decoded (prefixes included); the code-page cache is refilled on the way,
 * so the light path finds the page next time. */
uint64_t vendor_next_rip_slow(struct vcpu *v, struct insn_pattern p)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (svm_has_nrip && vmcb->nrip)
		return vmcb->nrip;
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t lin = (pg.cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
	if (!pg.cs_long)
		lin &= 0xffffffffull;
	uint8_t buf[15];
	size_t got = guest_read_linear(v->vm, &pg, lin, buf, sizeof(buf));
	unsigned len = insn_length_with_prefixes(buf, got, pg.cs_long, p.op, p.len);
	if (!len) {
		vm_fault(v->vm, "cannot decode the instruction at rip 0x%lx (%zu bytes readable)",
			 vmcb->rip, got);
		return 0;
	}
	code_cache_fill(v);
	uint64_t next = vmcb->rip + len;
	return pg.cs_long ? next : (next & 0xffffffffull);
}
