/* The SVM backend's inline hooks (the list is in vmm/vendor.h): guest state
 * is in the VMCB, except the GPRs the exit stub saves into struct vcpu. */
#ifndef VMM_SVM_ARCH_EXIT_H
#define VMM_SVM_ARCH_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/code_cache.h"
#include "vmm/state_switch.h"
#include "vmm/svm/ioio.h"
#include "vmm/svm/vmcb.h"
#include "vmm/vm.h"

#define SVM_ALWAYS_INLINE static inline __attribute__((always_inline))

/* VMMCALL: 0f 01 d9 */
INSN_PATTERN insn_hypercall = { 3, { 0x0f, 0x01, 0xd9 } };
#define VENDOR_TRIPLE_FAULT_EXIT "SHUTDOWN exit"

/* The switch sets compiled as straight paths (vmm/light.h): the bench's
 * configurations, with svm.vmload's, each with and without NRIP save. */
#define SVM_LIGHT_SETS(X, name, cpu, ...)                                                 \
	LIGHT_BENCH_SETS(X, name, cpu, __VA_ARGS__)                                       \
	X(name##vmload_always, (cpu) | SW_VMLOAD_ALWAYS, __VA_ARGS__)                     \
	X(name##all_off, (cpu) | SW_ALL_OFF | SW_VMLOAD_ALWAYS, __VA_ARGS__)
#define VENDOR_LIGHT_SETS(X, ...) \
	SVM_LIGHT_SETS(X, , 0, __VA_ARGS__) SVM_LIGHT_SETS(X, nrip_, SW_NRIP, __VA_ARGS__)

/* Whether the CPU saves the next RIP (vmm/svm/cpu.c). The host's VMLOAD
 * state is per CPU: v->arch.host_vmstate_pa. */
extern bool svm_has_nrip;

/* The host's CR0/CR3/CR4/EFER after #VMEXIT (vmm/svm/cpu.c, docs/SECURITY.md
 * case 5): svm_host_cr_capture takes the values lightpath runs with (at each
 * VM's start); svm_host_cr_watch makes every exit reload them first while
 * the guest has EFER.LME=1 with paging off, and watches CR0 writes in long
 * mode, the only way out of paging that does not exit otherwise. Call
 * svm_host_cr_watch whenever lightpath writes the guest's EFER or CR0. */
void svm_host_cr_capture(void);
void svm_host_cr_watch(struct vcpu *v);
/* The guard on, now: the guest is about to write CR0 (a CR0 write exit). */
void svm_host_cr_guard(struct vcpu *v, bool on);

static inline void svm_vmload(uint64_t pa) { asm volatile("vmload %%rax" ::"a"(pa) : "memory"); }
static inline void svm_vmsave(uint64_t pa) { asm volatile("vmsave %%rax" ::"a"(pa) : "memory"); }
/* The VMCB is first in struct vcpu, which is identity mapped. */
static inline uint64_t svm_vmcb_pa(struct vcpu *v) { return (uint64_t)(uintptr_t)v; }

/* ---- guest registers ---- */

static inline uint64_t *vendor_rax(struct vcpu *v) { return &v->arch.vmcb.rax; }
static inline uint64_t *vendor_light_rsp(struct vcpu *v) { return &v->arch.vmcb.rsp; }
static inline uint64_t vendor_rsp(struct vcpu *v) { return v->arch.vmcb.rsp; }
static inline void vendor_set_rsp(struct vcpu *v, uint64_t rsp) { v->arch.vmcb.rsp = rsp; }
static inline uint64_t vendor_guest_rip(struct vcpu *v) { return v->arch.vmcb.rip; }
static inline void vendor_set_rip(struct vcpu *v, uint64_t rip) { v->arch.vmcb.rip = rip; }
static inline uint64_t vendor_rflags(struct vcpu *v) { return v->arch.vmcb.rflags; }
static inline void vendor_set_rflags(struct vcpu *v, uint64_t f) { v->arch.vmcb.rflags = f; }
static inline bool vendor_guest_tf(struct vcpu *v) { return v->arch.vmcb.rflags & RFLAGS_TF; }
static inline uint64_t vendor_cs_base(struct vcpu *v) { return v->arch.vmcb.cs.base; }
static inline unsigned vendor_cpl(struct vcpu *v) { return v->arch.vmcb.cpl; }
static inline void vendor_set_guest_cr2(struct vcpu *v, uint64_t cr2) { v->arch.vmcb.cr2 = cr2; }
/* The guest's CR4 as it reads it (for CPUID's bits that mirror it). */
static inline uint64_t vendor_guest_cr4(struct vcpu *v) { return v->arch.vmcb.cr4; }
/* RDTSC/RDTSCP in the guest read the host's TSC plus this (its IA32_TSC). */
static inline void vendor_set_tsc_offset(struct vcpu *v, int64_t off)
{
	v->arch.vmcb.tsc_offset = (uint64_t)off;
}

static inline void vendor_guest_paging(struct vcpu *v, struct guest_paging *pg)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	pg->cr0 = vmcb->cr0;
	pg->cr3 = vmcb->cr3;
	pg->cr4 = vmcb->cr4;
	pg->efer = vmcb->efer;
	pg->cs_long = (vmcb->efer & EFER_LMA) && (vmcb->cs.attrib & SVM_SEG_ATTR_L);
	pg->cs_32 = vmcb->cs.attrib & SVM_SEG_ATTR_DB;
}

static inline void vendor_seg_bases(struct vcpu *v, uint64_t base[6])
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	base[0] = vmcb->es.base;
	base[1] = vmcb->cs.base;
	base[2] = vmcb->ss.base;
	base[3] = vmcb->ds.base;
	base[4] = vmcb->fs.base;
	base[5] = vmcb->gs.base;
}

/* ---- the exit ---- */

typedef uint32_t __attribute__((may_alias, aligned(1))) unaligned_u32;

/* Next RIP on the light path: the CPU's with NRIP save; without it, is the
 * instruction at RIP exactly the plain encoding? That is read through the
 * cached host mapping of the code page; false when it cannot tell (the
 * miss path refills the cache or decodes properly). */
SVM_ALWAYS_INLINE bool vendor_next_rip(struct vcpu *v, struct insn_pattern p,
				       const unsigned sw, uint64_t *next)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	if (sw & SW_NRIP) {
		*next = vmcb->nrip;
		return true;
	}
	uint64_t rip = vmcb->rip, off;
	if (__builtin_expect(code_cache_peek(v, vmcb->cs.base + rip, vmcb->cr3, vmcb->cr0, &off), 1) &&
	    __builtin_expect((*(const unaligned_u32 *)(v->code_host + off) & insn_pattern_mask(p)) ==
				     insn_pattern_bytes(p), 1)) {
		*next = rip + p.len;
		return true;
	}
	return false;
}

static inline void vendor_skip_insn(struct vcpu *v, uint64_t next) { v->arch.vmcb.rip = next; }

SVM_ALWAYS_INLINE void vendor_exit_io(struct vcpu *v, struct io_intercept *io)
{
	svm_ioio_decode(v->arch.vmcb.exitinfo1, v->arch.vmcb.exitinfo2, io);
}

/* EXITINFO2 of an IOIO intercept is the next RIP, with or without NRIP. */
static inline uint64_t vendor_exit_io_next_rip(struct vcpu *v) { return v->arch.vmcb.exitinfo2; }

static inline bool vendor_exit_msr_write(struct vcpu *v) { return v->arch.vmcb.exitinfo1 & 1; }

static inline bool vendor_exit_in_event_delivery(struct vcpu *v)
{
	return v->arch.vmcb.exitintinfo & SVM_EVTINJ_VALID;
}

static inline uint64_t vendor_exit_npf_gpa(struct vcpu *v) { return v->arch.vmcb.exitinfo2; }

static inline void vendor_exit_npf(struct vcpu *v, struct npf_info *f)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	f->gpa = vmcb->exitinfo2;
	f->final_access = vmcb->exitinfo1 & SVM_NPF_FINAL_ACCESS;
	f->fetch = vmcb->exitinfo1 & SVM_NPF_FETCH;
	f->in_event_delivery = vmcb->exitintinfo & SVM_EVTINJ_VALID;
}

/* ---- events ---- */

static inline void vendor_inject_exception(struct vcpu *v, unsigned vector, bool has_err,
					   uint32_t err)
{
	v->arch.vmcb.eventinj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXC | vector |
				(has_err ? SVM_EVTINJ_ERR_VALID | ((uint64_t)err << 32) : 0);
}

/* How an interrupt goes in. Through EVENTINJ (KVM's way), except under
 * QEMU's TCG (svm_inject_virq, vmm/svm/cpu.c): it delivers an EVENTINJ
 * interrupt inside VMRUN but keeps its vector as the CPU's pending
 * exception, and delivers it a second time, IF or not, if its loop is left
 * (an icount deadline, input on a chardev) before the guest's next exit or
 * exception replaces it; a Linux guest then spun forever in its UART
 * handler on the lock its first run held (docs/SECURITY.md, case 24). There
 * it goes in as a virtual interrupt: V_IRQ with the vector (V_IGN_TPR, the
 * highest priority) and no VINTR intercept, which the CPU takes at the
 * first boundary where IF is 1 and no shadow holds it, i.e. at once, since
 * lightpath injects only there, and clears V_IRQ as it takes it. An exit
 * before that (a host interrupt outranks it) leaves it set: the interrupt
 * is in flight, acknowledged in the emulated APIC already, and nothing else
 * goes in until it is taken. (Only there: Bochs 2.7's SVM never delivered
 * such a V_IRQ in the interrupt self-tests, which then hung.) V_IRQ with
 * the VINTR intercept is the interrupt window (vendor_intr_window). */
extern bool svm_inject_virq;

/* V_IRQ as lightpath sets it, for an injection and for a window alike */
#define SVM_V_IRQ_ANY_TPR (SVM_INT_CTL_V_IRQ | SVM_INT_CTL_V_IGN_TPR | SVM_INT_CTL_V_INTR_PRIO_MAX)

static inline bool vendor_intr_in_flight(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	return (vmcb->int_ctl & SVM_INT_CTL_V_IRQ) && !(vmcb->intercept_misc1 & SVM_INTERCEPT_VINTR);
}

static inline bool vendor_intr_injectable(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	return !(vmcb->eventinj & SVM_EVTINJ_VALID) && (vmcb->rflags & RFLAGS_IF) &&
	       !(vmcb->int_state & SVM_INT_STATE_SHADOW) && !vendor_intr_in_flight(v);
}

static inline void svm_intr_set_in_flight(struct vmcb *vmcb, uint8_t vector)
{
	vmcb->int_ctl = (vmcb->int_ctl & ~SVM_INT_CTL_V_INTR_VECTOR) | SVM_V_IRQ_ANY_TPR |
			((uint64_t)vector << SVM_INT_CTL_V_INTR_VECTOR_SHIFT);
	vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
}

static inline void vendor_inject_intr(struct vcpu *v, uint8_t vector)
{
	if (svm_inject_virq)
		svm_intr_set_in_flight(&v->arch.vmcb, vector);
	else
		v->arch.vmcb.eventinj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_INTR | vector;
}

/* NMIs. With vNMI (CPUID 0x8000000A EDX bit 25, vmm/svm/cpu.c) the CPU keeps
 * the guest's NMI blocking itself: V_NMI holds one waiting NMI (a second one
 * merges into it, as on the CPU) and is delivered when the guest can take it.
 * Without it (QEMU), lightpath keeps the blocking: an NMI injected through
 * EVENTINJ blocks the next until its handler's IRET has completed, which
 * the IRET intercept (armed at the injection) and the RIP afterwards tell. */
extern bool svm_has_vnmi;
/* Single-steps one instruction to the next boundary where an NMI fits
 * (vmm/svm/exits.c); cancels such a step. */
void svm_nmi_step(struct vcpu *v);
void svm_nmi_step_cancel(struct vcpu *v);

static inline bool vendor_nmi_blocked(struct vcpu *v)
{
	if (svm_has_vnmi)
		return v->arch.vmcb.int_ctl & SVM_INT_CTL_V_NMI_BLOCKED;
	/* the intercepted IRET has run once the guest is elsewhere (a step
	 * over it tells the same exactly, svm_heavy_db) */
	if (v->arch.nmi_iret_seen && v->arch.vmcb.rip != v->arch.nmi_iret_rip)
		v->arch.nmi_blocked = v->arch.nmi_iret_seen = false;
	return v->arch.nmi_blocked;
}

static inline bool vendor_nmi_injectable(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	if (svm_has_vnmi)
		return true;
	return !vendor_nmi_blocked(v) && !(vmcb->eventinj & SVM_EVTINJ_VALID) &&
	       !(vmcb->int_state & SVM_INT_STATE_SHADOW);
}

static inline void vendor_inject_nmi(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (svm_has_vnmi) {
		vmcb->int_ctl |= SVM_INT_CTL_V_NMI;
		return;
	}
	if (v->arch.nmi_stepping)    /* the NMI fits already (a HLT woke for it) */
		svm_nmi_step_cancel(v);
	vmcb->eventinj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_NMI | 2;
	v->arch.nmi_blocked = true;
	v->arch.nmi_iret_seen = false;
	vmcb->intercept_misc1 |= SVM_INTERCEPT_IRET;
}

/* Until the handler's IRET the IRET intercept brings the exit. Over the
 * IRET itself, an interrupt shadow or an event queued ahead of the NMI, one
 * instruction is single-stepped (KVM's way on CPUs without vNMI). */
static inline void vendor_nmi_window(struct vcpu *v, bool want)
{
	if (!want || svm_has_vnmi || v->arch.nmi_stepping ||
	    (v->arch.nmi_blocked && !v->arch.nmi_iret_seen))
		return;
	svm_nmi_step(v);
}

/* A virtual interrupt with the VINTR intercept: the CPU exits as soon as
 * the guest opens an interrupt window (then the real vector is injected). */
static inline void vendor_intr_window(struct vcpu *v, bool want)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (want) {
		if (vendor_intr_in_flight(v)) {
			/* taken at the guest's next boundary: the exit after it looks
			 * again (what the EOI would not bring: the 8259's, a test IRQ) */
			v->pending |= VCPU_PENDING_RECHECK;
			return;
		}
		vmcb->int_ctl |= SVM_V_IRQ_ANY_TPR;
		vmcb->intercept_misc1 |= SVM_INTERCEPT_VINTR;
	} else if (vmcb->intercept_misc1 & SVM_INTERCEPT_VINTR) {   /* (one in flight stays) */
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
		vmcb->int_ctl &= ~SVM_INT_CTL_V_IRQ;
	}
}

static inline bool vendor_intr_window_requested(struct vcpu *v)
{
	return v->arch.vmcb.intercept_misc1 & SVM_INTERCEPT_VINTR;
}

/* Every change of the TPR exits (CR8 and the APIC's TPR are emulated). */
static inline void vendor_apic_sync(struct vcpu *v)
{
	(void)v;
}

static inline void vendor_clear_interrupt_shadow(struct vcpu *v)
{
	v->arch.vmcb.int_state &= ~SVM_INT_STATE_SHADOW;
}

/* ---- the heavy path ---- */

static inline uint64_t vendor_exit_code(struct vcpu *v) { return (uint32_t)v->arch.vmcb.exitcode; }

/* An exit in the middle of delivering an event (EXITINTINFO valid, e.g. a
 * nested page fault on the guest's IDT or stack): deliver it again. Under
 * QEMU's TCG an interrupt goes in as a virtual one again; QEMU records a
 * virtual interrupt whose delivery exits as an exception (type 3) with its
 * vector, which EVENTINJ must not take (VMRUN refuses a vector above 31),
 * and leaves V_IRQ set, which a CPU clears. */
static inline bool vendor_heavy_begin(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t info = vmcb->exitintinfo;
	if (!(info & SVM_EVTINJ_VALID))
		return true;
	uint64_t type = info & SVM_EVTINJ_TYPE_MASK;
	if (svm_inject_virq && (type == SVM_EVTINJ_TYPE_INTR ||
				(type == SVM_EVTINJ_TYPE_EXC && (uint8_t)info > 31)))
		svm_intr_set_in_flight(vmcb, (uint8_t)info);
	else
		vmcb->eventinj = info;
	return true;
}

/* msr=lazy rides on the VMLOAD state, which holds the syscall MSRs. */
static inline void vendor_guest_msrs_enter(struct vcpu *v)
{
	svm_vmload(svm_vmcb_pa(v));
	v->arch.vmstate_in_cpu = true;
	if (!v->vm->opt->msr_lazy)
		smsr_load_guest(v);   /* after VMLOAD, which loaded stale copies */
}

static inline void vendor_guest_msrs_leave(struct vcpu *v)
{
	/* svm.vmload=always switched it on this exit already (and msr=always
	 * the syscall MSRs) */
	if (v->vm->opt->vmload_lazy) {
		svm_vmsave(svm_vmcb_pa(v));
		svm_vmload(v->arch.host_vmstate_pa);
		v->arch.vmstate_in_cpu = false;
	}
}

/* ---- state switched per exit by the "always" switches ---- */

/* svm.vmload=always: VMSAVE/VMLOAD on every exit */
SVM_ALWAYS_INLINE void vendor_vmload_leave(struct vcpu *v)
{
	svm_vmsave(svm_vmcb_pa(v));
	svm_vmload(v->arch.host_vmstate_pa);
	v->arch.vmstate_in_cpu = false;
}

SVM_ALWAYS_INLINE void vendor_vmload_enter(struct vcpu *v)
{
	svm_vmload(svm_vmcb_pa(v));
	v->arch.vmstate_in_cpu = true;
}

/* DR6 and DR7 are in the VMCB: only DR0-3 are switched by hand. */
SVM_ALWAYS_INLINE void vendor_dr_save_guest_load_host(struct vcpu *v) { dr03_save_guest_load_host(v); }
SVM_ALWAYS_INLINE void vendor_dr_load_guest(struct vcpu *v) { dr03_load_guest(v); }

/* The four legacy counters every AMD64 CPU has. */
SVM_ALWAYS_INLINE void vendor_pmu_save_guest_load_host(struct vcpu *v)
{
	pmu_save_guest_load_host(v, MSR_PERF_CTL0, MSR_PERF_CTR0, 4);
}

SVM_ALWAYS_INLINE void vendor_pmu_load_guest(struct vcpu *v)
{
	pmu_load_guest(v, MSR_PERF_CTL0, MSR_PERF_CTR0, 4);
}

#endif
