/* Reading guest memory by linear address: a walk of the guest's own page
 * tables (paging off, 32-bit, PAE, 4-level) on top of guest-physical RAM. */
#ifndef VMM_GUEST_MEM_H
#define VMM_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emul/guest_paging.h"

struct vm;

/* Translates a linear address; returns 0 or negative if not mapped. */
int guest_linear_to_gpa(struct vm *vm, const struct guest_paging *pg, uint64_t lin, uint64_t *gpa);
/* Copies up to len bytes at a linear address (may cross pages); returns the
 * number of bytes copied (fewer when a page is not mapped). */
size_t guest_read_linear(struct vm *vm, const struct guest_paging *pg, uint64_t lin, void *buf,
			 size_t len);
/* Length of the instruction at bytes[] if, after legacy/REX prefixes, it is
 * `opcode` (opcode_len bytes); 0 otherwise. */
unsigned insn_length_with_prefixes(const uint8_t *bytes, size_t avail, bool long_mode,
				   const uint8_t *opcode, unsigned opcode_len);

#endif
