/* core/smbios.c: the firmware's identification strings, as VT-x's Bochs
 * detection reads them (vmm/vmx/bochs.c). Good tables are made the way
 * Bochs's BIOS and SeaBIOS lay them out (a 2.1 "_SM_" entry point in the
 * F segment) and as SMBIOS 3 does ("_SM3_"); bad ones must give nothing
 * and never be read beyond (AddressSanitizer watches). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/smbios.h"

#define MEM (1u << 20)   /* physical 0 .. 1 MiB */
#define TABLE_PA 0x9000u
#define EP_PA 0xf5a00u   /* a 16-byte boundary in the F segment */
static uint8_t *mem;
static struct smbios_ids ids;

static const void *phys(uint64_t pa, uint64_t len, void *ctx)
{
	(void)ctx;
	if (pa == 0 || len > MEM || pa > MEM - len)
		return NULL;
	return mem + pa;
}

static int setup(void **state)
{
	(void)state;
	mem = calloc(1, MEM);
	return mem ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v);
	put16(p + 2, v >> 16);
}

static uint8_t neg_sum(const uint8_t *p, unsigned n)
{
	uint8_t s = 0;
	while (n--)
		s = (uint8_t)(s + *p++);
	return (uint8_t)-s;
}

/* A structure of `type` with a formatted area of `hlen` bytes whose
 * strings 1 and 2 are a and b (b may be NULL), at `at`; returns its end. */
static uint32_t put_struct(uint32_t at, uint8_t type, uint8_t hlen, const char *a, const char *b)
{
	uint8_t *s = mem + at;
	memset(s, 0, hlen);
	s[0] = type;
	s[1] = hlen;
	put16(s + 2, at & 0xffff);
	uint32_t o = hlen;
	if (a) {
		s[4] = 1;
		memcpy(s + o, a, strlen(a) + 1);
		o += (uint32_t)strlen(a) + 1;
	}
	if (b) {
		s[5] = 2;
		memcpy(s + o, b, strlen(b) + 1);
		o += (uint32_t)strlen(b) + 1;
	}
	if (!a && !b)
		s[o++] = 0;
	s[o++] = 0;
	return at + o;
}

/* The table Bochs 2.7's BIOS gives (type 0 only, then the end), behind a
 * 2.1 entry point; returns the table's length. */
static uint32_t bochs_table(void)
{
	memset(mem, 0, MEM);
	uint32_t end = put_struct(TABLE_PA, 0, 0x12, "The Bochs Project", "Bochs 2.7");
	end = put_struct(end, 4, 0x20, "CPU", NULL);
	end = put_struct(end, 127, 4, NULL, NULL);
	uint32_t len = end - TABLE_PA;
	uint8_t *e = mem + EP_PA;
	memcpy(e, "_SM_", 4);
	e[5] = 0x1f;
	e[6] = 2;
	e[7] = 4;
	memcpy(e + 16, "_DMI_", 5);
	put16(e + 22, len);
	put32(e + 24, TABLE_PA);
	put16(e + 28, 3);
	e[21] = neg_sum(e + 16, 15);
	e[4] = neg_sum(e, 0x1f);
	return len;
}

static void test_bochs(void **state)
{
	(void)state;
	bochs_table();
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_string_equal(ids.bios_vendor, "The Bochs Project");
	assert_string_equal(ids.bios_version, "Bochs 2.7");
	assert_string_equal(ids.sys_vendor, "");
	assert_string_equal(ids.sys_product, "");
}

static void test_smbios3_with_system(void **state)
{
	(void)state;
	memset(mem, 0, MEM);
	uint32_t end = put_struct(TABLE_PA, 0, 0x18, "SeaBIOS", "1.16.2");
	end = put_struct(end, 1, 0x1b, "QEMU", "Standard PC (i440FX + PIIX, 1996)");
	end = put_struct(end, 127, 4, NULL, NULL);
	uint8_t *e = mem + 0xf0000;
	memcpy(e, "_SM3_", 5);
	e[6] = 0x18;
	e[7] = 3;
	put32(e + 12, end - TABLE_PA);
	put32(e + 16, TABLE_PA);
	e[5] = neg_sum(e, 0x18);
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_string_equal(ids.bios_vendor, "SeaBIOS");
	assert_string_equal(ids.bios_version, "1.16.2");
	assert_string_equal(ids.sys_vendor, "QEMU");
	assert_string_equal(ids.sys_product, "Standard PC (i440FX + PIIX, 1996)");
}

/* Nothing found: no anchor, or one whose checksums are wrong, or an
 * anchor off a 16-byte boundary. */
static void test_no_entry_point(void **state)
{
	(void)state;
	memset(mem, 0, MEM);
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), -1);
	assert_string_equal(ids.bios_vendor, "");
	bochs_table();
	mem[EP_PA + 4]++;
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), -1);
	bochs_table();
	mem[EP_PA + 21]++;   /* the intermediate checksum */
	mem[EP_PA + 4]--;
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), -1);
	bochs_table();
	memmove(mem + EP_PA + 8, mem + EP_PA, 0x1f);
	memset(mem + EP_PA, 0, 8);
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), -1);
}

/* A string set that runs off the table's end, a structure longer than
 * the table, string numbers beyond the set: nothing is read outside the
 * table and what cannot be read stays empty. */
static void test_bad_tables(void **state)
{
	(void)state;
	bochs_table();
	/* the table ends (by the entry point's length) inside type 0's strings */
	uint8_t *e = mem + EP_PA;
	put16(e + 22, 0x12 + 5);
	e[21] = 0;
	e[21] = neg_sum(e + 16, 15);
	e[4] = 0;
	e[4] = neg_sum(e, 0x1f);
	memset(mem + TABLE_PA + 0x12 + 5, 'x', 0x100);   /* no NUL pair beyond it */
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_string_equal(ids.bios_vendor, "");

	bochs_table();
	mem[TABLE_PA + 1] = 0xff;   /* type 0's formatted area beyond the table */
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_string_equal(ids.bios_vendor, "");

	bochs_table();
	mem[TABLE_PA + 4] = 3;      /* vendor: string 3 of 2 */
	mem[TABLE_PA + 5] = 0;      /* version: none */
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_string_equal(ids.bios_vendor, "");
	assert_string_equal(ids.bios_version, "");
}

/* A string longer than SMBIOS_STR_MAX is cut, NUL-terminated. */
static void test_long_string(void **state)
{
	(void)state;
	char lng[100];
	memset(lng, 'v', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	memset(mem, 0, MEM);
	uint32_t end = put_struct(TABLE_PA, 0, 0x12, lng, "x");
	end = put_struct(end, 127, 4, NULL, NULL);
	uint8_t *e = mem + EP_PA;
	memcpy(e, "_SM_", 4);
	e[5] = 0x1f;
	memcpy(e + 16, "_DMI_", 5);
	put16(e + 22, end - TABLE_PA);
	put32(e + 24, TABLE_PA);
	e[21] = neg_sum(e + 16, 15);
	e[4] = neg_sum(e, 0x1f);
	assert_int_equal(smbios_read_ids(phys, NULL, &ids), 0);
	assert_int_equal(strlen(ids.bios_vendor), SMBIOS_STR_MAX - 1);
	assert_string_equal(ids.bios_version, "x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bochs),
		cmocka_unit_test(test_smbios3_with_system),
		cmocka_unit_test(test_no_entry_point),
		cmocka_unit_test(test_bad_tables),
		cmocka_unit_test(test_long_string),
	};
	return cmocka_run_group_tests_name("smbios", tests, setup, teardown);
}
