/* x86 emulator for MMIO and string I/O: see x86_emulate.h. This file
 * fetches and decodes, executes the instructions of one memory operand and
 * holds the entry points; emul/emul_internal.h lists the other files. */
#include "emul/emul_internal.h"

/* ------------------------------------------------------------------ */
/* Fetch and decode */

enum x86_mode emul_cpu_mode(const struct emul_ctx *ctx)
{
	if ((ctx->pg.efer & EMUL_EFER_LMA) && ctx->pg.cs_long)
		return X86_MODE_64;
	if (!(ctx->pg.cr0 & EMUL_CR0_PE) || (ctx->rflags & EMUL_RFLAGS_VM))
		return X86_MODE_16;
	return ctx->pg.cs_32 ? X86_MODE_32 : X86_MODE_16;
}

enum emul_status emul_fetch_decode(struct emul_ctx *ctx, struct emul_result *res)
{
	enum x86_mode mode = emul_cpu_mode(ctx);
	uint64_t lin = mode == X86_MODE_64 ? ctx->rip
					   : (ctx->seg_base[SEG_CS] + ctx->rip) & 0xffffffffull;
	unsigned have = 0;

	res->rip = ctx->rip;
	res->nbytes = 0;
	if (mode == X86_MODE_64 && !canonical(lin))
		return emul_raise(res, EMUL_VEC_GP, true, 0);
	while (have < X86_MAX_INSN_LEN) {
		uint64_t l = lin + have;
		if (mode != X86_MODE_64)
			l &= 0xffffffffull;
		unsigned chunk = PAGE_SIZE - (unsigned)(l & (PAGE_SIZE - 1));
		if (chunk > X86_MAX_INSN_LEN - have)
			chunk = X86_MAX_INSN_LEN - have;
		if (have && mode == X86_MODE_64 && !canonical(l))
			return emul_raise(res, EMUL_VEC_GP, true, 0);
		uint64_t gpa;
		enum emul_status st = emul_translate(ctx, l, EMUL_ACC_FETCH, &gpa, res);
		if (st != EMUL_DONE)
			return st;
		const uint8_t *src = ctx->gpa_ptr(ctx, gpa, chunk);
		if (!src) {
			emul_unsupported(res, "instruction fetch from a GPA that is not RAM");
			res->fetch_not_ram = true;
			res->fetch_gpa = gpa;
			return EMUL_UNSUPPORTED;
		}
		if (chunk == X86_MAX_INSN_LEN) {
			/* The usual case, all 15 bytes in one page: two
			 * overlapping 8-byte copies. */
			__builtin_memcpy(res->bytes, src, 8);
			__builtin_memcpy(res->bytes + X86_MAX_INSN_LEN - 8, src + X86_MAX_INSN_LEN - 8, 8);
		} else {
			for (unsigned k = 0; k < chunk; k++)
				res->bytes[have + k] = src[k];
		}
		have += chunk;
		res->nbytes = (uint8_t)have;
		int rc = x86_decode(res->bytes, have, mode, &res->insn);
		if (rc == X86_DECODE_OK)
			return EMUL_DONE;
		if (rc == X86_DECODE_UNSUPPORTED)
			return emul_unsupported(res, "instruction not supported by the emulator");
		/* Truncated: the instruction goes on in the next page. */
	}
	return emul_unsupported(res, "instruction not supported by the emulator");
}

/* ------------------------------------------------------------------ */
/* Execution */

static uint64_t operand_value(const struct emul_ctx *ctx, const struct x86_insn *d, uint8_t kind)
{
	if (kind == X86_OP_IMM)
		return d->imm & size_mask(d->opsize);
	return reg_read(ctx, d->reg, d->reg_high8, d->opsize);
}

/* Everything but string instructions: one memory operand. check_gpa is the
 * faulting GPA (or ~0 for none). */
static enum emul_status exec_modrm(struct emul_ctx *ctx, const struct x86_insn *d,
				   uint64_t check_gpa, struct emul_result *res)
{
	enum x86_mode mode = (enum x86_mode)d->mode;
	if (!d->has_mem)
		return emul_unsupported(res, "instruction has no memory operand");

	uint64_t ea = emul_effective_addr(ctx, d, next_rip(ctx, d));
	unsigned bits = 8u * d->opsize;
	uint64_t bitoff = 0;
	if (d->cls == X86_CLASS_BT) {
		if (d->src == X86_OP_IMM) {
			bitoff = d->imm & (bits - 1);
		} else {
			/* Register bit offset: signed, may address beyond the operand. */
			int64_t off = (int64_t)sext_to64(reg_read(ctx, d->reg, false, d->opsize),
							 d->opsize);
			int64_t unit = off >= 0 ? off / (int64_t)bits
						: -((-(off + 1)) / (int64_t)bits) - 1;
			ea = (ea + (uint64_t)unit * d->opsize) & addr_mask(d->addr_size);
			bitoff = (uint64_t)off & (bits - 1);
		}
	}

	bool reads_mem = !(d->cls == X86_CLASS_MOV && d->dst == X86_OP_RM);
	bool writes_mem;
	switch (d->cls) {
	case X86_CLASS_MOV:
		writes_mem = d->dst == X86_OP_RM;
		break;
	case X86_CLASS_ALU:
		writes_mem = d->dst == X86_OP_RM && d->op != X86_ALU_CMP && d->op != X86_ALU_TEST;
		break;
	case X86_CLASS_XCHG:
		writes_mem = true;
		break;
	case X86_CLASS_BT:
		writes_mem = d->op != X86_BT_BT;
		break;
	default:
		writes_mem = false;
		break;
	}

	uint64_t lin;
	struct mem_access m;
	enum emul_status st = emul_linear(ctx, mode, d->mem.seg, ea, d->mem_size, &lin, res);
	if (st != EMUL_DONE)
		return st;
	st = emul_mem_prepare(ctx, mode, lin, d->mem_size,
			      writes_mem ? EMUL_ACC_WRITE : EMUL_ACC_READ, &m, res, NULL);
	if (st != EMUL_DONE)
		return st;
	if (check_gpa != ~0ull && !emul_mem_touches(&m, check_gpa)) {
		res->reason = "the instruction does not access the faulting GPA";
		return EMUL_RETRY;
	}

	uint64_t mv = 0;
	if (reads_mem) {
		st = emul_mem_rw(ctx, &m, &mv, false, res);
		if (st != EMUL_DONE)
			return st;
	}
	res->iterations = 1;

	uint64_t v, flags = ctx->rflags;
	switch (d->cls) {
	case X86_CLASS_MOV:
		if (d->dst == X86_OP_RM) {
			v = operand_value(ctx, d, d->src);
			st = emul_mem_rw(ctx, &m, &v, true, res);
		} else {
			emul_reg_write(ctx, d->reg, d->reg_high8, d->opsize, mv);
		}
		break;
	case X86_CLASS_MOVZX:
		emul_reg_write(ctx, d->reg, false, d->opsize, mv);
		break;
	case X86_CLASS_MOVSX:
		emul_reg_write(ctx, d->reg, false, d->opsize, sext_to64(mv, d->mem_size));
		break;
	case X86_CLASS_ALU:
		if (d->dst == X86_OP_RM) {
			v = emul_alu(d->op, d->opsize, mv, operand_value(ctx, d, d->src), &flags);
			if (writes_mem)
				st = emul_mem_rw(ctx, &m, &v, true, res);
		} else {
			v = emul_alu(d->op, d->opsize, reg_read(ctx, d->reg, d->reg_high8, d->opsize),
				     mv, &flags);
			if (d->op != X86_ALU_CMP && d->op != X86_ALU_TEST)
				emul_reg_write(ctx, d->reg, d->reg_high8, d->opsize, v);
		}
		break;
	case X86_CLASS_XCHG:
		v = reg_read(ctx, d->reg, d->reg_high8, d->opsize);
		st = emul_mem_rw(ctx, &m, &v, true, res);
		if (st == EMUL_DONE)
			emul_reg_write(ctx, d->reg, d->reg_high8, d->opsize, mv);
		break;
	case X86_CLASS_BT: {
		uint64_t bit = 1ull << bitoff;
		flags = (flags & ~EMUL_RFLAGS_CF) | ((mv & bit) ? EMUL_RFLAGS_CF : 0);
		if (d->op == X86_BT_BT)
			break;
		v = d->op == X86_BT_BTS ? mv | bit : d->op == X86_BT_BTR ? mv & ~bit : mv ^ bit;
		st = emul_mem_rw(ctx, &m, &v, true, res);
		break;
	}
	default:
		return emul_unsupported(res, "not a ModRM instruction");
	}
	if (st != EMUL_DONE)
		return st;
	ctx->rflags = flags;
	finish(ctx, d);
	return EMUL_DONE;
}

/* ------------------------------------------------------------------ */
/* Entry points */

/* Only the fields every outcome reads; bytes[] is valid up to nbytes and
 * insn once decoded (x86_decode fills all of it). */
static void result_init(struct emul_result *res)
{
	res->vector = 0;
	res->has_error_code = false;
	res->error_code = 0;
	res->cr2 = 0;
	res->nbytes = 0;
	res->reason = NULL;
	res->io_error = 0;
	res->iterations = 0;
	res->insn.len = 0;
	res->insn.cls = X86_CLASS_NONE;
}

enum emul_status emul_mmio(struct emul_ctx *ctx, uint64_t fault_gpa, struct emul_result *res)
{
	result_init(res);
	enum emul_status st = emul_fetch_decode(ctx, res);
	if (st != EMUL_DONE)
		return st;
	const struct x86_insn *d = &res->insn;
	switch (d->cls) {
	case X86_CLASS_MOVS:
	case X86_CLASS_STOS:
	case X86_CLASS_LODS:
		return emul_exec_string(ctx, d, fault_gpa, res);
	case X86_CLASS_INS:
	case X86_CLASS_OUTS:
		/* The memory side of string I/O: same emulation. */
		return emul_exec_string(ctx, d, fault_gpa, res);
	default:
		return exec_modrm(ctx, d, fault_gpa, res);
	}
}

/* The port of a decoded IN/OUT/INS/OUTS. */
static uint16_t io_port(const struct emul_ctx *ctx, const struct x86_insn *d)
{
	if (d->cls == X86_CLASS_IN || d->cls == X86_CLASS_OUT)
		return d->imm_size ? (uint16_t)d->imm : (uint16_t)ctx->gpr[X86_RDX];
	return (uint16_t)ctx->gpr[X86_RDX];
}

/* The decoded instruction is the intercepted one (exit_io NULL: nothing to
 * check). A mismatch means the code changed under the exit. */
static bool io_matches(const struct emul_ctx *ctx, const struct x86_insn *d,
		       const struct io_intercept *exit_io)
{
	if (!exit_io)
		return true;
	bool in = d->cls == X86_CLASS_IN || d->cls == X86_CLASS_INS;
	return exit_io->port == io_port(ctx, d) && exit_io->size == d->mem_size &&
	       exit_io->in == in && exit_io->string == x86_is_string(d);
}

enum emul_status emul_string_io(struct emul_ctx *ctx, const struct io_intercept *exit_io,
				struct emul_result *res)
{
	result_init(res);
	enum emul_status st = emul_fetch_decode(ctx, res);
	if (st != EMUL_DONE)
		return st;
	const struct x86_insn *d = &res->insn;
	if (d->cls != X86_CLASS_INS && d->cls != X86_CLASS_OUTS) {
		res->reason = "the instruction at RIP is not INS/OUTS";
		return EMUL_RETRY;
	}
	/* Callers of the string path may leave exit_io->string unset. */
	if (exit_io && (exit_io->port != io_port(ctx, d) || exit_io->size != d->mem_size ||
			exit_io->in != (d->cls == X86_CLASS_INS))) {
		res->reason = "INS/OUTS at RIP does not match the intercepted I/O";
		return EMUL_RETRY;
	}
	return emul_exec_string(ctx, d, ~0ull, res);
}

enum emul_status emul_port_io(struct emul_ctx *ctx, const struct io_intercept *exit_io,
			      struct emul_result *res)
{
	result_init(res);
	enum emul_status st = emul_fetch_decode(ctx, res);
	if (st != EMUL_DONE)
		return st;
	const struct x86_insn *d = &res->insn;
	bool in;
	switch (d->cls) {
	case X86_CLASS_IN:
		in = true;
		break;
	case X86_CLASS_OUT:
		in = false;
		break;
	case X86_CLASS_INS:
	case X86_CLASS_OUTS:
		if (!io_matches(ctx, d, exit_io)) {
			res->reason = "INS/OUTS at RIP does not match the intercepted I/O";
			return EMUL_RETRY;
		}
		return emul_exec_string(ctx, d, ~0ull, res);
	default:
		res->reason = "the instruction at RIP is not port I/O";
		return EMUL_RETRY;
	}
	if (!io_matches(ctx, d, exit_io)) {
		res->reason = "IN/OUT at RIP does not match the intercepted I/O";
		return EMUL_RETRY;
	}

	unsigned size = d->mem_size;
	uint16_t port = io_port(ctx, d);
	uint64_t v = in ? 0 : ctx->gpr[X86_RAX] & size_mask(size);
	st = emul_io_status(res, ctx->pio(ctx, port, &v, size, !in));
	if (st != EMUL_DONE)
		return st;
	/* AL/AX merge into RAX, EAX zero-extends: reg_write does as the CPU. */
	if (in)
		emul_reg_write(ctx, X86_RAX, false, size, v);
	res->iterations = 1;
	finish(ctx, d);
	return EMUL_DONE;
}
