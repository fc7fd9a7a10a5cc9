/* vmm/loader.c and vmm/firmware.c: where a multiboot kernel, its modules and
 * its boot information go in guest RAM, every refusal line, and what the
 * firmware part writes (BIOS data area, EBDA, memory map, ACPI tables). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dev/acpi.h"
#include "vmm/firmware.h"
#include "vmm/loader.h"

#define MIB (1ull << 20)
#define RAM (16 * MIB)

static uint8_t *ram;
static char err[256];
static struct loaded_guest g;

static uint16_t r16(uint64_t a) { return (uint16_t)(ram[a] | ram[a + 1] << 8); }
static uint32_t r32(uint64_t a) { return r16(a) | (uint32_t)r16(a + 2) << 16; }
static uint64_t r64(uint64_t a) { return r32(a) | (uint64_t)r32(a + 4) << 32; }
static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)v); w16(p + 2, (uint16_t)(v >> 16)); }

static int setup(void **state)
{
	(void)state;
	ram = calloc(1, RAM);
	assert_non_null(ram);
	memset(err, 0, sizeof(err));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(ram);
	return 0;
}

/* An ELF32 multiboot image with up to 4 PT_LOAD segments; segment i's
 * bytes in the file are the value 0x10 + i. */
struct seg { uint32_t paddr, filesz, memsz; };
static uint8_t image[0x10000];

static uint64_t make_elf(const struct seg *s, unsigned n, uint32_t entry)
{
	memset(image, 0, sizeof(image));
	memcpy(image, "\x7f" "ELF", 4);
	image[4] = 1;                      /* ELFCLASS32 */
	image[5] = 1;                      /* little-endian */
	image[6] = 1;
	w16(image + 16, 2);                /* ET_EXEC */
	w16(image + 18, 3);                /* EM_386 */
	w32(image + 20, 1);
	w32(image + 24, entry);
	w32(image + 28, 52);               /* phoff */
	w16(image + 40, 52);
	w16(image + 42, 32);
	w16(image + 44, (uint16_t)n);
	uint32_t off = 0x1000;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *ph = image + 52 + 32 * i;
		w32(ph, 1);                    /* PT_LOAD */
		w32(ph + 4, off);
		w32(ph + 8, s[i].paddr);
		w32(ph + 12, s[i].paddr);
		w32(ph + 16, s[i].filesz);
		w32(ph + 20, s[i].memsz);
		memset(image + off, 0x10 + (int)i, s[i].filesz);
		off += (s[i].filesz + 0xfff) & ~0xfffu;
	}
	/* the multiboot header in the first 8 KiB */
	w32(image + 0x200, 0x1BADB002u);
	w32(image + 0x204, 3);
	w32(image + 0x208, -(0x1BADB002u + 3));
	return off;
}

static int load(uint64_t size, const char *cmdline, const struct mb_module *mods, unsigned n)
{
	memset(&g, 0xa5, sizeof(g));
	return load_multiboot_elf(ram, RAM, image, size, cmdline, mods, n, &g, err, sizeof(err));
}

static void expect_refused(uint64_t size, const char *msg)
{
	int rc = load(size, "k", NULL, 0);
	if (rc == 0 || strcmp(err, msg) != 0)
		fail_msg("expected \"%s\", got rc %d \"%s\"", msg, rc, err);
}

#define MBI_FLAGS ((1u << 0) | (1u << 2) | (1u << 3) | (1u << 6) | (1u << 9))

static void test_kernel_at_1mib(void **state)
{
	(void)state;
	struct seg s[] = { { 0x100000, 0x3000, 0x5000 } };
	uint64_t size = make_elf(s, 1, 0x100010);
	memset(ram + 0x103000, 0xee, 0x2000);          /* BSS must be cleared */
	assert_int_equal(load(size, "k.elf a=1", NULL, 0), 0);
	assert_int_equal(g.entry, 0x100010);
	assert_int_equal(g.info_gpa, MB_INFO_PREFERRED);   /* where QEMU puts it */
	assert_int_equal(g.image_end, 0x105000);
	assert_int_equal(g.nr_modules, 0);
	assert_string_equal(g.format, "multiboot ELF32");
	assert_int_equal(ram[0x100000], 0x10);
	assert_int_equal(ram[0x102fff], 0x10);
	assert_int_equal(ram[0x103000], 0);
	assert_int_equal(ram[0x104fff], 0);

	uint64_t mi = g.info_gpa;
	assert_int_equal(r32(mi), MBI_FLAGS);
	assert_int_equal(r32(mi + 4), 639);                  /* mem_lower */
	assert_int_equal(r32(mi + 8), (RAM - MIB) >> 10);    /* mem_upper */
	assert_string_equal((char *)ram + r32(mi + 16), "k.elf a=1");
	assert_int_equal(r32(mi + 20), 0);                   /* mods_count */
	assert_string_equal((char *)ram + r32(mi + 64), "lightpath");
	/* the memory map is the firmware's */
	struct e820_entry map[FW_MAP_ENTRIES];
	unsigned n = firmware_memory_map(RAM, map);
	assert_int_equal(r32(mi + 44), n * 24);              /* mmap_length */
	uint64_t mm = r32(mi + 48);
	for (unsigned i = 0; i < n; i++, mm += 24) {
		assert_int_equal(r32(mm), 20);
		assert_int_equal(r64(mm + 4), map[i].addr);
		assert_int_equal(r64(mm + 12), map[i].size);
		assert_int_equal(r32(mm + 20), map[i].type);
	}
}

/* A kernel linked at 0x8000 (over lightpath's old fixed 0x9000): it loads,
 * and the information goes to the first free page after it. */
static void test_kernel_below_1mib(void **state)
{
	(void)state;
	struct seg s[] = { { 0x8000, 0x2100, 0xb7e0 } };
	uint64_t size = make_elf(s, 1, 0x800c);
	assert_int_equal(load(size, "low", NULL, 0), 0);
	assert_int_equal(g.entry, 0x800c);
	assert_int_equal(ram[0x8000], 0x10);
	assert_int_equal(ram[0xa0ff], 0x10);
	assert_int_equal(g.info_gpa, 0x14000);
	assert_string_equal((char *)ram + r32(g.info_gpa + 16), "low");

	/* page 0 below the BDA is RAM like any other */
	struct seg z[] = { { 0x0, 0x400, 0x400 }, { 0x100000, 0x1000, 0x1000 } };
	size = make_elf(z, 2, 0x100000);
	assert_int_equal(load(size, "zero", NULL, 0), 0);
	assert_int_equal(ram[0x3ff], 0x10);
	assert_int_equal(g.info_gpa, MB_INFO_PREFERRED);

	/* a kernel filling 0x1000-0x9fbff leaves no room below 1 MiB */
	struct seg f[] = { { 0x1000, 0x1000, 0x9fc00 - 0x1000 } };
	size = make_elf(f, 1, 0x1000);
	assert_int_equal(load(size, "full", NULL, 0), 0);
	assert_true(g.info_gpa >= MIB);
}

static void test_segments_refused(void **state)
{
	(void)state;
	struct seg s[2] = { { 0x100000, 0x1000, 0x1000 } };
	uint64_t size;

	s[1] = (struct seg){ 0x400, 0x10, 0x10 };
	size = make_elf(s, 2, 0x100000);
	expect_refused(size, "program header 1 loads 0x400-0x40f, which overlaps 0x400-0x4ff, "
		       "the BIOS data area");
	s[1] = (struct seg){ 0x3f0, 0x10, 0x11 };   /* one byte into the BDA */
	size = make_elf(s, 2, 0x100000);
	expect_refused(size, "program header 1 loads 0x3f0-0x400, which overlaps 0x400-0x4ff, "
		       "the BIOS data area");
	s[1] = (struct seg){ 0x500, 0x10, 0x9f700 };  /* ends at the EBDA: fine */
	size = make_elf(s, 2, 0x100000);
	assert_int_equal(load(size, "k", NULL, 0), 0);
	s[1] = (struct seg){ 0x90000, 0x10, 0xfc01 };
	size = make_elf(s, 2, 0x100000);
	expect_refused(size, "program header 1 loads 0x90000-0x9fc00, which overlaps 0x9fc00-0x9ffff, "
		       "the EBDA");
	s[1] = (struct seg){ 0xb8000, 0x10, 0x1000 };
	size = make_elf(s, 2, 0x100000);
	expect_refused(size, "program header 1 loads 0xb8000-0xb8fff, which overlaps 0xa0000-0xdffff, "
		       "the video and option-ROM hole (not RAM in the memory map)");
	s[0] = (struct seg){ 0xe0000, 0x100, 0x30000 };
	size = make_elf(s, 1, 0x100000);
	expect_refused(size, "program header 0 loads 0xe0000-0x10ffff, which overlaps 0xe0000-0xfffff, "
		       "the BIOS area with the ACPI tables");
	s[0] = (struct seg){ 0xff0000, 0x100, 0x10001 };
	size = make_elf(s, 1, 0xff0000);
	expect_refused(size, "program header 0 loads 0xff0000-0x1000000, beyond the VM's 16 MiB of RAM");
	s[0] = (struct seg){ 0xfffff000, 0x100, 0x2000 };   /* wraps in 32 bits, not in 64 */
	size = make_elf(s, 1, 0x100000);
	expect_refused(size, "program header 0 loads 0xfffff000-0x100000fff, beyond the VM's 16 MiB "
		       "of RAM");
	s[0] = (struct seg){ 0x100000, 0x2000, 0x1000 };
	size = make_elf(s, 1, 0x100000);
	expect_refused(size, "program header 0 points outside the file");
	s[0] = (struct seg){ 0x100000, 0x1000, 0x1000 };
	size = make_elf(s, 1, 0x1000000);
	expect_refused(size, "entry point 0x1000000 is outside guest RAM");
	size = make_elf(s, 0, 0x100000);
	expect_refused(size, "no loadable segment");
}

/* Module i's bytes are i + 1 + k (mod 256). */
static uint8_t payload[3][0x9000];

static void test_modules(void **state)
{
	(void)state;
	struct seg s[] = { { 0x100000, 0x2000, 0x2800 } };
	uint64_t size = make_elf(s, 1, 0x100000);
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = 0; k < sizeof(payload[i]); k++)
			payload[i][k] = (uint8_t)(i + 1 + k);
	const struct mb_module mods[] = {
		{ "initrd.img", payload[0], 0x9000 },
		{ "a.bin x=1 y", payload[1], 5 },
		{ "empty.bin", payload[2], 0 },
		{ "b.bin", payload[2], 0x1001 },
	};
	assert_int_equal(load(size, "k", mods, 4), 0);
	assert_int_equal(g.nr_modules, 4);
	uint64_t mi = g.info_gpa;
	assert_int_equal(r32(mi) & (1u << 3), 1u << 3);
	assert_int_equal(r32(mi + 20), 4);
	uint64_t list = r32(mi + 24);
	uint64_t prev_end = 0x103000;   /* the kernel's last page */
	for (unsigned i = 0; i < 4; i++) {
		uint64_t e = list + 16 * i, start = r32(e), end = r32(e + 4);
		assert_int_equal(start & 0xfff, 0);
		assert_true(start >= prev_end);               /* after the kernel, in order */
		assert_int_equal(end - start, mods[i].size);
		assert_memory_equal(ram + start, mods[i].data, mods[i].size);
		assert_string_equal((char *)ram + r32(e + 8), mods[i].string);
		assert_int_equal(r32(e + 12), 0);
		prev_end = end;
	}
	assert_int_equal(r32(list), 0x103000);            /* the first page after the kernel */
	/* the boot data overlaps neither the kernel nor a module */
	assert_true(mi + 0x1000 <= 0x100000);
}

static void test_module_limits(void **state)
{
	(void)state;
	struct seg s[] = { { 0x100000, 0x1000, 0x1000 } };
	uint64_t size = make_elf(s, 1, 0x100000);
	/* 15 MiB of RAM above 1 MiB, the kernel takes a page: 15 MiB - 4 KiB fits */
	static uint8_t big[15 * MIB];
	const struct mb_module fits[] = { { "big.bin", big, 15 * MIB - 0x1000 } };
	assert_int_equal(load(size, "k", fits, 1), 0);
	assert_int_equal(r32(r32(g.info_gpa + 24)), 0x101000);
	/* one byte more does not (and below 1 MiB there are only 636 KiB) */
	const struct mb_module over[] = { { "big.bin two", big, 15 * MIB - 0xfff } };
	int rc = load(size, "k", over, 1);
	assert_int_equal(rc, -1);
	assert_string_equal(err, "module 'big.bin' (15357 KiB) does not fit in the free RAM of the "
			    "VM's 16 MiB");
	/* a small one that fits only below 1 MiB goes there */
	const struct mb_module two[] = { { "a", big, 15 * MIB - 0x1000 }, { "b", big, 0x2000 } };
	assert_int_equal(load(size, "k", two, 2), 0);
	uint64_t b = r32(r32(g.info_gpa + 24) + 16);
	assert_true(b >= 0x1000 && b + 0x2000 <= 0x9fc00);
	assert_false(b < g.info_gpa + 0x1000 && g.info_gpa < b + 0x2000);
	/* a long command line */
	static char line[MB_CMDLINE_MAX + 2];
	memset(line, 'c', MB_CMDLINE_MAX + 1);
	assert_int_equal(load(size, line, NULL, 0), -1);
	assert_string_equal(err, "command line longer than 4000 characters");
	line[MB_CMDLINE_MAX] = '\0';
	assert_int_equal(load(size, line, NULL, 0), 0);
	assert_int_equal(strlen((char *)ram + r32(g.info_gpa + 16)), MB_CMDLINE_MAX);
}

static void test_not_multiboot(void **state)
{
	(void)state;
	struct seg s[] = { { 0x100000, 0x1000, 0x1000 } };
	uint64_t size = make_elf(s, 1, 0x100000);
	w32(image + 0x208, 0);
	expect_refused(size, "its multiboot header checksum is wrong");
	memset(image + 0x200, 0, 12);
	expect_refused(size, "no multiboot header in its first 8 KiB");
	expect_refused(3, "not an ELF file (a multiboot ELF kernel was expected)");
}

static void test_firmware(void **state)
{
	(void)state;
	uint64_t rsdp = 0;
	assert_int_equal(firmware_build(ram, RAM, 1, 0, &rsdp), 0);
	assert_int_equal(r16(0x400), 0x3f8);
	assert_int_equal(r16(0x402) | r16(0x404) | r16(0x406), 0);
	assert_int_equal((uint64_t)r16(0x40e) << 4, FW_EBDA_GPA);
	assert_int_equal(r16(0x413), 639);
	assert_int_equal(r16(0x410), 0x0202);
	assert_int_equal(ram[FW_EBDA_GPA], 1);            /* 1 KiB, up to 640 KiB */
	assert_int_equal(rsdp, ACPI_DEFAULT_RSDP_GPA);
	assert_memory_equal(ram + rsdp, "RSD PTR ", 8);
	assert_int_equal(acpi_checksum(ram + rsdp, 20), 0);
	/* the memory map reserves the EBDA and the BIOS area, and the loader
	 * refuses exactly the firmware's ranges */
	struct e820_entry map[FW_MAP_ENTRIES];
	assert_int_equal(firmware_memory_map(RAM, map), 4);
	assert_int_equal(map[0].addr, 0);
	assert_int_equal(map[0].size, 639 << 10);
	assert_int_equal(map[0].type, E820_RAM);
	assert_int_equal(map[1].addr, FW_EBDA_GPA);
	assert_int_equal(map[1].type, E820_RESERVED);
	assert_int_equal(map[2].addr, 0xe0000);
	assert_int_equal(map[2].addr + map[2].size, MIB);
	assert_int_equal(map[2].type, E820_RESERVED);
	assert_int_equal(map[3].addr, MIB);
	assert_int_equal(map[3].size, RAM - MIB);
	assert_int_equal(firmware_regions[0].start, 0x400);
	assert_int_equal(firmware_regions[firmware_nregions - 1].end, MIB);
	assert_int_equal(firmware_build(ram, MIB - 1, 1, 0, &rsdp), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kernel_at_1mib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_below_1mib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_segments_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_module_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_multiboot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_firmware, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
