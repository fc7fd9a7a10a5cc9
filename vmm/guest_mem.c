#include "vmm/guest_mem.h"

#include "core/cpu.h"
#include "lib/string.h"
#include "vmm/vm.h"

#define PTE_P   1ull
#define PTE_PS  (1ull << 7)
#define ADDR_MASK 0x000ffffffffff000ull

static int read_entry(struct vm *vm, uint64_t gpa, unsigned size, uint64_t *out)
{
	const void *p = gpa_to_host(vm, gpa, size);
	if (!p)
		return -1;
	*out = size == 4 ? *(const uint32_t *)p : *(const uint64_t *)p;
	return (*out & PTE_P) ? 0 : -1;
}

int guest_linear_to_gpa(struct vm *vm, const struct guest_paging *pg, uint64_t lin, uint64_t *gpa)
{
	uint64_t e;
	if (!(pg->cr0 & CR0_PG)) {
		*gpa = lin & 0xffffffffull;
		return 0;
	}
	if (!(pg->cr4 & CR4_PAE)) {                 /* 32-bit paging */
		lin &= 0xffffffffull;
		if (read_entry(vm, (pg->cr3 & 0xfffff000u) + ((lin >> 22) << 2), 4, &e))
			return -1;
		if ((e & PTE_PS) && (pg->cr4 & CR4_PSE)) {
			*gpa = (e & 0xffc00000u) | ((e & 0x1fe000ull) << 19) | (lin & 0x3fffff);
			return 0;
		}
		if (read_entry(vm, (e & 0xfffff000u) + (((lin >> 12) & 0x3ff) << 2), 4, &e))
			return -1;
		*gpa = (e & 0xfffff000u) | (lin & 0xfff);
		return 0;
	}
	uint64_t table;
	int level;
	if (pg->efer & EFER_LMA) {                  /* 4-level */
		table = pg->cr3 & ADDR_MASK;
		level = 4;
	} else {                                    /* PAE: 4 PDPTEs at CR3 */
		lin &= 0xffffffffull;
		if (read_entry(vm, (pg->cr3 & 0xffffffe0u) + ((lin >> 30) << 3), 8, &e))
			return -1;
		table = e & ADDR_MASK;
		level = 2;
	}
	for (; level >= 1; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		if (read_entry(vm, table + (((lin >> shift) & 0x1ff) << 3), 8, &e))
			return -1;
		if (level == 1 || ((e & PTE_PS) && level <= 3)) {
			uint64_t page_mask = (1ull << shift) - 1;
			*gpa = (e & ADDR_MASK & ~page_mask) | (lin & page_mask);
			return 0;
		}
		table = e & ADDR_MASK;
	}
	return -1;
}

size_t guest_read_linear(struct vm *vm, const struct guest_paging *pg, uint64_t lin, void *buf,
			 size_t len)
{
	size_t done = 0;
	while (done < len) {
		uint64_t gpa;
		size_t chunk = 4096 - ((lin + done) & 0xfff);
		if (chunk > len - done)
			chunk = len - done;
		if (guest_linear_to_gpa(vm, pg, lin + done, &gpa))
			break;
		const void *src = gpa_to_host(vm, gpa, chunk);
		if (!src)
			break;
		memcpy((uint8_t *)buf + done, src, chunk);
		done += chunk;
	}
	return done;
}

unsigned insn_length_with_prefixes(const uint8_t *bytes, size_t avail, bool long_mode,
				   const uint8_t *opcode, unsigned opcode_len)
{
	unsigned i = 0;
	for (; i < avail && i < 15; i++) {
		uint8_t b = bytes[i];
		if (b == 0x66 || b == 0x67 || b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36 ||
		    b == 0x64 || b == 0x65 || b == 0xf0 || b == 0xf2 || b == 0xf3)
			continue;
		if (long_mode && (b & 0xf0) == 0x40)
			continue;
		break;
	}
	if (i + opcode_len > avail || i + opcode_len > 15)
		return 0;
	if (memcmp(bytes + i, opcode, opcode_len) != 0)
		return 0;
	return i + opcode_len;
}
