/* A cached host mapping of the guest's current code page, so the light path
 * can read the bytes at RIP without a guest page walk: the next-RIP check
 * on SVM without NRIP save, and the light decode of MMIO MOVs. Keyed by the
 * linear page, CR3 and CR0; a guest that rewrites the page-table entry of
 * the page it executes without changing either can make it stale (as a TLB
 * would be, until the guest flushes). */
#ifndef VMM_CODE_CACHE_H
#define VMM_CODE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "emul/guest_paging.h"
#include "vmm/vm.h"

/* The fast check never reads within this many bytes of the page end, so
 * any instruction it looks at (at most 15 bytes, plus a 4-byte read) is
 * inside the page. */
#define CODE_CACHE_TAIL 16

/* Is the guest code at linear address `lin` in the cached page (and not in
 * its last CODE_CACHE_TAIL bytes)? Then it is at v->code_host + *off. */
static inline bool code_cache_peek(const struct vcpu *v, uint64_t lin, uint64_t cr3, uint64_t cr0,
				   uint64_t *off)
{
	*off = lin - v->code_lin;
	return *off <= 4096 - CODE_CACHE_TAIL && cr3 == v->code_cr3 && cr0 == v->code_cr0;
}

/* The guest's code at CS:RIP through the cache, refilled once (a guest page
 * walk, still no world switch); 0 when it cannot be read so. CR3 and CR0
 * are the guest's (the cache's key): values, not a struct guest_paging, so
 * that a caller need not build one in memory. */
const uint8_t *code_cache_at_rip(struct vcpu *v, uint64_t cr3, uint64_t cr0, uint64_t rip);

/* Forgets the cached page. */
void code_cache_reset(struct vcpu *v);
/* Points the cache at the page holding CS:RIP (a guest page walk, no world
 * switch). Returns false when it cannot: unmapped, outside RAM, or a 64-bit
 * CS with a base, which the peek's CS.base + RIP would get wrong. */
bool code_cache_fill(struct vcpu *v);

#endif
