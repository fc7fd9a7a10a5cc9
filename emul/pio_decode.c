/* Port I/O instruction decoder: legacy prefixes, REX, then one of the twelve
 * I/O opcodes. */
#include "emul/pio_decode.h"

int pio_decode_insn(const uint8_t *bytes, size_t avail, unsigned default_opsize,
		    bool long_mode, uint64_t rdx, uint64_t rip,
		    struct pio_insn *out)
{
	unsigned opsize = default_opsize == 2 ? 2 : 4;
	unsigned addr_size = long_mode ? 8 : opsize;
	bool rep = false;
	int seg = SEG_NONE;
	size_t i = 0;
	uint8_t op;

	/* Prefixes. A REX only counts right before the opcode; one followed by
	 * a legacy prefix is ignored by the CPU, which skipping it also does. */
	for (;; i++) {
		if (i >= X86_MAX_INSN_LEN)
			return PIO_DECODE_NOT_IO;
		if (i >= avail)
			return PIO_DECODE_TRUNCATED;
		op = bytes[i];
		switch (op) {
		case 0x66:
			opsize = default_opsize == 2 ? 4 : 2;
			continue;
		case 0x67:
			addr_size = long_mode ? 4 : (default_opsize == 2 ? 4 : 2);
			continue;
		case 0x26: seg = SEG_ES; continue;
		case 0x2e: seg = SEG_CS; continue;
		case 0x36: seg = SEG_SS; continue;
		case 0x3e: seg = SEG_DS; continue;
		case 0x64: seg = SEG_FS; continue;
		case 0x65: seg = SEG_GS; continue;
		case 0xf2:
		case 0xf3:
			rep = true;
			continue;
		case 0xf0:
			return PIO_DECODE_NOT_IO; /* LOCK IN/OUT is #UD */
		default:
			break;
		}
		if (long_mode && (op & 0xf0) == 0x40)
			continue; /* REX: W/R/X/B mean nothing to port I/O */
		break;
	}

	bool byte_op = !(op & 1);
	bool imm_port = false;
	struct io_intercept *io = &out->io;

	switch (op) {
	case 0xe4: case 0xe5:             /* IN AL/eAX, imm8 */
	case 0xe6: case 0xe7:             /* OUT imm8, AL/eAX */
		imm_port = true;
		io->in = op < 0xe6;
		io->string = false;
		break;
	case 0xec: case 0xed:             /* IN AL/eAX, DX */
	case 0xee: case 0xef:             /* OUT DX, AL/eAX */
		io->in = op < 0xee;
		io->string = false;
		break;
	case 0x6c: case 0x6d:             /* INS */
	case 0x6e: case 0x6f:             /* OUTS */
		io->in = op < 0x6e;
		io->string = true;
		break;
	default:
		return PIO_DECODE_NOT_IO;
	}

	size_t len = i + 1;
	if (imm_port) {
		if (len >= X86_MAX_INSN_LEN)
			return PIO_DECODE_NOT_IO;
		if (len >= avail)
			return PIO_DECODE_TRUNCATED;
		io->port = bytes[len];
		len++;
	} else {
		io->port = (uint16_t)rdx;
	}
	io->size = byte_op ? 1 : (uint8_t)opsize;
	io->rep = io->string && rep;
	io->next_rip = rip + len;
	if (!long_mode)
		io->next_rip &= 0xffffffffu;
	out->len = (uint8_t)len;
	out->addr_size = (uint8_t)addr_size;
	out->seg = (int8_t)seg;
	return 0;
}

int pio_decode(const uint8_t *bytes, size_t avail, unsigned default_opsize,
	       bool long_mode, uint64_t rdx, uint64_t rip,
	       struct io_intercept *out)
{
	struct pio_insn insn;
	int rc = pio_decode_insn(bytes, avail, default_opsize, long_mode, rdx,
				 rip, &insn);
	if (rc == 0)
		*out = insn.io;
	return rc;
}
