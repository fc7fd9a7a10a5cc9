/* x86 emulator: operand access. Registers as the CPU writes them,
 * effective and linear addresses, and memory accesses translated page by
 * page, RAM directly and MMIO through the context's callbacks. See
 * emul/emul_internal.h. */
#include "emul/emul_internal.h"

#include "lib/string.h"

/* Writes like the CPU: 8/16-bit writes merge, 32-bit writes zero-extend. */
void emul_reg_write(struct emul_ctx *ctx, int reg, bool high8, unsigned size, uint64_t v)
{
	uint64_t *r;
	if (high8) {
		r = &ctx->gpr[reg - 4];
		*r = (*r & ~0xff00ull) | ((v & 0xff) << 8);
		return;
	}
	r = &ctx->gpr[reg & 15];
	switch (size) {
	case 1: *r = (*r & ~0xffull) | (v & 0xff); break;
	case 2: *r = (*r & ~0xffffull) | (v & 0xffff); break;
	case 4: *r = v & 0xffffffffull; break;
	default: *r = v; break;
	}
}

/* seg:ea -> linear address, with the 64-bit canonical check (#GP(0), or
 * #SS(0) for a stack-segment access). */
enum emul_status emul_linear(struct emul_ctx *ctx, enum x86_mode mode, int seg, uint64_t ea,
			     unsigned size, uint64_t *lin, struct emul_result *res)
{
	if (mode == X86_MODE_64) {
		uint64_t base = (seg == SEG_FS || seg == SEG_GS) ? ctx->seg_base[seg] : 0;
		uint64_t l = base + ea;
		if (!canonical(l) || !canonical(l + size - 1))
			return emul_raise(res, seg == SEG_SS ? EMUL_VEC_SS : EMUL_VEC_GP, true, 0);
		*lin = l;
	} else {
		*lin = (ctx->seg_base[seg] + ea) & 0xffffffffull;
	}
	return EMUL_DONE;
}

/* Translates the pages of [lin, lin + size) for an access of kind acc,
 * every page before any access is made (so a fault never leaves a half-done
 * element). tc, if not NULL, caches the translation of a single-page
 * access for the next element. */
enum emul_status emul_mem_prepare(struct emul_ctx *ctx, enum x86_mode mode, uint64_t lin,
				  unsigned size, enum emul_access acc, struct mem_access *m,
				  struct emul_result *res, struct xlat_cache *tc)
{
	unsigned off = (unsigned)(lin & (PAGE_SIZE - 1));
	m->lin = lin;
	m->size = size;
	if (off + size <= PAGE_SIZE) {
		/* The common case: the element is within one page. */
		uint64_t page = lin - off, gpa;
		void *host;
		if (tc && tc->lin == page) {
			gpa = tc->gpa + off;
			host = tc->host ? tc->host + off : ctx->gpa_ptr(ctx, gpa, size);
		} else {
			enum emul_status st = emul_translate(ctx, lin, acc, &gpa, res);
			if (st != EMUL_DONE)
				return st;
			host = ctx->gpa_ptr(ctx, gpa, size);
			if (tc) {
				tc->lin = page;
				tc->gpa = gpa - off;
				tc->host = host ? ctx->gpa_ptr(ctx, gpa - off, PAGE_SIZE) : NULL;
			}
		}
		m->nparts = 1;
		m->part[0].gpa = gpa;
		m->part[0].host = host;
		m->part[0].len = size;
		return EMUL_DONE;
	}
	m->nparts = 0;
	unsigned done = 0;
	while (done < size) {
		uint64_t l = lin + done;
		if (mode != X86_MODE_64)
			l &= 0xffffffffull;
		unsigned chunk = PAGE_SIZE - (unsigned)(l & (PAGE_SIZE - 1));
		if (chunk > size - done)
			chunk = size - done;
		uint64_t gpa;
		enum emul_status st = emul_translate(ctx, l, acc, &gpa, res);
		if (st != EMUL_DONE)
			return st;
		m->part[m->nparts].gpa = gpa;
		m->part[m->nparts].len = chunk;
		m->part[m->nparts].host = ctx->gpa_ptr(ctx, gpa, chunk);
		m->nparts++;
		done += chunk;
	}
	return EMUL_DONE;
}

/* A split access (it crosses a page): piece by piece through a buffer, an
 * MMIO piece byte by byte. */
enum emul_status emul_mem_rw_split(struct emul_ctx *ctx, struct mem_access *m, uint64_t *val,
				   bool write, struct emul_result *res)
{
	uint8_t buf[8];
	unsigned off = 0;
	if (write)
		memcpy(buf, val, 8);
	else
		memset(buf, 0, sizeof(buf));
	for (unsigned k = 0; k < m->nparts; k++) {
		unsigned len = m->part[k].len;
		if (m->part[k].host) {
			if (write)
				memcpy(m->part[k].host, buf + off, len);
			else
				memcpy(buf + off, m->part[k].host, len);
		} else {
			for (unsigned j = 0; j < len; j++) {
				uint64_t d = write ? buf[off + j] : 0;
				int rc = ctx->mmio(ctx, m->part[k].gpa + j, &d, 1, write);
				if (rc)
					return emul_io_status(res, rc);
				if (!write)
					buf[off + j] = (uint8_t)d;
			}
		}
		off += len;
	}
	if (!write) {
		uint64_t v = 0;
		memcpy(&v, buf, 8);
		*val = v & size_mask(m->size);
	}
	return EMUL_DONE;
}
