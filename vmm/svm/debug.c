/* AMD SVM: the guest's breakpoints, kept out of the hypervisor (debug.h). */
#include <stdbool.h>
#include <stdint.h>

#include "core/cpu.h"
#include "vmm/guest_mem.h"
#include "vmm/svm/debug.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

extern const char svm_light_loops_armed[], svm_light_loops_armed_end[];   /* entry.S */

/* DR7 types (RW bits) */
#define DR7_TYPE_EXEC 0
#define DR7_TYPE_IO   2

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Would breakpoint (addr, type, LEN code) hit while an armed loop
 * has it armed? That loop runs its own code and touches only the vcpu's rcx
 * slot then. A #DB taken there would be delivered with the guest's
 * breakpoints still armed, and one on that delivery (the #DB stub, the host
 * stack, the IDT) would loop or, under QEMU 7.2, abort the emulator: such
 * a breakpoint is never armed in the host. */
static bool hits_armed_loop(struct vcpu *v, uint64_t addr, unsigned type, unsigned lenc)
{
	if (type == DR7_TYPE_EXEC)
		return overlaps(addr, 1, (uint64_t)(uintptr_t)svm_light_loops_armed,
				(uint64_t)(uintptr_t)svm_light_loops_armed_end -
					(uint64_t)(uintptr_t)svm_light_loops_armed);
	uint64_t len = lenc == 2 ? 8 : lenc + 1;     /* LEN 00 01 11 10: 1 2 4 8 */
	uint64_t lo = addr & ~(len - 1);             /* hardware aligns, QEMU does not */
	return overlaps(lo, addr + len - lo, (uint64_t)(uintptr_t)&v->regs.rcx, sizeof(v->regs.rcx));
}

static uint32_t dr_intercepts(struct vcpu *v)
{
	if (v->vm->opt->dr_lazy && !v->dr_dirty)
		return SVM_DR_INTERCEPT_ALL;             /* dr=lazy: every DR access exits until first use */
	/* DR7 writes always (DR5 is DR7 while CR4.DE is 0): that is how
	 * lightpath learns that breakpoints are enabled; DR0-3 writes while
	 * any is, so that none moves onto the armed loop unseen */
	uint32_t w = SVM_INTERCEPT_DR_WRITE(5) | SVM_INTERCEPT_DR_WRITE(7);
	if (v->arch.vmcb.dr7 & DR7_ENABLES)
		w |= SVM_INTERCEPT_DR_WRITE(0) | SVM_INTERCEPT_DR_WRITE(1) | SVM_INTERCEPT_DR_WRITE(2) |
		     SVM_INTERCEPT_DR_WRITE(3);
	return w;
}

void svm_dr_update(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t dr7 = vmcb->dr7, arm = ~DR7_GD, data = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t en = 3ull << (2 * i);
		unsigned type = (dr7 >> (16 + 4 * i)) & 3, lenc = (dr7 >> (18 + 4 * i)) & 3;
		if (!(dr7 & en) || type == DR7_TYPE_IO)  /* the armed loop does no port I/O */
			continue;
		if (type != DR7_TYPE_EXEC)
			data |= en;
		/* DR0-3 are in v->guest_dr on the heavy path with dr=always, and
		 * with dr=lazy once dr_dirty is set (DR7 enables nothing before
		 * that: a DR7 write is a first use) */
		if (hits_armed_loop(v, v->guest_dr[i], type, lenc))
			arm &= ~en;
	}
	v->arch.dr7_arm_mask = arm;
	v->arch.dr7_inject_mask = ~data;
	v->arch.armed = (dr7 & arm & DR7_ENABLES) != 0;
	vmcb->intercept_dr = dr_intercepts(v);
}

/* The guest GPR `n` (x86 encoding order) on the heavy path. */
static uint64_t gpr(struct vcpu *v, unsigned n)
{
	const struct guest_regs *r = &v->regs;
	switch (n) {
	case 0: return *vendor_rax(v);
	case 1: return r->rcx;
	case 2: return r->rdx;
	case 3: return r->rbx;
	case 4: return vendor_rsp(v);
	case 5: return r->rbp;
	case 6: return r->rsi;
	case 7: return r->rdi;
	case 8: return r->r8;
	case 9: return r->r9;
	case 10: return r->r10;
	case 11: return r->r11;
	case 12: return r->r12;
	case 13: return r->r13;
	case 14: return r->r14;
	default: return r->r15;
	}
}

/* MOV DRn, reg (0f 23 /r) at RIP, without decode assists: the source
 * register and the length. False when the bytes there are something else
 * (the code changed since the exit): the guest then executes it again. */
static bool mov_to_dr_decode(struct vcpu *v, const struct guest_paging *pg, unsigned n,
			     unsigned *src, unsigned *len, bool *rex_r)
{
	static const uint8_t op[2] = { 0x0f, 0x23 };
	const struct vmcb *vmcb = &v->arch.vmcb;
	uint64_t lin = (pg->cs_long ? 0 : vmcb->cs.base) + vmcb->rip;
	if (!pg->cs_long)
		lin &= 0xffffffffull;
	uint8_t buf[16];
	size_t got = guest_read_linear(v->vm, pg, lin, buf, 15);
	unsigned at = insn_length_with_prefixes(buf, got, pg->cs_long, op, 2);
	if (!at || at >= got)
		return false;
	uint8_t rex = (pg->cs_long && at >= 3 && (buf[at - 3] & 0xf0) == 0x40) ? buf[at - 3] : 0;
	uint8_t modrm = buf[at];
	*rex_r = rex & 4;
	*src = (modrm & 7) | ((rex & 1) << 3);
	*len = at + 1;
	return ((modrm >> 3) & 7) == n;
}

void svm_heavy_dr_write(struct vcpu *v)
{
	struct vmcb *vmcb = &v->arch.vmcb;
	unsigned n = (unsigned)(vmcb->exitcode - SVM_EXIT_WRITE_DR0);
	if ((v->vm->opt->dr_lazy && !v->dr_dirty) || n == 4 || n == 6) {
		heavy_dr_first_use(v);   /* the guest executes its MOV again */
		return;
	}
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	unsigned src, len;
	bool rex_r;
	if (!mov_to_dr_decode(v, &pg, n, &src, &len, &rex_r))
		return;
	/* the checks the CPU makes, in its order */
	if (rex_r || (n == 5 && (vmcb->cr4 & CR4_DE))) {
		vendor_inject_exception(v, 6, false, 0);
		return;
	}
	uint64_t val = gpr(v, src);
	if (!pg.cs_long)
		val &= 0xffffffffull;
	if (vmcb->cpl || (n >= 5 && (val >> 32))) {
		vendor_inject_exception(v, 13, true, 0);
		return;
	}
	if (n >= 5)
		vmcb->dr7 = val | DR7_INIT;   /* bit 10 reads as 1 */
	else
		v->guest_dr[n] = val;         /* dr=lazy after first use, dr=always: here on the heavy path */
	uint64_t next = svm_has_nrip && vmcb->nrip ? vmcb->nrip : vmcb->rip + len;
	vendor_set_rip(v, pg.cs_long ? next : (next & 0xffffffffull));
	exit_insn_completed(v);
	svm_dr_update(v);
}
