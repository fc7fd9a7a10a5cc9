/* x86 emulator: string instructions (MOVS, STOS, LODS, INS, OUTS), REP
 * included. See emul/emul_internal.h. */
#include "emul/emul_internal.h"

#include "lib/string.h"

/* Elements, at most `want`, of a run starting at linear address lin
 * (effective address ea) in the direction of the string: they must stay in
 * lin's page and the effective address must not wrap at the address size
 * (am), so that they are contiguous in the page. 0 if the first element
 * crosses the page end. */
static uint64_t run_len(uint64_t lin, uint64_t ea, unsigned size, bool down, uint64_t am,
			uint64_t want)
{
	unsigned off = (unsigned)(lin & (PAGE_SIZE - 1));
	uint64_t n, w;
	if (off + size > PAGE_SIZE)
		return 0;
	if (down) {
		n = off / size + 1;
		w = ea / size;              /* more elements before ea wraps */
	} else {
		n = (PAGE_SIZE - off) / size;
		w = (am - ea) / size;
	}
	if (w < n - 1)
		n = w + 1;
	return n < want ? n : want;
}

/* String instructions, REP included. Each memory operand keeps the
 * translation of its current page (struct xlat_cache), so the guest page
 * tables are walked once per page an operand enters, not once per element.
 * The first element in a page goes through the general path (translation
 * with every check, split and MMIO accesses, the faulting-GPA check); the
 * elements that follow in the same RAM page then run in a tight loop on the
 * host mapping. A #PF on a later page is raised at that element, with the
 * completed elements kept. rSI/rDI/rCX are written at the address size:
 * 16-bit merges, 32-bit zero-extends (as the CPU writes them). */
enum emul_status emul_exec_string(struct emul_ctx *ctx, const struct x86_insn *d,
				  uint64_t check_gpa, struct emul_result *res)
{
	enum x86_mode mode = (enum x86_mode)d->mode;
	unsigned size = d->mem_size;
	uint64_t am = addr_mask(d->addr_size);
	uint64_t keep = d->addr_size == 2 ? ~0xffffull : 0;
	uint64_t lin_mask = mode == X86_MODE_64 ? ~0ull : 0xffffffffull;
	bool rep = x86_has_rep(d);
	uint64_t count = rep ? ctx->gpr[X86_RCX] & am : 1;
	unsigned max = ctx->rep_max ? ctx->rep_max : EMUL_REP_MAX;
	unsigned cls = d->cls;
	int sseg = d->mem.seg;
	bool src_mem = cls == X86_CLASS_MOVS || cls == X86_CLASS_LODS || cls == X86_CLASS_OUTS;
	bool dst_mem = cls == X86_CLASS_MOVS || cls == X86_CLASS_STOS || cls == X86_CLASS_INS;
	bool down = ctx->rflags & EMUL_RFLAGS_DF;
	uint64_t step = down ? (uint64_t)-(int64_t)size : size;
	/* Segment bases as emul_linear() adds them: only FS/GS in 64-bit mode. */
	uint64_t sbase = mode != X86_MODE_64 || sseg == SEG_FS || sseg == SEG_GS
			 ? ctx->seg_base[sseg] : 0;
	uint64_t dbase = mode != X86_MODE_64 ? ctx->seg_base[SEG_ES] : 0;
	uint16_t port = (uint16_t)ctx->gpr[X86_RDX];
	uint64_t si = ctx->gpr[X86_RSI], di = ctx->gpr[X86_RDI], cx = ctx->gpr[X86_RCX];
	struct xlat_cache sc = { .lin = 1 }, dc = { .lin = 1 };
	enum emul_status st = EMUL_DONE;
	unsigned it = 0;

	while (count && it < max) {
		/* One element, the general way. */
		struct mem_access ms, md;
		uint64_t lin, v = 0;
		if (src_mem) {
			st = emul_linear(ctx, mode, sseg, si & am, size, &lin, res);
			if (st == EMUL_DONE)
				st = emul_mem_prepare(ctx, mode, lin, size, EMUL_ACC_READ, &ms, res, &sc);
			if (st != EMUL_DONE)
				break;
		}
		if (dst_mem) {
			st = emul_linear(ctx, mode, SEG_ES, di & am, size, &lin, res);
			if (st == EMUL_DONE)
				st = emul_mem_prepare(ctx, mode, lin, size, EMUL_ACC_WRITE, &md, res, &dc);
			if (st != EMUL_DONE)
				break;
		}
		if (it == 0 && check_gpa != ~0ull &&
		    !((src_mem && emul_mem_touches(&ms, check_gpa)) ||
		      (dst_mem && emul_mem_touches(&md, check_gpa)))) {
			res->reason = "the instruction does not access the faulting GPA";
			return EMUL_RETRY;
		}

		switch (cls) {
		case X86_CLASS_MOVS:
			st = emul_mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				st = emul_mem_rw(ctx, &md, &v, true, res);
			break;
		case X86_CLASS_STOS:
			v = ctx->gpr[X86_RAX] & size_mask(size);
			st = emul_mem_rw(ctx, &md, &v, true, res);
			break;
		case X86_CLASS_LODS:
			st = emul_mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				emul_reg_write(ctx, X86_RAX, false, size, v);
			break;
		case X86_CLASS_INS:
			st = emul_io_status(res, ctx->pio(ctx, port, &v, size, false));
			if (st == EMUL_DONE) {
				v &= size_mask(size);
				st = emul_mem_rw(ctx, &md, &v, true, res);
			}
			break;
		default: /* OUTS */
			st = emul_mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				st = emul_io_status(res, ctx->pio(ctx, port, &v, size, true));
			break;
		}
		if (st != EMUL_DONE)
			break;
		if (src_mem)
			si = (si & keep) | ((si + step) & am);
		if (dst_mem)
			di = (di & keep) | ((di + step) & am);
		count--;
		if (rep)
			cx = (cx & keep) | count;
		it++;

		/* Then the elements that follow in the same RAM page(s), on the
		 * cached host mapping: no walk, no callback but the port's. */
		uint64_t n = count < max - it ? count : max - it;
		int64_t so = 0, doff = 0, pstep = (int64_t)step;
		if (!n)
			break;
		if (src_mem) {
			uint64_t ea = si & am, l = (sbase + ea) & lin_mask;
			if ((l & ~(uint64_t)(PAGE_SIZE - 1)) != sc.lin || !sc.host)
				continue;
			n = run_len(l, ea, size, down, am, n);
			so = (int64_t)(l & (PAGE_SIZE - 1));
		}
		if (dst_mem) {
			uint64_t ea = di & am, l = (dbase + ea) & lin_mask;
			if ((l & ~(uint64_t)(PAGE_SIZE - 1)) != dc.lin || !dc.host)
				continue;
			n = run_len(l, ea, size, down, am, n);
			doff = (int64_t)(l & (PAGE_SIZE - 1));
		}
		uint64_t k = 0;
		int rc = 0;
		switch (cls) {
		case X86_CLASS_MOVS:
			for (; k < n; k++, so += pstep, doff += pstep)
				emul_store_le(dc.host + doff, emul_load_le(sc.host + so, size), size);
			break;
		case X86_CLASS_STOS:
			v = ctx->gpr[X86_RAX];
			for (; k < n; k++, doff += pstep)
				emul_store_le(dc.host + doff, v, size);
			break;
		case X86_CLASS_LODS:
			/* Only the last element stays in rAX. */
			if (n) {
				k = n;
				so += (int64_t)(n - 1) * pstep;
				emul_reg_write(ctx, X86_RAX, false, size, emul_load_le(sc.host + so, size));
			}
			break;
		case X86_CLASS_INS:
			if (ctx->pio_rep) {
				rc = ctx->pio_rep(ctx, port, dc.host + doff, pstep, size, n, false, &k);
				break;
			}
			for (; k < n; k++, doff += pstep) {
				v = 0;
				rc = ctx->pio(ctx, port, &v, size, false);
				if (rc)
					break;
				emul_store_le(dc.host + doff, v, size);
			}
			break;
		default: /* OUTS */
			if (ctx->pio_rep) {
				rc = ctx->pio_rep(ctx, port, sc.host + so, pstep, size, n, true, &k);
				break;
			}
			for (; k < n; k++, so += pstep) {
				v = emul_load_le(sc.host + so, size);
				rc = ctx->pio(ctx, port, &v, size, true);
				if (rc)
					break;
			}
			break;
		}
		if (src_mem)
			si = (si & keep) | ((si + k * step) & am);
		if (dst_mem)
			di = (di & keep) | ((di + k * step) & am);
		count -= k;
		if (rep)
			cx = (cx & keep) | count;
		it += (unsigned)k;
		if (rc) {
			st = emul_io_status(res, rc);
			break;
		}
	}
	/* The completed elements are architectural, whatever ended the loop. */
	ctx->gpr[X86_RSI] = si;
	ctx->gpr[X86_RDI] = di;
	ctx->gpr[X86_RCX] = cx;
	res->iterations = it;
	if (st != EMUL_DONE)
		return st;
	if (count == 0)
		finish(ctx, d);
	return EMUL_DONE;
}
