/* MSR number -> handler index (vmm/msr_map.h). */
#include "vmm/msr_map.h"

int msr_map_set(struct msr_map *m, uint32_t base, uint32_t count, unsigned h)
{
	uint32_t first = msr_map_slot(base);
	if (!h || h > 0xff || !count || first == MSR_MAP_SLOTS)
		return -1;
	/* the whole range inside the block of its first MSR */
	if (count > MSR_MAP_BLOCK - first % MSR_MAP_BLOCK)
		return -1;
	for (uint32_t s = first; s < first + count; s++)
		if (!m->handler[s])
			m->handler[s] = (uint8_t)h;
	return 0;
}
