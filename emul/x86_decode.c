/* x86 decoder for the MMIO / string I/O emulator: see x86_decode.h. */
#include "emul/x86_decode.h"

#include "lib/string.h"

/* Bytes available and at most 15 in all: TRUNCATED only when the
 * instruction could still be valid with more bytes. */
#define NEED(n)                                                   \
	do {                                                      \
		if (i + (size_t)(n) > X86_MAX_INSN_LEN)           \
			return X86_DECODE_UNSUPPORTED;            \
		if (i + (size_t)(n) > avail)                      \
			return X86_DECODE_TRUNCATED;              \
	} while (0)

static uint64_t read_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned k = 0; k < n; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

static uint64_t sext(uint64_t v, unsigned bytes)
{
	if (bytes == 0 || bytes >= 8)
		return v;
	unsigned sh = 64 - 8 * bytes;
	return (uint64_t)((int64_t)(v << sh) >> sh);
}

/* Decodes ModRM (already at bytes[*pi]), SIB and displacement. */
static int decode_modrm(const uint8_t *bytes, size_t avail, size_t *pi, struct x86_insn *d)
{
	size_t i = *pi;
	NEED(1);
	uint8_t m = bytes[i++];
	bool rex_r = d->rex & 4, rex_x = d->rex & 2, rex_b = d->rex & 1;

	d->has_modrm = true;
	d->modrm = m;
	d->mod = m >> 6;
	d->reg_field = (m >> 3) & 7;
	d->rm_field = m & 7;
	d->reg = (int8_t)(d->reg_field | (rex_r ? 8 : 0));

	if (d->mod == 3) {
		d->rm = (int8_t)(d->rm_field | (rex_b ? 8 : 0));
		d->has_mem = false;
		*pi = i;
		return X86_DECODE_OK;
	}

	struct x86_mem *mem = &d->mem;
	d->has_mem = true;
	d->rm = X86_REG_NONE;
	mem->base = X86_REG_NONE;
	mem->index = X86_REG_NONE;
	mem->scale = 1;
	mem->rip_rel = false;
	unsigned disp_size = 0;
	bool ss_default = false;

	if (d->addr_size == 2) {
		static const int8_t base16[8] = { X86_RBX, X86_RBX, X86_RBP, X86_RBP,
						  X86_RSI, X86_RDI, X86_RBP, X86_RBX };
		static const int8_t index16[8] = { X86_RSI, X86_RDI, X86_RSI, X86_RDI,
						   X86_REG_NONE, X86_REG_NONE, X86_REG_NONE,
						   X86_REG_NONE };
		if (d->mod == 0 && d->rm_field == 6) {
			disp_size = 2;
		} else {
			mem->base = base16[d->rm_field];
			mem->index = index16[d->rm_field];
			disp_size = d->mod == 1 ? 1 : d->mod == 2 ? 2 : 0;
			ss_default = mem->base == X86_RBP;
		}
	} else {
		if (d->rm_field == 4) {
			NEED(1);
			uint8_t s = bytes[i++];
			d->has_sib = true;
			d->sib = s;
			unsigned idx = ((s >> 3) & 7) | (rex_x ? 8 : 0);
			if (idx != 4) {
				mem->index = (int8_t)idx;
				mem->scale = (uint8_t)(1u << (s >> 6));
			}
			if ((s & 7) == 5 && d->mod == 0) {
				disp_size = 4;
			} else {
				mem->base = (int8_t)((s & 7) | (rex_b ? 8 : 0));
			}
		} else if (d->rm_field == 5 && d->mod == 0) {
			disp_size = 4;
			mem->rip_rel = d->mode == X86_MODE_64;
		} else {
			mem->base = (int8_t)(d->rm_field | (rex_b ? 8 : 0));
		}
		if (d->mod == 1)
			disp_size = 1;
		else if (d->mod == 2)
			disp_size = 4;
		ss_default = mem->base == X86_RSP || mem->base == X86_RBP;
	}
	NEED(disp_size);
	mem->disp = (int64_t)sext(read_le(bytes + i, disp_size), disp_size);
	i += disp_size;

	if (d->seg_override != SEG_NONE)
		mem->seg = d->seg_override;
	else
		mem->seg = ss_default ? SEG_SS : SEG_DS;
	*pi = i;
	return X86_DECODE_OK;
}

int x86_decode(const uint8_t *bytes, size_t avail, enum x86_mode mode, struct x86_insn *d)
{
	size_t i = 0;
	uint8_t b;
	bool long_mode = mode == X86_MODE_64;

	*d = (struct x86_insn){
		.mode = (uint8_t)mode,
		.seg_override = SEG_NONE,
		.reg = X86_REG_NONE,
		.rm = X86_REG_NONE,
	};

	/* Legacy prefixes in any order and number, then at most one REX, which
	 * only counts right before the opcode (a REX followed by a legacy
	 * prefix is ignored, as the CPU does). */
	for (;;) {
		NEED(1);
		b = bytes[i];
		switch (b) {
		case 0x66: d->opsize_prefix = true; break;
		case 0x67: d->addr_prefix = true; break;
		case 0xf0: d->lock = true; break;
		case 0xf2: d->repne = true; break;
		case 0xf3: d->rep = true; break;
		case 0x26: case 0x2e: case 0x36: case 0x3e: {
			/* In 64-bit mode ES/CS/SS/DS overrides are ignored and do
			 * not displace an earlier FS/GS (AMD behaviour, and Zydis'). */
			int8_t s = (int8_t)((b >> 3) & 3); /* 26->0 ES, 2e->1 CS, 36->2 SS, 3e->3 DS */
			if (!long_mode || (d->seg_override != SEG_FS && d->seg_override != SEG_GS))
				d->seg_override = s;
			break;
		}
		case 0x64: d->seg_override = SEG_FS; break;
		case 0x65: d->seg_override = SEG_GS; break;
		default:
			if (long_mode && (b & 0xf0) == 0x40) {
				d->rex = b;
				i++;
				NEED(1);
				b = bytes[i];
				if (b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 ||
				    b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 ||
				    b == 0x65 || (b & 0xf0) == 0x40) {
					d->rex = 0; /* not last before the opcode: ignored */
					continue;
				}
				goto opcode;
			}
			goto opcode;
		}
		i++;
	}

opcode:;
	/* In 64-bit mode an ignored ES/CS/SS/DS override is no override. */
	if (long_mode && d->seg_override != SEG_FS && d->seg_override != SEG_GS &&
	    d->seg_override != SEG_NONE)
		d->seg_override = SEG_NONE;

	bool rex_w = d->rex & 8;
	unsigned def = mode == X86_MODE_16 ? 2 : 4;
	unsigned opsize = rex_w ? 8 : d->opsize_prefix ? (def == 2 ? 4 : 2) : def;
	if (long_mode)
		d->addr_size = d->addr_prefix ? 4 : 8;
	else
		d->addr_size = (uint8_t)(d->addr_prefix ? (mode == X86_MODE_16 ? 4 : 2) : mode);

	uint8_t op = bytes[i++];
	bool lock_ok = false;     /* LOCK allowed if the memory operand is the destination */
	unsigned imm_size = 0;    /* encoded immediate size */
	bool byte_op = false;

	if (op == 0x0f) {
		NEED(1);
		op = bytes[i++];
		d->twobyte = true;
		d->opcode = op;
		switch (op) {
		case 0xb6: case 0xb7: case 0xbe: case 0xbf:
			d->cls = op < 0xb8 ? X86_CLASS_MOVZX : X86_CLASS_MOVSX;
			d->dst = X86_OP_REG;
			d->src = X86_OP_RM;
			d->opsize = (uint8_t)opsize;
			d->mem_size = (op & 1) ? 2 : 1;
			break;
		case 0xa3: case 0xab: case 0xb3: case 0xbb:
			d->cls = X86_CLASS_BT;
			d->op = (uint8_t)((op >> 3) & 3); /* a3->0 BT, ab->1 BTS, b3->2 BTR, bb->3 BTC */
			d->dst = X86_OP_RM;
			d->src = X86_OP_REG;
			d->opsize = d->mem_size = (uint8_t)opsize;
			lock_ok = d->op != X86_BT_BT;
			break;
		case 0xba:
			d->cls = X86_CLASS_BT;
			d->dst = X86_OP_RM;
			d->src = X86_OP_IMM;
			d->opsize = d->mem_size = (uint8_t)opsize;
			imm_size = 1;
			break; /* op and lock_ok after ModRM */
		default:
			return X86_DECODE_UNSUPPORTED;
		}
	} else {
		d->opcode = op;
		byte_op = !(op & 1);
		switch (op) {
		case 0x00: case 0x01: case 0x02: case 0x03:
		case 0x08: case 0x09: case 0x0a: case 0x0b:
		case 0x10: case 0x11: case 0x12: case 0x13:
		case 0x18: case 0x19: case 0x1a: case 0x1b:
		case 0x20: case 0x21: case 0x22: case 0x23:
		case 0x28: case 0x29: case 0x2a: case 0x2b:
		case 0x30: case 0x31: case 0x32: case 0x33:
		case 0x38: case 0x39: case 0x3a: case 0x3b:
			d->cls = X86_CLASS_ALU;
			d->op = (uint8_t)(op >> 3);
			if (op & 2) {
				d->dst = X86_OP_REG;
				d->src = X86_OP_RM;
			} else {
				d->dst = X86_OP_RM;
				d->src = X86_OP_REG;
				lock_ok = d->op != X86_ALU_CMP;
			}
			break;
		case 0x82:
			if (long_mode)
				return X86_DECODE_UNSUPPORTED;
			/* fall through */
		case 0x80: case 0x81: case 0x83:
			d->cls = X86_CLASS_ALU;
			d->dst = X86_OP_RM;
			d->src = X86_OP_IMM;
			byte_op = op != 0x81 && op != 0x83;
			imm_size = op == 0x81 ? (opsize == 2 ? 2 : 4) : 1;
			break; /* op and lock_ok after ModRM */
		case 0x84: case 0x85:
			d->cls = X86_CLASS_ALU;
			d->op = X86_ALU_TEST;
			d->dst = X86_OP_RM;
			d->src = X86_OP_REG;
			break;
		case 0x86: case 0x87:
			d->cls = X86_CLASS_XCHG;
			d->dst = X86_OP_RM;
			d->src = X86_OP_REG;
			lock_ok = true;
			break;
		case 0x88: case 0x89: case 0x8a: case 0x8b:
			d->cls = X86_CLASS_MOV;
			d->dst = (op & 2) ? X86_OP_REG : X86_OP_RM;
			d->src = (op & 2) ? X86_OP_RM : X86_OP_REG;
			break;
		case 0xc6: case 0xc7:
			d->cls = X86_CLASS_MOV;
			d->dst = X86_OP_RM;
			d->src = X86_OP_IMM;
			imm_size = op == 0xc6 ? 1 : (opsize == 2 ? 2 : 4);
			break;
		case 0xf6: case 0xf7:
			d->cls = X86_CLASS_ALU;
			d->op = X86_ALU_TEST;
			d->dst = X86_OP_RM;
			d->src = X86_OP_IMM;
			imm_size = op == 0xf6 ? 1 : (opsize == 2 ? 2 : 4);
			break;
		case 0xa0: case 0xa1: case 0xa2: case 0xa3: {
			/* MOV AL/rAX <-> moffs: an address-size offset, no ModRM. */
			d->cls = X86_CLASS_MOV;
			d->dst = op < 0xa2 ? X86_OP_REG : X86_OP_RM;
			d->src = op < 0xa2 ? X86_OP_RM : X86_OP_REG;
			d->reg = X86_RAX;
			if (d->lock)
				return X86_DECODE_UNSUPPORTED;
			NEED(d->addr_size);
			d->has_mem = true;
			d->mem.base = X86_REG_NONE;
			d->mem.index = X86_REG_NONE;
			d->mem.scale = 1;
			d->mem.disp = (int64_t)read_le(bytes + i, d->addr_size);
			d->mem.seg = d->seg_override != SEG_NONE ? d->seg_override : SEG_DS;
			i += d->addr_size;
			d->opsize = d->mem_size = byte_op ? 1 : (uint8_t)opsize;
			d->len = (uint8_t)i;
			return X86_DECODE_OK;
		}
		case 0xe4: case 0xe5: case 0xe6: case 0xe7:
		case 0xec: case 0xed: case 0xee: case 0xef: {
			/* IN/OUT: no ModRM; an imm8 port (E4-E7) or DX (EC-EF).
			 * The CPU ignores REX.W, F2/F3, 67 and segment overrides
			 * here; LOCK is #UD. */
			bool imm_port = op < 0xe8;
			bool in = !(op & 2);
			if (d->lock)
				return X86_DECODE_UNSUPPORTED;
			d->cls = in ? X86_CLASS_IN : X86_CLASS_OUT;
			d->reg = X86_RAX;
			d->dst = in ? X86_OP_REG : imm_port ? X86_OP_IMM : X86_OP_DX;
			d->src = in ? (imm_port ? X86_OP_IMM : X86_OP_DX) : X86_OP_REG;
			if (imm_port) {
				NEED(1);
				d->imm_size = 1;
				d->imm = bytes[i++]; /* port number: zero-extended */
			}
			d->opsize = d->mem_size = byte_op ? 1 : (uint8_t)(opsize == 8 ? 4 : opsize);
			d->len = (uint8_t)i;
			return X86_DECODE_OK;
		}
		case 0xa4: case 0xa5: d->cls = X86_CLASS_MOVS; break;
		case 0xaa: case 0xab: d->cls = X86_CLASS_STOS; break;
		case 0xac: case 0xad: d->cls = X86_CLASS_LODS; break;
		case 0x6c: case 0x6d: d->cls = X86_CLASS_INS; break;
		case 0x6e: case 0x6f: d->cls = X86_CLASS_OUTS; break;
		default:
			return X86_DECODE_UNSUPPORTED;
		}
		if (x86_is_string(d)) {
			if (d->lock)
				return X86_DECODE_UNSUPPORTED;
			unsigned sz = byte_op ? 1 : opsize;
			if ((d->cls == X86_CLASS_INS || d->cls == X86_CLASS_OUTS) && sz == 8)
				sz = 4; /* REX.W does not widen port I/O */
			d->opsize = d->mem_size = (uint8_t)sz;
			d->has_mem = true; /* the segment of the source operand */
			d->mem.base = X86_REG_NONE;
			d->mem.index = X86_REG_NONE;
			d->mem.scale = 1;
			d->mem.seg = d->seg_override != SEG_NONE ? d->seg_override : SEG_DS;
			d->len = (uint8_t)i;
			return X86_DECODE_OK;
		}
		d->opsize = d->mem_size = byte_op ? 1 : (uint8_t)opsize;
	}

	int rc = decode_modrm(bytes, avail, &i, d);
	if (rc)
		return rc;

	/* Opcode extensions in ModRM.reg. */
	if (!d->twobyte) {
		switch (op) {
		case 0x80: case 0x81: case 0x82: case 0x83:
			d->op = d->reg_field;
			lock_ok = d->op != X86_ALU_CMP;
			break;
		case 0xc6: case 0xc7:
		case 0xf6: case 0xf7:
			if (d->reg_field != 0)
				return X86_DECODE_UNSUPPORTED; /* XABORT/XBEGIN, TEST alias /1, NOT, NEG, ... */
			break;
		default:
			break;
		}
		if (op >= 0x80 && op <= 0x83)
			d->reg = X86_REG_NONE;
		if (op >= 0xc6)
			d->reg = X86_REG_NONE;
	} else if (op == 0xba) {
		if (d->reg_field < 4)
			return X86_DECODE_UNSUPPORTED;
		d->op = (uint8_t)(d->reg_field - 4);
		lock_ok = d->op != X86_BT_BT;
		d->reg = X86_REG_NONE;
	}

	/* LOCK: only with a memory destination of a read-modify-write op. */
	if (d->lock && (!lock_ok || !d->has_mem))
		return X86_DECODE_UNSUPPORTED;

	if (imm_size) {
		NEED(imm_size);
		d->imm_size = (uint8_t)imm_size;
		d->imm = sext(read_le(bytes + i, imm_size), imm_size);
		if (d->twobyte)
			d->imm &= 0xff; /* BT bit offset: unsigned */
		i += imm_size;
	}

	/* Byte registers: without REX, 4..7 are AH, CH, DH, BH. */
	if (!d->rex) {
		if (d->reg != X86_REG_NONE && d->opsize == 1 && d->reg >= 4)
			d->reg_high8 = true;
		if (!d->has_mem && d->mem_size == 1 && d->rm >= 4)
			d->rm_high8 = true;
	}
	d->len = (uint8_t)i;
	return X86_DECODE_OK;
}
