/* AMD SVM: every exit lightpath intercepts, in one table (what the exit
 * means is in the exit core, vmm/vcpu_exit.h), and the exit information
 * only this backend decodes. */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/guest_mem.h"
#include "vmm/svm/debug.h"
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

/* #DB and #AC, intercepted so that a delivery that faults again is a VM exit
 * each time, go to the guest as the CPU would have delivered them: the CPU
 * has left RIP where the exception puts it (a fault at the instruction, a
 * #DB trap after it) and written the guest's DR6 into the VMCB (B0-B3, BD,
 * BS); #AC's error code is 0. An event whose delivery the exit interrupted
 * (EXITINTINFO, re-injected by vendor_heavy_begin) goes first: if it raises
 * the same exception again, that is the next exit. Each round lets the
 * host's timer in, so the VM's time limit ends a delivery loop. */
static void svm_heavy_reflect_exception(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	unsigned vector = (unsigned)(vmcb->exitcode - SVM_EXIT_EXCP_BASE);
	if (!(vmcb->eventinj & SVM_EVTINJ_VALID))
		vendor_inject_exception(v, vector, vector == 17, 0);
	heavy_host_intr(v);
}

/* Every exit the VMCB's intercepts enable, in exit-code order. */
const struct exit_row vendor_exit_table[] = {
	EXIT_DR_ACCESS(SVM_EXIT_READ_DR0, SVM_EXIT_WRITE_DR0 - 1),
	EXIT_ROW(SVM_EXIT_WRITE_DR0, SVM_EXIT_WRITE_DR0 + 7, LP_EXIT_DR_ACCESS, LIGHT_NONE,
		 svm_heavy_dr_write),   /* DR7 (DR5), and DR0-3 while armed: vmm/svm/debug.c */
	EXIT_DR_ACCESS(SVM_EXIT_WRITE_DR0 + 8, SVM_EXIT_WRITE_DR15),
	EXIT_ROW(SVM_EXIT_EXCP_BASE, SVM_EXIT_EXCP_DB - 1, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_ROW(SVM_EXIT_EXCP_DB, SVM_EXIT_EXCP_DB, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 svm_heavy_reflect_exception),
	EXIT_ROW(SVM_EXIT_EXCP_DB + 1, SVM_EXIT_EXCP_AC - 1, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_ROW(SVM_EXIT_EXCP_AC, SVM_EXIT_EXCP_AC, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 svm_heavy_reflect_exception),
	EXIT_ROW(SVM_EXIT_EXCP_AC + 1, SVM_EXIT_EXCP_BASE + 31, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_HOST_INTR(SVM_EXIT_INTR),
	EXIT_INTR_WINDOW(SVM_EXIT_VINTR),
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
