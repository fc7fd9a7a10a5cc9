/* VMX instructions as inline functions, and the field/error names used in
 * reports. */
#ifndef VMM_VMX_VMX_OPS_H
#define VMM_VMX_VMX_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vmx/vmcs.h"

/* The light path reads fields unchecked: the current VMCS is valid there. */
static inline uint64_t vmread(uint32_t field)
{
	uint64_t v;
	asm volatile("vmread %1, %0" : "=r"(v) : "r"((uint64_t)field) : "cc");
	return v;
}

static inline void vmwrite(uint32_t field, uint64_t v)
{
	asm volatile("vmwrite %0, %1" ::"r"(v), "r"((uint64_t)field) : "cc");
}

/* Returns false on VMfail (CF or ZF set). */
static inline bool vmwrite_ok(uint32_t field, uint64_t v)
{
	bool fail;
	asm volatile("vmwrite %1, %2; setbe %0" : "=qm"(fail) : "r"(v), "r"((uint64_t)field) : "cc");
	return !fail;
}

static inline bool vmread_ok(uint32_t field, uint64_t *v)
{
	bool fail;
	asm volatile("vmread %2, %1; setbe %0" : "=qm"(fail), "=r"(*v) : "r"((uint64_t)field) : "cc");
	return !fail;
}

static inline bool vmxon(uint64_t pa)
{
	bool fail;
	asm volatile("vmxon %1; setbe %0" : "=qm"(fail) : "m"(pa) : "cc", "memory");
	return !fail;
}

static inline bool vmclear(uint64_t pa)
{
	bool fail;
	asm volatile("vmclear %1; setbe %0" : "=qm"(fail) : "m"(pa) : "cc", "memory");
	return !fail;
}

static inline bool vmptrld(uint64_t pa)
{
	bool fail;
	asm volatile("vmptrld %1; setbe %0" : "=qm"(fail) : "m"(pa) : "cc", "memory");
	return !fail;
}

struct inv_desc {
	uint64_t a, b;
};

static inline void invept(uint64_t type, uint64_t eptp)
{
	struct inv_desc d = { eptp, 0 };
	asm volatile("invept %0, %1" ::"m"(d), "r"(type) : "cc", "memory");
}

static inline void invvpid(uint64_t type, uint16_t vpid)
{
	struct inv_desc d = { vpid, 0 };
	asm volatile("invvpid %0, %1" ::"m"(d), "r"(type) : "cc", "memory");
}

/* "GUEST_CS_AR" for 0x4816, or 0 when the field has no name here. */
const char *vmcs_field_name(uint32_t field);
/* The SDM's text for a VM-instruction error number. */
const char *vmx_insn_error_name(unsigned err);

#endif
