/* x86 emulator for MMIO and string I/O: see x86_emulate.h. */
#include "emul/x86_emulate.h"

#include "lib/string.h"

#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_US  (1ull << 2)
#define PTE_A   (1ull << 5)
#define PTE_D   (1ull << 6)
#define PTE_PS  (1ull << 7)
#define PTE_NX  (1ull << 63)
#define PTE_ADDR 0x000ffffffffff000ull

#define PAGE_SIZE 4096u

/* ------------------------------------------------------------------ */
/* Results */

static enum emul_status raise(struct emul_result *res, uint8_t vector, bool has_ec, uint32_t ec)
{
	res->vector = vector;
	res->has_error_code = has_ec;
	res->error_code = ec;
	return EMUL_EXCEPTION;
}

static enum emul_status raise_pf(struct emul_result *res, uint64_t lin, uint32_t ec)
{
	res->cr2 = lin;
	return raise(res, EMUL_VEC_PF, true, ec);
}

static enum emul_status unsupported(struct emul_result *res, const char *why)
{
	res->reason = why;
	res->fetch_not_ram = false;
	return EMUL_UNSUPPORTED;
}

static enum emul_status io_status(struct emul_result *res, int rc)
{
	if (rc == 0)
		return EMUL_DONE;
	if (rc > 0)
		return EMUL_VM_END;
	res->io_error = rc;
	return EMUL_IO_ERROR;
}

/* ------------------------------------------------------------------ */
/* Registers */

static uint64_t size_mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

static uint64_t reg_read(const struct emul_ctx *ctx, int reg, bool high8, unsigned size)
{
	if (high8)
		return (ctx->gpr[reg - 4] >> 8) & 0xff;
	return ctx->gpr[reg & 15] & size_mask(size);
}

/* Writes like the CPU: 8/16-bit writes merge, 32-bit writes zero-extend. */
static void reg_write(struct emul_ctx *ctx, int reg, bool high8, unsigned size, uint64_t v)
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

static uint64_t sext_to64(uint64_t v, unsigned size)
{
	if (size >= 8)
		return v;
	unsigned sh = 64 - 8 * size;
	return (uint64_t)((int64_t)(v << sh) >> sh);
}

/* ------------------------------------------------------------------ */
/* Flags */

static bool parity_even(uint64_t v)
{
	uint8_t b = (uint8_t)v;
	b ^= b >> 4;
	b ^= b >> 2;
	b ^= b >> 1;
	return !(b & 1);
}

uint64_t emul_alu(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t *rflags)
{
	uint64_t mask = size_mask(size);
	uint64_t sign = 1ull << (8 * size - 1);
	uint64_t cin = (*rflags & EMUL_RFLAGS_CF) ? 1 : 0;
	uint64_t r;
	bool cf = false, of = false, af = false;

	a &= mask;
	b &= mask;
	switch (op) {
	case X86_ALU_ADD:
		cin = 0;
		/* fall through */
	case X86_ALU_ADC:
		r = (a + b + cin) & mask;
		cf = r < a || (cin && r == a);
		of = (a ^ r) & (b ^ r) & sign;
		af = (a ^ b ^ r) & 0x10;
		break;
	case X86_ALU_SUB:
	case X86_ALU_CMP:
		cin = 0;
		/* fall through */
	case X86_ALU_SBB:
		r = (a - b - cin) & mask;
		cf = a < b || (cin && a == b);
		of = (a ^ b) & (a ^ r) & sign;
		af = (a ^ b ^ r) & 0x10;
		break;
	case X86_ALU_OR:
		r = a | b;
		break;
	case X86_ALU_XOR:
		r = a ^ b;
		break;
	default: /* AND, TEST: AF is cleared, as AMD and Intel CPUs do */
		r = a & b;
		break;
	}
	uint64_t f = *rflags & ~EMUL_RFLAGS_STATUS;
	if (cf)
		f |= EMUL_RFLAGS_CF;
	if (parity_even(r))
		f |= EMUL_RFLAGS_PF;
	if (af)
		f |= EMUL_RFLAGS_AF;
	if (r == 0)
		f |= EMUL_RFLAGS_ZF;
	if (r & sign)
		f |= EMUL_RFLAGS_SF;
	if (of)
		f |= EMUL_RFLAGS_OF;
	*rflags = f;
	return r;
}

/* ------------------------------------------------------------------ */
/* Modes and guest page walk */

enum x86_mode emul_cpu_mode(const struct emul_ctx *ctx)
{
	if ((ctx->pg.efer & EMUL_EFER_LMA) && ctx->pg.cs_long)
		return X86_MODE_64;
	if (!(ctx->pg.cr0 & EMUL_CR0_PE) || (ctx->rflags & EMUL_RFLAGS_VM))
		return X86_MODE_16;
	return ctx->pg.cs_32 ? X86_MODE_32 : X86_MODE_16;
}

static uint64_t phys_rsvd(const struct emul_ctx *ctx)
{
	unsigned m = ctx->maxphyaddr ? ctx->maxphyaddr : 52;
	if (m >= 52)
		return 0;
	return ((1ull << 52) - 1) & ~((1ull << m) - 1);
}

#define WALK_MAX 5

enum emul_status emul_translate(struct emul_ctx *ctx, uint64_t lin, enum emul_access acc,
				uint64_t *gpa, struct emul_result *res)
{
	const struct guest_paging *pg = &ctx->pg;
	if (!(pg->cr0 & EMUL_CR0_PG)) {
		*gpa = lin & 0xffffffffull;
		return EMUL_DONE;
	}

	bool user = ctx->cpl == 3;
	bool write = acc == EMUL_ACC_WRITE;
	bool fetch = acc == EMUL_ACC_FETCH;
	bool lma = pg->efer & EMUL_EFER_LMA;
	bool pae = pg->cr4 & EMUL_CR4_PAE;
	bool nxe = pae && (pg->efer & EMUL_EFER_NXE);
	uint32_t ec = (write ? EMUL_PFEC_W : 0) | (user ? EMUL_PFEC_U : 0) |
		      (fetch && (nxe || (pg->cr4 & EMUL_CR4_SMEP)) ? EMUL_PFEC_I : 0);
	uint64_t rsvd_phys = phys_rsvd(ctx);

	/* Entries touched, to set accessed/dirty bits once the walk succeeds. */
	void *ent[WALK_MAX];
	bool ent64[WALK_MAX];
	unsigned nent = 0;
	bool rw = true, us = true, nx = false;
	uint64_t phys;

	if (!pae) {
		/* 32-bit paging: 2 levels of 4-byte entries. */
		uint32_t lin32 = (uint32_t)lin;
		uint64_t egpa = (pg->cr3 & 0xfffff000u) + ((lin32 >> 22) << 2);
		uint32_t *p = ctx->gpa_ptr(ctx, egpa, 4);
		if (!p)
			return unsupported(res, "guest page directory is not in RAM");
		uint32_t e = *(volatile uint32_t *)p;
		if (!(e & PTE_P))
			return raise_pf(res, lin, ec);
		rw = e & PTE_RW;
		us = e & PTE_US;
		ent[nent] = p;
		ent64[nent++] = false;
		if ((e & PTE_PS) && (pg->cr4 & EMUL_CR4_PSE)) {
			/* 4 MiB page; PSE-36: bits 20:13 are physical bits 39:32,
			 * bit 21 and bits beyond MAXPHYADDR are reserved. */
			uint64_t hi = (uint64_t)((e >> 13) & 0xff) << 32;
			if ((e & (1u << 21)) || (hi & (rsvd_phys | ~((1ull << 40) - 1))))
				return raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
			phys = (e & 0xffc00000u) | hi | (lin32 & 0x3fffff);
		} else {
			egpa = (e & 0xfffff000u) + (((lin32 >> 12) & 0x3ff) << 2);
			p = ctx->gpa_ptr(ctx, egpa, 4);
			if (!p)
				return unsupported(res, "guest page table is not in RAM");
			e = *(volatile uint32_t *)p;
			if (!(e & PTE_P))
				return raise_pf(res, lin, ec);
			rw = rw && (e & PTE_RW);
			us = us && (e & PTE_US);
			ent[nent] = p;
			ent64[nent++] = false;
			phys = (e & 0xfffff000u) | (lin32 & 0xfff);
		}
	} else {
		uint64_t table;
		int level;
		uint64_t nx_rsvd = nxe ? 0 : PTE_NX;
		if (lma) {
			table = pg->cr3 & PTE_ADDR;
			level = 4;
		} else {
			/* PAE: four PDPTEs at CR3[31:5]; no permission bits. */
			uint32_t lin32 = (uint32_t)lin;
			lin = lin32;
			uint64_t egpa = (pg->cr3 & 0xffffffe0u) + ((lin32 >> 30) << 3);
			uint64_t *p = ctx->gpa_ptr(ctx, egpa, 8);
			if (!p)
				return unsupported(res, "guest PDPT is not in RAM");
			uint64_t e = *(volatile uint64_t *)p;
			if (!(e & PTE_P))
				return raise_pf(res, lin, ec);
			if (e & (rsvd_phys | 0x1e6ull | PTE_NX))
				return raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
			table = e & PTE_ADDR;
			level = 2;
		}
		for (;;) {
			unsigned shift = 12 + 9 * (unsigned)(level - 1);
			uint64_t egpa = table + (((lin >> shift) & 0x1ff) << 3);
			uint64_t *p = ctx->gpa_ptr(ctx, egpa, 8);
			if (!p)
				return unsupported(res, "guest page table is not in RAM");
			uint64_t e = *(volatile uint64_t *)p;
			if (!(e & PTE_P))
				return raise_pf(res, lin, ec);
			bool leaf = level == 1 || ((e & PTE_PS) && level <= 3);
			uint64_t rsvd = rsvd_phys | nx_rsvd;
			if (level == 4)
				rsvd |= PTE_PS;
			else if (leaf && level == 2)
				rsvd |= 0x1fe000ull;      /* 2 MiB page: bits 20:13 */
			else if (leaf && level == 3)
				rsvd |= 0x3fffe000ull;    /* 1 GiB page: bits 29:13 */
			if (e & rsvd)
				return raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
			rw = rw && (e & PTE_RW);
			us = us && (e & PTE_US);
			nx = nx || (nxe && (e & PTE_NX));
			ent[nent] = p;
			ent64[nent++] = true;
			if (leaf) {
				uint64_t page_mask = (1ull << shift) - 1;
				phys = (e & PTE_ADDR & ~page_mask) | (lin & page_mask);
				break;
			}
			table = e & PTE_ADDR;
			level--;
		}
	}

	/* Permissions, as the CPU checks them. */
	bool fault = false;
	if (user) {
		fault = !us || (write && !rw);
	} else {
		if (write && !rw && (pg->cr0 & EMUL_CR0_WP))
			fault = true;
		if (fetch && us && (pg->cr4 & EMUL_CR4_SMEP))
			fault = true;
		if (!fetch && us && (pg->cr4 & EMUL_CR4_SMAP) && !(ctx->rflags & EMUL_RFLAGS_AC))
			fault = true;
	}
	if (fetch && nx)
		fault = true;
	if (fault)
		return raise_pf(res, lin, ec | EMUL_PFEC_P);

	/* Accessed bits on every level, dirty on the leaf for a write. */
	for (unsigned k = 0; k < nent; k++) {
		uint64_t bits = PTE_A | ((write && k == nent - 1) ? PTE_D : 0);
		if (ent64[k]) {
			uint64_t *p = ent[k];
			if ((*p & bits) != bits)
				__atomic_fetch_or(p, bits, __ATOMIC_SEQ_CST);
		} else {
			uint32_t *p = ent[k];
			if ((*p & bits) != bits)
				__atomic_fetch_or(p, (uint32_t)bits, __ATOMIC_SEQ_CST);
		}
	}
	*gpa = phys;
	return EMUL_DONE;
}

/* ------------------------------------------------------------------ */
/* Memory operands */

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

static uint64_t addr_mask(unsigned addr_size)
{
	return size_mask(addr_size);
}

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

/* seg:ea -> linear address, with the 64-bit canonical check (#GP(0), or
 * #SS(0) for a stack-segment access). */
static enum emul_status linear(struct emul_ctx *ctx, enum x86_mode mode, int seg, uint64_t ea,
			       unsigned size, uint64_t *lin, struct emul_result *res)
{
	if (mode == X86_MODE_64) {
		uint64_t base = (seg == SEG_FS || seg == SEG_GS) ? ctx->seg_base[seg] : 0;
		uint64_t l = base + ea;
		if (!canonical(l) || !canonical(l + size - 1))
			return raise(res, seg == SEG_SS ? EMUL_VEC_SS : EMUL_VEC_GP, true, 0);
		*lin = l;
	} else {
		*lin = (ctx->seg_base[seg] + ea) & 0xffffffffull;
	}
	return EMUL_DONE;
}

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
static enum emul_status mem_prepare(struct emul_ctx *ctx, enum x86_mode mode, uint64_t lin,
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

static bool mem_touches(const struct mem_access *m, uint64_t gpa)
{
	for (unsigned k = 0; k < m->nparts; k++)
		if ((m->part[k].gpa >> 12) == (gpa >> 12))
			return true;
	return false;
}

/* A split access (it crosses a page): piece by piece through a buffer, an
 * MMIO piece byte by byte. */
static enum emul_status mem_rw_split(struct emul_ctx *ctx, struct mem_access *m, uint64_t *val,
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
					return io_status(res, rc);
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

/* Performs a prepared access: *val is written (its low m->size bytes), or
 * read (zero-extended). */
static inline enum emul_status mem_rw(struct emul_ctx *ctx, struct mem_access *m, uint64_t *val,
				      bool write, struct emul_result *res)
{
	if (__builtin_expect(m->nparts != 1, 0))
		return mem_rw_split(ctx, m, val, write, res);
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
		return io_status(res, rc);
	if (!write)
		*val = d & size_mask(size);
	return EMUL_DONE;
}

/* Effective address of a ModRM memory operand (next_rip for RIP-relative). */
static uint64_t effective_addr(const struct emul_ctx *ctx, const struct x86_insn *d,
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

/* ------------------------------------------------------------------ */
/* Fetch and decode */

enum emul_status emul_fetch_decode(struct emul_ctx *ctx, struct emul_result *res)
{
	enum x86_mode mode = emul_cpu_mode(ctx);
	uint64_t lin = mode == X86_MODE_64 ? ctx->rip
					   : (ctx->seg_base[SEG_CS] + ctx->rip) & 0xffffffffull;
	unsigned have = 0;

	res->rip = ctx->rip;
	res->nbytes = 0;
	if (mode == X86_MODE_64 && !canonical(lin))
		return raise(res, EMUL_VEC_GP, true, 0);
	while (have < X86_MAX_INSN_LEN) {
		uint64_t l = lin + have;
		if (mode != X86_MODE_64)
			l &= 0xffffffffull;
		unsigned chunk = PAGE_SIZE - (unsigned)(l & (PAGE_SIZE - 1));
		if (chunk > X86_MAX_INSN_LEN - have)
			chunk = X86_MAX_INSN_LEN - have;
		if (have && mode == X86_MODE_64 && !canonical(l))
			return raise(res, EMUL_VEC_GP, true, 0);
		uint64_t gpa;
		enum emul_status st = emul_translate(ctx, l, EMUL_ACC_FETCH, &gpa, res);
		if (st != EMUL_DONE)
			return st;
		const uint8_t *src = ctx->gpa_ptr(ctx, gpa, chunk);
		if (!src) {
			unsupported(res, "instruction fetch from a GPA that is not RAM");
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
			return unsupported(res, "instruction not supported by the emulator");
		/* Truncated: the instruction goes on in the next page. */
	}
	return unsupported(res, "instruction not supported by the emulator");
}

/* ------------------------------------------------------------------ */
/* Execution */

static uint64_t next_rip(const struct emul_ctx *ctx, const struct x86_insn *d)
{
	uint64_t r = ctx->rip + d->len;
	if (d->mode == X86_MODE_32)
		r &= 0xffffffffull;
	else if (d->mode == X86_MODE_16)
		r &= 0xffffull;
	return r;
}

static void finish(struct emul_ctx *ctx, const struct x86_insn *d)
{
	ctx->rip = next_rip(ctx, d);
	ctx->rflags &= ~EMUL_RFLAGS_RF;
}

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
		return unsupported(res, "instruction has no memory operand");

	uint64_t ea = effective_addr(ctx, d, next_rip(ctx, d));
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
	enum emul_status st = linear(ctx, mode, d->mem.seg, ea, d->mem_size, &lin, res);
	if (st != EMUL_DONE)
		return st;
	st = mem_prepare(ctx, mode, lin, d->mem_size,
			 writes_mem ? EMUL_ACC_WRITE : EMUL_ACC_READ, &m, res, NULL);
	if (st != EMUL_DONE)
		return st;
	if (check_gpa != ~0ull && !mem_touches(&m, check_gpa)) {
		res->reason = "the instruction does not access the faulting GPA";
		return EMUL_RETRY;
	}

	uint64_t mv = 0;
	if (reads_mem) {
		st = mem_rw(ctx, &m, &mv, false, res);
		if (st != EMUL_DONE)
			return st;
	}
	res->iterations = 1;

	uint64_t v, flags = ctx->rflags;
	switch (d->cls) {
	case X86_CLASS_MOV:
		if (d->dst == X86_OP_RM) {
			v = operand_value(ctx, d, d->src);
			st = mem_rw(ctx, &m, &v, true, res);
		} else {
			reg_write(ctx, d->reg, d->reg_high8, d->opsize, mv);
		}
		break;
	case X86_CLASS_MOVZX:
		reg_write(ctx, d->reg, false, d->opsize, mv);
		break;
	case X86_CLASS_MOVSX:
		reg_write(ctx, d->reg, false, d->opsize, sext_to64(mv, d->mem_size));
		break;
	case X86_CLASS_ALU:
		if (d->dst == X86_OP_RM) {
			v = emul_alu(d->op, d->opsize, mv, operand_value(ctx, d, d->src), &flags);
			if (writes_mem)
				st = mem_rw(ctx, &m, &v, true, res);
		} else {
			v = emul_alu(d->op, d->opsize, reg_read(ctx, d->reg, d->reg_high8, d->opsize),
				     mv, &flags);
			if (d->op != X86_ALU_CMP && d->op != X86_ALU_TEST)
				reg_write(ctx, d->reg, d->reg_high8, d->opsize, v);
		}
		break;
	case X86_CLASS_XCHG:
		v = reg_read(ctx, d->reg, d->reg_high8, d->opsize);
		st = mem_rw(ctx, &m, &v, true, res);
		if (st == EMUL_DONE)
			reg_write(ctx, d->reg, d->reg_high8, d->opsize, mv);
		break;
	case X86_CLASS_BT: {
		uint64_t bit = 1ull << bitoff;
		flags = (flags & ~EMUL_RFLAGS_CF) | ((mv & bit) ? EMUL_RFLAGS_CF : 0);
		if (d->op == X86_BT_BT)
			break;
		v = d->op == X86_BT_BTS ? mv | bit : d->op == X86_BT_BTR ? mv & ~bit : mv ^ bit;
		st = mem_rw(ctx, &m, &v, true, res);
		break;
	}
	default:
		return unsupported(res, "not a ModRM instruction");
	}
	if (st != EMUL_DONE)
		return st;
	ctx->rflags = flags;
	finish(ctx, d);
	return EMUL_DONE;
}

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
static enum emul_status exec_string(struct emul_ctx *ctx, const struct x86_insn *d,
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
	/* Segment bases as linear() adds them: only FS/GS in 64-bit mode. */
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
			st = linear(ctx, mode, sseg, si & am, size, &lin, res);
			if (st == EMUL_DONE)
				st = mem_prepare(ctx, mode, lin, size, EMUL_ACC_READ, &ms, res, &sc);
			if (st != EMUL_DONE)
				break;
		}
		if (dst_mem) {
			st = linear(ctx, mode, SEG_ES, di & am, size, &lin, res);
			if (st == EMUL_DONE)
				st = mem_prepare(ctx, mode, lin, size, EMUL_ACC_WRITE, &md, res, &dc);
			if (st != EMUL_DONE)
				break;
		}
		if (it == 0 && check_gpa != ~0ull &&
		    !((src_mem && mem_touches(&ms, check_gpa)) ||
		      (dst_mem && mem_touches(&md, check_gpa)))) {
			res->reason = "the instruction does not access the faulting GPA";
			return EMUL_RETRY;
		}

		switch (cls) {
		case X86_CLASS_MOVS:
			st = mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				st = mem_rw(ctx, &md, &v, true, res);
			break;
		case X86_CLASS_STOS:
			v = ctx->gpr[X86_RAX] & size_mask(size);
			st = mem_rw(ctx, &md, &v, true, res);
			break;
		case X86_CLASS_LODS:
			st = mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				reg_write(ctx, X86_RAX, false, size, v);
			break;
		case X86_CLASS_INS:
			st = io_status(res, ctx->pio(ctx, port, &v, size, false));
			if (st == EMUL_DONE) {
				v &= size_mask(size);
				st = mem_rw(ctx, &md, &v, true, res);
			}
			break;
		default: /* OUTS */
			st = mem_rw(ctx, &ms, &v, false, res);
			if (st == EMUL_DONE)
				st = io_status(res, ctx->pio(ctx, port, &v, size, true));
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
				reg_write(ctx, X86_RAX, false, size, emul_load_le(sc.host + so, size));
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
			st = io_status(res, rc);
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
		return exec_string(ctx, d, fault_gpa, res);
	case X86_CLASS_INS:
	case X86_CLASS_OUTS:
		/* The memory side of string I/O: same emulation. */
		return exec_string(ctx, d, fault_gpa, res);
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
	return exec_string(ctx, d, ~0ull, res);
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
		return exec_string(ctx, d, ~0ull, res);
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
	st = io_status(res, ctx->pio(ctx, port, &v, size, !in));
	if (st != EMUL_DONE)
		return st;
	/* AL/AX merge into RAX, EAX zero-extends: reg_write does as the CPU. */
	if (in)
		reg_write(ctx, X86_RAX, false, size, v);
	res->iterations = 1;
	finish(ctx, d);
	return EMUL_DONE;
}
