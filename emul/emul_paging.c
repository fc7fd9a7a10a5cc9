/* x86 emulator: the guest page walk (emul_translate), with the CPU's
 * permission checks and accessed/dirty updates. See emul/emul_internal.h. */
#include "emul/emul_internal.h"

#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_US  (1ull << 2)
#define PTE_A   (1ull << 5)
#define PTE_D   (1ull << 6)
#define PTE_PS  (1ull << 7)
#define PTE_NX  (1ull << 63)
#define PTE_ADDR 0x000ffffffffff000ull

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
			return emul_unsupported(res, "guest page directory is not in RAM");
		uint32_t e = *(volatile uint32_t *)p;
		if (!(e & PTE_P))
			return emul_raise_pf(res, lin, ec);
		rw = e & PTE_RW;
		us = e & PTE_US;
		ent[nent] = p;
		ent64[nent++] = false;
		if ((e & PTE_PS) && (pg->cr4 & EMUL_CR4_PSE)) {
			/* 4 MiB page; PSE-36: bits 20:13 are physical bits 39:32,
			 * bit 21 and bits beyond MAXPHYADDR are reserved. */
			uint64_t hi = (uint64_t)((e >> 13) & 0xff) << 32;
			if ((e & (1u << 21)) || (hi & (rsvd_phys | ~((1ull << 40) - 1))))
				return emul_raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
			phys = (e & 0xffc00000u) | hi | (lin32 & 0x3fffff);
		} else {
			egpa = (e & 0xfffff000u) + (((lin32 >> 12) & 0x3ff) << 2);
			p = ctx->gpa_ptr(ctx, egpa, 4);
			if (!p)
				return emul_unsupported(res, "guest page table is not in RAM");
			e = *(volatile uint32_t *)p;
			if (!(e & PTE_P))
				return emul_raise_pf(res, lin, ec);
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
				return emul_unsupported(res, "guest PDPT is not in RAM");
			uint64_t e = *(volatile uint64_t *)p;
			if (!(e & PTE_P))
				return emul_raise_pf(res, lin, ec);
			if (e & (rsvd_phys | 0x1e6ull | PTE_NX))
				return emul_raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
			table = e & PTE_ADDR;
			level = 2;
		}
		for (;;) {
			unsigned shift = 12 + 9 * (unsigned)(level - 1);
			uint64_t egpa = table + (((lin >> shift) & 0x1ff) << 3);
			uint64_t *p = ctx->gpa_ptr(ctx, egpa, 8);
			if (!p)
				return emul_unsupported(res, "guest page table is not in RAM");
			uint64_t e = *(volatile uint64_t *)p;
			if (!(e & PTE_P))
				return emul_raise_pf(res, lin, ec);
			bool leaf = level == 1 || ((e & PTE_PS) && level <= 3);
			uint64_t rsvd = rsvd_phys | nx_rsvd;
			if (level == 4)
				rsvd |= PTE_PS;
			else if (leaf && level == 2)
				rsvd |= 0x1fe000ull;      /* 2 MiB page: bits 20:13 */
			else if (leaf && level == 3)
				rsvd |= 0x3fffe000ull;    /* 1 GiB page: bits 29:13 */
			if (e & rsvd)
				return emul_raise_pf(res, lin, ec | EMUL_PFEC_P | EMUL_PFEC_RSVD);
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
		return emul_raise_pf(res, lin, ec | EMUL_PFEC_P);

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
