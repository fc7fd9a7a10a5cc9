/* Differential test of emul/x86_decode.c against Zydis (Debian libzydis-dev).
 *
 * For random byte sequences and for a corpus of encodings of the supported
 * families (all ModRM bytes, SIB bytes, prefix combinations, in 16-, 32- and
 * 64-bit mode), whenever lightpath's decoder accepts an instruction, Zydis
 * must decode it too, to the same length, the same mnemonic family, operand
 * size, address size, registers, memory operand (base, index, scale,
 * displacement, segment) and immediate; and lightpath must report
 * TRUNCATED for every shorter prefix of the bytes. Instructions Zydis decodes
 * to a supported mnemonic that lightpath refuses are counted (not errors: a
 * refusal is always safe) and listed with -v.
 *
 * A cmocka program, so `make unit-check` counts it: one test per mode for the
 * random sample and one for the corpus. The random sample size is
 * ZYDIS_DIFF_N (default 200000 per run, split across the modes);
 * `make zydis-diff N=...` runs a longer one. ZYDIS_DIFF_SEED picks the seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <Zydis/Zydis.h>

#include "emul/x86_decode.h"

struct stats {
	unsigned long cases;
	unsigned long zydis_valid;
	unsigned long accepted;
	unsigned long agreed;
	unsigned long disagreed;
	unsigned long refused_family;   /* Zydis: supported mnemonic; lightpath: refused */
	unsigned long zydis_bug592;     /* see zydis_bug592() */
};

static struct stats *cur;

static int verbose;
static struct stats total;
static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static const char *mode_name(enum x86_mode m)
{
	return m == X86_MODE_64 ? "64" : m == X86_MODE_32 ? "32" : "16";
}

static void dump(const char *what, const uint8_t *b, size_t n, enum x86_mode mode)
{
	fprintf(stderr, "  %s (mode %s):", what, mode_name(mode));
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", b[i]);
	fprintf(stderr, "\n");
}

/* Zydis register -> (number, high8, size in bytes); false if not a GPR. */
static bool zreg(ZydisRegister r, int *num, bool *high8, unsigned *size)
{
	*high8 = false;
	if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_R15B) {
		int i = r - ZYDIS_REGISTER_AL;
		*size = 1;
		if (i < 4) {
			*num = i;
		} else if (i < 8) {
			*num = i;
			*high8 = true;
		} else {
			*num = i - 4;
		}
		return true;
	}
	if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W) {
		*num = r - ZYDIS_REGISTER_AX;
		*size = 2;
		return true;
	}
	if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) {
		*num = r - ZYDIS_REGISTER_EAX;
		*size = 4;
		return true;
	}
	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15) {
		*num = r - ZYDIS_REGISTER_RAX;
		*size = 8;
		return true;
	}
	return false;
}

static bool reg_eq(ZydisRegister r, int num, bool high8, unsigned size)
{
	int n;
	bool h;
	unsigned s;
	if (num == X86_REG_NONE)
		return r == ZYDIS_REGISTER_NONE;
	if (!zreg(r, &n, &h, &s))
		return false;
	return n == num && h == high8 && s == size;
}

static int zseg(ZydisRegister r)
{
	switch (r) {
	case ZYDIS_REGISTER_ES: return SEG_ES;
	case ZYDIS_REGISTER_CS: return SEG_CS;
	case ZYDIS_REGISTER_SS: return SEG_SS;
	case ZYDIS_REGISTER_DS: return SEG_DS;
	case ZYDIS_REGISTER_FS: return SEG_FS;
	case ZYDIS_REGISTER_GS: return SEG_GS;
	default: return -2;
	}
}

/* Mnemonic -> (class, op, element size for string insns). */
static bool family(ZydisMnemonic m, unsigned *cls, unsigned *op, unsigned *esize)
{
	*op = 0;
	*esize = 0;
	switch (m) {
	case ZYDIS_MNEMONIC_MOV: *cls = X86_CLASS_MOV; return true;
	case ZYDIS_MNEMONIC_MOVZX: *cls = X86_CLASS_MOVZX; return true;
	case ZYDIS_MNEMONIC_MOVSX: *cls = X86_CLASS_MOVSX; return true;
	case ZYDIS_MNEMONIC_ADD: *cls = X86_CLASS_ALU; *op = X86_ALU_ADD; return true;
	case ZYDIS_MNEMONIC_OR: *cls = X86_CLASS_ALU; *op = X86_ALU_OR; return true;
	case ZYDIS_MNEMONIC_ADC: *cls = X86_CLASS_ALU; *op = X86_ALU_ADC; return true;
	case ZYDIS_MNEMONIC_SBB: *cls = X86_CLASS_ALU; *op = X86_ALU_SBB; return true;
	case ZYDIS_MNEMONIC_AND: *cls = X86_CLASS_ALU; *op = X86_ALU_AND; return true;
	case ZYDIS_MNEMONIC_SUB: *cls = X86_CLASS_ALU; *op = X86_ALU_SUB; return true;
	case ZYDIS_MNEMONIC_XOR: *cls = X86_CLASS_ALU; *op = X86_ALU_XOR; return true;
	case ZYDIS_MNEMONIC_CMP: *cls = X86_CLASS_ALU; *op = X86_ALU_CMP; return true;
	case ZYDIS_MNEMONIC_TEST: *cls = X86_CLASS_ALU; *op = X86_ALU_TEST; return true;
	case ZYDIS_MNEMONIC_XCHG: *cls = X86_CLASS_XCHG; return true;
	case ZYDIS_MNEMONIC_BT: *cls = X86_CLASS_BT; *op = X86_BT_BT; return true;
	case ZYDIS_MNEMONIC_BTS: *cls = X86_CLASS_BT; *op = X86_BT_BTS; return true;
	case ZYDIS_MNEMONIC_BTR: *cls = X86_CLASS_BT; *op = X86_BT_BTR; return true;
	case ZYDIS_MNEMONIC_BTC: *cls = X86_CLASS_BT; *op = X86_BT_BTC; return true;
	case ZYDIS_MNEMONIC_MOVSB: *cls = X86_CLASS_MOVS; *esize = 1; return true;
	case ZYDIS_MNEMONIC_MOVSW: *cls = X86_CLASS_MOVS; *esize = 2; return true;
	case ZYDIS_MNEMONIC_MOVSD: *cls = X86_CLASS_MOVS; *esize = 4; return true;
	case ZYDIS_MNEMONIC_MOVSQ: *cls = X86_CLASS_MOVS; *esize = 8; return true;
	case ZYDIS_MNEMONIC_STOSB: *cls = X86_CLASS_STOS; *esize = 1; return true;
	case ZYDIS_MNEMONIC_STOSW: *cls = X86_CLASS_STOS; *esize = 2; return true;
	case ZYDIS_MNEMONIC_STOSD: *cls = X86_CLASS_STOS; *esize = 4; return true;
	case ZYDIS_MNEMONIC_STOSQ: *cls = X86_CLASS_STOS; *esize = 8; return true;
	case ZYDIS_MNEMONIC_LODSB: *cls = X86_CLASS_LODS; *esize = 1; return true;
	case ZYDIS_MNEMONIC_LODSW: *cls = X86_CLASS_LODS; *esize = 2; return true;
	case ZYDIS_MNEMONIC_LODSD: *cls = X86_CLASS_LODS; *esize = 4; return true;
	case ZYDIS_MNEMONIC_LODSQ: *cls = X86_CLASS_LODS; *esize = 8; return true;
	case ZYDIS_MNEMONIC_INSB: *cls = X86_CLASS_INS; *esize = 1; return true;
	case ZYDIS_MNEMONIC_INSW: *cls = X86_CLASS_INS; *esize = 2; return true;
	case ZYDIS_MNEMONIC_INSD: *cls = X86_CLASS_INS; *esize = 4; return true;
	case ZYDIS_MNEMONIC_OUTSB: *cls = X86_CLASS_OUTS; *esize = 1; return true;
	case ZYDIS_MNEMONIC_OUTSW: *cls = X86_CLASS_OUTS; *esize = 2; return true;
	case ZYDIS_MNEMONIC_OUTSD: *cls = X86_CLASS_OUTS; *esize = 4; return true;
	case ZYDIS_MNEMONIC_IN: *cls = X86_CLASS_IN; return true;
	case ZYDIS_MNEMONIC_OUT: *cls = X86_CLASS_OUT; return true;
	default: return false;
	}
}

static uint64_t mask_of(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/* Zydis 4.0.0 (Debian 12) bug, zyantific/zydis#592, fixed upstream by
 * PR #593: with a 32-bit address size in 64-bit mode, SIB.base = 101b,
 * mod = 00 and REX.B = 1, the operand is [index*scale + disp32] (REX.B does
 * not matter for the no-base rule; the length, which Zydis gets right,
 * includes the disp32), but Zydis reports base R13D and drops the
 * displacement. Those cases are checked without base and displacement and
 * counted apart. */
static bool zydis_bug592(const struct x86_insn *d)
{
	return d->mode == X86_MODE_64 && d->addr_size == 4 && d->has_sib && d->mod == 0 &&
	       (d->sib & 7) == 5 && (d->rex & 1);
}

/* Memory operand comparison; returns NULL or what differs. */
static const char *cmp_mem(const struct x86_insn *d, const ZydisDecodedOperand *z)
{
	const ZydisDecodedOperandMem *zm = &z->mem;
	const struct x86_mem *m = &d->mem;
	if (z->type != ZYDIS_OPERAND_TYPE_MEMORY)
		return "operand kind (memory)";
	if (z->size != 8u * d->mem_size)
		return "memory operand size";
	bool bug592 = zydis_bug592(d);
	if (bug592) {
		cur->zydis_bug592++;
		if (zm->base != ZYDIS_REGISTER_R13D || m->base != X86_REG_NONE)
			return "base register (Zydis bug 592 case)";
	} else if (m->rip_rel) {
		ZydisRegister want = d->addr_size == 8 ? ZYDIS_REGISTER_RIP : ZYDIS_REGISTER_EIP;
		if (zm->base != want)
			return "RIP-relative base";
	} else if (!reg_eq(zm->base, m->base, false, d->addr_size)) {
		return "base register";
	}
	if (!reg_eq(zm->index, m->index, false, d->addr_size))
		return "index register";
	if (m->index != X86_REG_NONE && zm->scale != m->scale)
		return "scale";
	uint64_t zd = zm->disp.has_displacement ? (uint64_t)zm->disp.value : 0;
	uint64_t amask = mask_of(d->addr_size);
	if (!bug592 && (zd & amask) != ((uint64_t)m->disp & amask))
		return "displacement";
	if (zseg(zm->segment) != m->seg)
		return "segment";
	return NULL;
}

/* Compares an accepted instruction with Zydis' decoding; NULL = agree. */
static const char *compare(const struct x86_insn *d, const ZydisDecodedInstruction *zi,
			   const ZydisDecodedOperand *zo)
{
	unsigned cls, op, esize;
	if (zi->length != d->len)
		return "length";
	if (!family(zi->mnemonic, &cls, &op, &esize))
		return "mnemonic outside the supported set";
	if (cls != d->cls)
		return "class";
	if (cls == X86_CLASS_ALU || cls == X86_CLASS_BT) {
		if (op != d->op)
			return "ALU/BT operation";
	}
	if ((d->has_mem || x86_is_string(d)) && zi->address_width != 8u * d->addr_size)
		return "address size";
	if (!!(zi->attributes & ZYDIS_ATTRIB_HAS_LOCK) != d->lock)
		return "LOCK";

	if (x86_is_string(d)) {
		if (esize != d->mem_size)
			return "string element size";
		/* The source operand (DS:rSI or override) carries the segment. */
		if (cls == X86_CLASS_MOVS || cls == X86_CLASS_LODS || cls == X86_CLASS_OUTS) {
			bool found = false;
			for (unsigned k = 0; k < zi->operand_count; k++) {
				const ZydisDecodedOperand *z = &zo[k];
				if (z->type != ZYDIS_OPERAND_TYPE_MEMORY)
					continue;
				if (!reg_eq(z->mem.base, X86_RSI, false, d->addr_size))
					continue;
				found = true;
				if (zseg(z->mem.segment) != d->mem.seg)
					return "string source segment";
			}
			if (!found)
				return "string source operand";
		}
		bool rep = !!(zi->attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
						ZYDIS_ATTRIB_HAS_REPNE));
		if (rep != x86_has_rep(d))
			return "REP";
		return NULL;
	}

	/* IN/OUT: Zydis' operand width is the access size (REX.W ignored). */
	if ((cls == X86_CLASS_IN || cls == X86_CLASS_OUT) && zi->operand_width != 8u * d->opsize)
		return "IN/OUT operand size";

	/* Explicit operands, in order: dst, src. */
	const ZydisDecodedOperand *ex[4];
	unsigned nex = 0;
	for (unsigned k = 0; k < zi->operand_count && nex < 4; k++)
		if (zo[k].visibility == ZYDIS_OPERAND_VISIBILITY_EXPLICIT ||
		    zo[k].visibility == ZYDIS_OPERAND_VISIBILITY_IMPLICIT)
			ex[nex++] = &zo[k];
	uint8_t kinds[2] = { d->dst, d->src };
	unsigned nmine = (d->dst != X86_OP_NONE) + (d->src != X86_OP_NONE);
	if (nex != nmine)
		return "number of explicit operands";
	for (unsigned k = 0; k < nmine; k++) {
		const ZydisDecodedOperand *z = ex[k];
		const char *why;
		switch (kinds[k]) {
		case X86_OP_REG:
			if (z->type != ZYDIS_OPERAND_TYPE_REGISTER)
				return "operand kind (register)";
			if (!reg_eq(z->reg.value, d->reg, d->reg_high8, d->opsize))
				return "register operand";
			break;
		case X86_OP_RM:
			if (d->has_mem) {
				why = cmp_mem(d, z);
				if (why)
					return why;
			} else {
				if (z->type != ZYDIS_OPERAND_TYPE_REGISTER)
					return "operand kind (r/m register)";
				if (!reg_eq(z->reg.value, d->rm, d->rm_high8, d->mem_size))
					return "r/m register";
			}
			break;
		case X86_OP_IMM: {
			if (z->type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
				return "operand kind (immediate)";
			uint64_t m = d->cls == X86_CLASS_BT ? 0xff : mask_of(d->opsize);
			if (d->cls == X86_CLASS_IN || d->cls == X86_CLASS_OUT)
				m = ~0ull; /* the port: zero-extended imm8 */
			if ((z->imm.value.u & m) != (d->imm & m))
				return "immediate";
			break;
		}
		case X86_OP_DX:
			if (z->type != ZYDIS_OPERAND_TYPE_REGISTER ||
			    z->reg.value != ZYDIS_REGISTER_DX)
				return "port operand (DX)";
			break;
		default:
			return "operand kind";
		}
	}
	return NULL;
}

static ZydisDecoder zdec[3];

static void zydis_init(void)
{
	static bool done;
	if (done)
		return;
	ZydisDecoderInit(&zdec[0], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
	ZydisDecoderInit(&zdec[1], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
	ZydisDecoderInit(&zdec[2], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	done = true;
}

static const ZydisDecoder *zfor(enum x86_mode m)
{
	return &zdec[m == X86_MODE_16 ? 0 : m == X86_MODE_32 ? 1 : 2];
}

/* One case: buf holds 15 bytes. */
static void check_one(const uint8_t *buf, enum x86_mode mode, struct stats *st)
{
	struct x86_insn d, d2;
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand zo[ZYDIS_MAX_OPERAND_COUNT];

	cur = st;
	st->cases++;
	int rc = x86_decode(buf, X86_MAX_INSN_LEN, mode, &d);
	ZyanStatus zs = ZydisDecoderDecodeFull(zfor(mode), buf, X86_MAX_INSN_LEN, &zi, zo);
	bool zok = ZYAN_SUCCESS(zs);
	if (zok)
		st->zydis_valid++;

	if (rc == X86_DECODE_TRUNCATED) {
		st->disagreed++;
		dump("TRUNCATED with 15 bytes", buf, 15, mode);
		return;
	}
	if (rc != X86_DECODE_OK) {
		unsigned cls, op, es;
		if (zok && family(zi.mnemonic, &cls, &op, &es)) {
			st->refused_family++;
			if (verbose > 1)
				dump("refused (Zydis: supported mnemonic)", buf, zi.length, mode);
		}
		return;
	}
	st->accepted++;
	const char *why = zok ? compare(&d, &zi, zo) : "Zydis refuses it";
	if (!why) {
		/* Every shorter prefix must be TRUNCATED; the exact length OK. */
		for (unsigned n = 0; n < d.len && !why; n++)
			if (x86_decode(buf, n, mode, &d2) != X86_DECODE_TRUNCATED)
				why = "shorter input not TRUNCATED";
		if (!why && (x86_decode(buf, d.len, mode, &d2) != X86_DECODE_OK ||
			     d2.len != d.len))
			why = "exact-length input";
	}
	if (why) {
		st->disagreed++;
		if (st->disagreed <= 20 || verbose) {
			fprintf(stderr, "disagreement: %s\n", why);
			dump("bytes", buf, zok ? zi.length : d.len, mode);
			if (zok) {
				char text[256];
				ZydisFormatter f;
				ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_INTEL);
				ZydisFormatterFormatInstruction(&f, &zi, zo, zi.operand_count_visible,
								text, sizeof(text), 0, NULL);
				fprintf(stderr, "  zydis: %s (len %u)\n", text, zi.length);
			}
			fprintf(stderr, "  lightpath: len %u cls %u op %u opsize %u mem %u addr %u\n",
				d.len, d.cls, d.op, d.opsize, d.mem_size, d.addr_size);
		}
		return;
	}
	st->agreed++;
}

/* ---- Generators ---- */

static const uint8_t prefixes[] = { 0x66, 0x67, 0xf0, 0xf2, 0xf3, 0x26, 0x2e, 0x36, 0x3e,
				    0x64, 0x65 };
/* Supported opcodes (two-byte ones as 0x0f00 | op) and some neighbours. */
static const uint16_t opcodes[] = {
	0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0a, 0x0b, 0x10, 0x11, 0x12, 0x13,
	0x18, 0x19, 0x1a, 0x1b, 0x20, 0x21, 0x22, 0x23, 0x28, 0x29, 0x2a, 0x2b,
	0x30, 0x31, 0x32, 0x33, 0x38, 0x39, 0x3a, 0x3b, 0x80, 0x81, 0x82, 0x83,
	0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0xa0, 0xa1, 0xa2, 0xa3,
	0xa4, 0xa5, 0xaa, 0xab, 0xac, 0xad, 0x6c, 0x6d, 0x6e, 0x6f, 0xc6, 0xc7,
	0xf6, 0xf7, 0xe4, 0xe5, 0xe6, 0xe7, 0xec, 0xed, 0xee, 0xef,
	0x0fb6, 0x0fb7, 0x0fbe, 0x0fbf, 0x0fa3, 0x0fab, 0x0fb3, 0x0fbb, 0x0fba,
	/* neighbours that must be refused */
	0x04, 0x05, 0x3c, 0x3d, 0x8c, 0x8d, 0x8e, 0x8f, 0xa6, 0xa7, 0xae, 0xaf,
	0xa8, 0xa9, 0xfe, 0xff, 0x63, 0xc4, 0xc5, 0x62, 0x0fb8, 0x0fbc, 0x0fbd,
	0x0fb0, 0x0fb1, 0x0fc0, 0x0fc1, 0x0fa4, 0x0fa5, 0x0f38, 0x0f3a,
	0xe3, 0xe8, 0xeb, 0xf1,
};
#define NOPCODES (sizeof(opcodes) / sizeof(opcodes[0]))

static size_t put_opcode(uint8_t *b, size_t i, uint16_t op)
{
	if (op > 0xff)
		b[i++] = 0x0f;
	b[i++] = (uint8_t)op;
	return i;
}

static void gen_random(uint8_t *b)
{
	for (int k = 0; k < 15; k += 8) {
		uint64_t r = rnd();
		memcpy(b + k, &r, k + 8 <= 15 ? 8 : 15 - k);
	}
	unsigned kind = rnd() % 10;
	if (kind < 3)
		return; /* fully random */
	size_t i = 0;
	/* Legacy prefixes with REX bytes anywhere among them (a REX counts only
	 * right before the opcode), usually one REX last. */
	unsigned np = rnd() % 5;
	for (unsigned k = 0; k < np; k++) {
		if (rnd() % 4 == 0)
			b[i++] = (uint8_t)(0x40 | (rnd() & 15));
		b[i++] = prefixes[rnd() % sizeof(prefixes)];
	}
	if (rnd() % 2)
		b[i++] = (uint8_t)(0x40 | (rnd() & 15));
	i = put_opcode(b, i, opcodes[rnd() % NOPCODES]);
	/* the rest stays random: ModRM, SIB, displacement, immediate */
}

static void run_random(enum x86_mode mode, unsigned long n, struct stats *st)
{
	uint8_t b[16];
	for (unsigned long k = 0; k < n; k++) {
		gen_random(b);
		check_one(b, mode, st);
	}
}

/* Corpus: every supported opcode with every ModRM byte under a set of
 * prefix combinations; every SIB byte for rm=4; fixed tail bytes. */
static void run_corpus(enum x86_mode mode, struct stats *st)
{
	static const uint8_t pre[][3] = {
		{ 0 }, { 1, 0x66 }, { 1, 0x67 }, { 2, 0x66, 0x67 }, { 1, 0xf0 },
		{ 1, 0x64 }, { 1, 0x2e }, { 1, 0xf3 }, { 1, 0xf2 }, { 2, 0x65, 0x36 },
		{ 2, 0xf0, 0x66 }, { 2, 0x48, 0x66 }, { 2, 0x4f, 0x67 }, { 2, 0x44, 0x2e },
	};
	static const uint8_t rex[] = { 0, 0x40, 0x41, 0x44, 0x48, 0x4c, 0x4f };
	uint8_t b[16];
	for (size_t o = 0; o < NOPCODES; o++) {
		for (size_t p = 0; p < sizeof(pre) / sizeof(pre[0]); p++) {
			for (size_t r = 0; r < sizeof(rex); r++) {
				if (r && mode != X86_MODE_64)
					break;
				for (unsigned modrm = 0; modrm < 256; modrm++) {
					size_t i = 0;
					for (unsigned k = 0; k < pre[p][0]; k++)
						b[i++] = pre[p][k + 1];
					if (rex[r])
						b[i++] = rex[r];
					i = put_opcode(b, i, opcodes[o]);
					b[i++] = (uint8_t)modrm;
					/* SIB with base 5 sometimes, then disp/imm bytes */
					uint8_t tail[] = { 0x25, 0x80, 0xff, 0x12, 0x34, 0x86,
							   0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x11,
							   0x22, 0x33 };
					if ((modrm & 7) == 4)
						tail[0] = (uint8_t)(modrm ^ 0x5a);
					for (size_t k = 0; i < 15; k++)
						b[i++] = tail[k];
					check_one(b, mode, st);
				}
			}
		}
	}
	/* All SIB bytes with all mod values, a few opcodes, with and without REX.X/B. */
	static const uint16_t sibops[] = { 0x89, 0x8b, 0x81, 0x0fba, 0x0fb7, 0xc7 };
	for (size_t o = 0; o < sizeof(sibops) / sizeof(sibops[0]); o++)
		for (unsigned rx = 0; rx < 8; rx++)
			for (unsigned mod = 0; mod < 3; mod++)
				for (unsigned sib = 0; sib < 256; sib++) {
					size_t i = 0;
					if (rx & 4)
						b[i++] = 0x67;
					if (rx & 3) {
						if (mode != X86_MODE_64)
							continue;
						b[i++] = (uint8_t)(0x40 | (rx & 3) | 8);
					}
					i = put_opcode(b, i, sibops[o]);
					b[i++] = (uint8_t)((mod << 6) | (2 << 3) | 4);
					b[i++] = (uint8_t)sib;
					while (i < 15)
						{ b[i] = (uint8_t)(0xa0 + i); i++; }
					check_one(b, mode, st);
				}
}

static unsigned long random_n = 200000;

static void account(const struct stats *s, const char *what, enum x86_mode mode)
{
	printf("zydis-diff %s mode %s: %lu cases, %lu valid for Zydis, %lu accepted by "
	       "lightpath, %lu agree, %lu disagree, %lu refused in supported families, "
	       "%lu Zydis-bug-592 cases\n",
	       what, mode_name(mode), s->cases, s->zydis_valid, s->accepted, s->agreed,
	       s->disagreed, s->refused_family, s->zydis_bug592);
	total.zydis_bug592 += s->zydis_bug592;
	total.cases += s->cases;
	total.zydis_valid += s->zydis_valid;
	total.accepted += s->accepted;
	total.agreed += s->agreed;
	total.disagreed += s->disagreed;
	total.refused_family += s->refused_family;
}

static void do_random(enum x86_mode mode)
{
	struct stats s = { 0 };
	zydis_init();
	run_random(mode, random_n / 3 + 1, &s);
	account(&s, "random", mode);
	assert_int_equal(s.disagreed, 0);
	assert_true(s.accepted > 0);
}

static void do_corpus(enum x86_mode mode)
{
	struct stats s = { 0 };
	zydis_init();
	run_corpus(mode, &s);
	account(&s, "corpus", mode);
	assert_int_equal(s.disagreed, 0);
	assert_true(s.accepted > 0);
}

static void test_random_64(void **state) { (void)state; do_random(X86_MODE_64); }
static void test_random_32(void **state) { (void)state; do_random(X86_MODE_32); }
static void test_random_16(void **state) { (void)state; do_random(X86_MODE_16); }
static void test_corpus_64(void **state) { (void)state; do_corpus(X86_MODE_64); }
static void test_corpus_32(void **state) { (void)state; do_corpus(X86_MODE_32); }
static void test_corpus_16(void **state) { (void)state; do_corpus(X86_MODE_16); }

int main(void)
{
	const char *e = getenv("ZYDIS_DIFF_N");
	if (e && *e)
		random_n = strtoul(e, NULL, 0);
	e = getenv("ZYDIS_DIFF_SEED");
	if (e && *e)
		rng_state = strtoull(e, NULL, 0);
	e = getenv("ZYDIS_DIFF_VERBOSE");
	if (e && *e)
		verbose = atoi(e);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_64),
		cmocka_unit_test(test_corpus_32),
		cmocka_unit_test(test_corpus_16),
		cmocka_unit_test(test_random_64),
		cmocka_unit_test(test_random_32),
		cmocka_unit_test(test_random_16),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	printf("zydis-diff total: %lu cases (%lu random), %lu valid for Zydis, %lu accepted by "
	       "lightpath, %lu agree, %lu disagree, %lu refused in supported families, "
	       "%lu Zydis-bug-592 cases\n",
	       total.cases, random_n, total.zydis_valid, total.accepted, total.agreed,
	       total.disagreed, total.refused_family, total.zydis_bug592);
	return rc;
}
