/* emul/x86_decode.c: one test per encoding family, with the expected length,
 * class, sizes, registers, memory operand and immediate. (The broad check is
 * tests/unit/diff_zydis.c, against Zydis.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "emul/x86_decode.h"

#define NONE X86_REG_NONE

static struct x86_insn dec_ok(const uint8_t *b, size_t n, enum x86_mode mode)
{
	struct x86_insn d;
	int rc = x86_decode(b, n, mode, &d);
	assert_int_equal(rc, X86_DECODE_OK);
	/* Every shorter input is TRUNCATED. */
	for (size_t k = 0; k < d.len; k++) {
		struct x86_insn t;
		assert_int_equal(x86_decode(b, k, mode, &t), X86_DECODE_TRUNCATED);
	}
	return d;
}

#define DEC(mode, ...)                                                    \
	({                                                                \
		static const uint8_t b_[] = { __VA_ARGS__ };              \
		dec_ok(b_, sizeof(b_), mode);                             \
	})

#define REFUSED(mode, ...)                                                \
	do {                                                              \
		static const uint8_t b_[] = { __VA_ARGS__ };              \
		struct x86_insn d_;                                       \
		assert_int_equal(x86_decode(b_, sizeof(b_), mode, &d_),   \
				 X86_DECODE_UNSUPPORTED);                 \
	} while (0)

static void expect_mem(const struct x86_insn *d, int base, int index, unsigned scale,
		       int64_t disp, int seg)
{
	assert_true(d->has_mem);
	assert_int_equal(d->mem.base, base);
	assert_int_equal(d->mem.index, index);
	if (index != NONE)
		assert_int_equal(d->mem.scale, scale);
	assert_int_equal(d->mem.disp, disp);
	assert_int_equal(d->mem.seg, seg);
}

static void test_mov_store(void **state)
{
	(void)state;
	/* mov [rax], rcx */
	struct x86_insn d = DEC(X86_MODE_64, 0x48, 0x89, 0x08);
	assert_int_equal(d.len, 3);
	assert_int_equal(d.cls, X86_CLASS_MOV);
	assert_int_equal(d.dst, X86_OP_RM);
	assert_int_equal(d.src, X86_OP_REG);
	assert_int_equal(d.opsize, 8);
	assert_int_equal(d.reg, X86_RCX);
	expect_mem(&d, X86_RAX, NONE, 1, 0, SEG_DS);
	/* mov [rsp+8], eax: SIB, disp8, SS default */
	d = DEC(X86_MODE_64, 0x89, 0x44, 0x24, 0x08);
	assert_int_equal(d.len, 4);
	assert_int_equal(d.opsize, 4);
	expect_mem(&d, X86_RSP, NONE, 1, 8, SEG_SS);
	/* mov [rip+0x10], cx: RIP-relative */
	d = DEC(X86_MODE_64, 0x66, 0x89, 0x0d, 0x10, 0x00, 0x00, 0x00);
	assert_int_equal(d.len, 7);
	assert_int_equal(d.opsize, 2);
	assert_true(d.mem.rip_rel);
	expect_mem(&d, NONE, NONE, 1, 0x10, SEG_DS);
	/* mov byte [r8+r9*8-0x80], sil (REX.RXB) */
	d = DEC(X86_MODE_64, 0x47, 0x88, 0x74, 0xc8, 0x80);
	assert_int_equal(d.len, 5);
	assert_int_equal(d.opsize, 1);
	assert_int_equal(d.reg, 14);
	assert_false(d.reg_high8);
	expect_mem(&d, X86_R8, X86_R9, 8, -0x80, SEG_DS);
	/* 32-bit mode: mov [ebx+0x12345678], edx */
	d = DEC(X86_MODE_32, 0x89, 0x93, 0x78, 0x56, 0x34, 0x12);
	assert_int_equal(d.len, 6);
	assert_int_equal(d.addr_size, 4);
	expect_mem(&d, X86_RBX, NONE, 1, 0x12345678, SEG_DS);
	assert_false(d.mem.rip_rel);
	/* 32-bit mode: mod=0 rm=5 is an absolute disp32, not RIP-relative */
	d = DEC(X86_MODE_32, 0x89, 0x05, 0x00, 0x00, 0xe0, 0xfe);
	assert_false(d.mem.rip_rel);
	expect_mem(&d, NONE, NONE, 1, (int32_t)0xfee00000, SEG_DS);
}

static void test_mov_load_byte_regs(void **state)
{
	(void)state;
	/* mov ah, [rax]: no REX -> AH */
	struct x86_insn d = DEC(X86_MODE_64, 0x8a, 0x20);
	assert_int_equal(d.dst, X86_OP_REG);
	assert_int_equal(d.src, X86_OP_RM);
	assert_int_equal(d.reg, 4);
	assert_true(d.reg_high8);
	/* 40 8a 20: REX -> SPL */
	d = DEC(X86_MODE_64, 0x40, 0x8a, 0x20);
	assert_int_equal(d.reg, 4);
	assert_false(d.reg_high8);
	/* mov r12d, [r13+0]: r13 as base needs a disp8 */
	d = DEC(X86_MODE_64, 0x45, 0x8b, 0x65, 0x00);
	assert_int_equal(d.len, 4);
	assert_int_equal(d.reg, X86_R12);
	expect_mem(&d, X86_R13, NONE, 1, 0, SEG_DS);
	/* register form: mov ecx, edx (decoded, no memory) */
	d = DEC(X86_MODE_64, 0x8b, 0xca);
	assert_false(d.has_mem);
	assert_int_equal(d.rm, X86_RDX);
}

static void test_moffs(void **state)
{
	(void)state;
	/* 64-bit: mov rax, [0xfee000f0] with an 8-byte offset */
	struct x86_insn d = DEC(X86_MODE_64, 0x48, 0xa1, 0xf0, 0x00, 0xe0, 0xfe, 0, 0, 0, 0);
	assert_int_equal(d.len, 10);
	assert_int_equal(d.cls, X86_CLASS_MOV);
	assert_int_equal(d.dst, X86_OP_REG);
	assert_int_equal(d.reg, X86_RAX);
	assert_int_equal(d.opsize, 8);
	expect_mem(&d, NONE, NONE, 1, 0xfee000f0, SEG_DS);
	/* 67: 4-byte offset in 64-bit mode */
	d = DEC(X86_MODE_64, 0x67, 0xa3, 0xb0, 0x00, 0xe0, 0xfe);
	assert_int_equal(d.len, 6);
	assert_int_equal(d.dst, X86_OP_RM);
	assert_int_equal(d.opsize, 4);
	assert_int_equal(d.addr_size, 4);
	expect_mem(&d, NONE, NONE, 1, 0xfee000b0, SEG_DS);
	/* 16-bit: mov [es:0x1234], al */
	d = DEC(X86_MODE_16, 0x26, 0xa2, 0x34, 0x12);
	assert_int_equal(d.len, 4);
	assert_int_equal(d.opsize, 1);
	expect_mem(&d, NONE, NONE, 1, 0x1234, SEG_ES);
	REFUSED(X86_MODE_64, 0xf0, 0xa3, 0, 0, 0, 0, 0, 0, 0, 0);
}

static void test_mov_imm(void **state)
{
	(void)state;
	/* mov dword [rax], 0x12345678 */
	struct x86_insn d = DEC(X86_MODE_64, 0xc7, 0x00, 0x78, 0x56, 0x34, 0x12);
	assert_int_equal(d.len, 6);
	assert_int_equal(d.src, X86_OP_IMM);
	assert_int_equal(d.imm_size, 4);
	assert_int_equal(d.imm, 0x12345678);
	/* mov qword [rax], -1: imm32 sign-extended */
	d = DEC(X86_MODE_64, 0x48, 0xc7, 0x00, 0xff, 0xff, 0xff, 0xff);
	assert_int_equal(d.opsize, 8);
	assert_int_equal(d.imm, 0xffffffffffffffffull);
	/* mov word [rax], 0x8001: imm16 */
	d = DEC(X86_MODE_64, 0x66, 0xc7, 0x00, 0x01, 0x80);
	assert_int_equal(d.len, 5);
	assert_int_equal(d.opsize, 2);
	assert_int_equal(d.imm & 0xffff, 0x8001);
	/* mov byte [rip+0x100], 0x5a: RIP-relative with an immediate after */
	d = DEC(X86_MODE_64, 0xc6, 0x05, 0x00, 0x01, 0x00, 0x00, 0x5a);
	assert_int_equal(d.len, 7);
	assert_true(d.mem.rip_rel);
	assert_int_equal(d.imm, 0x5a);
	REFUSED(X86_MODE_64, 0xc6, 0x08, 0x00); /* C6 /1 */
	REFUSED(X86_MODE_64, 0xc6, 0xf8, 0x00); /* XABORT */
}

static void test_movzx_movsx(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0x0f, 0xb6, 0x07); /* movzx eax, byte [rdi] */
	assert_int_equal(d.len, 3);
	assert_int_equal(d.cls, X86_CLASS_MOVZX);
	assert_int_equal(d.opsize, 4);
	assert_int_equal(d.mem_size, 1);
	assert_int_equal(d.reg, X86_RAX);
	d = DEC(X86_MODE_64, 0x48, 0x0f, 0xbf, 0x0e); /* movsx rcx, word [rsi] */
	assert_int_equal(d.cls, X86_CLASS_MOVSX);
	assert_int_equal(d.opsize, 8);
	assert_int_equal(d.mem_size, 2);
	expect_mem(&d, X86_RSI, NONE, 1, 0, SEG_DS);
	d = DEC(X86_MODE_16, 0x0f, 0xb7, 0x07); /* movzx ax, word [bx] */
	assert_int_equal(d.opsize, 2);
	expect_mem(&d, X86_RBX, NONE, 1, 0, SEG_DS);
}

static void test_alu(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0x01, 0x08); /* add [rax], ecx */
	assert_int_equal(d.cls, X86_CLASS_ALU);
	assert_int_equal(d.op, X86_ALU_ADD);
	assert_int_equal(d.dst, X86_OP_RM);
	d = DEC(X86_MODE_64, 0x2b, 0x07); /* sub eax, [rdi] */
	assert_int_equal(d.op, X86_ALU_SUB);
	assert_int_equal(d.dst, X86_OP_REG);
	d = DEC(X86_MODE_64, 0x83, 0x20, 0xf0); /* and dword [rax], -16 */
	assert_int_equal(d.len, 3);
	assert_int_equal(d.op, X86_ALU_AND);
	assert_int_equal(d.reg, NONE);
	assert_int_equal(d.imm, (uint64_t)-16);
	d = DEC(X86_MODE_64, 0x81, 0x48, 0x04, 0x00, 0x00, 0x01, 0x00); /* or [rax+4], 0x10000 */
	assert_int_equal(d.len, 7);
	assert_int_equal(d.op, X86_ALU_OR);
	assert_int_equal(d.imm, 0x10000);
	d = DEC(X86_MODE_64, 0x80, 0x38, 0x05); /* cmp byte [rax], 5 */
	assert_int_equal(d.op, X86_ALU_CMP);
	assert_int_equal(d.opsize, 1);
	d = DEC(X86_MODE_64, 0xf0, 0x31, 0x08); /* lock xor [rax], ecx */
	assert_true(d.lock);
	assert_int_equal(d.op, X86_ALU_XOR);
	d = DEC(X86_MODE_32, 0x82, 0x10, 0x01); /* adc byte [eax], 1: 82 outside 64-bit */
	assert_int_equal(d.op, X86_ALU_ADC);
	REFUSED(X86_MODE_64, 0x82, 0x10, 0x01);
	REFUSED(X86_MODE_64, 0xf0, 0x39, 0x08);  /* lock cmp */
	REFUSED(X86_MODE_64, 0xf0, 0x01, 0xc8);  /* lock add with a register destination */
	REFUSED(X86_MODE_64, 0xf0, 0x03, 0x08);  /* lock add reg, mem */
}

static void test_test(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0x85, 0x07); /* test [rdi], eax */
	assert_int_equal(d.op, X86_ALU_TEST);
	assert_int_equal(d.dst, X86_OP_RM);
	d = DEC(X86_MODE_64, 0xf6, 0x40, 0x01, 0x80); /* test byte [rax+1], 0x80 */
	assert_int_equal(d.len, 4);
	assert_int_equal(d.opsize, 1);
	assert_int_equal(d.imm & 0xff, 0x80);
	d = DEC(X86_MODE_64, 0x48, 0xf7, 0x00, 0x00, 0x00, 0x00, 0x80); /* test qword [rax], imm32 */
	assert_int_equal(d.len, 7);
	assert_int_equal(d.imm, 0xffffffff80000000ull);
	REFUSED(X86_MODE_64, 0xf6, 0x10);        /* not byte [rax] */
	REFUSED(X86_MODE_64, 0xf0, 0x85, 0x07);  /* lock test */
}

static void test_xchg(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0x87, 0x07); /* xchg [rdi], eax */
	assert_int_equal(d.cls, X86_CLASS_XCHG);
	assert_int_equal(d.reg, X86_RAX);
	d = DEC(X86_MODE_64, 0xf0, 0x86, 0x27); /* lock xchg [rdi], ah */
	assert_true(d.reg_high8);
	assert_true(d.lock);
}

static void test_bt(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0x0f, 0xa3, 0x07); /* bt [rdi], eax */
	assert_int_equal(d.cls, X86_CLASS_BT);
	assert_int_equal(d.op, X86_BT_BT);
	assert_int_equal(d.src, X86_OP_REG);
	d = DEC(X86_MODE_64, 0x0f, 0xba, 0x2f, 0x05); /* bts [rdi], 5 */
	assert_int_equal(d.len, 4);
	assert_int_equal(d.op, X86_BT_BTS);
	assert_int_equal(d.src, X86_OP_IMM);
	assert_int_equal(d.imm, 5);
	d = DEC(X86_MODE_64, 0xf0, 0x48, 0x0f, 0xb3, 0x07); /* lock btr [rdi], rax */
	assert_int_equal(d.op, X86_BT_BTR);
	assert_int_equal(d.opsize, 8);
	d = DEC(X86_MODE_64, 0x0f, 0xba, 0x3f, 0xff); /* btc [rdi], 0xff */
	assert_int_equal(d.op, X86_BT_BTC);
	assert_int_equal(d.imm, 0xff);
	REFUSED(X86_MODE_64, 0x0f, 0xba, 0x27 & 0xc7, 0x01); /* 0F BA /0 */
	REFUSED(X86_MODE_64, 0xf0, 0x0f, 0xa3, 0x07);         /* lock bt */
}

static void test_strings(void **state)
{
	(void)state;
	struct x86_insn d = DEC(X86_MODE_64, 0xf3, 0xa4); /* rep movsb */
	assert_int_equal(d.cls, X86_CLASS_MOVS);
	assert_true(x86_has_rep(&d));
	assert_int_equal(d.mem_size, 1);
	assert_int_equal(d.addr_size, 8);
	d = DEC(X86_MODE_64, 0xf3, 0x48, 0xab); /* rep stosq */
	assert_int_equal(d.cls, X86_CLASS_STOS);
	assert_int_equal(d.mem_size, 8);
	d = DEC(X86_MODE_64, 0xac); /* lodsb */
	assert_int_equal(d.cls, X86_CLASS_LODS);
	assert_false(x86_has_rep(&d));
	d = DEC(X86_MODE_32, 0x66, 0x6d); /* insw */
	assert_int_equal(d.cls, X86_CLASS_INS);
	assert_int_equal(d.mem_size, 2);
	d = DEC(X86_MODE_64, 0x48, 0x6f); /* outsd: REX.W does not widen I/O */
	assert_int_equal(d.cls, X86_CLASS_OUTS);
	assert_int_equal(d.mem_size, 4);
	d = DEC(X86_MODE_64, 0x64, 0x67, 0xa5); /* movsd fs:[esi] */
	assert_int_equal(d.mem.seg, SEG_FS);
	assert_int_equal(d.addr_size, 4);
	d = DEC(X86_MODE_16, 0xf2, 0xa5); /* repne movsw: REP for MOVS */
	assert_true(x86_has_rep(&d));
	assert_int_equal(d.mem_size, 2);
	assert_int_equal(d.addr_size, 2);
	REFUSED(X86_MODE_64, 0xf0, 0xa4);
	REFUSED(X86_MODE_64, 0xa6); /* cmpsb: not supported */
}

static void expect_io(const struct x86_insn *d, unsigned cls, unsigned size, int port)
{
	bool in = cls == X86_CLASS_IN;
	uint8_t port_kind = port < 0 ? X86_OP_DX : X86_OP_IMM;
	assert_int_equal(d->cls, cls);
	assert_int_equal(d->opsize, size);
	assert_int_equal(d->mem_size, size);
	assert_false(d->has_mem);
	assert_false(x86_is_string(d));
	assert_false(x86_has_rep(d));
	assert_int_equal(d->reg, X86_RAX);
	assert_false(d->reg_high8);
	assert_int_equal(d->dst, in ? X86_OP_REG : port_kind);
	assert_int_equal(d->src, in ? port_kind : X86_OP_REG);
	if (port >= 0) {
		assert_int_equal(d->imm_size, 1);
		assert_int_equal(d->imm, (uint64_t)port); /* zero-extended */
	} else {
		assert_int_equal(d->imm_size, 0);
	}
}

static void test_in_out(void **state)
{
	(void)state;
	/* 64-bit mode: imm8 forms */
	struct x86_insn d = DEC(X86_MODE_64, 0xe4, 0x60); /* in al, 0x60 */
	assert_int_equal(d.len, 2);
	expect_io(&d, X86_CLASS_IN, 1, 0x60);
	d = DEC(X86_MODE_64, 0xe5, 0x71); /* in eax, 0x71 */
	expect_io(&d, X86_CLASS_IN, 4, 0x71);
	d = DEC(X86_MODE_64, 0x66, 0xe5, 0x71); /* in ax, 0x71 */
	assert_int_equal(d.len, 3);
	expect_io(&d, X86_CLASS_IN, 2, 0x71);
	d = DEC(X86_MODE_64, 0x48, 0xe5, 0xff); /* REX.W ignored: in eax, 0xff */
	expect_io(&d, X86_CLASS_IN, 4, 0xff);
	d = DEC(X86_MODE_64, 0xe6, 0x80); /* out 0x80, al */
	expect_io(&d, X86_CLASS_OUT, 1, 0x80);
	d = DEC(X86_MODE_64, 0x66, 0x48, 0xe7, 0x70); /* REX.W beats 66, then ignored: out 0x70, eax */
	assert_int_equal(d.len, 4);
	expect_io(&d, X86_CLASS_OUT, 4, 0x70);
	/* DX forms */
	d = DEC(X86_MODE_64, 0xec); /* in al, dx */
	assert_int_equal(d.len, 1);
	expect_io(&d, X86_CLASS_IN, 1, -1);
	d = DEC(X86_MODE_64, 0x66, 0xed); /* in ax, dx */
	expect_io(&d, X86_CLASS_IN, 2, -1);
	d = DEC(X86_MODE_64, 0x4f, 0xed); /* in eax, dx (REX ignored) */
	expect_io(&d, X86_CLASS_IN, 4, -1);
	d = DEC(X86_MODE_64, 0xee); /* out dx, al */
	expect_io(&d, X86_CLASS_OUT, 1, -1);
	d = DEC(X86_MODE_64, 0xef); /* out dx, eax */
	expect_io(&d, X86_CLASS_OUT, 4, -1);
	/* F2/F3, 67 and segment overrides are accepted and change nothing */
	d = DEC(X86_MODE_64, 0xf3, 0xec);
	assert_true(d.rep);
	expect_io(&d, X86_CLASS_IN, 1, -1);
	d = DEC(X86_MODE_64, 0xf2, 0x67, 0x65, 0xe6, 0x42);
	assert_int_equal(d.len, 5);
	expect_io(&d, X86_CLASS_OUT, 1, 0x42);
	/* 32-bit mode */
	d = DEC(X86_MODE_32, 0xed);
	expect_io(&d, X86_CLASS_IN, 4, -1);
	d = DEC(X86_MODE_32, 0x66, 0xef);
	expect_io(&d, X86_CLASS_OUT, 2, -1);
	d = DEC(X86_MODE_32, 0x2e, 0x67, 0xe5, 0x40);
	expect_io(&d, X86_CLASS_IN, 4, 0x40);
	/* 16-bit mode: 66 selects 32 bits */
	d = DEC(X86_MODE_16, 0xed);
	expect_io(&d, X86_CLASS_IN, 2, -1);
	d = DEC(X86_MODE_16, 0x66, 0xed);
	expect_io(&d, X86_CLASS_IN, 4, -1);
	d = DEC(X86_MODE_16, 0xe7, 0x92);
	expect_io(&d, X86_CLASS_OUT, 2, 0x92);
	d = DEC(X86_MODE_16, 0x66, 0xe7, 0x92);
	expect_io(&d, X86_CLASS_OUT, 4, 0x92);
	d = DEC(X86_MODE_16, 0xe4, 0x92);
	expect_io(&d, X86_CLASS_IN, 1, 0x92);
	d = DEC(X86_MODE_16, 0xf3, 0xee);
	expect_io(&d, X86_CLASS_OUT, 1, -1);
	/* LOCK is #UD */
	REFUSED(X86_MODE_64, 0xf0, 0xe4, 0x60);
	REFUSED(X86_MODE_64, 0xf0, 0xec);
	REFUSED(X86_MODE_32, 0x66, 0xf0, 0xef);
	REFUSED(X86_MODE_16, 0xf0, 0xe7, 0x10);
	/* 48 is DEC eax outside 64-bit mode */
	REFUSED(X86_MODE_32, 0x48, 0xec);
	/* the 15-byte limit: 14 prefixes + EC fits, 14 + E4 imm8 does not */
	d = DEC(X86_MODE_64, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		0x66, 0x66, 0x66, 0x66, 0xec);
	assert_int_equal(d.len, 15);
	REFUSED(X86_MODE_64, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		0x66, 0x66, 0x66, 0x66, 0xe4, 0x60);
	/* neighbours: not I/O */
	REFUSED(X86_MODE_64, 0xe3, 0x00);      /* jrcxz */
	REFUSED(X86_MODE_64, 0xe8, 0, 0, 0, 0); /* call */
}

static void test_addr16(void **state)
{
	(void)state;
	/* mov ax, [bp+si+6]: SS default */
	struct x86_insn d = DEC(X86_MODE_16, 0x8b, 0x42, 0x06);
	assert_int_equal(d.len, 3);
	assert_int_equal(d.opsize, 2);
	assert_int_equal(d.addr_size, 2);
	expect_mem(&d, X86_RBP, X86_RSI, 1, 6, SEG_SS);
	/* mov ax, [0x1234] */
	d = DEC(X86_MODE_16, 0x8b, 0x06, 0x34, 0x12);
	expect_mem(&d, NONE, NONE, 1, 0x1234, SEG_DS);
	/* mov [bx+di-2], eax with 66 */
	d = DEC(X86_MODE_16, 0x66, 0x89, 0x41, 0xfe);
	assert_int_equal(d.opsize, 4);
	expect_mem(&d, X86_RBX, X86_RDI, 1, -2, SEG_DS);
	/* 67 in 16-bit mode: 32-bit addressing with SIB */
	d = DEC(X86_MODE_16, 0x67, 0x8b, 0x04, 0x8d, 0x00, 0x10, 0x00, 0x00);
	assert_int_equal(d.addr_size, 4);
	expect_mem(&d, NONE, X86_RCX, 4, 0x1000, SEG_DS);
	/* 67 in 32-bit mode: 16-bit addressing */
	d = DEC(X86_MODE_32, 0x67, 0x89, 0x1f);
	assert_int_equal(d.addr_size, 2);
	expect_mem(&d, X86_RBX, NONE, 1, 0, SEG_DS);
}

static void test_sib(void **state)
{
	(void)state;
	/* mov eax, [rcx*4+0x1000]: no base */
	struct x86_insn d = DEC(X86_MODE_64, 0x8b, 0x04, 0x8d, 0x00, 0x10, 0x00, 0x00);
	assert_int_equal(d.len, 7);
	expect_mem(&d, NONE, X86_RCX, 4, 0x1000, SEG_DS);
	/* mov eax, [r12*1+rax]? 42 8b 04 20: REX.X index r12 */
	d = DEC(X86_MODE_64, 0x42, 0x8b, 0x04, 0x20);
	expect_mem(&d, X86_RAX, X86_R12, 1, 0, SEG_DS);
	/* index 100 without REX.X: none */
	d = DEC(X86_MODE_64, 0x8b, 0x04, 0x60);
	expect_mem(&d, X86_RAX, NONE, 1, 0, SEG_DS);
	/* 41 8b 04 25 disp32: base field 101 with mod 00 is no base even with REX.B */
	d = DEC(X86_MODE_64, 0x41, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x05, 0x00);
	assert_int_equal(d.len, 8);
	expect_mem(&d, NONE, NONE, 1, 0x50000, SEG_DS);
	/* [rbp+rbx*2+0x7f]: rBP base -> SS */
	d = DEC(X86_MODE_64, 0x8b, 0x44, 0x5d, 0x7f);
	expect_mem(&d, X86_RBP, X86_RBX, 2, 0x7f, SEG_SS);
}

static void test_prefixes(void **state)
{
	(void)state;
	/* REX before a legacy prefix is ignored: 48 66 89 08 = mov [rax], cx */
	struct x86_insn d = DEC(X86_MODE_64, 0x48, 0x66, 0x89, 0x08);
	assert_int_equal(d.opsize, 2);
	assert_int_equal(d.rex, 0);
	/* REX.W beats 66 */
	d = DEC(X86_MODE_64, 0x66, 0x48, 0x89, 0x08);
	assert_int_equal(d.opsize, 8);
	/* 64-bit mode: CS override ignored; FS wins over a later DS */
	d = DEC(X86_MODE_64, 0x2e, 0x89, 0x08);
	assert_int_equal(d.mem.seg, SEG_DS);
	d = DEC(X86_MODE_64, 0x64, 0x3e, 0x89, 0x08);
	assert_int_equal(d.mem.seg, SEG_FS);
	/* 32-bit mode: the last override wins */
	d = DEC(X86_MODE_32, 0x64, 0x2e, 0x89, 0x08);
	assert_int_equal(d.mem.seg, SEG_CS);
	/* 14 prefixes + 1 opcode byte would need a ModRM: > 15 bytes */
	REFUSED(X86_MODE_64, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		0x66, 0x66, 0x66, 0x66, 0x89, 0x08);
	/* 13 prefixes + 89 08 = exactly 15 */
	d = DEC(X86_MODE_64, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		0x66, 0x66, 0x66, 0x89, 0x08);
	assert_int_equal(d.len, 15);
	/* Not supported: LOCK MOV, LEA, UD2, push */
	REFUSED(X86_MODE_64, 0xf0, 0x89, 0x08);
	REFUSED(X86_MODE_64, 0x8d, 0x00);
	REFUSED(X86_MODE_64, 0x0f, 0x0b);
	REFUSED(X86_MODE_64, 0xff, 0x30);
	/* Truncated inputs */
	struct x86_insn t;
	static const uint8_t tr1[] = { 0x8b, 0x04 };
	static const uint8_t tr2[] = { 0xc7, 0x00, 0x11 };
	assert_int_equal(x86_decode(tr1, sizeof(tr1), X86_MODE_64, &t), X86_DECODE_TRUNCATED);
	assert_int_equal(x86_decode(tr2, sizeof(tr2), X86_MODE_64, &t), X86_DECODE_TRUNCATED);
	/* In 32-bit mode 0x48 is DEC eax, not REX */
	REFUSED(X86_MODE_32, 0x48, 0x89, 0x08);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mov_store),
		cmocka_unit_test(test_mov_load_byte_regs),
		cmocka_unit_test(test_moffs),
		cmocka_unit_test(test_mov_imm),
		cmocka_unit_test(test_movzx_movsx),
		cmocka_unit_test(test_alu),
		cmocka_unit_test(test_test),
		cmocka_unit_test(test_xchg),
		cmocka_unit_test(test_bt),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_in_out),
		cmocka_unit_test(test_addr16),
		cmocka_unit_test(test_sib),
		cmocka_unit_test(test_prefixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
