/* The boot check of a backend's exit table against its intercepts
 * (vmm/exit_table.h). */
#include "vmm/exit_table.h"

#include <stdbool.h>

static bool has_row(const struct exit_row *table, unsigned rows, uint32_t code)
{
	for (unsigned i = 0; i < rows; i++)
		if (code >= table[i].first && code <= table[i].last)
			return true;
	return false;
}

const struct exit_span *exit_table_missing(const struct exit_row *table, unsigned rows,
					   const struct exit_span *spans, unsigned n,
					   uint32_t *code)
{
	for (unsigned i = 0; i < n; i++) {
		/* 64-bit: a span may end at 0xffffffff (SVM's VMEXIT_INVALID) */
		for (uint64_t c = spans[i].first; c <= spans[i].last; c++) {
			if (!has_row(table, rows, (uint32_t)c)) {
				*code = (uint32_t)c;
				return &spans[i];
			}
		}
	}
	return 0;
}
