/* AMD SVM backend: CPU setup, VMCB/NPT/IOPM/MSRPM, the light exit handlers
 * (one specialised copy per switch combination) and the heavy path. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/pmem.h"
#include "emul/svm_ioio.h"
#include "emul/x86_emulate.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/guest_mem.h"
#include "vmm/linux_boot.h"
#include "vmm/platform.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

void svm_light_loop(struct vcpu *v);

#define INT_CTL_V_IRQ            (1ull << 8)
#define INT_CTL_V_IGN_TPR        (1ull << 20)
#define INT_CTL_V_INTR_MASKING   (1ull << 24)
#define INT_CTL_V_INTR_PRIO_MAX  (0xfull << 16)

/* Compile-time switch set of one light-handler copy ("always" = seed's before). */
#define SW_LIGHT_OFF     (1u << 0)
#define SW_VMLOAD_ALWAYS (1u << 1)
#define SW_DR_ALWAYS     (1u << 2)
#define SW_PMU_ALWAYS    (1u << 3)
#define SW_MSR_ALWAYS    (1u << 4)
#define SW_IO_EMULATE    (1u << 5)
#define SW_NRIP          (1u << 6)
#define SW_COUNT         128

typedef uint32_t __attribute__((may_alias, aligned(1))) unaligned_u32;

static uint64_t host_vmstate_pa;   /* VMCB-format page holding the host's VMLOAD state */
static bool has_nrip;

static inline void svm_vmload(uint64_t pa) { asm volatile("vmload %%rax" ::"a"(pa) : "memory"); }
static inline void svm_vmsave(uint64_t pa) { asm volatile("vmsave %%rax" ::"a"(pa) : "memory"); }
static inline uint64_t vcpu_pa(struct vcpu *v) { return (uint64_t)(uintptr_t)v; }

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
		has_nrip = r[3] & (1u << 3);
	}
	if (!svm || !npt) {
		kprintf("lightpath: this CPU has no AMD SVM with nested paging\n");
		return -1;
	}
	if (rdmsr(MSR_VM_CR) & (1u << 4)) {
		kprintf("lightpath: SVM is disabled by the firmware (VM_CR.SVMDIS is set)\n");
		return -1;
	}
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SVME);
	uint64_t hsave = pmem_alloc(4096, 4096);
	host_vmstate_pa = pmem_alloc(4096, 4096);
	if (!hsave || !host_vmstate_pa) {
		kprintf("lightpath: error: out of memory setting up SVM\n");
		return -1;
	}
	wrmsr(MSR_VM_HSAVE_PA, hsave);
	svm_vmsave(host_vmstate_pa);
	state_switch_init();
	kprintf("lightpath: AMD SVM with nested paging; next RIP from %s\n",
		has_nrip ? "the CPU (NRIP save)" : "lightpath's own decoding (no NRIP save)");
	return 0;
}

/* ---- nested page tables: guest RAM only, 2 MiB pages ---- */

#define NPT_RWU 0x7ull           /* present, writable, user (NPT walks are user accesses) */
#define NPT_LARGE (NPT_RWU | 0x80ull)

int vendor_vm_init(struct vm *vm)
{
	/* whole 2 MiB pages only: a partial last page would map host memory */
	if (vm->mem_size & ((2ull << 20) - 1))
		return -1;
	uint64_t pml4 = pmem_alloc(4096, 4096), pdpt = pmem_alloc(4096, 4096);
	uint64_t npd = (vm->mem_size + (1ull << 30) - 1) >> 30;
	uint64_t pd = pmem_alloc(npd * 4096, 4096);
	vm->iopm_pa = pmem_alloc(3 * 4096, 4096);
	vm->msrpm_pa = pmem_alloc(2 * 4096, 4096);
	if (!pml4 || !pdpt || !pd || !vm->iopm_pa || !vm->msrpm_pa)
		return -1;
	uint64_t *l4 = (uint64_t *)(uintptr_t)pml4, *l3 = (uint64_t *)(uintptr_t)pdpt;
	uint64_t *l2 = (uint64_t *)(uintptr_t)pd;
	l4[0] = pdpt | NPT_RWU;
	for (uint64_t i = 0; i < npd; i++)
		l3[i] = (pd + i * 4096) | NPT_RWU;
	for (uint64_t gpa = 0; gpa < vm->mem_size; gpa += 2ull << 20)
		l2[gpa >> 21] = (vm->mem_hpa + gpa) | NPT_LARGE;
	vm->npt_root = pml4;

	/* deny by default: every port and MSR intercepted... */
	memset((void *)(uintptr_t)vm->iopm_pa, 0xff, 3 * 4096);
	uint8_t *msrpm = (uint8_t *)(uintptr_t)vm->msrpm_pa;
	memset(msrpm, 0xff, 2 * 4096);
	/* ...except FS.base/GS.base: VMLOAD state that Linux rewrites on every
	 * context switch; the guest's values live in the CPU (lazy) or the VMCB. */
	msrpm[0x800 + (0x100 * 2) / 8] &= ~0x0f;
	/* ...and TSC_AUX (0xC0000103), which only RDTSCP/RDPID read: the guest
	 * owns the register, the host never uses it. */
	msrpm[0x800 + (0x103 * 2) / 8] &= ~0xc0;
	return 0;
}

void vendor_vm_destroy(struct vm *vm)
{
	uint64_t npd = (vm->mem_size + (1ull << 30) - 1) >> 30;
	const uint64_t *l4 = (const uint64_t *)(uintptr_t)vm->npt_root;
	const uint64_t *l3 = (const uint64_t *)(uintptr_t)(l4[0] & ~0xfffull);
	pmem_free(l3[0] & ~0xfffull, npd * 4096);
	pmem_free(l4[0] & ~0xfffull, 4096);
	pmem_free(vm->npt_root, 4096);
	pmem_free(vm->iopm_pa, 3 * 4096);
	pmem_free(vm->msrpm_pa, 2 * 4096);
}

/* ---- per-exit state pieces (the "always" switches) and their lazy forms ---- */

/* DR6 and DR7 are in the VMCB: only DR0-3 are switched by hand. */
static inline void dr_save_guest_load_host(struct vcpu *v)
{
	dr03_save_guest_load_host(v);
}

static inline void dr_load_guest(struct vcpu *v)
{
	dr03_load_guest(v);
}

static inline void pmu_save_guest_load_host(struct vcpu *v)
{
	for (unsigned i = 0; i < 4; i++) {
		v->guest_pmu[i] = rdmsr(MSR_PERF_CTL0 + i);
		v->guest_pmu[4 + i] = rdmsr(MSR_PERF_CTR0 + i);
	}
	for (unsigned i = 0; i < 4; i++) {
		wrmsr(MSR_PERF_CTL0 + i, v->host_pmu[i]);
		wrmsr(MSR_PERF_CTR0 + i, v->host_pmu[4 + i]);
	}
}

static inline void pmu_load_guest(struct vcpu *v)
{
	for (unsigned i = 0; i < 4; i++) {
		wrmsr(MSR_PERF_CTL0 + i, v->guest_pmu[i]);
		wrmsr(MSR_PERF_CTR0 + i, v->guest_pmu[4 + i]);
	}
}

/* Right after #VMEXIT, for the switches set to "always". */
static inline __attribute__((always_inline)) void per_exit_leave(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_MSR_ALWAYS)
		smsr_save_guest_load_host(v);  /* before VMSAVE: the CPU holds the guest's */
	if (sw & SW_VMLOAD_ALWAYS) {
		svm_vmsave(vcpu_pa(v));
		svm_vmload(host_vmstate_pa);
		v->vmstate_in_cpu = false;
	}
	if (sw & SW_DR_ALWAYS)
		dr_save_guest_load_host(v);
	if (sw & SW_PMU_ALWAYS)
		pmu_save_guest_load_host(v);
}

/* Right before VMRUN, when resuming from the light path. */
static inline __attribute__((always_inline)) void per_exit_enter(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_PMU_ALWAYS)
		pmu_load_guest(v);
	if (sw & SW_DR_ALWAYS)
		dr_load_guest(v);
	if (sw & SW_VMLOAD_ALWAYS) {
		svm_vmload(vcpu_pa(v));
		v->vmstate_in_cpu = true;
	}
	if (sw & SW_MSR_ALWAYS)
		smsr_load_guest(v);            /* after VMLOAD, which loaded stale copies */
}

void vendor_host_interrupt_window(void)
{
	asm volatile("stgi; nop; clgi" ::: "memory");
}

void vendor_host_wait_for_interrupt(void)
{
	/* RFLAGS.IF is 1 on the heavy path (see vendor_state_enter): without the
	 * cli, a pending timer interrupt would be taken at stgi and the hlt would
	 * then wait for one that never comes. sti's shadow makes "sti; hlt"
	 * race-free; IF is left at 1 for the next VMRUN. */
	asm volatile("cli; stgi; sti; hlt; cli; clgi; sti" ::: "memory");
}

void vendor_state_enter(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	/* Host interrupts stay pending while GIF=0 (all of the light loop); with
	 * RFLAGS.IF=1 at VMRUN one arriving in the guest causes an INTR exit. */
	asm volatile("clgi; sti" ::: "memory");
	if (!o->pmu_lazy || v->vm->has_vpmu)
		pmu_load_guest(v);
	if (!o->dr_lazy || v->dr_dirty)
		dr_load_guest(v);
	svm_vmload(vcpu_pa(v));
	v->vmstate_in_cpu = true;
	if (!o->msr_lazy)
		smsr_load_guest(v);
}

void vendor_state_leave(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	/* with "always" the per-exit piece already switched back on this exit */
	if (o->vmload_lazy) {
		/* msr=always switched the syscall MSRs on this exit already */
		svm_vmsave(vcpu_pa(v));
		svm_vmload(host_vmstate_pa);
		v->vmstate_in_cpu = false;
	}
	if (o->dr_lazy && v->dr_dirty)
		dr_save_guest_load_host(v);
	if (o->pmu_lazy && v->vm->has_vpmu)
		pmu_save_guest_load_host(v);
}

/* ---- next RIP without NRIP: the bytes at RIP through a cached translation ---- */

static void fill_guest_paging(struct vcpu *v, struct guest_paging *pg)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	pg->cr0 = vmcb->cr0;
	pg->cr3 = vmcb->cr3;
	pg->cr4 = vmcb->cr4;
	pg->efer = vmcb->efer;
	pg->cs_long = (vmcb->efer & EFER_LMA) && (vmcb->cs.attrib & (1u << 9));
	pg->cs_32 = vmcb->cs.attrib & (1u << 10);
}

static bool code_cache_fill(struct vcpu *v);

/* Fast check: is the instruction at RIP exactly the plain encoding? Uses the
 * cached host mapping of the code page; false when it cannot tell (the heavy
 * path then decodes it properly). */
static inline __attribute__((always_inline)) bool next_rip_fast(struct vcpu *v, uint32_t bytes,
								  uint32_t mask, unsigned len,
								  const unsigned sw, uint64_t *next)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	if (sw & SW_NRIP) {
		*next = vmcb->nrip;
		return true;
	}
	uint64_t rip = vmcb->rip;
	uint64_t off = vmcb->cs.base + rip - v->code_lin;
	if (__builtin_expect(off <= 4096 - 16 && vmcb->cr3 == v->code_cr3 && vmcb->cr0 == v->code_cr0, 1)) {
		uint32_t at = *(const unaligned_u32 *)(v->code_host + off);
		if (__builtin_expect((at & mask) == bytes, 1)) {
			*next = rip + len;
			return true;
		}
	}
	return false;
}

/* Points the code-page cache at the page holding CS:RIP (a guest page walk).
 * Returns false when it cannot (unmapped, outside RAM, a 64-bit CS with a
 * base, which the fast check's CS.base + RIP would get wrong). */
static bool code_cache_fill(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	struct guest_paging pg;
	fill_guest_paging(v, &pg);
	uint64_t lin = (pg.cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
	if (!pg.cs_long)
		lin &= 0xffffffffull;
	uint64_t gpa;
	if (lin != vmcb->cs.base + vmcb->rip || guest_linear_to_gpa(v->vm, &pg, lin, &gpa))
		return false;
	uint8_t *host = gpa_to_host(v->vm, gpa & ~0xfffull, 4096);
	if (!host)
		return false;
	v->code_lin = lin & ~0xfffull;
	v->code_cr3 = vmcb->cr3;
	v->code_cr0 = vmcb->cr0;
	v->code_host = host;
	return true;
}

/* Slow path: walk the guest page tables, refill the cache, decode prefixes.
 * Returns 0 if the instruction at RIP is not `opcode` (the VM is stopped). */
static uint64_t next_rip_slow(struct vcpu *v, const uint8_t *opcode, unsigned opcode_len)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (has_nrip && vmcb->nrip)
		return vmcb->nrip;
	struct guest_paging pg;
	fill_guest_paging(v, &pg);
	uint64_t lin = (pg.cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
	if (!pg.cs_long)
		lin &= 0xffffffffull;
	uint8_t buf[15];
	size_t got = guest_read_linear(v->vm, &pg, lin, buf, sizeof(buf));
	unsigned len = insn_length_with_prefixes(buf, got, pg.cs_long, opcode, opcode_len);
	if (!len) {
		vm_fault(v->vm, "cannot decode the instruction at rip 0x%lx (%zu bytes readable)",
			 vmcb->rip, got);
		return 0;
	}
	code_cache_fill(v);
	uint64_t next = vmcb->rip + len;
	return pg.cs_long ? next : (next & 0xffffffffull);
}

static inline void inject_exception(struct vcpu *v, unsigned vector, bool has_err, uint32_t err)
{
	v->arch.vmcb.eventinj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_EXC | vector |
				(has_err ? SVM_EVTINJ_ERR_VALID | ((uint64_t)err << 32) : 0);
}

/* ---- the operations behind each exit, shared by the light and heavy paths ---- */

static inline void do_cpuid(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint32_t computed[4];
	const uint32_t *out = exit_cpuid_cached(v, (uint32_t)vmcb->rax);
	if (__builtin_expect(!out, 0)) {
		exit_cpuid(v, (uint32_t)vmcb->rax, (uint32_t)v->regs.rcx, computed);
		out = computed;
	}
	vmcb->rax = out[0];
	v->regs.rbx = out[1];
	v->regs.rcx = out[2];
	v->regs.rdx = out[3];
}

/* Returns false when the guest gets #GP instead (RIP stays). */
static inline bool do_msr(struct vcpu *v, bool is_write)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val = (vmcb->rax & 0xffffffffull) | (v->regs.rdx << 32);
	if (exit_msr(v, msr, &val, is_write)) {
		inject_exception(v, 13, true, 0);
		return false;
	}
	if (!is_write) {
		vmcb->rax = val & 0xffffffffull;
		v->regs.rdx = val >> 32;
	}
	return true;
}

static const uint8_t op_vmmcall[] = { 0x0f, 0x01, 0xd9 }, op_cpuid[] = { 0x0f, 0xa2 },
		     op_rdmsr[] = { 0x0f, 0x32 }, op_wrmsr[] = { 0x0f, 0x30 }, op_hlt[] = { 0xf4 },
		     op_invd[] = { 0x0f, 0x08 };

/* ---- the light handler: one copy per switch set ---- */

/* Statistics class of the exits the light handler does not handle itself. */
static unsigned svm_exit_reason(uint64_t code)
{
	if (code >= SVM_EXIT_READ_DR0 && code <= SVM_EXIT_WRITE_DR15)
		return LP_EXIT_DR_ACCESS;
	if (code >= SVM_EXIT_EXCP_BASE && code < SVM_EXIT_INTR)
		return LP_EXIT_EXCEPTION;
	switch (code) {
	case SVM_EXIT_INTR: return LP_EXIT_INTR;
	case SVM_EXIT_VINTR: return LP_EXIT_VINTR;
	case SVM_EXIT_NPF: return LP_EXIT_NPF;
	case SVM_EXIT_SHUTDOWN: return LP_EXIT_SHUTDOWN;
	case SVM_EXIT_VMRUN: case SVM_EXIT_VMLOAD: case SVM_EXIT_VMSAVE: case SVM_EXIT_STGI:
	case SVM_EXIT_CLGI: case SVM_EXIT_SKINIT: case SVM_EXIT_INVLPGA:
		return LP_EXIT_VIRT_INSN;
	}
	return LP_EXIT_OTHER;
}

/* Statistics class of any exit (for light=off, which leaves on all of them). */
static unsigned svm_exit_light_reason(struct vcpu *v)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	switch (vmcb->exitcode) {
	case SVM_EXIT_VMMCALL: return LP_EXIT_HYPERCALL;
	case SVM_EXIT_CPUID: return LP_EXIT_CPUID;
	case SVM_EXIT_IOIO: return LP_EXIT_IO;
	case SVM_EXIT_MSR: return (vmcb->exitinfo1 & 1) ? LP_EXIT_MSR_WRITE : LP_EXIT_MSR_READ;
	case SVM_EXIT_HLT: return LP_EXIT_HLT;
	}
	return svm_exit_reason(vmcb->exitcode);
}

/* Light handlers are ordinary C functions, one per exit type, each with its
 * own short prologue; the stub calls them through a table indexed by the exit
 * code. Slow cases leave through tail calls so the fast path needs no
 * callee-saved registers. */

/* Leave for the heavy path, which handles this exit from scratch. */
static __attribute__((noinline, cold)) uint64_t light_to_heavy(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_EXIT;
	return 0;
}

/* Leave for the heavy path after handling the exit here. */
static __attribute__((noinline, cold)) uint64_t light_handled_leave(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_NONE;
	v->pending = 0;
	return 0;
}

static void svm_inject_interrupts(struct vcpu *v);

/* Pending work found by the hazard check. Delivering an interrupt touches
 * only the VMCB and the emulated controllers, so the light path does it;
 * only a VM that has ended leaves for the heavy path. */
static __attribute__((noinline, cold)) uint64_t light_pending(struct vcpu *v, unsigned reason)
{
	v->pending = 0;
	if (v->vm->ended)
		return light_handled_leave(v, reason);
	svm_inject_interrupts(v);
	return vcpu_pa(v);
}

/* The hazard check that ends every light exit (NOVA's "one test"). */
static inline __attribute__((always_inline)) uint64_t light_resume(struct vcpu *v, unsigned reason)
{
	if (__builtin_expect(v->pending, 0))
		return light_pending(v, reason);
	return vcpu_pa(v);
}

static uint64_t light_code_miss(struct vcpu *v, unsigned reason);

/* Every hypercall but the null one: out of line, reached by a tail call. */
static __attribute__((noinline)) uint64_t light_hypercall_other(struct vcpu *v, uint64_t next)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool heavy = exit_hypercall_slow(v, &vmcb->rax);
	vmcb->rip = next;
	if (heavy)
		return light_handled_leave(v, LP_EXIT_HYPERCALL);
	return light_resume(v, LP_EXIT_HYPERCALL);
}

static inline __attribute__((always_inline)) uint64_t light_vmmcall(struct vcpu *v, const unsigned sw)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t next;
	v->stats.exits[LP_EXIT_HYPERCALL]++;
	if (!next_rip_fast(v, 0xd9010f, 0xffffff, 3, sw, &next))
		return light_code_miss(v, LP_EXIT_HYPERCALL);
	if (vmcb->rax != LP_HC_NULL)
		return light_hypercall_other(v, next);
	vmcb->rax = 0;
	vmcb->rip = next;
	return light_resume(v, LP_EXIT_HYPERCALL);
}

static inline __attribute__((always_inline)) uint64_t light_cpuid(struct vcpu *v, const unsigned sw)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t next;
	v->stats.exits[LP_EXIT_CPUID]++;
	if (!next_rip_fast(v, 0xa20f, 0xffff, 2, sw, &next))
		return light_code_miss(v, LP_EXIT_CPUID);
	do_cpuid(v);
	vmcb->rip = next;
	return light_resume(v, LP_EXIT_CPUID);
}

static inline __attribute__((always_inline)) uint64_t light_io(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t info = vmcb->exitinfo1;
	v->stats.exits[LP_EXIT_IO]++;
	if (info & SVM_IOIO_STR)
		return light_to_heavy(v, LP_EXIT_IO);
	exit_port_io(v, (uint16_t)(info >> SVM_IOIO_PORT_SHIFT), (info >> 4) & 7,
		     info & SVM_IOIO_TYPE_IN, &vmcb->rax);
	vmcb->rip = vmcb->exitinfo2;
	return light_resume(v, LP_EXIT_IO);
}

static inline __attribute__((always_inline)) uint64_t light_msr(struct vcpu *v, const unsigned sw)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool wr = vmcb->exitinfo1 & 1;
	unsigned reason = wr ? LP_EXIT_MSR_WRITE : LP_EXIT_MSR_READ;
	uint64_t next;
	v->stats.exits[reason]++;
	if (!next_rip_fast(v, wr ? 0x300f : 0x320f, 0xffff, 2, sw, &next))
		return light_code_miss(v, reason);
	if (do_msr(v, wr))
		vmcb->rip = next;
	return light_resume(v, reason);
}

static inline __attribute__((always_inline)) uint64_t light_hlt(struct vcpu *v, const unsigned sw)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	v->stats.exits[LP_EXIT_HLT]++;
	/* light only when the pending interrupt can wake it (IF=1); a HLT with
	 * IF=0 is the heavy path's to judge */
	if (!(vmcb->int_ctl & INT_CTL_V_IRQ) || !(vmcb->rflags & RFLAGS_IF))
		return light_to_heavy(v, LP_EXIT_HLT);
	uint64_t next;
	if (!next_rip_fast(v, 0xf4, 0xff, 1, sw, &next))
		return light_code_miss(v, LP_EXIT_HLT);
	vmcb->rip = next;  /* the pending virtual interrupt is delivered at once */
	return light_resume(v, LP_EXIT_HLT);
}

/* The guest GPR `n` (x86 encoding order) as the light path has it: rbp and
 * r12-r15 are still in the CPU there, so they are not reachable (0). */
static uint64_t *light_gpr(struct vcpu *v, unsigned n)
{
	struct guest_regs *r = &v->regs;
	switch (n) {
	case 0: return &v->arch.vmcb.rax;
	case 1: return &r->rcx;
	case 2: return &r->rdx;
	case 3: return &r->rbx;
	case 4: return &v->arch.vmcb.rsp;
	case 6: return &r->rsi;
	case 7: return &r->rdi;
	case 8: return &r->r8;
	case 9: return &r->r9;
	case 10: return &r->r10;
	case 11: return &r->r11;
	}
	return 0;
}

#define NPF_FINAL_ACCESS (1ull << 32)
#define NPF_FETCH        (1ull << 4)

/* The local APIC's MMIO page on the light path: guests touch it on every
 * interrupt (EOI) and timer change. The common encoding, a 32-bit MOV between
 * a register and memory (any ModRM/SIB addressing), is decoded here from the
 * cached code page; anything else goes to the emulator. */
static uint64_t light_npf_lapic(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t gpa = vmcb->exitinfo2;
	if (!(vmcb->exitinfo1 & NPF_FINAL_ACCESS) || (vmcb->exitinfo1 & NPF_FETCH) ||
	    (vmcb->exitintinfo & SVM_EVTINJ_VALID) ||   /* a fault while delivering an event */
	    (gpa & ~0xfffull) != LAPIC_BASE || (gpa & 3) || lapic_x2apic(&v->lapic))
		return light_to_heavy(v, LP_EXIT_NPF);
	uint64_t rip = vmcb->rip;
	uint64_t off = vmcb->cs.base + rip - v->code_lin;
	if (off > 4096 - 16 || vmcb->cr3 != v->code_cr3 || vmcb->cr0 != v->code_cr0) {
		if (!code_cache_fill(v))      /* a guest page walk, still no world switch */
			return light_to_heavy(v, LP_EXIT_NPF);
		off = vmcb->cs.base + rip - v->code_lin;
		if (off > 4096 - 16)
			return light_to_heavy(v, LP_EXIT_NPF);
	}
	const uint8_t *p = v->code_host + off;
	unsigned len = 0, rex = 0;
	if ((p[0] & 0xf0) == 0x40 && (vmcb->efer & EFER_LMA) && (vmcb->cs.attrib & (1u << 9)))
		rex = p[len++];
	uint8_t op = p[len], modrm = p[len + 1];
	unsigned mod = modrm >> 6, rm = modrm & 7;
	/* 32-bit or 64-bit addressing only (no 16-bit code, no 67 prefix) */
	bool code64 = (vmcb->efer & EFER_LMA) && (vmcb->cs.attrib & (1u << 9));
	if ((op != 0x89 && op != 0x8b) || (rex & 8) || mod == 3 ||
	    !(code64 || (vmcb->cs.attrib & (1u << 10))))
		return light_to_heavy(v, LP_EXIT_NPF);
	/* the length only: the nested page fault already gave the address */
	len += 2;
	if (rm == 4)
		len += 1 + (mod == 0 && (p[len] & 7) == 5 ? 4 : 0);   /* SIB (+ disp32, no base) */
	else if (mod == 0 && rm == 5)
		len += 4;                     /* [rip + disp32] or [disp32] */
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	uint64_t *reg = light_gpr(v, ((modrm >> 3) & 7) | ((rex & 4) << 1));
	if (!reg)
		return light_to_heavy(v, LP_EXIT_NPF);
	bool is_write = op == 0x89;
	uint64_t data = (uint32_t)*reg;
	lapic_mmio(v, gpa, &data, 4, is_write, &v->lapic);
	if (!is_write)
		*reg = (uint32_t)data;        /* a 32-bit load zero-extends */
	else if (lapic_irr_nonempty(&v->lapic))
		v->pending |= VCPU_PENDING_HEAVY;   /* an EOI/TPR write may unblock one */
	vmcb->rip = rip + len;
	if (!(vmcb->efer & EFER_LMA))
		vmcb->rip &= 0xffffffffull;
	return light_resume(v, LP_EXIT_NPF);
}

static __attribute__((noinline, cold)) uint64_t light_other(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	unsigned reason = svm_exit_reason(vmcb->exitcode);
	v->stats.exits[reason]++;
	switch (reason) {
	case LP_EXIT_NPF:
		return light_npf_lapic(v);
	case LP_EXIT_INTR:
		/* a host timer interrupt: take it (the host IDT uses no IST, so the
		 * guest's TR in the CPU does not matter), run the expired VM timers,
		 * deliver what they raised */
		if (vmcb->exitintinfo & SVM_EVTINJ_VALID)
			break;                /* an event was being delivered: heavy */
		vendor_host_interrupt_window();
		vm_timers_run(v->vm);
		return light_pending(v, reason);
	case LP_EXIT_VINTR:
		/* the interrupt window the injection asked for has opened */
		vmcb->int_ctl &= ~INT_CTL_V_IRQ;
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
		return light_pending(v, reason);
	}
	return light_to_heavy(v, reason);
}

#define CASE_HANDLERS(n, sw)                                                                      \
	static __attribute__((noinline)) uint64_t lh_vmmcall_##n(struct vcpu *v)       \
	{ return light_vmmcall(v, sw); }                                                          \
	static __attribute__((noinline)) uint64_t lh_cpuid_##n(struct vcpu *v)         \
	{ return light_cpuid(v, sw); }                                                            \
	static __attribute__((noinline)) uint64_t lh_msr_##n(struct vcpu *v)           \
	{ return light_msr(v, sw); }                                                              \
	static __attribute__((noinline)) uint64_t lh_hlt_##n(struct vcpu *v)           \
	{ return light_hlt(v, sw); }
CASE_HANDLERS(0, 0)
CASE_HANDLERS(1, SW_NRIP)

/* The next-RIP check missed. If the code page is simply not the cached one,
 * walk the guest page tables for it (no world switch needed) and run the
 * handler again; if it is cached, the bytes are not the plain encoding (a
 * prefix, say) and the heavy path decodes them. */
static __attribute__((noinline, cold)) uint64_t light_code_miss(struct vcpu *v, unsigned reason)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t off = vmcb->cs.base + vmcb->rip - v->code_lin;
	bool cached = off <= 4096 - 16 && vmcb->cr3 == v->code_cr3 && vmcb->cr0 == v->code_cr0;
	if (cached || !code_cache_fill(v))
		return light_to_heavy(v, reason);
	/* within 16 bytes of the page end the fast check never looks: heavy */
	if (vmcb->cs.base + vmcb->rip - v->code_lin > 4096 - 16)
		return light_to_heavy(v, reason);
	v->stats.exits[reason]--;            /* the retry counts it again */
	switch (vmcb->exitcode) {
	case SVM_EXIT_VMMCALL: return lh_vmmcall_0(v);
	case SVM_EXIT_CPUID: return lh_cpuid_0(v);
	case SVM_EXIT_MSR: return lh_msr_0(v);
	case SVM_EXIT_HLT: return lh_hlt_0(v);
	}
	v->stats.exits[reason]++;
	return light_to_heavy(v, reason);
}

static __attribute__((noinline)) uint64_t lh_io(struct vcpu *v)
{
	return light_io(v);
}

static __attribute__((noinline, cold)) uint64_t lh_io_emulate(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_IO]++;
	return light_to_heavy(v, LP_EXIT_IO);
}

#define PER_EXIT_MASK (SW_VMLOAD_ALWAYS | SW_DR_ALWAYS | SW_PMU_ALWAYS | SW_MSR_ALWAYS)

/* The dispatcher, one copy per switch set. With every switch on it is a
 * jump table and a tail call; the "always" pieces wrap around it. */
static inline __attribute__((always_inline)) uint64_t svm_exit_light(struct vcpu *v, const unsigned sw)
{
	uint64_t r;
	const bool nrip = sw & SW_NRIP;
	per_exit_leave(v, sw);
	switch (v->arch.vmcb.exitcode) {
	case SVM_EXIT_VMMCALL:
		r = nrip ? lh_vmmcall_1(v) : lh_vmmcall_0(v);
		break;
	case SVM_EXIT_CPUID:
		r = nrip ? lh_cpuid_1(v) : lh_cpuid_0(v);
		break;
	case SVM_EXIT_IOIO:
		r = (sw & SW_IO_EMULATE) ? lh_io_emulate(v) : lh_io(v);
		break;
	case SVM_EXIT_MSR:
		r = nrip ? lh_msr_1(v) : lh_msr_0(v);
		break;
	case SVM_EXIT_HLT:
		r = nrip ? lh_hlt_1(v) : lh_hlt_0(v);
		break;
	default:
		r = light_other(v);
		break;
	}
	if (!(sw & (PER_EXIT_MASK | SW_LIGHT_OFF)) || !r)
		return r;
	if (sw & SW_LIGHT_OFF)  /* seed 000's before: every exit goes round the outer loop */
		return light_handled_leave(v, svm_exit_light_reason(v));
	per_exit_enter(v, sw);
	return r;
}

#define LV(a, b) \
	static uint64_t svm_exit_light_##a##_##b(struct vcpu *v) { return svm_exit_light(v, a * 8 + b); }
#define LV8(a) LV(a, 0) LV(a, 1) LV(a, 2) LV(a, 3) LV(a, 4) LV(a, 5) LV(a, 6) LV(a, 7)
LV8(0) LV8(1) LV8(2) LV8(3) LV8(4) LV8(5) LV8(6) LV8(7)
LV8(8) LV8(9) LV8(10) LV8(11) LV8(12) LV8(13) LV8(14) LV8(15)
#define TV8(a) svm_exit_light_##a##_0, svm_exit_light_##a##_1, svm_exit_light_##a##_2, \
	svm_exit_light_##a##_3, svm_exit_light_##a##_4, svm_exit_light_##a##_5, \
	svm_exit_light_##a##_6, svm_exit_light_##a##_7
static light_handler_fn *const light_handlers[SW_COUNT] = {
	TV8(0), TV8(1), TV8(2), TV8(3), TV8(4), TV8(5), TV8(6), TV8(7),
	TV8(8), TV8(9), TV8(10), TV8(11), TV8(12), TV8(13), TV8(14), TV8(15),
};

static unsigned switch_set(const struct lp_options *o)
{
	return (o->light ? 0 : SW_LIGHT_OFF) | (o->vmload_lazy ? 0 : SW_VMLOAD_ALWAYS) |
	       (o->dr_lazy ? 0 : SW_DR_ALWAYS) | (o->pmu_lazy ? 0 : SW_PMU_ALWAYS) |
	       (o->msr_lazy ? 0 : SW_MSR_ALWAYS) | (o->io_fast ? 0 : SW_IO_EMULATE) |
	       (has_nrip ? SW_NRIP : 0);
}

void vendor_enter_guest(struct vcpu *v)
{
	svm_light_loop(v);
}

/* ---- vCPU start state (multiboot: 32-bit protected mode, paging off) ---- */

static void set_seg(struct vmcb_seg *s, uint16_t sel, uint16_t attrib, uint32_t limit, uint64_t base)
{
	s->sel = sel;
	s->attrib = attrib;
	s->limit = limit;
	s->base = base;
}

void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	const struct lp_options *o = v->vm->opt;
	memset(vmcb, 0, sizeof(*vmcb));
	vmcb->intercept_dr = o->dr_lazy ? 0x00ff00ffu : 0;  /* seed 001: trap until first use */
	vmcb->intercept_misc1 = SVM_INTERCEPT_INTR | SVM_INTERCEPT_CPUID | SVM_INTERCEPT_HLT |
				SVM_INTERCEPT_INVLPGA |
				SVM_INTERCEPT_INVD | SVM_INTERCEPT_IOIO_PROT | SVM_INTERCEPT_MSR_PROT |
				SVM_INTERCEPT_SHUTDOWN;
	vmcb->intercept_misc2 = SVM_INTERCEPT_VMRUN | SVM_INTERCEPT_VMMCALL | SVM_INTERCEPT_VMLOAD |
				SVM_INTERCEPT_VMSAVE | SVM_INTERCEPT_STGI | SVM_INTERCEPT_CLGI |
				SVM_INTERCEPT_SKINIT;
	vmcb->iopm_base_pa = v->vm->iopm_pa;
	vmcb->msrpm_base_pa = v->vm->msrpm_pa;
	vmcb->asid = 1;
	vmcb->tlb_control = 1;                  /* flush this ASID on the first VMRUN */
	vmcb->int_ctl = INT_CTL_V_INTR_MASKING;
	vmcb->np_enable = 1;
	vmcb->n_cr3 = v->vm->npt_root;

	set_seg(&vmcb->cs, 0x10, 0xc9b, 0xffffffffu, 0);
	set_seg(&vmcb->ds, 0x18, 0xc93, 0xffffffffu, 0);
	vmcb->es = vmcb->ss = vmcb->fs = vmcb->gs = vmcb->ds;
	set_seg(&vmcb->tr, 0, 0x08b, 0xffff, 0);
	set_seg(&vmcb->ldtr, 0, 0x082, 0xffff, 0);
	set_seg(&vmcb->gdtr, 0, 0, 0xffff, 0);
	set_seg(&vmcb->idtr, 0, 0, 0xffff, 0);
	vmcb->efer = EFER_SVME;
	vmcb->cr0 = CR0_PE | CR0_ET;
	vmcb->cr3 = 0;
	vmcb->cr4 = 0;
	vmcb->dr6 = 0xffff0ff0;
	vmcb->dr7 = 0x400;
	vmcb->rflags = 2;
	vmcb->rip = entry;
	vmcb->rax = eax;
	vmcb->g_pat = 0x0007040600070406ull;
	memset(&v->regs, 0, sizeof(v->regs));
	v->regs.rbx = ebx;

	v->code_lin = 1ull << 63;              /* nothing cached: no offset is small */
	exit_cpuid_cache_init(v);
	unsigned sw = switch_set(o);
	if (sw & (PER_EXIT_MASK | SW_LIGHT_OFF)) {
		/* ablation: one generic dispatcher that wraps the "always" pieces */
		for (unsigned i = 0; i < LIGHT_TABLE_SIZE; i++)
			v->light_table[i] = light_handlers[sw];
	} else {
		bool nrip = sw & SW_NRIP;
		for (unsigned i = 0; i < LIGHT_TABLE_SIZE; i++)
			v->light_table[i] = light_other;
		v->light_table[SVM_EXIT_VMMCALL] = nrip ? lh_vmmcall_1 : lh_vmmcall_0;
		v->light_table[SVM_EXIT_CPUID] = nrip ? lh_cpuid_1 : lh_cpuid_0;
		v->light_table[SVM_EXIT_MSR] = nrip ? lh_msr_1 : lh_msr_0;
		v->light_table[SVM_EXIT_HLT] = nrip ? lh_hlt_1 : lh_hlt_0;
		v->light_table[SVM_EXIT_IOIO] = (sw & SW_IO_EMULATE) ? lh_io_emulate : lh_io;
	}
	/* the VM starts with the host's PMU and syscall MSR values as its own */
	for (unsigned i = 0; i < 8; i++)
		v->host_pmu[i] = v->guest_pmu[i] =
			rdmsr(i < 4 ? MSR_PERF_CTL0 + i : MSR_PERF_CTR0 + i - 4);
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		v->guest_smsr[i] = 0;
}

/* A GDT descriptor's attribute bits in the VMCB's 12-bit format. */
static uint16_t desc_attrib(uint64_t desc)
{
	return (uint16_t)(((desc >> 40) & 0xff) | (((desc >> 52) & 0xf) << 8));
}

static uint32_t desc_limit(uint64_t desc)
{
	uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
	return (desc & (1ull << 55)) ? (limit << 12) | 0xfff : limit;
}

void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	vendor_vcpu_init(v, st->rip, 0, 0);
	set_seg(&vmcb->cs, st->cs, desc_attrib(st->cs_desc), desc_limit(st->cs_desc), 0);
	set_seg(&vmcb->ds, st->ds, desc_attrib(st->ds_desc), desc_limit(st->ds_desc), 0);
	vmcb->es = vmcb->ss = vmcb->fs = vmcb->gs = vmcb->ds;
	set_seg(&vmcb->gdtr, 0, 0, st->gdt_limit, st->gdt_base);
	set_seg(&vmcb->idtr, 0, 0, 0, 0);
	vmcb->cr0 = st->cr0;
	vmcb->cr3 = st->cr3;
	vmcb->cr4 = st->cr4;
	vmcb->efer = st->efer | EFER_SVME;
	vmcb->rflags = st->rflags;
	vmcb->rip = st->rip;
	vmcb->rsp = st->rsp;
	vmcb->rax = 0;
	v->regs.rbx = 0;
	v->regs.rsi = st->rsi;
}

/* ---- MSRs that live in VMCB/VMLOAD state ---- */

static uint64_t *vmcb_vmstate_field(struct vmcb *vmcb, uint32_t msr)
{
	switch (msr) {
	case MSR_STAR: return &vmcb->star;
	case MSR_LSTAR: return &vmcb->lstar;
	case MSR_CSTAR: return &vmcb->cstar;
	case MSR_SFMASK: return &vmcb->sfmask;
	case MSR_KERNEL_GS_BASE: return &vmcb->kernel_gs_base;
	case 0x174: return &vmcb->sysenter_cs;
	case 0x175: return &vmcb->sysenter_esp;
	case 0x176: return &vmcb->sysenter_eip;
	}
	return 0;
}

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (msr == MSR_EFER) {
		if (!is_write) {
			*val = vmcb->efer & ~EFER_SVME;   /* nested SVM is not offered */
			return 0;
		}
		if (*val & ~(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE))
			return -1;
		/* LME may change only while paging is off (VMRUN would refuse the
		 * state otherwise): #GP, as the CPU gives */
		if (((*val ^ vmcb->efer) & EFER_LME) && (vmcb->cr0 & CR0_PG))
			return -1;
		/* LMA is the CPU's to set; SVME must stay on for VMRUN */
		vmcb->efer = (*val & ~EFER_LMA) | (vmcb->efer & EFER_LMA) | EFER_SVME;
		return 0;
	}
	if (msr == 0x277) {
		if (!is_write) {
			*val = vmcb->g_pat;
			return 0;
		}
		for (int i = 0; i < 8; i++) {   /* memory types 2 and 3 and 8+ are reserved */
			uint8_t type = (uint8_t)(*val >> (8 * i));
			if (type == 2 || type == 3 || type > 7)
				return -1;
		}
		vmcb->g_pat = *val;
		return 0;
	}
	if (is_write && (msr == MSR_LSTAR || msr == MSR_CSTAR || msr == MSR_KERNEL_GS_BASE ||
			 msr == 0x175 || msr == 0x176) && !canonical(*val))
		return -1;
	/* reserved high halves: the guest gets #GP, never the host's WRMSR */
	if (is_write && (msr == MSR_SFMASK || msr == 0x174) && (*val >> 32))
		return -1;
	/* The guest's value lives in exactly one place; writing anywhere else is
	 * seed 000's double-fault bug (the write is lost at the next switch). */
	int slot = smsr_slot(msr);
	if (!v->vm->opt->msr_lazy && slot >= 0) {
		if (is_write)
			v->guest_smsr[slot] = *val;   /* loaded into the CPU before VMRUN */
		else
			*val = v->guest_smsr[slot];
		return 0;
	}
	if (v->vmstate_in_cpu) {                  /* lazy VMLOAD: the CPU holds it */
		if (is_write)
			wrmsr(msr, *val);
		else
			*val = rdmsr(msr);
		return 0;
	}
	uint64_t *f = vmcb_vmstate_field(vmcb, msr);
	if (!f)
		return -1;
	if (is_write)
		*f = *val;
	else
		*val = *f;
	return 0;
}

int vendor_inject_virq(struct vcpu *v, uint8_t vector)
{
	if (v->test_irq)
		return -1;
	/* injected on the heavy path like any other interrupt */
	v->test_irq = vector;
	v->pending |= VCPU_PENDING_HEAVY;
	return 0;
}

const char *vendor_interrupt_state(struct vcpu *v)
{
	static char buf[96];
	const struct vmcb *vmcb = &v->arch.vmcb;
	snprintf(buf, sizeof(buf), "rflags.IF %u, shadow %u, eventinj 0x%lx, v_irq %u, vintr %u",
		 (unsigned)((vmcb->rflags >> 9) & 1), (unsigned)(vmcb->int_state & 1), vmcb->eventinj,
		 (unsigned)((vmcb->int_ctl >> 8) & 1),
		 (unsigned)!!(vmcb->intercept_misc1 & SVM_INTERCEPT_VINTR));
	return buf;
}

uint64_t vendor_guest_rip(struct vcpu *v)
{
	return v->arch.vmcb.rip;
}

/* ---- the heavy path ---- */

/* What the emulator is asked to do. */
enum heavy_emul {
	HEAVY_EMUL_MMIO,      /* NPF on MMIO: emul_mmio */
	HEAVY_EMUL_STRING_IO, /* io=fast, string I/O exit: emul_string_io */
	HEAVY_EMUL_PORT_IO,   /* io=emulate, any I/O exit: emul_port_io */
};

static void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
			  const struct io_intercept *io);

static void heavy_io(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	struct io_intercept io;
	svm_ioio_decode(vmcb->exitinfo1, vmcb->exitinfo2, &io);
	if (!v->vm->opt->io_fast) {
		/* io=emulate: seed 004's "before", every port I/O is fetched,
		 * decoded and performed by the instruction emulator; the exit
		 * information only cross-checks what it decoded */
		heavy_emulate(v, HEAVY_EMUL_PORT_IO, 0, &io);
		return;
	}
	if (io.string) {
		heavy_emulate(v, HEAVY_EMUL_STRING_IO, 0, &io);
		return;
	}
	exit_port_io(v, io.port, io.size, io.in, &vmcb->rax);
	vmcb->rip = io.next_rip;
}

/* ---- the instruction emulator (MMIO and port I/O), heavy path only ---- */

static void emul_ctx_load(struct vcpu *v, struct emul_ctx *c)
{
	const struct vmcb *vmcb = &v->arch.vmcb;
	const struct guest_regs *r = &v->regs;
	/* every field is set below: no memset of the 272-byte context */
	c->gpr[X86_RAX] = vmcb->rax;  c->gpr[X86_RCX] = r->rcx;  c->gpr[X86_RDX] = r->rdx;
	c->gpr[X86_RBX] = r->rbx;     c->gpr[X86_RSP] = vmcb->rsp; c->gpr[X86_RBP] = r->rbp;
	c->gpr[X86_RSI] = r->rsi;     c->gpr[X86_RDI] = r->rdi;  c->gpr[X86_R8] = r->r8;
	c->gpr[X86_R9] = r->r9;       c->gpr[X86_R10] = r->r10;  c->gpr[X86_R11] = r->r11;
	c->gpr[X86_R12] = r->r12;     c->gpr[X86_R13] = r->r13;  c->gpr[X86_R14] = r->r14;
	c->gpr[X86_R15] = r->r15;
	c->rip = vmcb->rip;
	c->rflags = vmcb->rflags;
	c->seg_base[0] = vmcb->es.base; c->seg_base[1] = vmcb->cs.base;
	c->seg_base[2] = vmcb->ss.base; c->seg_base[3] = vmcb->ds.base;
	c->seg_base[4] = vmcb->fs.base; c->seg_base[5] = vmcb->gs.base;
	fill_guest_paging(v, &c->pg);
	c->cpl = vmcb->cpl;
	c->maxphyaddr = 0;
	c->rep_max = 0;
	vm_emul_bind(v, c);
}

static void emul_ctx_store(struct vcpu *v, const struct emul_ctx *c)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	struct guest_regs *r = &v->regs;
	vmcb->rax = c->gpr[X86_RAX];  r->rcx = c->gpr[X86_RCX];  r->rdx = c->gpr[X86_RDX];
	r->rbx = c->gpr[X86_RBX];     vmcb->rsp = c->gpr[X86_RSP]; r->rbp = c->gpr[X86_RBP];
	r->rsi = c->gpr[X86_RSI];     r->rdi = c->gpr[X86_RDI];  r->r8 = c->gpr[X86_R8];
	r->r9 = c->gpr[X86_R9];       r->r10 = c->gpr[X86_R10];  r->r11 = c->gpr[X86_R11];
	r->r12 = c->gpr[X86_R12];     r->r13 = c->gpr[X86_R13];  r->r14 = c->gpr[X86_R14];
	r->r15 = c->gpr[X86_R15];
	vmcb->rip = c->rip;
	vmcb->rflags = c->rflags;
}

/* Runs the emulator for an NPF on MMIO (fault_gpa) or a port I/O exit (io)
 * and acts on its result. */
static void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
			  const struct io_intercept *io)
{
	struct emul_ctx c;
	struct emul_result res;
	enum emul_status st;
	emul_ctx_load(v, &c);
	switch (what) {
	case HEAVY_EMUL_STRING_IO:
		st = emul_string_io(&c, io, &res);
		break;
	case HEAVY_EMUL_PORT_IO:
		st = emul_port_io(&c, io, &res);
		break;
	default:
		st = emul_mmio(&c, fault_gpa, &res);
		break;
	}
	if (st != EMUL_RETRY)
		v->emul_retries = 0;
	switch (st) {
	case EMUL_DONE:
		emul_ctx_store(v, &c);
		v->stats.emulated++;
		break;
	case EMUL_EXCEPTION:
		emul_ctx_store(v, &c);
		if (res.vector == EMUL_VEC_PF)
			v->arch.vmcb.cr2 = res.cr2;
		inject_exception(v, res.vector, res.has_error_code, res.error_code);
		break;
	case EMUL_RETRY:
		vm_emul_retry(v, v->arch.vmcb.rip);
		return;
	case EMUL_VM_END:
		emul_ctx_store(v, &c);
		break;
	case EMUL_UNSUPPORTED:
		vm_emul_unsupported(v, &res, what == HEAVY_EMUL_MMIO ? "MMIO access" :
					     what == HEAVY_EMUL_STRING_IO ? "string I/O" : "port I/O");
		break;
	case EMUL_IO_ERROR:
		vm_fault(v->vm, "device error %d during emulation at rip 0x%lx", res.io_error,
			 v->arch.vmcb.rip);
		break;
	}
}

static void heavy_npf(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t gpa = vmcb->exitinfo2;
	bool final_access = vmcb->exitinfo1 & (1ull << 32);
	if (vm_find_mmio(v->vm, gpa) && (vmcb->eventinj & SVM_EVTINJ_VALID)) {
		/* the CPU was delivering an event (IDT, stack or TSS in MMIO): the
		 * instruction at RIP has nothing to do with this access */
		vm_fault(v->vm, "delivering an interrupt or exception touched MMIO at 0x%lx "
			 "(rip 0x%lx)", gpa, vmcb->rip);
		return;
	}
	if (vm_find_mmio(v->vm, gpa)) {
		if (final_access) {
			heavy_emulate(v, HEAVY_EMUL_MMIO, gpa, 0);
			return;
		}
		vm_fault(v->vm, "the guest's page tables point into MMIO at 0x%lx (rip 0x%lx)", gpa,
			 vmcb->rip);
		return;
	}
	vm_fault(v->vm, "guest-physical access to 0x%lx outside its RAM and devices at rip 0x%lx",
		 gpa, vmcb->rip);
}

static void heavy_skip(struct vcpu *v, const uint8_t *op, unsigned len)
{
	uint64_t next = next_rip_slow(v, op, len);
	if (next) {
		v->arch.vmcb.rip = next;
		v->arch.vmcb.int_state &= ~1ull;  /* an STI/MOV SS shadow ends with the instruction */
	}
}

/* Interrupt delivery, at the end of every heavy exit: the platform's next
 * vector goes in EVENTINJ when the guest can take it (RFLAGS.IF=1, no
 * interrupt shadow); otherwise a virtual interrupt with the VINTR intercept
 * asks the CPU to exit as soon as the guest opens an interrupt window. */
static void svm_inject_interrupts(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	bool from_pic, test;
	int vec = platform_intr_pending(v, &from_pic, &test);
	if (vec < 0) {
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
		vmcb->int_ctl &= ~INT_CTL_V_IRQ;
		return;
	}
	/* an exception or re-injected event goes first; the window exit that
	 * follows it brings this interrupt */
	if (!(vmcb->eventinj & SVM_EVTINJ_VALID) && (vmcb->rflags & RFLAGS_IF) &&
	    !(vmcb->int_state & 1)) {
		vec = platform_intr_ack(v, vec, from_pic, test);
		if (vec < 0)
			return;
		vmcb->eventinj = SVM_EVTINJ_VALID | SVM_EVTINJ_TYPE_INTR | (uint8_t)vec;
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
		vmcb->int_ctl &= ~INT_CTL_V_IRQ;
		return;
	}
	vmcb->int_ctl |= INT_CTL_V_IRQ | INT_CTL_V_IGN_TPR | INT_CTL_V_INTR_PRIO_MAX;
	vmcb->intercept_misc1 |= SVM_INTERCEPT_VINTR;
}

/* An exit in the middle of delivering an event (EXITINTINFO valid, e.g. a
 * nested page fault on the guest's IDT or stack): deliver it again. */
static void svm_reinject_interrupted_event(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	if (vmcb->exitintinfo & SVM_EVTINJ_VALID) {
		vmcb->eventinj = vmcb->exitintinfo;
		vmcb->exitintinfo = 0;
	}
}

static void heavy_exit(struct vcpu *v);

void vendor_handle_heavy(struct vcpu *v)
{
	if (v->heavy_action == HEAVY_EXIT && !v->vm->ended) {
		svm_reinject_interrupted_event(v);
		heavy_exit(v);
	}
	if (!v->vm->ended)
		svm_inject_interrupts(v);
}

static void heavy_exit(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t code = vmcb->exitcode;
	uint64_t next;
	switch (code) {
	case SVM_EXIT_VMMCALL:
		next = next_rip_slow(v, op_vmmcall, sizeof(op_vmmcall));
		if (next) {
			exit_hypercall(v, &vmcb->rax);
			vmcb->rip = next;
		}
		break;
	case SVM_EXIT_CPUID:
		next = next_rip_slow(v, op_cpuid, sizeof(op_cpuid));
		if (next) {
			do_cpuid(v);
			vmcb->rip = next;
		}
		break;
	case SVM_EXIT_MSR: {
		bool wr = vmcb->exitinfo1 & 1;
		next = next_rip_slow(v, wr ? op_wrmsr : op_rdmsr, 2);
		if (next && do_msr(v, wr))
			vmcb->rip = next;
		break;
	}
	case SVM_EXIT_IOIO:
		heavy_io(v);
		break;
	case SVM_EXIT_HLT: {
		/* a blocking HLT: sleep until a timer or input makes an interrupt
		 * pending (with IF=0 only an NMI could wake it: stop the VM) */
		bool can_wake = vmcb->rflags & RFLAGS_IF, from_pic, test;
		while (can_wake && platform_intr_pending(v, &from_pic, &test) < 0 && v->vm->nr_timers &&
		       !v->vm->ended) {
			vendor_host_wait_for_interrupt();
			vm_timers_run(v->vm);
		}
		if (v->vm->ended)
			break;
		if (platform_intr_pending(v, &from_pic, &test) >= 0 && can_wake)
			heavy_skip(v, op_hlt, 1);
		else
			vm_fault(v->vm, "HLT at rip 0x%lx with no interrupt pending and no interrupt "
				 "source that could wake it (RFLAGS.IF=%u)", vmcb->rip,
				 (unsigned)((vmcb->rflags >> 9) & 1));
		break;
	}
	case SVM_EXIT_VINTR:          /* the interrupt window opened: injected below */
		vmcb->int_ctl &= ~INT_CTL_V_IRQ;
		vmcb->intercept_misc1 &= ~SVM_INTERCEPT_VINTR;
		break;
	case SVM_EXIT_INTR:
		vendor_host_interrupt_window();
		vm_timers_run(v->vm);
		break;
	case SVM_EXIT_INVD:
		heavy_skip(v, op_invd, 2);  /* nothing cached to lose under NPT: a no-op */
		break;
	case SVM_EXIT_READ_DR0 ... SVM_EXIT_WRITE_DR15:
		/* seed 001: first use of a debug register. Stop trapping, switch the
		 * DRs from now on, and let the guest re-execute its MOV DR. */
		v->dr_dirty = true;
		vmcb->intercept_dr = 0;
		break;
	case SVM_EXIT_VMRUN:
	case SVM_EXIT_VMLOAD:
	case SVM_EXIT_VMSAVE:
	case SVM_EXIT_STGI:
	case SVM_EXIT_CLGI:
	case SVM_EXIT_SKINIT:
	case SVM_EXIT_INVLPGA:
		inject_exception(v, 6, false, 0);  /* no nested SVM: #UD as on a CPU without it */
		break;
	case SVM_EXIT_SHUTDOWN:
		vm_fault(v->vm, "triple fault (SHUTDOWN exit) at rip 0x%lx", vmcb->rip);
		break;
	case SVM_EXIT_NPF:
		heavy_npf(v);
		break;
	case SVM_EXIT_INVALID:
		vm_fault(v->vm, "VMRUN refused the guest state (exit code -1) at rip 0x%lx", vmcb->rip);
		break;
	default:
		vm_fault(v->vm, "unexpected exit 0x%lx at rip 0x%lx", code, vmcb->rip);
		break;
	}
}
