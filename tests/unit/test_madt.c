/* core/madt.c: the host's CPUs from the firmware's MADT. Good tables are
 * the ones lightpath gives its guests (dev/acpi.c, with 1 and 4 CPUs, found
 * through the RSDP scan as lightpath does at boot); bad ones are made by
 * hand and must each be refused with one clear line, never read beyond
 * their buffer (AddressSanitizer watches), never loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/madt.h"
#include "dev/acpi.h"
#include "tests/unit/stubs.h"

#define MEM (1u << 20)   /* physical 0 .. 1 MiB */
static uint8_t *mem;
static char err[200];
static struct madt_info info;

static const void *phys(uint64_t pa, uint64_t len, void *ctx)
{
	(void)ctx;
	if (pa == 0 || len > MEM || pa > MEM - len)
		return NULL;
	return mem + pa;
}

static void w32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t r32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t r64(const uint8_t *p) { return r32(p) | (uint64_t)r32(p + 4) << 32; }

static void fix_checksum(uint8_t *t, uint32_t len, unsigned at)
{
	t[at] = 0;
	t[at] = (uint8_t)(0x100 - acpi_checksum(t, len));
}

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	mem = calloc(1, MEM);
	assert_non_null(mem);
	memset(err, 0, sizeof(err));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static void build(unsigned ncpus)
{
	struct acpi_config cfg = {
		.rsdp_gpa = ACPI_DEFAULT_RSDP_GPA,
		.tables_gpa = ACPI_DEFAULT_TABLES_GPA,
		.ncpus = ncpus,
	};
	uint64_t rsdp = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
}

/* The tables' addresses, as the RSDP gives them. */
static uint8_t *rsdp(void) { return mem + ACPI_DEFAULT_RSDP_GPA; }
static uint8_t *rsdt(void) { return mem + r32(rsdp() + 16); }
static uint8_t *xsdt(void) { return mem + r64(rsdp() + 24); }
static uint8_t *madt_table(void)
{
	uint8_t *x = rsdt();
	for (uint32_t off = 36; off < r32(x + 4); off += 4)
		if (!memcmp(mem + r32(x + off), "APIC", 4))
			return mem + r32(x + off);
	fail();
	return NULL;
}

static void test_guest_tables(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 4; n += 3) {
		memset(mem, 0, MEM);
		build(n);
		assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_OK);
		assert_int_equal(info.nr_cpus, n);
		assert_int_equal(info.lapic_base, 0xfee00000u);
		assert_int_equal(info.madt_pa, (uint64_t)(madt_table() - mem));
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(info.cpus[i].apic_id, i);
			assert_int_equal(info.cpus[i].type, MADT_TYPE_LAPIC);
		}
		assert_int_equal(info.nr_not_enabled + info.nr_beyond + info.nr_duplicate +
				 info.nr_invalid_id, 0);
	}
}

/* The RSDP in the EBDA is found first (the BDA at 0x40e names its segment). */
static void test_rsdp_in_ebda(void **state)
{
	(void)state;
	build(4);
	memcpy(mem + 0x9fc00, rsdp(), 36);
	memset(rsdp(), 0, 36);
	mem[0x40e] = 0xc0;
	mem[0x40f] = 0x9f;
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_OK);
	assert_int_equal(info.nr_cpus, 4);
}

static void test_no_rsdp(void **state)
{
	(void)state;
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_NONE);
	assert_string_equal(err, "no ACPI RSDP in the EBDA or at 0xe0000-0xfffff");
	/* a signature with a bad checksum is no RSDP */
	build(2);
	rsdp()[8] ^= 1;
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_NONE);
}

static void test_no_madt_listed(void **state)
{
	(void)state;
	build(2);
	memcpy(madt_table(), "XXXX", 4);   /* neither table lists an MADT now */
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_NONE);
	assert_string_equal(err, "no MADT in the ACPI RSDT");
}

/* A bad XSDT: the RSDT is used; both bad: the XSDT's fault is reported. */
static void test_bad_xsdt(void **state)
{
	(void)state;
	build(4);
	xsdt()[9] ^= 0xff;
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_OK);
	assert_int_equal(info.nr_cpus, 4);
	w32(rsdt() + 4, 0x7fffffff);
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_BAD);
	assert_non_null(strstr(err, "ACPI XSDT at 0x"));
	assert_non_null(strstr(err, ": bad checksum"));
}

/* An XSDT entry beyond readable memory is skipped, not followed. */
static void test_xsdt_entry_unreadable(void **state)
{
	(void)state;
	build(4);
	uint8_t *x = xsdt();
	uint32_t n = (r32(x + 4) - 36) / 8;
	for (uint32_t i = 0; i < n; i++)
		if (!memcmp(mem + r64(x + 36 + 8 * i), "APIC", 4))
			w32(x + 36 + 8 * i + 4, 0x10);    /* above 64 GiB */
	fix_checksum(x, r32(x + 4), 9);
	w32(rsdp() + 16, 0);                        /* no RSDT to fall back on */
	fix_checksum(rsdp(), 20, 8);
	fix_checksum(rsdp(), 36, 32);
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_NONE);
	assert_non_null(strstr(err, "no MADT in the ACPI XSDT (1 of its"));
}

/* The MADT found through the RSDP, but broken: refused, with the reason. */
static void test_bad_madt_found(void **state)
{
	(void)state;
	build(4);
	madt_table()[20] ^= 0x55;   /* OEM id: only the checksum changes */
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_BAD);
	assert_non_null(strstr(err, "ACPI MADT at 0x"));
	assert_non_null(strstr(err, ": bad checksum"));
	memset(mem, 0, MEM);
	build(4);
	w32(madt_table() + 4, 0xfffffff0u);    /* a length far beyond the 1 MiB bound */
	assert_int_equal(madt_find(phys, NULL, &info, err, sizeof(err)), MADT_BAD);
	assert_non_null(strstr(err, ": bad length 4294967280"));
}

/* ---- madt_parse on hand-made tables ---- */

static uint8_t tbl[4096];
static uint32_t tlen;

static void begin(void)
{
	memset(tbl, 0, sizeof(tbl));
	memcpy(tbl, "APIC", 4);
	tbl[8] = 5;
	w32(tbl + 36, 0xfee00000u);
	tlen = 44;
}

static void lapic(uint8_t uid, uint8_t id, uint32_t flags)
{
	uint8_t *e = tbl + tlen;
	e[0] = 0; e[1] = 8; e[2] = uid; e[3] = id;
	w32(e + 4, flags);
	tlen += 8;
}

static void x2apic(uint32_t id, uint32_t flags, uint32_t uid)
{
	uint8_t *e = tbl + tlen;
	memset(e, 0, 16);
	e[0] = 9; e[1] = 16;
	w32(e + 4, id);
	w32(e + 8, flags);
	w32(e + 12, uid);
	tlen += 16;
}

static void raw(const uint8_t *b, unsigned n)
{
	memcpy(tbl + tlen, b, n);
	tlen += n;
}

static int end_parse(uint64_t avail)
{
	w32(tbl + 4, tlen);
	fix_checksum(tbl, tlen, 9);
	/* parse from a heap copy of exactly `avail` bytes, so that ASan sees any
	 * read past what the caller said is there */
	uint8_t *copy = malloc(avail ? avail : 1);
	assert_non_null(copy);
	memcpy(copy, tbl, avail < sizeof(tbl) ? avail : sizeof(tbl));
	memset(err, 0, sizeof(err));
	int rc = madt_parse(copy, avail, &info, err, sizeof(err));
	free(copy);
	return rc;
}

static void test_parse_entries(void **state)
{
	(void)state;
	begin();
	lapic(0, 0, MADT_FLAG_ENABLED);
	lapic(1, 2, MADT_FLAG_ENABLED);
	lapic(2, 4, 0);                            /* present in the table, disabled */
	lapic(3, 6, MADT_FLAG_ONLINE_CAPABLE);     /* hot-pluggable: not started */
	lapic(4, 2, MADT_FLAG_ENABLED);            /* the same APIC id again */
	lapic(5, 0xff, MADT_FLAG_ENABLED);         /* invalid id */
	raw((const uint8_t[]){ 1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0 }, 12);   /* I/O APIC */
	x2apic(300, MADT_FLAG_ENABLED, 7);
	x2apic(0xffffffffu, MADT_FLAG_ENABLED, 8);
	raw((const uint8_t[]){ 5, 12, 0, 0, 0, 0, 0xe0, 0xfe, 0, 0, 0, 0 }, 12);   /* override: the same 0xfee00000 */
	assert_int_equal(end_parse(tlen), MADT_OK);
	assert_int_equal(info.nr_cpus, 3);
	assert_int_equal(info.cpus[0].apic_id, 0);
	assert_int_equal(info.cpus[1].apic_id, 2);
	assert_int_equal(info.cpus[1].uid, 1);
	assert_int_equal(info.cpus[2].apic_id, 300);
	assert_int_equal(info.cpus[2].uid, 7);
	assert_int_equal(info.cpus[2].type, MADT_TYPE_X2APIC);
	assert_int_equal(info.nr_not_enabled, 2);
	assert_int_equal(info.nr_duplicate, 1);
	assert_int_equal(info.nr_invalid_id, 2);
	assert_int_equal(info.lapic_base, 0xfee00000ull);   /* as the override says */
}

static void test_parse_many_cpus(void **state)
{
	(void)state;
	begin();
	for (unsigned i = 0; i < MADT_MAX_CPUS + 5; i++)
		x2apic(i, MADT_FLAG_ENABLED, i);
	assert_int_equal(end_parse(tlen), MADT_OK);
	assert_int_equal(info.nr_cpus, MADT_MAX_CPUS);
	assert_int_equal(info.nr_beyond, 5);
}

static void test_parse_bad_header(void **state)
{
	(void)state;
	begin();
	lapic(0, 0, 1);
	assert_int_equal(end_parse(40), MADT_BAD);             /* buffer shorter than a header */
	assert_string_equal(err, "ACPI MADT: only 40 bytes, shorter than its 44-byte header");

	begin();
	lapic(0, 0, 1);
	assert_int_equal(end_parse(tlen - 1), MADT_BAD);       /* length beyond the buffer */
	assert_string_equal(err, "ACPI MADT: bad length 52 (header 44, at most 51)");

	begin();
	w32(tbl + 4, 20);                                      /* length inside the header */
	fix_checksum(tbl, 44, 9);
	assert_int_equal(madt_parse(tbl, 44, &info, err, sizeof(err)), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: bad length 20 (header 44, at most 44)");

	begin();
	lapic(0, 0, 1);
	w32(tbl + 4, tlen);
	fix_checksum(tbl, tlen, 9);
	tbl[10] ^= 1;                                          /* checksum wrong by one */
	assert_int_equal(madt_parse(tbl, tlen, &info, err, sizeof(err)), MADT_BAD);
	assert_non_null(strstr(err, "ACPI MADT: bad checksum (the 52 bytes sum to 0x"));

	begin();
	memcpy(tbl, "FACP", 4);
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: signature is not 'APIC'");
}

static void test_parse_truncated_entries(void **state)
{
	(void)state;
	begin();
	lapic(0, 0, 1);
	raw((const uint8_t[]){ 0 }, 1);                        /* one byte: no room for a length */
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: truncated entry at offset 52 (1 byte left)");

	begin();
	raw((const uint8_t[]){ 0, 0, 0, 0 }, 4);               /* length 0: would loop forever */
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: entry of type 0 at offset 44 has length 0 (4 bytes "
				 "left in the table)");

	begin();
	lapic(0, 0, 1);
	raw((const uint8_t[]){ 9, 16, 0, 0, 1, 0, 0, 0 }, 8);  /* x2APIC cut in half by the end */
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: entry of type 9 at offset 52 has length 16 (8 bytes "
				 "left in the table)");

	begin();
	raw((const uint8_t[]){ 0, 6, 0, 1, 1, 0 }, 6);         /* a local APIC entry of 6 bytes */
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_string_equal(err, "ACPI MADT: entry of type 0 at offset 44 has length 6, less than "
				 "its 8 bytes");

	begin();
	raw((const uint8_t[]){ 9, 12, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0 }, 12);   /* x2APIC of 12 */
	assert_int_equal(end_parse(tlen), MADT_BAD);
	assert_non_null(strstr(err, "has length 12, less than its 16 bytes"));
	assert_int_equal(info.nr_cpus, 0);
}

/* Random garbage after a valid header: never a crash, never an overread. */
static void test_parse_garbage(void **state)
{
	(void)state;
	uint32_t x = 12345;
	for (int round = 0; round < 2000; round++) {
		begin();
		unsigned n = (x >> 3) % 200;
		for (unsigned i = 0; i < n; i++) {
			x ^= x << 13; x ^= x >> 17; x ^= x << 5;
			tbl[tlen++] = (uint8_t)x;
		}
		int rc = end_parse(tlen);
		assert_true(rc == MADT_OK || (rc == MADT_BAD && !strncmp(err, "ACPI MADT: ", 11)));
		assert_true(info.nr_cpus <= MADT_MAX_CPUS);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_guest_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rsdp_in_ebda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_rsdp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_madt_listed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_xsdt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_xsdt_entry_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_madt_found, setup, teardown),
		cmocka_unit_test(test_parse_entries),
		cmocka_unit_test(test_parse_many_cpus),
		cmocka_unit_test(test_parse_bad_header),
		cmocka_unit_test(test_parse_truncated_entries),
		cmocka_unit_test(test_parse_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
