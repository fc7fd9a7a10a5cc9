/* AMD SVM: the CPU checks, EFER.SVME and the host save areas, and the parts
 * of the run loop that touch GIF and the VMLOAD state. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "vmm/exit_setup.h"
#include "vmm/spec_ctrl.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

/* The light loops (vmm/svm/entry.S): [armed][spec= variant], armed for a
 * guest with breakpoints enabled (vmm/svm/debug.h), the variants in the
 * order vmm/spec_ctrl.h gives. */
typedef void svm_light_loop_fn(struct vcpu *v);
extern svm_light_loop_fn *const svm_light_loops[2][SPEC_ENTRY_VARIANTS];

bool svm_has_nrip;
bool svm_has_vnmi;
bool svm_inject_virq;

/* QEMU's TCG says so at CPUID 0x40000000 (behind the hypervisor bit). */
static bool cpu_is_qemu_tcg(void)
{
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!(r[2] & (1u << 31)))
		return false;
	cpuid(0x40000000, 0, r);
	return r[1] == 0x54474354u && r[2] == 0x43544743u && r[3] == 0x47435447u;   /* TCGTCGTCGTCG */
}

const char *vendor_name(void)
{
	return "AMD SVM";
}

int vendor_cpu_init(const struct lp_options *opt)
{
	(void)opt;
	uint32_t r[4];
	cpuid(0x80000000, 0, r);
	uint32_t max_ext = r[0];
	bool svm = false, npt = false;
	if (max_ext >= 0x80000001) {
		cpuid(0x80000001, 0, r);
		svm = r[2] & (1u << 2);
	}
	if (svm && max_ext >= 0x8000000a) {
		cpuid(0x8000000a, 0, r);
		npt = r[3] & 1u;
		svm_has_nrip = r[3] & (1u << 3);
		svm_has_vnmi = r[3] & (1u << 25);
	}
	if (!svm || !npt) {
		kprintf("lightpath: this CPU has no AMD SVM with nested paging\n");
		return -1;
	}
	if (rdmsr(MSR_VM_CR) & (1u << 4)) {
		kprintf("lightpath: SVM is disabled by the firmware (VM_CR.SVMDIS is set)\n");
		return -1;
	}
	state_switch_init();   /* the host's syscall MSRs, which every CPU loads */
	if (vendor_cpu_alloc(this_cpu()) < 0) {
		kprintf("lightpath: error: out of memory setting up SVM\n");
		return -1;
	}
	vendor_cpu_virt_on(this_cpu());   /* SVMDIS is clear: checked above */
	svm_inject_virq = cpu_is_qemu_tcg();
	kprintf("lightpath: AMD SVM with nested paging; next RIP from %s%s\n",
		svm_has_nrip ? "the CPU (NRIP save)" : "lightpath's own decoding (no NRIP save)",
		svm_inject_virq ? "; QEMU's TCG: interrupts go in as virtual interrupts" : "");
	return 0;
}

/* Each CPU has its own host save area (the CPU writes host state there at
 * VMRUN) and its own VMSAVE area for its host FS/GS/TR/syscall MSRs, which
 * the vCPUs pinned to it reload (v->arch.host_vmstate_pa). */
int vendor_cpu_alloc(struct percpu *pc)
{
	pc->virt_pa[0] = pmem_alloc(4096, 4096);
	pc->virt_pa[1] = pmem_alloc(4096, 4096);
	return pc->virt_pa[0] && pc->virt_pa[1] ? 0 : -1;
}

const char *vendor_cpu_virt_on(struct percpu *pc)
{
	if (rdmsr(MSR_VM_CR) & (1u << 4))
		return "SVM is disabled by the firmware on this CPU (VM_CR.SVMDIS is set)";
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	wrmsr(MSR_VM_HSAVE_PA, pc->virt_pa[0]);
	state_switch_init_ap();   /* the boot CPU's syscall MSRs, before VMSAVE takes them */
	svm_vmsave(pc->virt_pa[1]);
	return 0;
}

unsigned vendor_switch_bits(const struct lp_options *o)
{
	return (o->vmload_lazy ? 0 : SW_VMLOAD_ALWAYS) | (svm_has_nrip ? SW_NRIP : 0);
}

void vendor_enter_guest(struct vcpu *v)
{
	/* Host interrupts stay pending while GIF=0 (all of the light loop); with
	 * RFLAGS.IF=1 at VMRUN one arriving in the guest causes an INTR exit. */
	asm volatile("clgi; sti" ::: "memory");
	svm_light_loops[v->arch.armed][v->entry_variant](v);
}

void vendor_host_interrupt_window(void)
{
	asm volatile("stgi; nop; clgi" ::: "memory");
}

void vendor_host_idle_state(void)
{
	asm volatile("cli; stgi" ::: "memory");
}

void vendor_host_wait_for_interrupt(void)
{
	/* RFLAGS.IF is 1 on the heavy path (see vendor_enter_guest): without the
	 * cli, a pending timer interrupt would be taken at stgi and the hlt would
	 * then wait for one that never comes. sti's shadow makes "sti; hlt"
	 * race-free; IF is left at 1 for the next VMRUN. */
	asm volatile("cli; stgi; sti; hlt; cli; clgi; sti" ::: "memory");
}

/* ---- the host's control registers after #VMEXIT (docs/SECURITY.md, case 5) ----
 *
 * #VMEXIT reloads CR0, CR3, CR4 and EFER from the host save area, switching
 * long mode back on when the guest had left it. QEMU 7.2 skips the CR0 reload
 * when the guest left EFER.LME=1 with CR0.PG=0 and CR4.PAE=0 (a legal state),
 * and lightpath would run on with the guest's CR0, paging off. So while a
 * guest has EFER.LME=1 with paging off, every exit goes through
 * svm_light_host_cr_guard first, which loads the host's values itself. A
 * guest gets there only through intercepted exits (a WRMSR to EFER, a CR0
 * write in long mode): no other guest's exits change. */

static uint64_t host_cr0, host_cr3, host_cr4, host_efer;

void svm_host_cr_capture(void)
{
	host_cr0 = read_cr0();
	host_cr3 = read_cr3();
	host_cr4 = read_cr4();
	host_efer = rdmsr(MSR_EFER);
}

/* In the order that turns long mode on from any state a #VMEXIT can leave:
 * EFER.LME and CR4.PAE before CR0.PG. Rewriting values that are already
 * right (a CPU without the bug) is harmless. */
static void host_cr_reload(void)
{
	wrmsr(MSR_EFER, host_efer);
	asm volatile("mov %0, %%cr4" ::"r"(host_cr4) : "memory");
	asm volatile("mov %0, %%cr3" ::"r"(host_cr3) : "memory");
	asm volatile("mov %0, %%cr0" ::"r"(host_cr0) : "memory");
}

static light_ret svm_light_host_cr_guard(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	if ((vmcb->efer & EFER_LME) && !(vmcb->cr0 & CR0_PG))
		host_cr_reload();
	const struct exit_row *row = exit_row_of(vendor_exit_code(v));
	unsigned sw = v->arch.guard_sw;
	svm_host_cr_watch(v);   /* back in long mode, or LME cleared: the guard goes */
	return exit_light_handler(v, sw, row)(v);
}

void svm_host_cr_guard(struct vcpu *v, bool on)
{
	if (on == v->arch.host_cr_guard)
		return;
	v->arch.host_cr_guard = on;
	if (!on) {
		exit_light_table_fill(v, v->arch.guard_sw);
		return;
	}
	v->arch.guard_sw = exit_switch_set(v->vm->opt);
	for (unsigned c = 0; c < VENDOR_EXIT_CODES; c++)
		v->light_table[c] = svm_light_host_cr_guard;
}

void svm_host_cr_watch(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool lme = vmcb->efer & EFER_LME, pg = vmcb->cr0 & CR0_PG;
	svm_host_cr_guard(v, lme && !pg);
	/* in long mode, paging goes off only by a CR0 write: see it coming */
	if (lme && pg)
		vmcb->intercept_misc1 |= SVM_INTERCEPT_CR0_SEL_WRITE;
	else
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_CR0_SEL_WRITE;
}
