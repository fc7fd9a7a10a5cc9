/* emul/pio_decode.c: opcodes, prefixes, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "emul/pio_decode.h"

#define RDX 0xffffffff000003f8ull /* only DX (0x03f8) is the port */
#define RIP 0x1000ull

struct opcase {
	uint8_t bytes[3];
	uint8_t avail;
	uint8_t len;
	uint16_t port;
	uint8_t size;    /* with a 32-bit default operand size */
	uint8_t size16;  /* with a 16-bit default operand size */
	bool in;
	bool string;
};

static const struct opcase opcodes[] = {
	{ { 0xe4, 0x71 }, 2, 2, 0x71, 1, 1, true, false },   /* in al, 0x71 */
	{ { 0xe5, 0x40 }, 2, 2, 0x40, 4, 2, true, false },   /* in eax, 0x40 */
	{ { 0xe6, 0x80 }, 2, 2, 0x80, 1, 1, false, false },  /* out 0x80, al */
	{ { 0xe7, 0xf4 }, 2, 2, 0xf4, 4, 2, false, false },  /* out 0xf4, eax */
	{ { 0xec }, 1, 1, 0x3f8, 1, 1, true, false },        /* in al, dx */
	{ { 0xed }, 1, 1, 0x3f8, 4, 2, true, false },        /* in eax, dx */
	{ { 0xee }, 1, 1, 0x3f8, 1, 1, false, false },       /* out dx, al */
	{ { 0xef }, 1, 1, 0x3f8, 4, 2, false, false },       /* out dx, eax */
	{ { 0x6c }, 1, 1, 0x3f8, 1, 1, true, true },         /* insb */
	{ { 0x6d }, 1, 1, 0x3f8, 4, 2, true, true },         /* insd */
	{ { 0x6e }, 1, 1, 0x3f8, 1, 1, false, true },        /* outsb */
	{ { 0x6f }, 1, 1, 0x3f8, 4, 2, false, true },        /* outsd */
};

#define NOPCODES (sizeof(opcodes) / sizeof(opcodes[0]))

static struct pio_insn dec(const uint8_t *b, size_t n, unsigned opsize, bool lm,
			   int want_rc)
{
	struct pio_insn insn;
	memset(&insn, 0xcc, sizeof(insn));
	assert_int_equal(pio_decode_insn(b, n, opsize, lm, RDX, RIP, &insn), want_rc);
	return insn;
}

static void test_all_opcodes(void **state)
{
	(void)state;
	for (size_t i = 0; i < NOPCODES; i++) {
		const struct opcase *c = &opcodes[i];
		/* 32-bit, 16-bit and 64-bit code. */
		for (int mode = 0; mode < 3; mode++) {
			unsigned opsize = mode == 1 ? 2 : 4;
			bool lm = mode == 2;
			struct pio_insn d = dec(c->bytes, c->avail, opsize, lm, 0);
			assert_int_equal(d.io.port, c->port);
			assert_int_equal(d.io.size, mode == 1 ? c->size16 : c->size);
			assert_int_equal(d.io.in, c->in);
			assert_int_equal(d.io.string, c->string);
			assert_false(d.io.rep);
			assert_int_equal(d.len, c->len);
			assert_int_equal(d.io.next_rip, RIP + c->len);
			assert_int_equal(d.addr_size, lm ? 8 : opsize);
			assert_int_equal(d.seg, SEG_NONE);
		}
	}
}

static void test_wrapper_matches(void **state)
{
	(void)state;
	for (size_t i = 0; i < NOPCODES; i++) {
		struct io_intercept io;
		memset(&io, 0, sizeof(io));
		struct pio_insn d = dec(opcodes[i].bytes, opcodes[i].avail, 4, false, 0);
		assert_int_equal(pio_decode(opcodes[i].bytes, opcodes[i].avail, 4, false,
					    RDX, RIP, &io), 0);
		assert_int_equal(io.port, d.io.port);
		assert_int_equal(io.size, d.io.size);
		assert_int_equal(io.in, d.io.in);
		assert_int_equal(io.string, d.io.string);
		assert_int_equal(io.rep, d.io.rep);
		assert_int_equal(io.next_rip, d.io.next_rip);
	}
	/* Errors leave *out alone. */
	struct io_intercept io = { .port = 7 };
	const uint8_t nop = 0x90;
	assert_int_equal(pio_decode(&nop, 1, 4, false, RDX, RIP, &io), -1);
	assert_int_equal(io.port, 7);
}

static void test_operand_size_prefix(void **state)
{
	(void)state;
	const uint8_t in16[] = { 0x66, 0xed };          /* in ax, dx */
	const uint8_t out16imm[] = { 0x66, 0xe7, 0x70 }; /* out 0x70, ax */
	const uint8_t outsb66[] = { 0x66, 0x6e };       /* 66 does not widen bytes */
	struct pio_insn d = dec(in16, 2, 4, false, 0);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.len, 2);
	d = dec(in16, 2, 2, false, 0);
	assert_int_equal(d.io.size, 4);
	d = dec(in16, 2, 4, true, 0);
	assert_int_equal(d.io.size, 2);
	d = dec(out16imm, 3, 4, false, 0);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.io.port, 0x70);
	assert_int_equal(d.len, 3);
	assert_int_equal(d.io.next_rip, RIP + 3);
	d = dec(outsb66, 2, 4, false, 0);
	assert_int_equal(d.io.size, 1);
	/* Repeating 66 does not toggle back. */
	const uint8_t twice[] = { 0x66, 0x66, 0xef };
	d = dec(twice, 3, 4, false, 0);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.len, 3);
}

static void test_address_size_prefix(void **state)
{
	(void)state;
	const uint8_t b[] = { 0x67, 0x6f };
	struct pio_insn d = dec(b, 2, 4, false, 0);
	assert_int_equal(d.addr_size, 2);
	assert_int_equal(d.io.size, 4);
	assert_int_equal(d.len, 2);
	d = dec(b, 2, 2, false, 0);
	assert_int_equal(d.addr_size, 4);
	assert_int_equal(d.io.size, 2);
	d = dec(b, 2, 4, true, 0);
	assert_int_equal(d.addr_size, 4);
	const uint8_t both[] = { 0x66, 0x67, 0xe5, 0x10 };
	d = dec(both, 4, 2, false, 0);
	assert_int_equal(d.io.size, 4);
	assert_int_equal(d.addr_size, 4);
	assert_int_equal(d.len, 4);
	assert_int_equal(d.io.port, 0x10);
}

static void test_segment_prefixes(void **state)
{
	(void)state;
	static const struct { uint8_t prefix; int seg; } segs[] = {
		{ 0x26, SEG_ES }, { 0x2e, SEG_CS }, { 0x36, SEG_SS },
		{ 0x3e, SEG_DS }, { 0x64, SEG_FS }, { 0x65, SEG_GS },
	};
	for (size_t i = 0; i < 6; i++) {
		const uint8_t b[] = { segs[i].prefix, 0x6e };
		struct pio_insn d = dec(b, 2, 4, false, 0);
		assert_int_equal(d.seg, segs[i].seg);
		assert_int_equal(d.len, 2);
		assert_int_equal(d.io.next_rip, RIP + 2);
		assert_true(d.io.string);
		/* Also accepted (as null prefixes for CS/DS/ES/SS) in 64-bit mode. */
		d = dec(b, 2, 4, true, 0);
		assert_int_equal(d.seg, segs[i].seg);
		/* And in front of a non-string IN/OUT. */
		const uint8_t c[] = { segs[i].prefix, 0xe6, 0x80 };
		d = dec(c, 3, 4, false, 0);
		assert_int_equal(d.len, 3);
		assert_int_equal(d.io.port, 0x80);
	}
	const uint8_t last[] = { 0x26, 0x64, 0x6f };
	struct pio_insn d = dec(last, 3, 4, false, 0);
	assert_int_equal(d.seg, SEG_FS);
}

static void test_rep(void **state)
{
	(void)state;
	const uint8_t rep_insb[] = { 0xf3, 0x6c };
	const uint8_t repne_outsw[] = { 0xf2, 0x66, 0x6f };
	const uint8_t rep_in[] = { 0xf3, 0xec };
	const uint8_t rep_outs_seg[] = { 0xf3, 0x2e, 0x67, 0x6e };
	struct pio_insn d = dec(rep_insb, 2, 4, false, 0);
	assert_true(d.io.rep);
	assert_true(d.io.in);
	assert_true(d.io.string);
	assert_int_equal(d.io.size, 1);
	d = dec(repne_outsw, 3, 4, false, 0);
	assert_true(d.io.rep);
	assert_false(d.io.in);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.len, 3);
	/* REP on a non-string IN is ignored by the CPU. */
	d = dec(rep_in, 2, 4, false, 0);
	assert_false(d.io.rep);
	assert_false(d.io.string);
	assert_int_equal(d.len, 2);
	d = dec(rep_outs_seg, 4, 4, true, 0);
	assert_true(d.io.rep);
	assert_int_equal(d.seg, SEG_CS);
	assert_int_equal(d.addr_size, 4);
	assert_int_equal(d.len, 4);
	assert_int_equal(d.io.next_rip, RIP + 4);
}

static void test_rex(void **state)
{
	(void)state;
	const uint8_t rexw_in[] = { 0x48, 0xed };
	const uint8_t rex_b_out[] = { 0x41, 0xe6, 0x80 };
	const uint8_t o16_rexw[] = { 0x66, 0x48, 0xef };
	const uint8_t rexw_rep_outs[] = { 0xf3, 0x48, 0x6f };
	const uint8_t rex_then_66[] = { 0x48, 0x66, 0xed }; /* REX not last */
	struct pio_insn d = dec(rexw_in, 2, 4, true, 0);
	assert_int_equal(d.io.size, 4); /* REX.W does not make it 8 */
	assert_int_equal(d.len, 2);
	assert_true(d.io.in);
	d = dec(rex_b_out, 3, 4, true, 0);
	assert_int_equal(d.io.port, 0x80);
	assert_int_equal(d.io.size, 1);
	assert_int_equal(d.len, 3);
	d = dec(o16_rexw, 3, 4, true, 0);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.len, 3);
	d = dec(rexw_rep_outs, 3, 4, true, 0);
	assert_true(d.io.rep);
	assert_int_equal(d.io.size, 4);
	assert_int_equal(d.len, 3);
	d = dec(rex_then_66, 3, 4, true, 0);
	assert_int_equal(d.io.size, 2);
	assert_int_equal(d.len, 3);
	/* Outside 64-bit mode 0x40-0x4f are INC/DEC, not prefixes. */
	for (unsigned b = 0x40; b <= 0x4f; b++) {
		const uint8_t x[] = { (uint8_t)b, 0xed };
		dec(x, 2, 4, false, -1);
		dec(x, 2, 2, false, -1);
		struct pio_insn ok = dec(x, 2, 4, true, 0);
		assert_int_equal(ok.len, 2);
	}
}

static void test_lock_rejected(void **state)
{
	(void)state;
	const uint8_t a[] = { 0xf0, 0xee };
	const uint8_t b[] = { 0x66, 0xf0, 0xe5, 0x10 };
	const uint8_t c[] = { 0xf3, 0xf0, 0x6c };
	dec(a, 2, 4, false, -1);
	dec(b, 4, 4, false, -1);
	dec(c, 3, 4, true, -1);
	/* Even when the rest is missing: LOCK alone already decides. */
	dec(a, 1, 4, false, -1);
}

static void test_not_io(void **state)
{
	(void)state;
	const uint8_t nop[] = { 0x90 };
	const uint8_t vmmcall[] = { 0x0f, 0x01, 0xd9 };
	const uint8_t rep_movsb[] = { 0xf3, 0xa4 };
	const uint8_t in_like[] = { 0xe3, 0x00 }; /* jrcxz: next to E4 */
	const uint8_t out_like[] = { 0xe8, 0, 0, 0, 0 };
	const uint8_t ins_like[] = { 0x6b, 0xc0, 0x01 };
	dec(nop, 1, 4, false, -1);
	dec(vmmcall, 3, 4, true, -1);
	dec(rep_movsb, 2, 4, false, -1);
	dec(in_like, 2, 4, false, -1);
	dec(out_like, 5, 4, false, -1);
	dec(ins_like, 3, 4, false, -1);
	for (unsigned op = 0; op < 256; op++) {
		bool io = (op >= 0xe4 && op <= 0xe7) || (op >= 0xec && op <= 0xef) ||
			  (op >= 0x6c && op <= 0x6f);
		bool prefix = op == 0x66 || op == 0x67 || op == 0x26 || op == 0x2e ||
			      op == 0x36 || op == 0x3e || op == 0x64 || op == 0x65 ||
			      op == 0xf2 || op == 0xf3;
		if (io || prefix)
			continue;
		const uint8_t b[] = { (uint8_t)op, 0x80 };
		dec(b, 2, 4, false, -1);
	}
}

static void test_truncated(void **state)
{
	(void)state;
	const uint8_t imm[] = { 0xe6, 0x80 };
	const uint8_t pre[] = { 0x66, 0x67, 0xf3, 0x6d };
	dec(imm, 0, 4, false, -2);
	dec(imm, 1, 4, false, -2);
	dec(imm, 2, 4, false, 0);
	dec(pre, 1, 4, false, -2);
	dec(pre, 3, 4, false, -2);
	dec(pre, 4, 4, false, 0);
	const uint8_t rex[] = { 0x48 };
	dec(rex, 1, 4, true, -2);
	dec(rex, 1, 4, false, -1);
}

static void test_max_length(void **state)
{
	(void)state;
	uint8_t b[20];
	/* 14 prefixes + EE = 15 bytes: the longest legal instruction. */
	memset(b, 0x3e, sizeof(b));
	b[14] = 0xee;
	struct pio_insn d = dec(b, 20, 4, false, 0);
	assert_int_equal(d.len, 15);
	assert_int_equal(d.io.next_rip, RIP + 15);
	/* 15 prefixes + EE = 16 bytes: #GP on a CPU, not I/O for us. */
	memset(b, 0x3e, sizeof(b));
	b[15] = 0xee;
	dec(b, 20, 4, false, -1);
	/* ... even if the caller could give us only 15 bytes. */
	dec(b, 15, 4, false, -1);
	/* 13 prefixes + E6 ib = 15 bytes. */
	memset(b, 0x66, sizeof(b));
	b[13] = 0xe6;
	b[14] = 0x80;
	d = dec(b, 20, 4, false, 0);
	assert_int_equal(d.len, 15);
	assert_int_equal(d.io.port, 0x80);
	/* 14 prefixes + E6 ib = 16 bytes: too long, whatever is available. */
	memset(b, 0x66, sizeof(b));
	b[14] = 0xe6;
	b[15] = 0x80;
	dec(b, 20, 4, false, -1);
	dec(b, 15, 4, false, -1);
	/* 15 REX prefixes, no opcode in reach. */
	memset(b, 0x40, sizeof(b));
	dec(b, 20, 4, true, -1);
}

static void test_ports_and_rip(void **state)
{
	(void)state;
	const uint8_t in_dx[] = { 0xec };
	const uint8_t out_ff[] = { 0xe6, 0xff };
	struct pio_insn d;
	assert_int_equal(pio_decode_insn(in_dx, 1, 4, true, 0xabcdef0123450cf8ull,
					 0xffffffff80001000ull, &d), 0);
	assert_int_equal(d.io.port, 0x0cf8);
	assert_int_equal(d.io.next_rip, 0xffffffff80001001ull);
	assert_int_equal(pio_decode_insn(in_dx, 1, 4, false, 0xffff, 0xfffffffeull, &d), 0);
	assert_int_equal(d.io.port, 0xffff);
	assert_int_equal(d.io.next_rip, 0xffffffffull);
	/* Outside 64-bit mode EIP wraps at 4 GiB. */
	assert_int_equal(pio_decode_insn(out_ff, 2, 4, false, 0, 0xffffffffull, &d), 0);
	assert_int_equal(d.io.port, 0xff);
	assert_int_equal(d.io.next_rip, 1);
	/* The imm8 form ignores DX. */
	assert_int_equal(pio_decode_insn(out_ff, 2, 4, true, 0x1234, 0x100000000ull, &d), 0);
	assert_int_equal(d.io.port, 0xff);
	assert_int_equal(d.io.next_rip, 0x100000002ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_opcodes),
		cmocka_unit_test(test_wrapper_matches),
		cmocka_unit_test(test_operand_size_prefix),
		cmocka_unit_test(test_address_size_prefix),
		cmocka_unit_test(test_segment_prefixes),
		cmocka_unit_test(test_rep),
		cmocka_unit_test(test_rex),
		cmocka_unit_test(test_lock_rejected),
		cmocka_unit_test(test_not_io),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_max_length),
		cmocka_unit_test(test_ports_and_rip),
	};
	return cmocka_run_group_tests_name("pio_decode", tests, NULL, NULL);
}
