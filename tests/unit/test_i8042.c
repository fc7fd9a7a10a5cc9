/* dev/i8042.c: status, self-test, configuration byte, reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/i8042.h"
#include "tests/unit/stubs.h"

static struct i8042 kbc;

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	i8042_init(&kbc, FAKE_HOST);
	return 0;
}

static int out(uint16_t port, uint8_t v)
{
	uint64_t d = v;
	return i8042_io(&kbc, port, &d, 1, true);
}

static uint8_t in(uint16_t port)
{
	uint64_t d = 0xdead;
	assert_int_equal(i8042_io(&kbc, port, &d, 1, false), IO_OK);
	assert_true(d <= 0xff);
	return (uint8_t)d;
}

static void test_ranges_and_status(void **state)
{
	(void)state;
	assert_int_equal(i8042_desc.nr_ranges, 2);
	assert_true(stub_desc_range_is(&i8042_desc, 0, 0x60, 1, i8042_io, true));
	assert_true(stub_desc_range_is(&i8042_desc, 1, 0x64, 1, i8042_io, true));
	/* nothing to read, input buffer empty: a driver neither waits nor spins */
	uint8_t st = in(0x64);
	assert_int_equal(st & (I8042_STR_OBF | I8042_STR_IBF), 0);
	assert_true(st & I8042_STR_SYSFLAG);
}

static void test_self_test_and_config(void **state)
{
	(void)state;
	assert_int_equal(out(0x64, 0xaa), IO_OK);
	assert_int_equal(in(0x64) & (I8042_STR_OBF | I8042_STR_CMD), I8042_STR_OBF | I8042_STR_CMD);
	assert_int_equal(in(0x60), 0x55);
	assert_int_equal(in(0x64) & I8042_STR_OBF, 0);
	/* Linux's i8042_controller_init: read CTR, write it back changed */
	out(0x64, 0x20);
	assert_int_equal(in(0x60), 0x45);
	out(0x64, 0x60);
	assert_int_equal(in(0x64) & I8042_STR_OBF, 0);
	out(0x60, 0x47);
	assert_int_equal(in(0x64) & I8042_STR_CMD, 0);
	out(0x64, 0x20);
	assert_int_equal(in(0x60), 0x47);
	/* port disable/enable edit the configuration byte */
	out(0x64, 0xad);
	out(0x64, 0xa7);
	out(0x64, 0x20);
	assert_int_equal(in(0x60), 0x47 | 0x10 | 0x20);
	/* interface tests pass */
	out(0x64, 0xab);
	assert_int_equal(in(0x60), 0x00);
	/* a byte to the keyboard gets no answer: there is no keyboard */
	out(0x60, 0xf2);
	assert_int_equal(in(0x64) & I8042_STR_OBF, 0);
	assert_int_equal(stub_vm_end_calls, 0);
}

static void test_reset(void **state)
{
	(void)state;
	assert_int_equal(out(0x64, 0xfe), IO_VM_END);
	assert_int_equal(stub_vm_end_calls, 1);
	assert_int_equal(stub_vm_end_status, 0);
	assert_ptr_equal(stub_vm_end_host, FAKE_HOST);
	assert_string_equal(stub_vm_end_why, "reset requested (i8042)");
	/* the output port's reset line too */
	i8042_init(&kbc, FAKE_HOST);
	out(0x64, 0xd0);
	assert_int_equal(in(0x60) & 1, 1);
	out(0x64, 0xd1);
	assert_int_equal(out(0x60, 0xdf), IO_OK);    /* bit 0 set: no reset */
	out(0x64, 0xd1);
	assert_int_equal(out(0x60, 0xde), IO_VM_END);
	assert_int_equal(stub_vm_end_calls, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ranges_and_status, setup),
		cmocka_unit_test_setup(test_self_test_and_config, setup),
		cmocka_unit_test_setup(test_reset, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
