#include "vmm/code_cache.h"

#include "vmm/guest_mem.h"
#include "vmm/vendor.h"

void code_cache_reset(struct vcpu *v)
{
	v->code_lin = 1ull << 63;   /* nothing cached: no offset is small */
	v->code_host = 0;
}

bool code_cache_fill(struct vcpu *v)
{
	struct guest_paging pg;
	vendor_guest_paging(v, &pg);
	uint64_t rip = vendor_guest_rip(v), cs_base = vendor_cs_base(v);
	uint64_t lin = (pg.cs_long ? 0 : cs_base) + rip;
	if (!pg.cs_long)
		lin &= 0xffffffffull;
	uint64_t gpa;
	if (lin != cs_base + rip || guest_linear_to_gpa(v->vm, &pg, lin, &gpa))
		return false;
	uint8_t *host = gpa_to_host(v->vm, gpa & ~0xfffull, 4096);
	if (!host)
		return false;
	v->code_lin = lin & ~0xfffull;
	v->code_cr3 = pg.cr3;
	v->code_cr0 = pg.cr0;
	v->code_host = host;
	return true;
}

/* The miss: out of line and reached by a tail call, so that the hit keeps
 * nothing across a call and saves no register. */
static __attribute__((noinline)) const uint8_t *code_cache_refill_at(struct vcpu *v, uint64_t lin,
								   uint64_t cr3, uint64_t cr0)
{
	uint64_t off;
	if (code_cache_fill(v) && code_cache_peek(v, lin, cr3, cr0, &off))
		return v->code_host + off;
	return 0;
}

const uint8_t *code_cache_at_rip(struct vcpu *v, uint64_t cr3, uint64_t cr0, uint64_t rip)
{
	uint64_t lin = vendor_cs_base(v) + rip, off;
	if (code_cache_peek(v, lin, cr3, cr0, &off))
		return v->code_host + off;
	return code_cache_refill_at(v, lin, cr3, cr0);
}
