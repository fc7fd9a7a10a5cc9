/* dev/fwcfg.c: the items QEMU-style test kernels read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/fwcfg.h"
#include "tests/unit/stubs.h"

static struct fwcfg fw;

static void select_item(uint16_t key)
{
	uint64_t d = key;
	assert_int_equal(fwcfg_io(&fw, 0x510, &d, 2, true), IO_OK);
}

static void read_bytes(uint8_t *buf, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t d = 0xdead;
		assert_int_equal(fwcfg_io(&fw, 0x511, &d, 1, false), IO_OK);
		assert_true(d <= 0xff);
		buf[i] = (uint8_t)d;
	}
}

static uint64_t read_le(uint16_t key, unsigned n)
{
	uint8_t b[8];
	select_item(key);
	read_bytes(b, n);
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static void test_items(void **state)
{
	(void)state;
	stubs_reset();
	stub_ram_size = 256ull << 20;
	stub_nr_vcpus = 2;
	fwcfg_init(&fw, FAKE_HOST);
	assert_true(stub_desc_range_is(&fwcfg_desc, 0, 0x510, 2, fwcfg_io, true));

	uint8_t sig[6];
	select_item(FW_CFG_SIGNATURE);
	read_bytes(sig, 6);
	assert_memory_equal(sig, "QEMU\0\0", 6);      /* zeros past the end */
	assert_int_equal(read_le(FW_CFG_ID, 4), 1);  /* no DMA */
	assert_int_equal(read_le(FW_CFG_RAM_SIZE, 8), 256ull << 20);
	assert_int_equal(read_le(FW_CFG_NB_CPUS, 2), 2);
	assert_int_equal(read_le(FW_CFG_MAX_CPUS, 2), 2);
	assert_int_equal(read_le(FW_CFG_FILE_DIR, 4), 0); /* no files */
	assert_int_equal(read_le(0x1234, 8), 0);         /* unknown item */

	/* selecting again restarts at offset 0; a byte write selects too */
	select_item(FW_CFG_SIGNATURE);
	read_bytes(sig, 2);
	uint64_t d = FW_CFG_SIGNATURE;
	fwcfg_io(&fw, 0x510, &d, 1, true);
	read_bytes(sig, 1);
	assert_int_equal(sig[0], 'Q');
	/* a wider read of the data port takes consecutive bytes */
	select_item(FW_CFG_SIGNATURE);
	d = 0;
	fwcfg_io(&fw, 0x511, &d, 4, false);
	assert_int_equal(d, 0x554d4551);                 /* "QEMU" */
	/* writes to the data port are ignored */
	select_item(FW_CFG_RAM_SIZE);
	d = 0xff;
	fwcfg_io(&fw, 0x511, &d, 1, true);
	assert_int_equal(read_le(FW_CFG_RAM_SIZE, 8), 256ull << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_items),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
