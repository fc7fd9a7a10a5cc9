/* MSR number -> handler index in constant time. MSRs live in three
 * architectural blocks of 8192 (0x0000_0000, 0xC000_0000, 0xC001_0000: the
 * layout of the SVM MSRPM and the VMX MSR bitmaps); a byte per MSR of those
 * blocks names its handler, so a lookup costs the same whatever the MSR's
 * registration order (it was a scan of the registered ranges). ECX is the
 * guest's: every other 32-bit number maps to 0 without touching the table. */
#ifndef VMM_MSR_MAP_H
#define VMM_MSR_MAP_H

#include <stdint.h>

#define MSR_MAP_BLOCK   0x2000u
#define MSR_MAP_SLOTS   (3 * MSR_MAP_BLOCK)
#define MSR_MAP_HI_C000 0xc0000000u
#define MSR_MAP_HI_C001 0xc0010000u

struct msr_map {
	uint8_t handler[MSR_MAP_SLOTS];   /* 0 = nobody (the caller's #GP path) */
};

/* The table slot of `msr`, or MSR_MAP_SLOTS outside the three blocks. The
 * low block first: the hot MSRs (APIC, TSC deadline, SPEC_CTRL) are there. */
static inline uint32_t msr_map_slot(uint32_t msr)
{
	if (msr < MSR_MAP_BLOCK)
		return msr;
	if (msr - MSR_MAP_HI_C000 < MSR_MAP_BLOCK)
		return msr - MSR_MAP_HI_C000 + MSR_MAP_BLOCK;
	if (msr - MSR_MAP_HI_C001 < MSR_MAP_BLOCK)
		return msr - MSR_MAP_HI_C001 + 2 * MSR_MAP_BLOCK;
	return MSR_MAP_SLOTS;
}

/* The handler index of any 32-bit MSR number (0 = none). */
static inline unsigned msr_map_get(const struct msr_map *m, uint32_t msr)
{
	uint32_t slot = msr_map_slot(msr);
	return slot < MSR_MAP_SLOTS ? m->handler[slot] : 0;
}

/* Gives MSRs base .. base+count-1 handler index h (1..255) where no earlier
 * call gave them one: the first registration of an MSR wins, as it did in
 * the scan. Returns 0, or -1 (nothing changed) when h is 0, count is 0 or
 * the range leaves its block (no MSR outside the blocks can have a
 * handler). */
int msr_map_set(struct msr_map *m, uint32_t base, uint32_t count, unsigned h);

#endif
