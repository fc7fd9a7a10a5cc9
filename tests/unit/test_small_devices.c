/* dev/debug_exit.c and dev/postcode.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/debug_exit.h"
#include "dev/postcode.h"
#include "tests/unit/stubs.h"

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	return 0;
}

static void test_debug_exit_range(void **state)
{
	(void)state;
	struct debug_exit dev;
	debug_exit_init(&dev, FAKE_HOST);
	assert_int_equal(debug_exit_desc.nr_ranges, 1);
	assert_true(stub_desc_range_is(&debug_exit_desc, 0, 0xf4, 4, debug_exit_io, true));
	assert_true(debug_exit_desc.init == debug_exit_init);
	assert_int_equal(dev.base, 0xf4);
	assert_string_equal(debug_exit_desc.name, "isa-debug-exit");
}

static void test_debug_exit_write(void **state)
{
	(void)state;
	struct debug_exit dev;
	debug_exit_init(&dev, FAKE_HOST);
	uint64_t v = 0x31;
	assert_int_equal(debug_exit_io(&dev, 0xf4, &v, 1, true), IO_VM_END);
	assert_int_equal(stub_vm_end_calls, 1);
	assert_int_equal(stub_vm_end_status, 0x31);
	assert_ptr_equal(stub_vm_end_host, FAKE_HOST);
	assert_string_equal(stub_vm_end_why, "isa-debug-exit");
}

static void test_debug_exit_sizes(void **state)
{
	(void)state;
	struct debug_exit dev;
	debug_exit_init(&dev, FAKE_HOST);
	/* Only the low `size` bytes of the register are the value written. */
	uint64_t v = 0xffffff10;
	assert_int_equal(debug_exit_io(&dev, 0xf4, &v, 1, true), IO_VM_END);
	assert_int_equal(stub_vm_end_status, 0x10);
	v = 0xabcd1234;
	assert_int_equal(debug_exit_io(&dev, 0xf4, &v, 2, true), IO_VM_END);
	assert_int_equal(stub_vm_end_status, 0x1234);
	v = 0x1122334455667788ull;
	assert_int_equal(debug_exit_io(&dev, 0xf4, &v, 4, true), IO_VM_END);
	assert_int_equal(stub_vm_end_status, 0x55667788u);
	v = 0;
	assert_int_equal(debug_exit_io(&dev, 0xf6, &v, 1, true), IO_VM_END);
	assert_int_equal(stub_vm_end_status, 0);
	assert_int_equal(stub_vm_end_calls, 4);
}

static void test_debug_exit_read(void **state)
{
	(void)state;
	struct debug_exit dev;
	debug_exit_init(&dev, FAKE_HOST);
	uint64_t v = ~0ull;
	assert_int_equal(debug_exit_io(&dev, 0xf4, &v, 4, false), IO_OK);
	assert_int_equal(v, 0);
	assert_int_equal(stub_vm_end_calls, 0);
}

static void test_postcode(void **state)
{
	(void)state;
	struct postcode dev;
	postcode_init(&dev, FAKE_HOST);
	assert_true(stub_desc_range_is(&postcode_desc, 0, 0x80, 1, postcode_io, true));
	assert_true(postcode_desc.init == postcode_init);
	assert_int_equal(dev.base, 0x80);
	assert_string_equal(postcode_desc.name, "postcode");

	uint64_t v = ~0ull;
	assert_int_equal(postcode_io(&dev, 0x80, &v, 1, false), IO_OK);
	assert_int_equal(v, 0);
	v = 0x1234a5;
	assert_int_equal(postcode_io(&dev, 0x80, &v, 1, true), IO_OK);
	v = ~0ull;
	assert_int_equal(postcode_io(&dev, 0x80, &v, 1, false), IO_OK);
	assert_int_equal(v, 0xa5);
	v = 0x7e;
	assert_int_equal(postcode_io(&dev, 0x80, &v, 4, true), IO_OK);
	assert_int_equal(postcode_io(&dev, 0x80, &v, 2, false), IO_OK);
	assert_int_equal(v, 0x7e);
	/* Touches nothing else. */
	assert_int_equal(stub_console_len, 0);
	assert_int_equal(stub_vm_end_calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_debug_exit_range, setup),
		cmocka_unit_test_setup(test_debug_exit_write, setup),
		cmocka_unit_test_setup(test_debug_exit_sizes, setup),
		cmocka_unit_test_setup(test_debug_exit_read, setup),
		cmocka_unit_test_setup(test_postcode, setup),
	};
	return cmocka_run_group_tests_name("debug_exit+postcode", tests, NULL, NULL);
}
