/* What the emulator's files share (emul/x86_emulate.h is the API):
 *   emul/x86_emulate.c   the CPU mode, fetch and decode, the one-operand
 *                        instructions, the entry points (emul_mmio,
 *                        emul_string_io, emul_port_io)
 *   emul/emul_operand.c  operand access: registers, effective and linear
 *                        addresses, memory accesses split at page ends
 *   emul/emul_string.c   string instructions (MOVS, STOS, LODS, INS, OUTS), REP
 *   emul/emul_alu.c      ALU results and their flags (emul_alu)
 *   emul/emul_paging.c   the guest page walk (emul_translate)
 * Nothing outside emul/ includes this header. */
#ifndef EMUL_EMUL_INTERNAL_H
#define EMUL_EMUL_INTERNAL_H

#include "emul/x86_emulate.h"

#define PAGE_SIZE 4096u

/* ---- results ---- */

static inline enum emul_status emul_raise(struct emul_result *res, uint8_t vector, bool has_ec,
					  uint32_t ec)
{
	res->vector = vector;
	res->has_error_code = has_ec;
	res->error_code = ec;
	return EMUL_EXCEPTION;
}

static inline enum emul_status emul_raise_pf(struct emul_result *res, uint64_t lin, uint32_t ec)
{
	res->cr2 = lin;
	return emul_raise(res, EMUL_VEC_PF, true, ec);
}

static inline enum emul_status emul_unsupported(struct emul_result *res, const char *why)
{
	res->reason = why;
	res->fetch_not_ram = false;
	return EMUL_UNSUPPORTED;
}

static inline enum emul_status emul_io_status(struct emul_result *res, int rc)
{
	if (rc == 0)
		return EMUL_DONE;
	if (rc > 0)
		return EMUL_VM_END;
	res->io_error = rc;
	return EMUL_IO_ERROR;
}

/* ---- registers ---- */

static inline uint64_t size_mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

static inline uint64_t reg_read(const struct emul_ctx *ctx, int reg, bool high8, unsigned size)
{
	if (high8)
		return (ctx->gpr[reg - 4] >> 8) & 0xff;
	return ctx->gpr[reg & 15] & size_mask(size);
}

/* Writes like the CPU: 8/16-bit writes merge, 32-bit writes zero-extend. */
void emul_reg_write(struct emul_ctx *ctx, int reg, bool high8, unsigned size, uint64_t v);

static inline uint64_t sext_to64(uint64_t v, unsigned size)
{
	if (size >= 8)
		return v;
	unsigned sh = 64 - 8 * size;
	return (uint64_t)((int64_t)(v << sh) >> sh);
}

/* ---- memory operands (emul/emul_operand.c) ---- */

/* One access of up to 8 bytes, split where it crosses a page. */
struct mem_access {
	uint64_t lin;
	unsigned size;
	unsigned nparts;
	struct {
		uint64_t gpa;
		void *host;    /* RAM, or NULL: MMIO */
		unsigned len;
	} part[2];
};

static inline uint64_t addr_mask(unsigned addr_size)
{
	return size_mask(addr_size);
}

static inline bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* seg:ea -> linear address, with the 64-bit canonical check (#GP(0), or
 * #SS(0) for a stack-segment access). */
enum emul_status emul_linear(struct emul_ctx *ctx, enum x86_mode mode, int seg, uint64_t ea,
			     unsigned size, uint64_t *lin, struct emul_result *res);

/* One-entry translation cache for one operand of a REP string instruction:
 * the page the last element was in, translated once for all the elements
 * that follow in it (a TLB entry that lives for one emulated instruction).
 * A page that is not entirely RAM keeps host NULL and classifies each
 * element with gpa_ptr. */
struct xlat_cache {
	uint64_t lin;     /* page-aligned linear address; 1 = empty */
	uint64_t gpa;     /* its page-aligned GPA */
	uint8_t *host;    /* host mapping of the whole page, or NULL */
};

/* Translates the pages of [lin, lin + size) for an access of kind acc,
 * every page before any access is made (so a fault never leaves a half-done
 * element). tc, if not NULL, caches the translation of a single-page
 * access for the next element. */
enum emul_status emul_mem_prepare(struct emul_ctx *ctx, enum x86_mode mode, uint64_t lin,
				  unsigned size, enum emul_access acc, struct mem_access *m,
				  struct emul_result *res, struct xlat_cache *tc);

/* Does access m touch the page of gpa? */
static inline bool emul_mem_touches(const struct mem_access *m, uint64_t gpa)
{
	for (unsigned k = 0; k < m->nparts; k++)
		if ((m->part[k].gpa >> 12) == (gpa >> 12))
			return true;
	return false;
}

/* A split access (it crosses a page): piece by piece through a buffer, an
 * MMIO piece byte by byte. */
enum emul_status emul_mem_rw_split(struct emul_ctx *ctx, struct mem_access *m, uint64_t *val,
				   bool write, struct emul_result *res);

/* Performs a prepared access: *val is written (its low m->size bytes), or
 * read (zero-extended). */
static inline enum emul_status emul_mem_rw(struct emul_ctx *ctx, struct mem_access *m,
					       uint64_t *val, bool write, struct emul_result *res)
{
	if (__builtin_expect(m->nparts != 1, 0))
		return emul_mem_rw_split(ctx, m, val, write, res);
	/* One piece of 1, 2, 4 or 8 bytes. */
	unsigned size = m->size;
	void *host = m->part[0].host;
	if (host) {
		if (write)
			emul_store_le(host, *val, size);
		else
			*val = emul_load_le(host, size);
		return EMUL_DONE;
	}
	uint64_t d = write ? *val & size_mask(size) : 0;
	int rc = ctx->mmio(ctx, m->part[0].gpa, &d, size, write);
	if (rc)
		return emul_io_status(res, rc);
	if (!write)
		*val = d & size_mask(size);
	return EMUL_DONE;
}

/* Effective address of a ModRM memory operand (next_rip for RIP-relative). */
static inline uint64_t emul_effective_addr(const struct emul_ctx *ctx, const struct x86_insn *d,
					   uint64_t next_rip)
{
	const struct x86_mem *mem = &d->mem;
	uint64_t ea = (uint64_t)mem->disp;
	if (mem->rip_rel)
		ea += next_rip;
	if (mem->base != X86_REG_NONE)
		ea += ctx->gpr[mem->base];
	if (mem->index != X86_REG_NONE)
		ea += ctx->gpr[mem->index] * mem->scale;
	return ea & addr_mask(d->addr_size);
}

/* ---- execution ---- */

static inline uint64_t next_rip(const struct emul_ctx *ctx, const struct x86_insn *d)
{
	uint64_t r = ctx->rip + d->len;
	if (d->mode == X86_MODE_32)
		r &= 0xffffffffull;
	else if (d->mode == X86_MODE_16)
		r &= 0xffffull;
	return r;
}

static inline void finish(struct emul_ctx *ctx, const struct x86_insn *d)
{
	ctx->rip = next_rip(ctx, d);
	ctx->rflags &= ~EMUL_RFLAGS_RF;
}

/* String instructions, REP included (emul/emul_string.c). */
enum emul_status emul_exec_string(struct emul_ctx *ctx, const struct x86_insn *d,
				  uint64_t check_gpa, struct emul_result *res);

#endif
