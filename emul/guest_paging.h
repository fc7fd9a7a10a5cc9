/* The guest's paging mode as the emulator and the guest page walk need it,
 * filled by the vendor backend from its VMCB/VMCS. */
#ifndef EMUL_GUEST_PAGING_H
#define EMUL_GUEST_PAGING_H

#include <stdbool.h>
#include <stdint.h>

struct guest_paging {
	uint64_t cr0, cr3, cr4, efer;
	bool cs_long;       /* executing 64-bit code (CS.L with EFER.LMA) */
	bool cs_32;         /* CS.D: 32-bit default operand size */
};

#endif
