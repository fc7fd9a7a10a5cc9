/* Decoding of the AMD SVM IOIO intercept (#VMEXIT 0x7b) from EXITINFO1 and
 * EXITINFO2, the io=fast path. Layout per the AMD64 APM vol. 2, section
 * 15.10.2 "IN and OUT Behavior" (figure "EXITINFO1 for IOIO Intercept"). Static
 * inline: it sits on the light exit path. */
#ifndef VMM_SVM_IOIO_H
#define VMM_SVM_IOIO_H

#include <stdint.h>

#include "emul/io_intercept.h"

#define SVM_IOIO_TYPE_IN    (1u << 0)  /* 1 = IN/INS, 0 = OUT/OUTS */
					/* bit 1 reserved */
#define SVM_IOIO_STR        (1u << 2)  /* INS/OUTS */
#define SVM_IOIO_REP        (1u << 3)  /* REP prefix */
#define SVM_IOIO_SZ8        (1u << 4)  /* operand size, one-hot */
#define SVM_IOIO_SZ16       (1u << 5)
#define SVM_IOIO_SZ32       (1u << 6)
#define SVM_IOIO_A16        (1u << 7)  /* address size, one-hot */
#define SVM_IOIO_A32        (1u << 8)
#define SVM_IOIO_A64        (1u << 9)
#define SVM_IOIO_SEG_SHIFT  10         /* bits 12:10 effective segment (with
					* decode assists only) */
#define SVM_IOIO_SEG_MASK   (7u << SVM_IOIO_SEG_SHIFT)
#define SVM_IOIO_PORT_SHIFT 16         /* bits 31:16 port number */

/* EXITINFO2 is the RIP of the instruction after the IN/OUT. */
static inline void svm_ioio_decode(uint64_t exitinfo1, uint64_t exitinfo2,
				   struct io_intercept *out)
{
	uint32_t info = (uint32_t)exitinfo1;

	out->port = info >> SVM_IOIO_PORT_SHIFT;
	/* SZ8/SZ16/SZ32 are one-hot: bits 4,5,6 -> 1,2,4 bytes. */
	out->size = (info >> 4) & 7;
	out->in = info & SVM_IOIO_TYPE_IN;
	out->string = info & SVM_IOIO_STR;
	out->rep = info & SVM_IOIO_REP;
	out->next_rip = exitinfo2;
}

/* Address size of a string I/O exit in bytes (2, 4 or 8; 0 if none set). */
static inline unsigned svm_ioio_addr_size(uint64_t exitinfo1)
{
	return (unsigned)((exitinfo1 >> 6) & 0xe);
}

#endif
