/* dev/pci_host.c: mechanism #1 with an empty bus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pci_host.h"
#include "tests/unit/stubs.h"

static struct pci_host pci;

static uint64_t io(uint16_t port, unsigned size, bool w, uint64_t v)
{
	uint64_t d = w ? v : 0x1234;
	assert_int_equal(pci_host_io(NULL, port, &d, size, w, &pci), IO_OK);
	return d;
}

static void test_empty_bus(void **state)
{
	(void)state;
	stubs_reset();
	pci_host_init(&pci);
	struct io_range r;
	pci_host_range(&pci, &r);
	assert_int_equal(r.base, 0xcf8);
	assert_int_equal(r.len, 8);

	/* Linux's pci_check_type1(): the address register reads back */
	io(0xcf8, 4, true, 0x80000000);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000000);
	/* reserved bits 30:24 and 1:0 read as zero */
	io(0xcf8, 4, true, 0xffffffff);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80fffffc);

	/* every configuration read is all-ones: vendor 0xffff = no device */
	for (unsigned devfn = 0; devfn < 256; devfn += 8) {
		io(0xcf8, 4, true, 0x80000000u | devfn << 8);
		assert_int_equal(io(0xcfc, 4, false, 0), 0xffffffffu);
		assert_int_equal(io(0xcfc, 2, false, 0), 0xffff);
		assert_int_equal(io(0xcfe, 2, false, 0), 0xffff);
		assert_int_equal(io(0xcff, 1, false, 0), 0xff);
	}
	/* writes are dropped */
	io(0xcf8, 4, true, 0x80000004);
	io(0xcfc, 4, true, 0x7);
	assert_int_equal(io(0xcfc, 4, false, 0), 0xffffffffu);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000004);
	assert_int_equal(pci.config_reads, 4 * 32 + 1);

	/* byte/word accesses to 0xcf8-0xcfb are not the address register:
	 * the type-2 probe (outb 0 to 0xcf8/0xcfa, expect 0 back) fails */
	io(0xcfb, 1, true, 0x01);
	io(0xcf8, 1, true, 0x00);
	io(0xcfa, 1, true, 0x00);
	assert_int_equal(io(0xcf8, 1, false, 0), 0xff);
	assert_int_equal(io(0xcfa, 1, false, 0), 0xff);
	assert_int_equal(io(0xcf8, 2, false, 0), 0xffff);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000004);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_bus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
