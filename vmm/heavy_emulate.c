/* The instruction emulator (emul/x86_emulate.h) on the heavy path: the
 * vCPU's registers and memory as the emulator sees them, its port and MMIO
 * accesses sent to the VM's devices (a REP INS/OUTS run to one device), and
 * what its result does to the guest. */
#include "vmm/heavy_emulate.h"

#include "emul/x86_emulate.h"
#include "lib/printf.h"
#include "vmm/io_registry.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

static void *emul_gpa_ptr(struct emul_ctx *c, uint64_t gpa, size_t len)
{
	struct vcpu *v = c->opaque;
	return gpa_to_host(v->vm, gpa, len);
}

static int emul_mmio_cb(struct emul_ctx *c, uint64_t gpa, uint64_t *data, unsigned size,
			bool is_write)
{
	return vm_mmio_access(c->opaque, gpa, data, size, is_write);
}

static int emul_pio_cb(struct emul_ctx *c, uint16_t port, uint64_t *data, unsigned size,
		       bool is_write)
{
	return vm_port_access(c->opaque, port, data, size, is_write);
}

/* One run's elements of one size and direction (constants: each copy keeps
 * only the count, the pointer, the step, the vCPU, the port and the device
 * across the device's call). Returns how many were done; *rc is the first
 * non-zero answer. */
static inline __attribute__((always_inline)) uint64_t
pio_rep_run(struct vcpu *v, const struct io_range *r, uint16_t port, uint8_t *host, int64_t step,
	    const unsigned size, uint64_t n, const bool is_write, int *rc)
{
	uint64_t left = n;
	for (; left; left--, host += step) {
		uint64_t d = is_write ? emul_load_le(host, size) : 0;
		int ret = r ? r->fn(r->dev, port, &d, size, is_write)
			    : vm_port_unclaimed(v, &d, is_write);
		if (ret) {
			*rc = ret;
			break;
		}
		if (!is_write)
			emul_store_le(host, d, size);
	}
	return n - left;
}

/* A run of REP INS/OUTS elements (emul_pio_rep_fn): the port's device is
 * found once, not per element. */
static int emul_pio_rep_cb(struct emul_ctx *c, uint16_t port, uint8_t *host, int64_t step,
			   unsigned size, uint64_t n, bool is_write, uint64_t *done)
{
	struct vcpu *v = c->opaque;
	const struct io_range *r = vm_port_range(v->vm, port);
	int rc = 0;
#define PIO_REP_RUN(sz) (is_write ? pio_rep_run(v, r, port, host, step, sz, n, true, &rc) \
				  : pio_rep_run(v, r, port, host, step, sz, n, false, &rc))
	switch (size) {
	case 1: *done = PIO_REP_RUN(1); break;
	case 2: *done = PIO_REP_RUN(2); break;
	case 4: *done = PIO_REP_RUN(4); break;
	default: *done = PIO_REP_RUN(size); break;   /* (INS/OUTS have no other size) */
	}
#undef PIO_REP_RUN
	return rc;
}

static void emul_ctx_load(struct vcpu *v, struct emul_ctx *c)
{
	const struct guest_regs *r = &v->regs;
	/* every field is set below: no memset of the 272-byte context */
	c->gpr[X86_RAX] = *vendor_rax(v); c->gpr[X86_RCX] = r->rcx;  c->gpr[X86_RDX] = r->rdx;
	c->gpr[X86_RBX] = r->rbx;     c->gpr[X86_RSP] = vendor_rsp(v);  c->gpr[X86_RBP] = r->rbp;
	c->gpr[X86_RSI] = r->rsi;     c->gpr[X86_RDI] = r->rdi;  c->gpr[X86_R8] = r->r8;
	c->gpr[X86_R9] = r->r9;       c->gpr[X86_R10] = r->r10;  c->gpr[X86_R11] = r->r11;
	c->gpr[X86_R12] = r->r12;     c->gpr[X86_R13] = r->r13;  c->gpr[X86_R14] = r->r14;
	c->gpr[X86_R15] = r->r15;
	c->rip = vendor_guest_rip(v);
	c->rflags = vendor_rflags(v);
	vendor_seg_bases(v, c->seg_base);
	vendor_guest_paging(v, &c->pg);
	c->cpl = vendor_cpl(v);
	c->maxphyaddr = 0;
	c->rep_max = 0;
	c->gpa_ptr = emul_gpa_ptr;
	c->mmio = emul_mmio_cb;
	c->pio = emul_pio_cb;
	c->pio_rep = emul_pio_rep_cb;
	c->opaque = v;
}

static void emul_ctx_store(struct vcpu *v, const struct emul_ctx *c)
{
	struct guest_regs *r = &v->regs;
	*vendor_rax(v) = c->gpr[X86_RAX]; r->rcx = c->gpr[X86_RCX];  r->rdx = c->gpr[X86_RDX];
	r->rbx = c->gpr[X86_RBX];     vendor_set_rsp(v, c->gpr[X86_RSP]); r->rbp = c->gpr[X86_RBP];
	r->rsi = c->gpr[X86_RSI];     r->rdi = c->gpr[X86_RDI];  r->r8 = c->gpr[X86_R8];
	r->r9 = c->gpr[X86_R9];       r->r10 = c->gpr[X86_R10];  r->r11 = c->gpr[X86_R11];
	r->r12 = c->gpr[X86_R12];     r->r13 = c->gpr[X86_R13];  r->r14 = c->gpr[X86_R14];
	r->r15 = c->gpr[X86_R15];
	vendor_set_rip(v, c->rip);
	vendor_set_rflags(v, c->rflags);
}

/* EMUL_RETRY at `rip`: the code or page tables changed under the emulator;
 * a guest that keeps doing that at one RIP would loop forever. */
static void emul_retry(struct vcpu *v, uint64_t rip)
{
	if (rip == v->emul_retry_rip && ++v->emul_retries >= 16) {
		vm_fault(v->vm, "the instruction at rip 0x%lx keeps changing under the emulator", rip);
		return;
	}
	if (rip != v->emul_retry_rip) {
		v->emul_retry_rip = rip;
		v->emul_retries = 1;
	}
}

/* EMUL_UNSUPPORTED: stop the VM with one line naming `what` and the bytes. */
static void emul_unsupported(struct vcpu *v, const struct emul_result *res, const char *what)
{
	char bytes[3 * X86_MAX_INSN_LEN + 1];
	unsigned n = 0;
	for (unsigned i = 0; i < res->nbytes && n + 4 < sizeof(bytes); i++)
		n += snprintf(bytes + n, sizeof(bytes) - n, "%s%02x", i ? " " : "", res->bytes[i]);
	bytes[n] = 0;
	vm_fault(v->vm, "cannot emulate the %s at rip 0x%lx (%s; bytes %s)", what, res->rip,
		 res->reason ? res->reason : "?", n ? bytes : "none");
}

void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
			  const struct io_intercept *io)
{
	struct emul_ctx c;
	struct emul_result res;
	enum emul_status st;
	emul_ctx_load(v, &c);
	/* Single-step traps after each REP iteration, as on a CPU. */
	bool step = c.rflags & RFLAGS_TF;
	if (step)
		c.rep_max = 1;
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
		if (c.rip != vendor_guest_rip(v))   /* done, not one REP iteration of it */
			vendor_clear_interrupt_shadow(v);
		emul_ctx_store(v, &c);
		v->stats.emulated++;
		if (step)   /* the instruction, or one REP iteration of it, is done */
			v->pending |= VCPU_PENDING_STEP;
		break;
	case EMUL_EXCEPTION:
		emul_ctx_store(v, &c);
		if (res.vector == EMUL_VEC_PF)
			vendor_set_guest_cr2(v, res.cr2);
		vendor_inject_exception(v, res.vector, res.has_error_code, res.error_code);
		break;
	case EMUL_RETRY:
		emul_retry(v, c.rip);
		return;
	case EMUL_VM_END:
		emul_ctx_store(v, &c);
		break;
	case EMUL_UNSUPPORTED:
		if (res.fetch_not_ram)   /* a PC would fetch all-ones (FF FF: #UD); no
					    guest means it */
			vm_fault(v->vm, "executing code at guest-physical 0x%lx, %s, at rip 0x%lx",
				 res.fetch_gpa, vm_find_mmio(v->vm, res.fetch_gpa) ?
				 "a device's MMIO" : "outside its RAM and devices", res.rip);
		else
			emul_unsupported(v, &res, what == HEAVY_EMUL_MMIO ? "MMIO access" :
					  what == HEAVY_EMUL_STRING_IO ? "string I/O" : "port I/O");
		break;
	case EMUL_IO_ERROR:
		vm_fault(v->vm, "device error %d during emulation at rip 0x%lx", res.io_error, c.rip);
		break;
	}
}
