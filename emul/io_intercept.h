/* A decoded port I/O exit, filled by the vendor backend from its exit
 * information (io=fast) or by the instruction decoder (io=emulate). */
#ifndef EMUL_IO_INTERCEPT_H
#define EMUL_IO_INTERCEPT_H

#include <stdbool.h>
#include <stdint.h>

struct io_intercept {
	uint32_t port;     /* 0..0xffff (a full word: no widening on the light path) */
	uint32_t size;     /* 1, 2 or 4 bytes */
	bool in;           /* true: IN/INS (read from the port) */
	bool string;       /* INS/OUTS */
	bool rep;          /* REP prefix present */
	uint64_t next_rip; /* RIP of the following instruction */
};

#endif
