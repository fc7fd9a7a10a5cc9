/* The light handlers (the protocol is in vmm/light.h): one per kind of exit,
 * written once for both backends, compiled once per measured switch set, so
 * that every published configuration runs a straight path with its "always"
 * pieces around it and no test of an option on the way, and once generic,
 * testing the switches at run time, for every other set (docs/EXITS.md). */
#include "core/cpu.h"
#include "include/lightpath/abi.h"
#include "vmm/code_cache.h"
#include "vmm/io_registry.h"
#include "vmm/exit.h"
#include "vmm/state_switch.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vm_timers.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define COLD __attribute__((noinline, cold))

/* ---- the guest's rbx, which stays in the CPU on the light path ----
 * (vmm/light.h; no hypervisor code uses rbx: -ffixed-rbx). Handlers that
 * hand the guest's registers to code shared with the heavy path, which
 * keeps rbx in v->regs, copy it there before and back after. */

ALWAYS_INLINE void light_rbx_to_regs(struct vcpu *v)
{
	asm volatile("mov %%rbx, %0" : "=m"(v->regs.rbx));
}

ALWAYS_INLINE void light_rbx_from_regs(struct vcpu *v)
{
	asm volatile("mov %0, %%rbx" : : "m"(v->regs.rbx));
}

/* A CPUID answer's EBX (a 32-bit move zero-extends into rbx). */
ALWAYS_INLINE void light_rbx_set32(uint32_t ebx)
{
	asm volatile("movl %0, %%ebx" : : "rm"(ebx));
}

/* ---- how a light handler ends ---- */

/* Not handled here: the heavy path handles the exit from scratch. */
static COLD light_ret light_go_heavy(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_EXIT;
	return light_leave();
}

/* Handled here, but the light loop ends (light=off, the VM ended, or a
 * hypercall that asks for the heavy path). */
static COLD light_ret light_handled_leave(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_NONE;   /* v->pending stays for the heavy path */
	return light_leave();
}

/* The hazard check found work. Delivering an interrupt touches only the
 * VMCB/VMCS and the emulated controllers, so it is done here; not a VM that
 * ended (a due timer run here can end it), a single step (the DRs are the
 * heavy path's), a host NMI to say, several vCPUs (shared interrupt state). */
#define RECHECK_LEAVES (VCPU_PENDING_STEP | VCPU_PENDING_HOST_NMI)
static inline bool light_recheck_leaves(const struct vcpu *v)
{
	return v->vm->ended || (v->pending & RECHECK_LEAVES) || v->vm->nr_vcpus > 1;
}

static COLD light_ret light_recheck(struct vcpu *v, unsigned reason);

/* Due timers (a clock read found one), run here and looked at again: one of
 * them, the time limit, can end the VM. Its own function, so that the
 * common recheck keeps nothing across a call. */
static COLD light_ret light_recheck_timers(struct vcpu *v, unsigned reason)
{
	v->pending &= ~VCPU_PENDING_TIMERS;
	vm_timers_run(v->vm);
	return light_recheck(v, reason);
}

static COLD light_ret light_recheck(struct vcpu *v, unsigned reason)
{
	if (v->vm->ended || (v->pending & (RECHECK_LEAVES | VCPU_PENDING_TIMERS)) ||
	    v->vm->nr_vcpus > 1) {
		if (light_recheck_leaves(v))
			return light_handled_leave(v, reason);
		return light_recheck_timers(v, reason);   /* (due timers: the one bit left) */
	}
	v->pending = 0;
	exit_inject_interrupts(v);
	vm_timer_lead_wait(v->vm);   /* last: the guest runs next */
	return light_resume(v);
}

/* The end of every handled light exit: one test of v->pending (NOVA's
 * hazard check). With light=off every exit goes round the outer loop. */
ALWAYS_INLINE light_ret light_done(struct vcpu *v, unsigned reason, const unsigned sw)
{
	if (sw & SW_LIGHT_OFF)
		return light_handled_leave(v, reason);
	if (__builtin_expect(v->pending, 0))
		return light_recheck(v, reason);
	return light_resume(v);
}

static light_ret light_code_miss(struct vcpu *v, unsigned reason, enum light_kind kind,
					bool light_off);

/* ---- the handlers ---- */

/* light_done for the out-of-line ends, where light=off is an argument:
 * the instruction at RIP completes (its length `next - RIP`). */
static light_ret light_done_out_of_line(struct vcpu *v, unsigned reason, uint64_t next,
					bool leave)
{
	vendor_skip_insn(v, next);
	exit_insn_completed(v);
	if (leave)
		return light_handled_leave(v, reason);
	if (v->pending)
		return light_recheck(v, reason);
	return light_resume(v);
}

/* Every hypercall but the null one, out of line (a tail call). */
static __attribute__((noinline)) light_ret light_hypercall_other(struct vcpu *v,
									 uint64_t next,
									 bool light_off)
{
	light_rbx_to_regs(v);   /* arguments and results in RBX */
	bool leave = exit_hypercall_slow(v, vendor_rax(v));
	light_rbx_from_regs(v);
	return light_done_out_of_line(v, LP_EXIT_HYPERCALL, next, leave || light_off);
}

/* A CPUID leaf without a cached answer, out of line (a tail call): the
 * cached ones then need no stack frame. */
static __attribute__((noinline)) light_ret light_cpuid_uncached(struct vcpu *v, uint64_t next,
								bool light_off)
{
	exit_do_cpuid_uncached(v);
	light_rbx_from_regs(v);
	return light_done_out_of_line(v, LP_EXIT_CPUID, next, light_off);
}

/* `shared`: in a VM of several vCPUs the other hypercalls (timers, the
 * VM's end) touch shared state: the heavy path's. */
ALWAYS_INLINE light_ret light_hypercall(struct vcpu *v, const unsigned sw,
					const enum light_kind kind)
{
	const bool shared = kind == LIGHT_HYPERCALL_SHARED;
	uint64_t next, *rax = vendor_rax(v);
	v->stats.exits[LP_EXIT_HYPERCALL]++;
	if (!vendor_next_rip(v, insn_hypercall, sw, &next))
		return light_code_miss(v, LP_EXIT_HYPERCALL, kind, sw & SW_LIGHT_OFF);
	if (__builtin_expect(*rax != LP_HC_NULL, 0)) {
		if (shared)
			return light_go_heavy(v, LP_EXIT_HYPERCALL);
		return light_hypercall_other(v, next, sw & SW_LIGHT_OFF);
	}
	*rax = 0;
	vendor_skip_insn(v, next);
	exit_insn_completed(v);
	return light_done(v, LP_EXIT_HYPERCALL, sw);
}

ALWAYS_INLINE light_ret light_cpuid(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	uint64_t next;
	v->stats.exits[LP_EXIT_CPUID]++;
	if (!vendor_next_rip(v, insn_cpuid, sw, &next))
		return light_code_miss(v, LP_EXIT_CPUID, kind, sw & SW_LIGHT_OFF);
	const uint32_t *out = exit_cpuid_cached(v, (uint32_t)*vendor_rax(v));
	if (__builtin_expect(!out, 0))
		return light_cpuid_uncached(v, next, sw & SW_LIGHT_OFF);
	*vendor_rax(v) = out[0];   /* exit_cpuid_store, with RBX in the CPU */
	light_rbx_set32(out[1]);
	v->regs.rcx = out[2];
	v->regs.rdx = out[3];
	vendor_skip_insn(v, next);
	exit_insn_completed(v);
	return light_done(v, LP_EXIT_CPUID, sw);
}

/* A port nobody claimed: denied like on the heavy path. */
static COLD void light_io_unclaimed(struct vcpu *v, uint16_t port, unsigned size, bool in)
{
	exit_port_io(v, port, size, in, vendor_rax(v));
}

/* IN or OUT (`in`, a constant: one straight path per direction). */
ALWAYS_INLINE light_ret light_io_port(struct vcpu *v, const unsigned sw,
				      const struct io_intercept *io, const bool in)
{
	uint64_t idx = v->vm->port_map[io->port];
	if (__builtin_expect(idx & VM_PORT_SLOW, 0)) {
		if (idx != VM_PORT_SLOW)   /* a device that runs on the heavy path only */
			return light_go_heavy(v, LP_EXIT_IO);
		light_io_unclaimed(v, io->port, io->size, in);
	} else {
		exit_port_io_at(v, idx, io->port, io->size, in, vendor_rax(v));
	}
	vendor_set_rip(v, vendor_exit_io_next_rip(v));
	exit_insn_completed(v);
	return light_done(v, LP_EXIT_IO, sw);
}

/* Port I/O decoded from the exit information (io=fast). */
ALWAYS_INLINE light_ret light_io(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	(void)kind;
	struct io_intercept io;
	v->stats.exits[LP_EXIT_IO]++;
	if (sw & SW_IO_EMULATE)   /* io=emulate: the emulator decodes every IN/OUT */
		return light_go_heavy(v, LP_EXIT_IO);
	vendor_exit_io(v, &io);
	if (io.string)
		return light_go_heavy(v, LP_EXIT_IO);
	return io.in ? light_io_port(v, sw, &io, true) : light_io_port(v, sw, &io, false);
}

/* RDMSR/WRMSR; LIGHT_MSR takes the direction from the exit information. */
ALWAYS_INLINE light_ret light_msr(struct vcpu *v, const unsigned sw,
					 const enum light_kind kind)
{
	bool wr = kind == LIGHT_WRMSR || (kind == LIGHT_MSR && vendor_exit_msr_write(v));
	unsigned reason = wr ? LP_EXIT_MSR_WRITE : LP_EXIT_MSR_READ;
	uint64_t next;
	v->stats.exits[reason]++;
	if (!vendor_next_rip(v, insn_msr(wr), sw, &next))
		return light_code_miss(v, reason, kind, sw & SW_LIGHT_OFF);
	int r = exit_do_msr(v, wr);
	if (__builtin_expect(!r, 1)) {
		vendor_skip_insn(v, next);
		exit_insn_completed(v);
	} else if (r == MSR_NEEDS_LOCK) {
		return light_go_heavy(v, reason);
	}
	return light_done(v, reason, sw);
}

/* RDTSC and RDTSCP, which exit only while the guest polls its clocks: the
 * VM's time (guest_clock_rdtsc), and for RDTSCP the guest's TSC_AUX, which
 * the CPU holds (never switched). On SVM without NRIP an RDTSCP that QEMU
 * reports with the RDTSC code misses the RDTSC pattern: light_code_miss
 * tries RDTSCP's. */
ALWAYS_INLINE light_ret light_rdtsc(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	const bool rdtscp = kind == LIGHT_RDTSCP;
	uint64_t next;
	v->stats.exits[LP_EXIT_RDTSC]++;
	if (!vendor_next_rip(v, rdtscp ? insn_rdtscp : insn_rdtsc, sw, &next))
		return light_code_miss(v, LP_EXIT_RDTSC, kind, sw & SW_LIGHT_OFF);
	guest_clock_rdtsc(v, rdtscp);
	vendor_skip_insn(v, next);
	exit_insn_completed(v);
	return light_done(v, LP_EXIT_RDTSC, sw);
}

/* HLT while an interrupt waits for the guest to open its window: with IF=1
 * the HLT ends at once, and the interrupt is delivered now. A HLT that
 * would block (nothing pending, or IF=0) is the heavy path's. */
ALWAYS_INLINE light_ret light_hlt(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	uint64_t next;
	v->stats.exits[LP_EXIT_HLT]++;
	if (!vendor_intr_window_requested(v) || !(vendor_rflags(v) & RFLAGS_IF))
		return light_go_heavy(v, LP_EXIT_HLT);
	if (!vendor_next_rip(v, insn_hlt, sw, &next))
		return light_code_miss(v, LP_EXIT_HLT, kind, sw & SW_LIGHT_OFF);
	vendor_skip_insn(v, next);
	exit_insn_completed(v);   /* an STI shadow ends with the HLT */
	v->pending |= VCPU_PENDING_RECHECK;
	return light_done(v, LP_EXIT_HLT, sw);
}

/* A host interrupt (the timer) arrived while the guest ran: take it (the
 * host IDT uses no IST, so the guest's TR in the CPU does not matter), run
 * the expired VM timers, deliver what they raised. */
ALWAYS_INLINE light_ret light_host_intr(struct vcpu *v, const unsigned sw,
					const enum light_kind kind)
{
	(void)kind;
	v->stats.exits[LP_EXIT_INTR]++;
	if (vendor_exit_in_event_delivery(v))   /* the heavy path re-injects that event */
		return light_go_heavy(v, LP_EXIT_INTR);
	vendor_host_interrupt_window();
	if (__builtin_expect(__atomic_load_n(&v->kicked, __ATOMIC_RELAXED), 0))
		return light_go_heavy(v, LP_EXIT_INTR);   /* another CPU's kick: heavy_host_intr */
	vm_timers_run(v->vm);   /* sets v->pending if a timer fired */
	return light_done(v, LP_EXIT_INTR, sw);
}

/* The interrupt window the injection asked for has opened. */
ALWAYS_INLINE light_ret light_intr_window(struct vcpu *v, const unsigned sw,
					  const enum light_kind kind)
{
	(void)kind;
	v->stats.exits[LP_EXIT_VINTR]++;
	vendor_intr_window(v, false);
	v->pending |= VCPU_PENDING_RECHECK;
	return light_done(v, LP_EXIT_VINTR, sw);
}

/* The guest GPR `n` (x86 encoding order) where the light path has it: rbp
 * and r10-r15 are still in the CPU there, so they are not reachable (0: the
 * heavy path, which has them all, does the access). rbx's slot is valid
 * only because light_npf copies rbx into v->regs before the decode and back
 * after it. */
ALWAYS_INLINE uint64_t *light_gpr(struct vcpu *v, unsigned n)
{
	struct guest_regs *r = &v->regs;
	switch (n) {
	case 0: return vendor_rax(v);
	case 1: return &r->rcx;
	case 2: return &r->rdx;
	case 3: return &r->rbx;
	case 4: return vendor_light_rsp(v);
	case 6: return &r->rsi;
	case 7: return &r->rdi;
	case 8: return &r->r8;
	case 9: return &r->r9;
	}
	return 0;
}

/* A MOV between a register and memory of `size` bytes (4, or 2 behind a
 * 0x66 prefix, which p and rip are past) at RIP, decoded and done: the
 * fault already gave the address, so only the length and the register
 * are read. Returns false, having changed nothing, if the encoding is
 * another or the device wants the heavy path. */
/* What the light MMIO decode needs of the guest's mode, as bits: passed in
 * a register, where a struct guest_paging handed to the out-of-line 16-bit
 * path had to be built in memory on every access. */
#define CODE_CS_LONG 1u   /* 64-bit code */
#define CODE_CS_32   2u   /* CS.D */
#define CODE_LMA     4u   /* EFER.LMA: RIP is 64 bits wide */

static inline unsigned light_code_mode(const struct guest_paging *pg)
{
	return (pg->cs_long ? CODE_CS_LONG : 0) | (pg->cs_32 ? CODE_CS_32 : 0) |
	       ((pg->efer & EFER_LMA) ? CODE_LMA : 0);
}

ALWAYS_INLINE bool light_mmio_mov(struct vcpu *v, const bool shared, const struct io_range *r,
				  uint64_t gpa, unsigned mode, uint64_t rip,
				  const uint8_t *p, const unsigned size)
{
	unsigned len = 0, rex = 0;
	if ((p[len] & 0xf0) == 0x40 && (mode & CODE_CS_LONG))
		rex = p[len++];
	uint8_t op = p[len], modrm = p[len + 1];
	unsigned mod = modrm >> 6, rm = modrm & 7;
	/* 32-bit or 64-bit addressing only (no 16-bit code, no 67 prefix) */
	if ((op != 0x89 && op != 0x8b) || (rex & 8) || mod == 3 ||
	    !(mode & (CODE_CS_LONG | CODE_CS_32)))
		return false;
	len += 2;
	if (rm == 4)
		len += 1 + (mod == 0 && (p[len] & 7) == 5 ? 4 : 0);   /* SIB (+ disp32, no base) */
	else if (mod == 0 && rm == 5)
		len += 4;                     /* [rip + disp32] or [disp32] */
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	uint64_t *reg = light_gpr(v, ((modrm >> 3) & 7) | ((rex & 4) << 1));
	if (!reg)
		return false;
	bool is_write = op == 0x89;
	uint64_t data = size == 4 ? (uint32_t)*reg : (uint16_t)*reg;
	int ret = r->fn(r->dev, gpa, &data, size, is_write);   /* a VM end sets v->pending */
	if (shared && ret == IO_NEEDS_LOCK)
		return false;
	if (!is_write)                    /* a 32-bit load zero-extends, a 16-bit one merges */
		*reg = size == 4 ? (uint32_t)data : (*reg & ~0xffffull) | (uint16_t)data;
	rip += len;
	vendor_set_rip(v, (mode & CODE_LMA) ? rip : (rip & 0xffffffffull));
	exit_insn_completed(v);
	return true;
}

/* The 16-bit MOV (0x66 prefix), out of the 32-bit path's way: a virtio
 * driver's doorbell (Linux's iowrite16) and 16-bit register accesses. */
static __attribute__((noinline, cold)) bool light_mmio_word(struct vcpu *v, const bool shared,
							       const struct io_range *r, uint64_t gpa,
							       unsigned mode, uint64_t rip,
							       const uint8_t *p)
{
	if (gpa & 1)
		return false;
	return light_mmio_mov(v, shared, r, gpa, mode, rip + 1, p + 1, 2);   /* after the prefix */
}

/* A nested page fault on a light MMIO device (the local APIC, the I/O APIC,
 * virtio BARs): guests touch them on every interrupt (EOI), timer change
 * and doorbell. The common encodings, a 32-bit MOV between a register and
 * memory (any ModRM/SIB addressing) and its 16-bit form, are decoded
 * here; anything else goes to the emulator. Returns false, having changed
 * nothing, when the heavy path must do it. */
ALWAYS_INLINE bool light_mmio_access_as(struct vcpu *v, const bool shared)
{
	/* the device first: most faults on other devices are the emulator's */
	const struct io_range *r = vm_find_mmio(v->vm, vendor_exit_npf_gpa(v));
	if (!r || !r->light)
		return false;
	struct npf_info f;
	vendor_exit_npf(v, &f);
	if (!f.final_access || f.fetch || f.in_event_delivery)
		return false;
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t rip = vendor_guest_rip(v);
	const uint8_t *p = code_cache_at_rip(v, pg.cr3, pg.cr0, rip);
	if (!p)
		return false;
	unsigned mode = light_code_mode(&pg);
	if (!(f.gpa & 3) && light_mmio_mov(v, shared, r, f.gpa, mode, rip, p, 4))
		return true;
	/* (a 0x66 prefix is no opcode the 32-bit decode takes: nothing was done) */
	return p[0] == 0x66 && light_mmio_word(v, shared, r, f.gpa, mode, rip, p);
}

static __attribute__((noinline)) bool light_mmio_access(struct vcpu *v)
{
	return light_mmio_access_as(v, false);
}

/* In a VM of several vCPUs: the handler may answer IO_NEEDS_LOCK. */
static __attribute__((noinline)) bool light_mmio_access_shared(struct vcpu *v)
{
	return light_mmio_access_as(v, true);
}

ALWAYS_INLINE light_ret light_npf(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	const bool shared = kind == LIGHT_NPF_SHARED;
	v->stats.exits[LP_EXIT_NPF]++;
	light_rbx_to_regs(v);   /* the MOV's operand may be RBX (light_gpr) */
	if (!(shared ? light_mmio_access_shared(v) : light_mmio_access(v)))
		return light_go_heavy(v, LP_EXIT_NPF);
	light_rbx_from_regs(v);
	return light_done(v, LP_EXIT_NPF, sw);
}

/* An exit without a light handler: count it in its class, go heavy. */
static COLD light_ret light_other(struct vcpu *v)
{
	const struct exit_row *row = exit_row_of(vendor_exit_code(v));
	unsigned reason = row ? row->stat : LP_EXIT_OTHER;
	v->stats.exits[reason]++;
	return light_go_heavy(v, reason);
}

/* ---- one handler per compiled switch set and kind ---- */

/* The "always" switches: their piece of the state switch on every exit
 * (the seeds' "before"), around the handler. */
ALWAYS_INLINE void per_exit_leave(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_MSR_ALWAYS)
		smsr_save_guest_load_host(v);   /* before VMSAVE: the CPU holds the guest's */
	if (sw & SW_VMLOAD_ALWAYS)
		vendor_vmload_leave(v);
	if (sw & SW_DR_ALWAYS)
		vendor_dr_save_guest_load_host(v);
	if (sw & SW_PMU_ALWAYS)
		vendor_pmu_save_guest_load_host(v);
}

ALWAYS_INLINE void per_exit_enter(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_PMU_ALWAYS)
		vendor_pmu_load_guest(v);
	if (sw & SW_DR_ALWAYS)
		vendor_dr_load_guest(v);
	if (sw & SW_VMLOAD_ALWAYS)
		vendor_vmload_enter(v);
	if (sw & SW_MSR_ALWAYS)
		smsr_load_guest(v);             /* after VMLOAD, which loaded stale copies */
}

/* LIGHT_MSR: one straight path per direction. */
ALWAYS_INLINE light_ret light_msr_either(struct vcpu *v, const unsigned sw,
					 const enum light_kind kind)
{
	(void)kind;
	return vendor_exit_msr_write(v) ? light_msr(v, sw, LIGHT_WRMSR) : light_msr(v, sw, LIGHT_RDMSR);
}

/* LIGHT_NONE, and what a kind has no handler for */
ALWAYS_INLINE light_ret light_none(struct vcpu *v, const unsigned sw, const enum light_kind kind)
{
	(void)sw;
	(void)kind;
	return light_other(v);
}

ALWAYS_INLINE light_ret light_dispatch(struct vcpu *v, const unsigned sw,
				       const enum light_kind kind)
{
	switch (kind) {
#define LIGHT_DISPATCH_CASE(k, name, fn, smp, ...) case k: return fn(v, sw, k);
	LIGHT_KINDS(LIGHT_DISPATCH_CASE, _)
#undef LIGHT_DISPATCH_CASE
	default: return light_other(v);
	}
}

/* The next-RIP check missed (SVM without NRIP). If the code page is simply
 * not the cached one, walk the guest page tables for it (no world switch)
 * and run the handler again; if it is cached, the bytes are not the plain
 * encoding (a prefix, say) and the heavy path decodes them. */
static COLD light_ret light_code_miss(struct vcpu *v, unsigned reason, enum light_kind kind,
					     bool light_off)
{
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t lin = vendor_cs_base(v) + vendor_guest_rip(v), off;
	light_ret r;
	if (code_cache_peek(v, lin, pg.cr3, pg.cr0, &off)) {
		/* QEMU's RDTSCP comes with RDTSC's exit code */
		if (kind != LIGHT_RDTSC)
			return light_go_heavy(v, reason);
		kind = LIGHT_RDTSCP;
	} else if (!code_cache_fill(v) || !code_cache_peek(v, lin, pg.cr3, pg.cr0, &off)) {
		return light_go_heavy(v, reason);   /* near the page end */
	}
	v->stats.exits[reason]--;            /* the retry counts it again */
	r = light_dispatch(v, 0, kind);   /* (only kinds that check the next RIP come here) */
	if (light_off && r)
		return light_handled_leave(v, reason);
	return r;
}

ALWAYS_INLINE light_ret light_exit(struct vcpu *v, const unsigned sw,
					  const enum light_kind kind)
{
	if (!(sw & SW_PER_EXIT))
		return light_dispatch(v, sw, kind);   /* tail calls stay tail calls */
	per_exit_leave(v, sw);
	light_ret r = light_dispatch(v, sw, kind);
	if (r)
		per_exit_enter(v, sw);
	return r;
}

/* light_<set>_<kind> = light_exit(v, set, kind), as functions the stub can
 * call, for each compiled set (VENDOR_LIGHT_SETS) and kind (LIGHT_KINDS):
 * the configurations `make bench` publishes each run a straight path. A
 * copy for each of the 128 sets was a megabyte of text; the generic
 * handlers below serve every other set. */
#define LIGHT_SET_FN(set, kind) light_##set##_##kind
#define LIGHT_SET_DEF_KIND(k, name, fn, smp, set, sw)                                                \
	static __attribute__((noipa)) light_ret LIGHT_SET_FN(set, name)(struct vcpu *v)          \
	{                                                                                        \
		return light_exit(v, (sw), k);                                                   \
	}
#define LIGHT_SET_DEF(set, sw, ...) LIGHT_KINDS(LIGHT_SET_DEF_KIND, set, sw)
#define LIGHT_SET_ROW_KIND(k, name, fn, smp, set) [k] = LIGHT_SET_FN(set, name),
#define LIGHT_SET_ROW(set, sw, ...) { (sw), { LIGHT_KINDS(LIGHT_SET_ROW_KIND, set) } },

VENDOR_LIGHT_SETS(LIGHT_SET_DEF, _)

struct light_set {
	unsigned sw;
	light_handler_fn *fn[LIGHT_KIND_COUNT];
};

static const struct light_set light_sets[] = { VENDOR_LIGHT_SETS(LIGHT_SET_ROW, _) };

/* Every other set: the switch set read at run time (v->light_sw), one test
 * per switch on the way; correct for all 128, measured by none. */
#define LIGHT_GENERIC_DEF(k, name, fn, smp, ...)                                                    \
	static __attribute__((noipa)) light_ret light_generic_##name(struct vcpu *v)           \
	{                                                                                        \
		return light_exit(v, v->light_sw, k);                                            \
	}
#define LIGHT_GENERIC_ROW(k, name, fn, smp, ...) [k] = light_generic_##name,
LIGHT_KINDS(LIGHT_GENERIC_DEF, _)
static light_handler_fn *const light_generic[LIGHT_KIND_COUNT] = { LIGHT_KINDS(LIGHT_GENERIC_ROW, _) };

light_handler_fn *exit_light_set_handler(unsigned sw, enum light_kind kind)
{
	for (unsigned i = 0; i < sizeof(light_sets) / sizeof(light_sets[0]); i++)
		if (light_sets[i].sw == sw)
			return light_sets[i].fn[kind];
	return light_generic[kind];
}

/* exit_row_of past the index, here with light_other, its caller: the call
 * keeps the register allocation that knows what it clobbers. */
const struct exit_row *exit_row_past_table(uint64_t code)
{
	for (unsigned i = 0; i < vendor_exit_table_rows; i++)
		if (code >= vendor_exit_table[i].first && code <= vendor_exit_table[i].last)
			return &vendor_exit_table[i];
	return 0;
}
