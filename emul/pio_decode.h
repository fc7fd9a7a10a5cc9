/* IN/OUT/INS/OUTS decoder for io=emulate (port I/O decoded from the
 * instruction bytes instead of the exit information), and
 * for string I/O, which always needs the bytes. Pure function of the bytes:
 * the caller fetches them from guest memory. */
#ifndef EMUL_PIO_DECODE_H
#define EMUL_PIO_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emul/io_intercept.h"

#define X86_MAX_INSN_LEN 15

#define PIO_DECODE_NOT_IO    (-1) /* not an I/O instruction, LOCK, or > 15 bytes */
#define PIO_DECODE_TRUNCATED (-2) /* need more bytes than `avail` */

/* Segment register numbers for pio_insn.seg (x86 encoding order). */
enum x86_seg { SEG_ES = 0, SEG_CS, SEG_SS, SEG_DS, SEG_FS, SEG_GS, SEG_NONE = -1 };

/* Everything the string emulator needs beyond struct io_intercept. */
struct pio_insn {
	struct io_intercept io;
	uint8_t len;        /* instruction length in bytes, prefixes included */
	uint8_t addr_size;  /* 2, 4 or 8: width of rSI/rDI/rCX for INS/OUTS */
	int8_t seg;         /* segment override (enum x86_seg) or SEG_NONE */
};

/* Decodes the instruction at bytes[0..avail). default_opsize is the code
 * segment's operand size, 2 or 4 (64-bit mode: 4); long_mode means 64-bit
 * mode, where REX prefixes exist (and are ignored: REX.W does not widen port
 * I/O) and the default address size is 8. In other modes next_rip is
 * truncated to 32 bits. rdx supplies the port for the DX forms. Prefix
 * repeats are accepted; the last segment override wins; F2 and F3 both mean
 * REP for INS/OUTS and are ignored for IN/OUT, as the CPU does. Returns 0, or
 * PIO_DECODE_NOT_IO / PIO_DECODE_TRUNCATED. */
int pio_decode_insn(const uint8_t *bytes, size_t avail, unsigned default_opsize,
		    bool long_mode, uint64_t rdx, uint64_t rip,
		    struct pio_insn *out);

/* The same, filling only the struct io_intercept. */
int pio_decode(const uint8_t *bytes, size_t avail, unsigned default_opsize,
	       bool long_mode, uint64_t rdx, uint64_t rip,
	       struct io_intercept *out);

#endif
