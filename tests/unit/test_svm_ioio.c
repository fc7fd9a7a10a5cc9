/* emul/svm_ioio.h: EXITINFO1/EXITINFO2 of the SVM IOIO intercept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "emul/pio_decode.h"
#include "vmm/svm/ioio.h"

static struct io_intercept decode(uint64_t info1, uint64_t info2)
{
	struct io_intercept io;
	memset(&io, 0xcc, sizeof(io));
	svm_ioio_decode(info1, info2, &io);
	return io;
}

static void test_bit_values(void **state)
{
	(void)state;
	/* The layout of APM vol. 2, 15.10.2. */
	assert_int_equal(SVM_IOIO_TYPE_IN, 0x1);
	assert_int_equal(SVM_IOIO_STR, 0x4);
	assert_int_equal(SVM_IOIO_REP, 0x8);
	assert_int_equal(SVM_IOIO_SZ8, 0x10);
	assert_int_equal(SVM_IOIO_SZ16, 0x20);
	assert_int_equal(SVM_IOIO_SZ32, 0x40);
	assert_int_equal(SVM_IOIO_A16, 0x80);
	assert_int_equal(SVM_IOIO_A32, 0x100);
	assert_int_equal(SVM_IOIO_A64, 0x200);
	assert_int_equal(SVM_IOIO_SEG_MASK, 0x1c00);
	assert_int_equal(SVM_IOIO_PORT_SHIFT, 16);
}

static void test_out_byte(void **state)
{
	(void)state;
	/* out 0x80, al in 64-bit code */
	struct io_intercept io = decode(0x00800210, 0xffffffff81000002ull);
	assert_int_equal(io.port, 0x80);
	assert_int_equal(io.size, 1);
	assert_false(io.in);
	assert_false(io.string);
	assert_false(io.rep);
	assert_int_equal(io.next_rip, 0xffffffff81000002ull);
}

static void test_in_sizes(void **state)
{
	(void)state;
	struct io_intercept io = decode(0x03fd0011, 0x1001);
	assert_int_equal(io.port, 0x3fd);
	assert_int_equal(io.size, 1);
	assert_true(io.in);
	io = decode(0x06080021 | SVM_IOIO_A32, 0x2000);
	assert_int_equal(io.port, 0x608);
	assert_int_equal(io.size, 2);
	assert_true(io.in);
	assert_int_equal(io.next_rip, 0x2000);
	io = decode(0x06080041 | SVM_IOIO_A32, 0x2001);
	assert_int_equal(io.size, 4);
	assert_true(io.in);
	io = decode(0x0cfc0040, 5);
	assert_int_equal(io.port, 0xcfc);
	assert_int_equal(io.size, 4);
	assert_false(io.in);
}

static void test_string_rep(void **state)
{
	(void)state;
	/* rep outsb to 0x3f8, 64-bit addressing, DS segment (3) */
	uint64_t info = (0x3f8ull << 16) | SVM_IOIO_REP | SVM_IOIO_STR |
			SVM_IOIO_SZ8 | SVM_IOIO_A64 | (3u << SVM_IOIO_SEG_SHIFT);
	struct io_intercept io = decode(info, 0x400002);
	assert_int_equal(io.port, 0x3f8);
	assert_int_equal(io.size, 1);
	assert_false(io.in);
	assert_true(io.string);
	assert_true(io.rep);
	assert_int_equal(io.next_rip, 0x400002);
	assert_int_equal(svm_ioio_addr_size(info), 8);
	/* insw without rep, 16-bit addressing */
	info = (0x1f0ull << 16) | SVM_IOIO_STR | SVM_IOIO_SZ16 | SVM_IOIO_A16 |
	       SVM_IOIO_TYPE_IN;
	io = decode(info, 0x7c01);
	assert_true(io.in);
	assert_true(io.string);
	assert_false(io.rep);
	assert_int_equal(io.size, 2);
	assert_int_equal(svm_ioio_addr_size(info), 2);
	assert_int_equal(svm_ioio_addr_size(SVM_IOIO_A32), 4);
}

static void test_port_bits(void **state)
{
	(void)state;
	for (unsigned bit = 0; bit < 16; bit++) {
		struct io_intercept io = decode((1ull << (16 + bit)) | SVM_IOIO_SZ8, 0);
		assert_int_equal(io.port, 1u << bit);
		assert_int_equal(io.size, 1);
		assert_false(io.in);
	}
	/* Port bits do not leak into the flags, nor the upper half into anything. */
	struct io_intercept io = decode(0xffffffff0000ffffull & ~0xffffull, 0);
	assert_int_equal(io.port, 0);
	io = decode(0xabcd00000000ffffull | (0xffffull << 16), 9);
	assert_int_equal(io.port, 0xffff);
	assert_true(io.in);
	assert_true(io.string);
	assert_true(io.rep);
}

/* The fast path and the emulator path must agree on the same instruction:
 * build EXITINFO1 as the CPU would from a decoded instruction. */
static void test_agrees_with_decoder(void **state)
{
	(void)state;
	static const uint8_t insns[][4] = {
		{ 2, 0xe4, 0x71 }, { 2, 0xe5, 0x40 }, { 2, 0xe6, 0x80 }, { 2, 0xe7, 0xf4 },
		{ 1, 0xec }, { 1, 0xed }, { 1, 0xee }, { 1, 0xef },
		{ 2, 0xf3, 0x6c }, { 1, 0x6d }, { 3, 0x66, 0xf3, 0x6f }, { 2, 0x66, 0xed },
	};
	for (size_t i = 0; i < sizeof(insns) / sizeof(insns[0]); i++) {
		struct io_intercept want;
		uint64_t rip = 0x5000;
		assert_int_equal(pio_decode(&insns[i][1], insns[i][0], 4, true, 0x2f8, rip,
					    &want), 0);
		uint64_t info = ((uint64_t)want.port << 16) | (want.in ? SVM_IOIO_TYPE_IN : 0) |
				(want.string ? SVM_IOIO_STR : 0) | (want.rep ? SVM_IOIO_REP : 0) |
				((uint64_t)want.size << 4) | SVM_IOIO_A64;
		struct io_intercept got = decode(info, rip + insns[i][0]);
		assert_int_equal(got.port, want.port);
		assert_int_equal(got.size, want.size);
		assert_int_equal(got.in, want.in);
		assert_int_equal(got.string, want.string);
		assert_int_equal(got.rep, want.rep);
		assert_int_equal(got.next_rip, want.next_rip);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bit_values),
		cmocka_unit_test(test_out_byte),
		cmocka_unit_test(test_in_sizes),
		cmocka_unit_test(test_string_rep),
		cmocka_unit_test(test_port_bits),
		cmocka_unit_test(test_agrees_with_decoder),
	};
	return cmocka_run_group_tests_name("svm_ioio", tests, NULL, NULL);
}
