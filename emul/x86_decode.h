/* x86 instruction decoder for the MMIO and port I/O emulator.
 *
 * Decodes exactly the instructions a guest uses to touch emulated MMIO or to
 * do port I/O (string I/O always; IN/OUT for io=emulate), and refuses
 * everything else (the caller then stops the VM or injects #UD; it never
 * guesses):
 *
 *   MOV      88 89 8A 8B, A0-A3 (moffs), C6 /0, C7 /0
 *   MOVZX    0F B6, 0F B7          MOVSX  0F BE, 0F BF
 *   ALU      ADD OR ADC SBB AND SUB XOR CMP: 00-03 08-0B ... 38-3B, 80 81 83 (82 outside
 *            64-bit mode), each /0../7
 *   TEST     84 85, F6 /0, F7 /0
 *   XCHG     86 87
 *   BT*      BT BTS BTR BTC: 0F A3 AB B3 BB (r/m, reg), 0F BA /4../7 (r/m, imm8)
 *   strings  MOVS A4 A5, STOS AA AB, LODS AC AD, INS 6C 6D, OUTS 6E 6F (REP: F3 or F2)
 *   IN/OUT   E4 E5 E6 E7 (imm8 port), EC ED EE EF (DX port), for io=emulate
 *
 * with any legacy prefixes (66, 67, segment overrides, F0 where the CPU
 * allows LOCK, F2/F3), REX, ModRM/SIB in 16-, 32- and 64-bit addressing,
 * RIP-relative operands, displacements and immediates. Register forms
 * (ModRM.mod == 3) are decoded too (they are valid instructions and useful
 * for length decoding), although the emulator only executes forms with a
 * memory operand.
 *
 * Pure function of the bytes; freestanding (hypervisor) and hosted (tests).
 * Checked against Zydis by tests/unit/diff_zydis.c: whatever it accepts,
 * Zydis decodes to the same length, operand sizes, registers and memory
 * operand. */
#ifndef EMUL_X86_DECODE_H
#define EMUL_X86_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emul/pio_decode.h" /* X86_MAX_INSN_LEN, enum x86_seg */

/* Code segment mode = default operand/address size in bytes. Real mode,
 * virtual-8086 mode and 16-bit protected mode are all X86_MODE_16. */
enum x86_mode { X86_MODE_16 = 2, X86_MODE_32 = 4, X86_MODE_64 = 8 };

/* Return codes of x86_decode. */
#define X86_DECODE_OK           0
#define X86_DECODE_UNSUPPORTED  (-1) /* not in the supported set, invalid (#UD), or > 15 bytes */
#define X86_DECODE_TRUNCATED    (-2) /* valid so far but needs more than `avail` bytes */

#define X86_REG_NONE (-1)

/* General purpose registers, x86 encoding order. */
enum x86_gpr {
	X86_RAX, X86_RCX, X86_RDX, X86_RBX, X86_RSP, X86_RBP, X86_RSI, X86_RDI,
	X86_R8, X86_R9, X86_R10, X86_R11, X86_R12, X86_R13, X86_R14, X86_R15,
};

enum x86_class {
	X86_CLASS_NONE = 0,
	X86_CLASS_MOV,     /* dst <- src */
	X86_CLASS_MOVZX,   /* reg <- zero-extended r/m (mem_size -> opsize) */
	X86_CLASS_MOVSX,   /* reg <- sign-extended r/m */
	X86_CLASS_ALU,     /* dst <- dst op src, flags (op: enum x86_alu_op); CMP/TEST: flags only */
	X86_CLASS_XCHG,    /* r/m <-> reg */
	X86_CLASS_BT,      /* bit test on r/m (op: enum x86_bt_op), bit offset in src */
	X86_CLASS_IN,      /* AL/AX/EAX <- port (imm8 or DX); no memory operand */
	X86_CLASS_OUT,     /* port (imm8 or DX) <- AL/AX/EAX */
	/* String instructions last: x86_is_string() tests cls >= X86_CLASS_MOVS. */
	X86_CLASS_MOVS,    /* [rDI] <- seg:[rSI] */
	X86_CLASS_STOS,    /* [rDI] <- rAX */
	X86_CLASS_LODS,    /* rAX <- seg:[rSI] */
	X86_CLASS_INS,     /* [rDI] <- port DX */
	X86_CLASS_OUTS,    /* port DX <- seg:[rSI] */
};

/* ALU operation numbers: the ModRM.reg field of group 1 (80-83), i.e. also
 * opcode bits 5:3 of 00-3B. TEST is extra. */
enum x86_alu_op {
	X86_ALU_ADD = 0, X86_ALU_OR, X86_ALU_ADC, X86_ALU_SBB,
	X86_ALU_AND, X86_ALU_SUB, X86_ALU_XOR, X86_ALU_CMP,
	X86_ALU_TEST,
};

/* Bit test operations: the ModRM.reg field of 0F BA minus 4. */
enum x86_bt_op { X86_BT_BT = 0, X86_BT_BTS, X86_BT_BTR, X86_BT_BTC };

/* Where an explicit operand lives. */
enum x86_operand {
	X86_OP_NONE = 0,
	X86_OP_REG,   /* register insn.reg (ModRM.reg, or rAX for moffs MOV and IN/OUT) */
	X86_OP_RM,    /* ModRM r/m: memory insn.mem if insn.has_mem, else register insn.rm */
	X86_OP_IMM,   /* insn.imm (IN/OUT: the imm8 port, zero-extended) */
	X86_OP_DX,    /* IN/OUT: the port is DX */
};

struct x86_mem {
	int8_t base;      /* 0..15, or X86_REG_NONE */
	int8_t index;     /* 0..15, or X86_REG_NONE */
	uint8_t scale;    /* 1, 2, 4, 8 (1 when there is no index) */
	bool rip_rel;     /* base is the next instruction's RIP (64-bit mode) */
	int8_t seg;       /* effective segment (enum x86_seg): override or default */
	int64_t disp;     /* sign-extended displacement; moffs: zero-extended offset */
};

struct x86_insn {
	uint8_t len;           /* bytes, prefixes included (1..15) */
	uint8_t mode;          /* enum x86_mode the bytes were decoded in */
	uint8_t cls;           /* enum x86_class */
	uint8_t op;            /* enum x86_alu_op or enum x86_bt_op */
	uint8_t opsize;        /* operation size 1/2/4/8 (MOVZX/MOVSX: destination) */
	uint8_t mem_size;      /* size of the r/m (or string element) operand */
	uint8_t addr_size;     /* 2/4/8: effective address size */
	uint8_t dst, src;      /* enum x86_operand; NONE for string instructions */

	/* Prefixes */
	bool rep;              /* F3 seen (string insns: REP; x86_has_rep() counts F2 too) */
	bool repne;            /* F2 seen */
	bool lock;             /* F0 seen (only accepted where the CPU allows it) */
	bool opsize_prefix;    /* 66 seen */
	bool addr_prefix;      /* 67 seen */
	uint8_t rex;           /* effective REX byte (0x40-0x4f) or 0 */
	int8_t seg_override;   /* enum x86_seg or SEG_NONE */

	/* Opcode, ModRM, SIB */
	bool twobyte;          /* 0F escape */
	uint8_t opcode;        /* the opcode byte after 0F when twobyte */
	bool has_modrm;
	uint8_t modrm, mod, reg_field, rm_field; /* raw fields (3 bits, no REX) */
	bool has_sib;
	uint8_t sib;

	/* Register operands (x86 numbering, REX applied). For byte registers
	 * without REX, 4..7 mean AH, CH, DH, BH: *_high8 is set and the
	 * register is the number as encoded (4..7). */
	int8_t reg;
	bool reg_high8;
	int8_t rm;             /* register r/m when !has_mem */
	bool rm_high8;

	bool has_mem;
	struct x86_mem mem;

	uint8_t imm_size;      /* bytes of immediate in the encoding (0 = none) */
	uint64_t imm;          /* sign-extended to 64 bits as the CPU extends it */
};

/* Decodes the instruction at bytes[0..avail) in `mode`. Returns
 * X86_DECODE_OK and fills *out, or X86_DECODE_UNSUPPORTED /
 * X86_DECODE_TRUNCATED (out->len then is meaningless). */
int x86_decode(const uint8_t *bytes, size_t avail, enum x86_mode mode, struct x86_insn *out);

/* True for MOVS/STOS/LODS/INS/OUTS. */
static inline bool x86_is_string(const struct x86_insn *d)
{
	return d->cls >= X86_CLASS_MOVS;
}

/* REP applies: a string instruction with F3 or F2. */
static inline bool x86_has_rep(const struct x86_insn *d)
{
	return x86_is_string(d) && (d->rep || d->repne);
}

#endif
