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

#define ROW(code, stat, light, heavy) { code, code, stat, light, heavy }

const struct exit_row vendor_exit_table[] = {
	{ SVM_EXIT_READ_DR0, SVM_EXIT_WRITE_DR15, LP_EXIT_DR_ACCESS, LIGHT_NONE, heavy_dr_first_use },
	{ SVM_EXIT_EXCP_BASE, SVM_EXIT_EXCP_BASE + 31, LP_EXIT_EXCEPTION, LIGHT_NONE,
	  vendor_unexpected_exit },   /* no exception is intercepted yet */
	ROW(SVM_EXIT_INTR, LP_EXIT_INTR, LIGHT_HOST_INTR, heavy_host_intr),
	ROW(SVM_EXIT_VINTR, LP_EXIT_VINTR, LIGHT_INTR_WINDOW, heavy_intr_window),
	ROW(SVM_EXIT_CPUID, LP_EXIT_CPUID, LIGHT_CPUID, heavy_cpuid),
	ROW(SVM_EXIT_INVD, LP_EXIT_OTHER, LIGHT_NONE, heavy_invd),
	ROW(SVM_EXIT_HLT, LP_EXIT_HLT, LIGHT_HLT, heavy_hlt),
	ROW(SVM_EXIT_INVLPGA, LP_EXIT_VIRT_INSN, LIGHT_NONE, heavy_undefined_opcode),
	ROW(SVM_EXIT_IOIO, LP_EXIT_IO, LIGHT_IO, heavy_io),
	/* the light handler counts reads and writes apart */
	ROW(SVM_EXIT_MSR, LP_EXIT_MSR_READ, LIGHT_MSR, heavy_msr),
	ROW(SVM_EXIT_SHUTDOWN, LP_EXIT_SHUTDOWN, LIGHT_NONE, heavy_triple_fault),
	ROW(SVM_EXIT_VMRUN, LP_EXIT_VIRT_INSN, LIGHT_NONE, heavy_undefined_opcode),
	ROW(SVM_EXIT_VMMCALL, LP_EXIT_HYPERCALL, LIGHT_HYPERCALL, heavy_hypercall),
	{ SVM_EXIT_VMLOAD, SVM_EXIT_SKINIT, LP_EXIT_VIRT_INSN, LIGHT_NONE,
	  heavy_undefined_opcode },   /* VMLOAD VMSAVE STGI CLGI SKINIT */
	ROW(SVM_EXIT_NPF, LP_EXIT_NPF, LIGHT_NPF, heavy_npf),
	ROW(SVM_EXIT_INVALID, LP_EXIT_OTHER, LIGHT_NONE, svm_heavy_invalid_state),
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
