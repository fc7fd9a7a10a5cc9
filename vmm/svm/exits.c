/* AMD SVM: every exit lightpath intercepts, in one table (what the exit
 * means is in the exit core, vmm/vcpu_exit.h), and the exit information
 * only this backend decodes. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/guest_mem.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

/* VMRUN refused the guest state: report what it was given. */
static void svm_heavy_invalid_state(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	vm_fault(v->vm, "VMRUN refused the guest state (VMEXIT_INVALID) at rip 0x%lx: cr0 0x%lx "
		 "cr3 0x%lx cr4 0x%lx efer 0x%lx cs 0x%x/0x%x rflags 0x%lx", vmcb->rip, vmcb->cr0,
		 vmcb->cr3, vmcb->cr4, vmcb->efer, vmcb->cs.sel, vmcb->cs.attrib, vmcb->rflags);
}

/* A CR0 write in long mode, which may switch paging off (docs/SECURITY.md,
 * case 5). The guest runs it again, now without the intercept, and the host
 * CR guard looks at the result at the next exit. */
static void svm_heavy_cr0_write(struct vcpu *v)
{
	svm_host_cr_guard(v, true);
	v->arch.vmcb.intercept_misc1 &= ~SVM_INTERCEPT_CR0_SEL_WRITE;
}

/* WBINVD/WBNOINVD exit, and INVD's under QEMU 7.2, which reports INVD as a
 * WBINVD exit (and ignores the INVD intercept): both are no-ops, the bytes
 * at RIP say which one to skip. */
static void svm_heavy_wbinvd(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (!(svm_has_nrip && vmcb->nrip)) {
		struct guest_paging pg;
		uint8_t buf[15];
		vendor_guest_paging(v, &pg);
		uint64_t lin = (pg.cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
		size_t got = guest_read_linear(v->vm, &pg, pg.cs_long ? lin : (lin & 0xffffffffull),
					       buf, sizeof(buf));
		if (insn_length_with_prefixes(buf, got, pg.cs_long, insn_invd.op, insn_invd.len)) {
			heavy_invd(v);
			return;
		}
	}
	heavy_wbinvd(v);
}

/* Every exit the VMCB's intercepts enable, in exit-code order. */
const struct exit_row vendor_exit_table[] = {
	EXIT_DR_ACCESS(SVM_EXIT_READ_DR0, SVM_EXIT_WRITE_DR15),
	/* no exception is intercepted yet */
	EXIT_ROW(SVM_EXIT_EXCP_BASE, SVM_EXIT_EXCP_BASE + 31, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_HOST_INTR(SVM_EXIT_INTR),
	EXIT_INTR_WINDOW(SVM_EXIT_VINTR),
	EXIT_ROW(SVM_EXIT_CR0_SEL_WRITE, SVM_EXIT_CR0_SEL_WRITE, LP_EXIT_OTHER, LIGHT_NONE,
		 svm_heavy_cr0_write),
	EXIT_RDPMC(SVM_EXIT_RDPMC),
	EXIT_CPUID(SVM_EXIT_CPUID),
	EXIT_INVD(SVM_EXIT_INVD),
	EXIT_HLT(SVM_EXIT_HLT),
	EXIT_VIRT_INSN(SVM_EXIT_INVLPGA, SVM_EXIT_INVLPGA),
	EXIT_IO(SVM_EXIT_IOIO),
	EXIT_MSR(SVM_EXIT_MSR),
	EXIT_TRIPLE_FAULT(SVM_EXIT_SHUTDOWN),
	EXIT_VIRT_INSN(SVM_EXIT_VMRUN, SVM_EXIT_VMRUN),
	EXIT_HYPERCALL(SVM_EXIT_VMMCALL),
	EXIT_VIRT_INSN(SVM_EXIT_VMLOAD, SVM_EXIT_SKINIT),   /* VMLOAD VMSAVE STGI CLGI SKINIT */
	EXIT_ROW(SVM_EXIT_WBINVD, SVM_EXIT_WBINVD, LP_EXIT_OTHER, LIGHT_NONE, svm_heavy_wbinvd),
	EXIT_NOT_OFFERED(SVM_EXIT_MONITOR, SVM_EXIT_MWAIT_COND),   /* MONITOR(X), MWAIT(X) */
	EXIT_NOT_OFFERED(SVM_EXIT_RDPRU, SVM_EXIT_RDPRU),
	EXIT_NESTED_FAULT(SVM_EXIT_NPF),
	EXIT_ROW(SVM_EXIT_INVALID, SVM_EXIT_INVALID, LP_EXIT_OTHER, LIGHT_NONE,
		 svm_heavy_invalid_state),
};
const unsigned vendor_exit_table_rows = sizeof(vendor_exit_table) / sizeof(vendor_exit_table[0]);

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
