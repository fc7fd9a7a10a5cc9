/* The heavy path, written once for both backends: the handlers the exit
 * tables name for exits the light loop left unhandled (the instruction
 * emulator's glue is vmm/heavy_emulate.c), interrupt delivery, and the lazy
 * halves of the state switch. Every heavy pass ends in exit_heavy, which
 * injects what is due. */
#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/xstate.h"
#include "emul/io_intercept.h"
#include "vmm/code_cache.h"
#include "vmm/cpu_state.h"
#include "vmm/exit.h"
#include "vmm/heavy_emulate.h"
#include "vmm/io_registry.h"
#include "vmm/pc_virtio.h"
#include "vmm/platform_intr.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vcpu_run.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vm_timers.h"

/* ---- the state switch, lazy halves (the "always" halves run per exit) ---- */

void vcpu_state_enter(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	if (!o->pmu_lazy || v->vm->has_vpmu)
		vendor_pmu_load_guest(v);
	if (!o->dr_lazy || v->dr_dirty)
		vendor_dr_load_guest(v);
	vendor_guest_msrs_enter(v);
}

void vcpu_state_leave(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	vendor_guest_msrs_leave(v);
	if (o->dr_lazy && v->dr_dirty)
		vendor_dr_save_guest_load_host(v);
	if (o->pmu_lazy && v->vm->has_vpmu)
		vendor_pmu_save_guest_load_host(v);
}

/* ---- interrupts ---- */

/* An interrupt injected with RIP at a HLT is taken after the HLT, as if it
 * had come a moment later, while the CPU halted (a timing a CPU may always
 * choose): the guest returns past the HLT instead of halting again. `sti;
 * hlt` needs it: QEMU 7.2 takes the virtual interrupt of a window inside the
 * STI shadow, and takes a host interrupt's exit there too, reporting no
 * shadow (an INTR exit with RIP at the HLT, shadow 0, whose timer then fired
 * the guest's one-shot); injected at the HLT, the handler returned to it and
 * the guest halted with its wake-up already handled (the irqonce guest
 * under host load). Only exits of those two kinds leave
 * RIP at a HLT the guest has not run yet (an exit that completed an
 * instruction moved RIP on; a HLT there is the guest's to run, after the
 * interrupt, as on a CPU), so the code byte is read only after the rows
 * counted as `intr` and `vintr` (host interrupts and VT-x's preemption
 * timer; interrupt, NMI and TPR windows and SVM's IRET): it cost every other
 * injection about 58 instructions (self_ipi under tools/bench.py, on a
 * throwaway build without the check). */
static void inject_completes_hlt(struct vcpu *v)
{
	const struct exit_row *row = exit_row_of(vendor_exit_code(v));
	if (!row || (row->stat != LP_EXIT_INTR && row->stat != LP_EXIT_VINTR))
		return;
	/* With RFLAGS.TF the HLT never halts (heavy_hlt), so the interrupt is
	 * taken at it as at any boundary; completed here, its single-step #DB
	 * would come one instruction late, after the interrupt (a trap
	 * outranks it: tfstep's "hlt with an interrupt waiting"). */
	if (vendor_guest_tf(v))
		return;
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t rip = vendor_guest_rip(v);
	const uint8_t *p = code_cache_at_rip(v, pg.cr3, pg.cr0, rip);
	if (!p || *p != 0xf4)
		return;
	rip += 1;
	vendor_set_rip(v, pg.cs_long ? rip : (rip & 0xffffffffull));
	exit_insn_completed(v);
}

static void inject_interrupts(struct vcpu *v)
{
	if (v->vm->clock.polling)   /* every exit while the guest polls its clocks */
		guest_clock_after_exit(v);
	/* An NMI first: it outranks every maskable interrupt and IF does not
	 * hold it. It waits while the guest blocks NMIs (its last NMI's handler
	 * has not returned by IRET yet), for an interrupt shadow, or behind an
	 * event already queued: then the backend brings an exit as soon as it
	 * can be taken. */
	if (platform_nmi_pending(v)) {
		if (vendor_nmi_injectable(v)) {
			platform_nmi_ack(v);
			vendor_inject_nmi(v);
			vendor_nmi_window(v, false);
		} else {
			vendor_nmi_window(v, true);
		}
	}
	if (lapic_cpu_delivers(&v->lapic))
		platform_irq_retry(v);
	if (!platform_intr_requested(v)) {
		vendor_intr_window(v, false);
		return;
	}
	/* an exception or a re-injected event goes first; the window exit that
	 * follows it brings the interrupt */
	if (!vendor_intr_injectable(v)) {
		bool from_pic, test;
		vendor_intr_window(v, platform_intr_pending(v, &from_pic, &test) >= 0);
		return;
	}
	int vec = platform_intr_take(v);   /* pending and acknowledged in one pass */
	if (vec >= 0) {
		inject_completes_hlt(v);
		vendor_inject_intr(v, (uint8_t)vec);
	}
	vendor_intr_window(v, false);
}

void exit_inject_interrupts(struct vcpu *v)
{
	inject_interrupts(v);
	/* what the TPR holds back now: lowering it must bring an exit where
	 * the guest can do that without one (VT-x's TPR shadow) */
	vendor_apic_sync(v);
}

int exit_raise_test_irq(struct vcpu *v, uint8_t vector)
{
	if (v->test_irq)
		return -1;
	v->test_irq = vector;
	v->pending |= VCPU_PENDING_RECHECK;
	return 0;
}

/* ---- the heavy handlers ---- */

/* Skips the instruction `p` at RIP for the guest (the VM is stopped if the
 * bytes there are not that instruction). */
static void heavy_skip(struct vcpu *v, struct insn_pattern p)
{
	uint64_t next = vendor_next_rip_slow(v, p);
	if (next) {
		vendor_set_rip(v, next);
		exit_insn_completed(v);   /* an STI/MOV SS shadow ends with the instruction */
	}
}

void heavy_hypercall(struct vcpu *v)
{
	uint64_t next = vendor_next_rip_slow(v, insn_hypercall);
	if (next) {
		exit_hypercall(v, vendor_rax(v));
		vendor_set_rip(v, next);
		exit_insn_completed(v);
	}
}

void heavy_cpuid(struct vcpu *v)
{
	uint64_t next = vendor_next_rip_slow(v, insn_cpuid);
	if (next) {
		exit_do_cpuid(v);
		vendor_set_rip(v, next);
		exit_insn_completed(v);
	}
}

void heavy_msr(struct vcpu *v)
{
	bool wr = vendor_exit_msr_write(v);
	uint64_t next = vendor_next_rip_slow(v, insn_msr(wr));
	if (next && !exit_do_msr(v, wr)) {   /* (never MSR_NEEDS_LOCK here: vm_shared_ok) */
		vendor_set_rip(v, next);
		exit_insn_completed(v);
	}
}

/* IN/OUT to a device that runs on the heavy path only. */
static __attribute__((noinline)) void heavy_port_io(struct vcpu *v, uint16_t port, unsigned size,
						    bool in)
{
	exit_port_io(v, port, size, in, vendor_rax(v));
	vendor_set_rip(v, vendor_exit_io_next_rip(v));
	exit_insn_completed(v);
}

void heavy_io(struct vcpu *v)
{
	struct io_intercept io;
	vendor_exit_io(v, &io);
	if (v->vm->opt->io_fast && !io.string) {
		heavy_port_io(v, io.port, io.size, io.in);
		return;
	}
	/* io=emulate (every port I/O is fetched, decoded
	 * and performed by the instruction emulator; the exit information only
	 * cross-checks what it decoded), or string I/O */
	io.next_rip = vendor_exit_io_next_rip(v);
	heavy_emulate(v, io.string && v->vm->opt->io_fast ? HEAVY_EMUL_STRING_IO : HEAVY_EMUL_PORT_IO,
		      0, &io);
}

/* What ends a HLT: an interrupt with IF=1 (one the CPU will deliver itself
 * too: virtual-interrupt delivery), or an NMI the guest can take, whatever
 * IF says. */
static bool hlt_wakes(struct vcpu *v, bool if1)
{
	bool from_pic, test;
	return (if1 && (vendor_intr_in_flight(v) || platform_intr_pending(v, &from_pic, &test) >= 0 ||
			(lapic_cpu_delivers(&v->lapic) && lapic_highest_pending(&v->lapic) >= 0))) ||
	       (platform_nmi_pending(v) && !vendor_nmi_blocked(v));
}

/* A blocking HLT: sleep until a timer or input makes an interrupt pending.
 * With IF=0 only an NMI can wake it: the VM is stopped unless one waits or
 * an I/O APIC pin is in NMI mode. */
void heavy_hlt(struct vcpu *v)
{
	if (vendor_guest_tf(v)) {   /* the single-step #DB is an event: no halt (as KVM) */
		heavy_skip(v, insn_hlt);
		return;
	}
	struct vm *vm = v->vm;
	bool if1 = vendor_rflags(v) & RFLAGS_IF;
	/* with several vCPUs another can always send an IPI, an NMI or INIT */
	bool smp = vm->nr_vcpus > 1;
	bool can_wake = if1 || platform_nmi_source(v) || smp;
	bool kickable = smp || pc_virtio_kick_source(vm);   /* another CPU can give it work */
	guest_clock_halt(vm);   /* its time passes while it waits */
	while (can_wake && !hlt_wakes(v, if1) && (vm->nr_timers || kickable) && !vm->ended &&
	       !v->lapic.init_pending) {
		vm_unlock(vm);   /* (held with several vCPUs: vmm/vm.c vcpu_run) */
		vendor_host_wait_for_interrupt();
		vm_lock_vcpu(vm);
		host_nmis_report();
		vcpu_take_notices(v);
		vm_timers_run(vm);
	}
	if (vm->ended || v->lapic.init_pending)
		return;
	if (hlt_wakes(v, if1)) {
		heavy_skip(v, insn_hlt);
		v->pending |= VCPU_PENDING_RECHECK;   /* exit_heavy delivers what woke it */
	} else {
		vm_fault(v->vm, "HLT at rip 0x%lx with no interrupt pending and no interrupt source "
			 "that could wake it (RFLAGS.IF=%u)", vendor_guest_rip(v),
			 (unsigned)((vendor_rflags(v) >> 9) & 1));
	}
}

void heavy_host_intr(struct vcpu *v)
{
	vendor_host_interrupt_window();
	if (v->vm->nr_vcpus == 1)   /* (several: vcpu_heavy_enter took them) */
		vcpu_take_notices(v);
	vm_timers_run(v->vm);
}

/* A physical NMI arrived while the guest ran: it is the host's, and the
 * guest never sees it (docs/SECURITY.md). It waits in the CPU (SVM: GIF is
 * 0 after the exit) and the host's interrupt window lets lightpath's own
 * NMI handler take it (core/idt.c); anything else pending comes in too. */
void heavy_host_nmi(struct vcpu *v)
{
	heavy_host_intr(v);
	host_nmis_report();
}

/* The interrupt window opened: exit_heavy injects what waits. */
void heavy_intr_window(struct vcpu *v)
{
	vendor_intr_window(v, false);
	v->pending |= VCPU_PENDING_RECHECK;
}

/* The guest can take an NMI now (VT-x NMI-window exiting). */
void heavy_nmi_window(struct vcpu *v)
{
	vendor_nmi_window(v, false);
	v->pending |= VCPU_PENDING_RECHECK;
}

/* (inlined into both callers: an EPT violation's MMIO stays one call) */
static inline __attribute__((always_inline)) void mmio_fault(struct vcpu *v,
							      const struct npf_info f)
{
	uint64_t rip = vendor_guest_rip(v);
	/* An address nobody claims reads all-ones and drops writes, as on a PC
	 * (the emulator performs the access: vm_mmio_access); unclaimed=stop
	 * stops the VM instead. */
	bool claimed = vm_find_mmio(v->vm, f.gpa);
	if (!claimed && v->vm->unclaimed_stop)
		vm_fault(v->vm, "guest-physical access to 0x%lx outside its RAM and devices at "
			 "rip 0x%lx (unclaimed=stop)", f.gpa, rip);
	else if (f.in_event_delivery)   /* the IDT, stack or TSS in MMIO */
		vm_fault(v->vm, "delivering an interrupt or exception touched %s at 0x%lx "
			 "(rip 0x%lx)", claimed ? "MMIO" : "an unclaimed address", f.gpa, rip);
	else if (!f.final_access)
		vm_fault(v->vm, "the guest's page tables point into %s at 0x%lx (rip 0x%lx)",
			 claimed ? "MMIO" : "an unclaimed address", f.gpa, rip);
	else if (f.fetch)   /* QEMU sets the fetch bit only with EFER.NXE: without
			       it the emulator's fetch finds the GPA (heavy_emulate) */
		vm_fault(v->vm, "executing code at guest-physical 0x%lx, %s, at rip 0x%lx",
			 f.gpa, claimed ? "a device's MMIO" : "outside its RAM and devices", rip);
	else
		heavy_emulate(v, HEAVY_EMUL_MMIO, f.gpa, 0);
}

void heavy_npf(struct vcpu *v)
{
	struct npf_info f;
	vendor_exit_npf(v, &f);
	mmio_fault(v, f);
}

void heavy_mmio_fault(struct vcpu *v, const struct npf_info *f)
{
	mmio_fault(v, *f);
}

/* INVD: nothing cached to lose under nested paging: a no-op. */
void heavy_invd(struct vcpu *v)
{
	heavy_skip(v, insn_invd);
}

/* XSETBV, as the CPU executes it (SDM vol. 2 XSETBV, vol. 1 13.3; AMD APM
 * vol. 3 XSETBV): #UD without CR4.OSXSAVE or without XSAVE in the VM's
 * CPUID (an emulator may exit before checking either); #GP(0) at CPL > 0,
 * for an XCR other than 0 and for a value XSETBV refuses, judged against
 * the components the VM's CPUID leaf 0xD offers. AMD CPUs check the
 * intercept before CPL, QEMU (8.2 on) before CPL and CR4.OSXSAVE. The
 * value goes into the CPU at once: the host uses no XSAVE-managed state. */
void heavy_xsetbv(struct vcpu *v)
{
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t offered = vcpu_xcr0_offered(v);
	if (!(pg.cr4 & CR4_OSXSAVE) || !offered) {
		vendor_inject_exception(v, 6, false, 0);
		return;
	}
	uint64_t next = vendor_next_rip_slow(v, insn_xsetbv);
	if (!next)
		return;
	uint64_t val = (uint32_t)*vendor_rax(v) | (uint64_t)(uint32_t)v->regs.rdx << 32;
	if (vendor_cpl(v) || (uint32_t)v->regs.rcx || !xcr0_valid(val, offered)) {
		vendor_inject_exception(v, 13, true, 0);
		return;
	}
	xsetbv(0, val);   /* its only home (vmm/cpu_state.h) */
	vendor_set_rip(v, next);
	exit_insn_completed(v);
}

/* WBINVD, WBNOINVD: guest RAM is ordinary write-back memory the caches keep
 * coherent, and no device of the guest's writes memory behind them, so no
 * cache state is the guest's to flush: a no-op. Run natively it would write
 * back and drop the whole CPU's caches, the host's and other VMs' lines
 * included, with interrupts held off meanwhile. */
void heavy_wbinvd(struct vcpu *v)
{
	heavy_skip(v, insn_wbinvd);
}

/* RDPMC: the VM's counters, which never count (no vPMU, exit_rdpmc): 0 for
 * a counter the CPU has, #GP(0) for others or at CPL > 0 without CR4.PCE.
 * Run natively it would read the physical counters, which count for the
 * host and every VM. */
void heavy_rdpmc(struct vcpu *v)
{
	uint64_t val;
	if (exit_rdpmc(v, &val)) {
		vendor_inject_exception(v, 13, true, 0);
		return;
	}
	*vendor_rax(v) = (uint32_t)val;
	v->regs.rdx = val >> 32;
	heavy_skip(v, insn_rdpmc);
}

/* dr=lazy: first use of a debug register. Stop trapping, switch
 * the DRs from now on, and let the guest re-execute its MOV DR. */
void heavy_dr_first_use(struct vcpu *v)
{
	v->dr_dirty = true;
	vendor_dr_intercept_off(v);
}

/* SVM/VMX instructions: no nested virtualization, #UD as on a CPU without it. */
void heavy_undefined_opcode(struct vcpu *v)
{
	vendor_inject_exception(v, 6, false, 0);
}

void heavy_triple_fault(struct vcpu *v)
{
	vm_fault(v->vm, "triple fault (%s) at rip 0x%lx", VENDOR_TRIPLE_FAULT_EXIT,
		 vendor_guest_rip(v));
}

/* The rare pending work, before interrupts are injected: the VM's timers
 * when a clock read found one due (what they raise is injected next, so the
 * bits they set in v->pending are spent), a physical NMI lightpath took to
 * say (core/idt.c), then a completed instruction's single-step trap, which
 * outranks NMIs and interrupts. */
static __attribute__((noinline, cold)) void heavy_rare_pending(struct vcpu *v, unsigned pending)
{
	if (pending & VCPU_PENDING_TIMERS) {
		vm_timers_run(v->vm);
		v->pending = 0;
	}
	if (pending & VCPU_PENDING_HOST_NMI)
		host_nmis_report();
	if (pending & VCPU_PENDING_STEP)
		vendor_single_step_trap(v);
}

void exit_heavy(struct vcpu *v)
{
	if (v->heavy_action == HEAVY_EXIT) {
		if (v->vm->ended || !vendor_heavy_begin(v))
			return;
		const struct exit_row *row = exit_row_of(vendor_exit_code(v));
		if (row)
			row->heavy(v);
		else
			vendor_unexpected_exit(v);
	}
	/* Something can have become deliverable only where v->pending was set
	 * (the light path's hazard check relies on the same), or while the
	 * guest could not take it (then an interrupt window is requested). */
	if ((v->pending || vendor_intr_window_requested(v)) && !v->vm->ended) {
		unsigned p = v->pending;
		v->pending = 0;
		if (p & (VCPU_PENDING_TIMERS | VCPU_PENDING_STEP | VCPU_PENDING_HOST_NMI))
			heavy_rare_pending(v, p);   /* one test for the three */
		exit_inject_interrupts(v);
		vm_timer_lead_wait(v->vm);   /* last: the guest runs next */
	}
}
