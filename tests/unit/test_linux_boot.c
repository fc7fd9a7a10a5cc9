/* vmm/linux_boot.c: the 64-bit boot protocol on Debian's real bzImage
 * (build/linux/vmlinuz, fetched by tests/unit/rules.mk; LP_LINUX_BZIMAGE
 * overrides the path) and on fabricated headers: garbage, truncated, too
 * old, 32-bit, zImage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/firmware.h"
#include "vmm/linux_boot.h"
#include "tests/unit/stubs.h"

#define MIB (1ull << 20)

static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t r32(const uint8_t *p) { return r16(p) | (uint32_t)r16(p + 2) << 16; }
static uint64_t r64(const uint8_t *p) { return r32(p) | (uint64_t)r32(p + 4) << 32; }
static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void w32(uint8_t *p, uint32_t v) { w16(p, (uint16_t)v); w16(p + 2, (uint16_t)(v >> 16)); }
static void w64(uint8_t *p, uint64_t v) { w32(p, (uint32_t)v); w32(p + 4, (uint32_t)(v >> 32)); }

/* The PC memory map lightpath gives a VM of `ram` bytes. */
static unsigned pc_map(struct e820_entry *m, uint64_t ram)
{
	m[0] = (struct e820_entry){ 0, 0x9fc00, E820_RAM };
	m[1] = (struct e820_entry){ 0x9fc00, 0x400, E820_RESERVED };
	m[2] = (struct e820_entry){ 0xe0000, 0x20000, E820_RESERVED };
	m[3] = (struct e820_entry){ 0x100000, ram - 0x100000, E820_RAM };
	return 4;
}

/* ---- the real kernel ---- */

static uint8_t *kernel;
static size_t kernel_len;

static int load_kernel(void **state)
{
	(void)state;
	const char *path = getenv("LP_LINUX_BZIMAGE");
	if (!path)
		path = "build/linux/vmlinuz";
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	fseek(f, 0, SEEK_END);
	kernel_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	kernel = malloc(kernel_len);
	if (!kernel || fread(kernel, 1, kernel_len, f) != kernel_len) {
		free(kernel);
		kernel = NULL;
	}
	fclose(f);
	return 0;
}

static int free_kernel(void **state)
{
	(void)state;
	free(kernel);
	return 0;
}

#define NEED_KERNEL() do { \
	if (!kernel) { \
		print_message("no bzImage at build/linux/vmlinuz (make build/linux/vmlinuz " \
			      "fetches Debian's; LP_LINUX_BZIMAGE=path): skipped\n"); \
		skip(); \
	} } while (0)

static void test_real_kernel(void **state)
{
	(void)state;
	NEED_KERNEL();
	char err[200] = "";
	assert_int_equal(linux_boot_check(kernel, kernel_len, err, sizeof(err)), 0);

	const uint64_t ram_size = 256 * MIB;
	uint8_t *ram = calloc(1, ram_size);
	assert_non_null(ram);
	struct e820_entry map[8];
	unsigned n = pc_map(map, ram_size);
	uint64_t rd_len = 3 * MIB + 123;
	uint8_t *rd = malloc(rd_len);
	for (uint64_t i = 0; i < rd_len; i++)
		rd[i] = (uint8_t)(i * 7 + 1);
	const char *cmdline = "console=ttyS0 earlyprintk=serial quiet";
	struct linux_boot_state st;
	int rc = linux_boot_prepare(ram, ram_size, kernel, kernel_len, rd, rd_len, cmdline,
				    map, n, &st, err, sizeof(err));
	if (rc)
		fail_msg("%s", err);

	const uint8_t *hdr = kernel;
	unsigned setup_sects = hdr[0x1f1] ? hdr[0x1f1] : 4;
	uint64_t setup = (setup_sects + 1) * 512ull;
	uint32_t init_size = r32(hdr + 0x260);
	uint32_t align = r32(hdr + 0x230);
	assert_true(r16(hdr + 0x206) >= 0x20c);
	assert_int_equal(st.version, r16(hdr + 0x206));

	/* the kernel at pref_address (16 MiB), aligned, copied verbatim */
	assert_int_equal(st.kernel_gpa, r64(hdr + 0x258));
	assert_int_equal(st.kernel_gpa % align, 0);
	assert_int_equal(st.kernel_size, kernel_len - setup);
	assert_memory_equal(ram + st.kernel_gpa, kernel + setup, kernel_len - setup);
	assert_int_equal(st.kernel_end, st.kernel_gpa + init_size);
	/* the 64-bit entry and the registers the protocol asks for */
	assert_int_equal(st.rip, st.kernel_gpa + 0x200);
	assert_int_equal(st.rsi, LINUX_ZERO_PAGE_GPA);
	assert_int_equal(st.cs, 0x10);
	assert_int_equal(st.ds, 0x18);
	assert_int_equal(st.rflags & 0x200, 0);          /* IF = 0 */
	assert_true(st.cr0 & 0x80000001ull);             /* PG and PE */
	assert_true(st.cr4 & 0x20);                      /* PAE */
	assert_int_equal(st.efer & 0x500, 0x500);        /* LME | LMA */
	assert_int_equal(st.cr3, LINUX_PML4_GPA);

	/* zero page: the header as in the image, plus the loader's fields */
	const uint8_t *bp = ram + st.zero_page_gpa;
	assert_memory_equal(bp + 0x202, "HdrS", 4);
	assert_int_equal(r16(bp + 0x206), r16(hdr + 0x206));
	assert_int_equal(r32(bp + 0x260), init_size);
	assert_int_equal(bp[0x210], 0xff);               /* type_of_loader */
	assert_int_equal(bp[0x1ef], 0);                  /* sentinel */
	assert_int_equal(r64(bp + 0x250), 0);            /* no setup_data */
	assert_int_equal(r32(bp + 0x228), st.cmdline_gpa);
	assert_string_equal((const char *)ram + r32(bp + 0x228), cmdline);
	assert_int_equal(r32(bp + 0xc8), 0);
	/* the initrd: page aligned, past the kernel's init area, below
	 * initrd_addr_max and the end of RAM, as high as it goes */
	uint64_t rd_gpa = r32(bp + 0x218) | (uint64_t)r32(bp + 0xc0) << 32;
	assert_int_equal(rd_gpa, st.initrd_gpa);
	assert_int_equal(r32(bp + 0x21c), rd_len);
	assert_int_equal(rd_gpa & 0xfff, 0);
	assert_true(rd_gpa >= st.kernel_end);
	assert_true(rd_gpa + rd_len - 1 <= r32(hdr + 0x22c));
	assert_true(rd_gpa + rd_len <= ram_size);
	assert_true(rd_gpa + rd_len > ram_size - 4096);
	assert_memory_equal(ram + rd_gpa, rd, rd_len);
	/* e820 */
	assert_int_equal(bp[0x1e8], n);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = bp + 0x2d0 + 20 * i;
		assert_int_equal(r64(e), map[i].addr);
		assert_int_equal(r64(e + 8), map[i].size);
		assert_int_equal(r32(e + 16), map[i].type);
	}
	/* GDT: flat 64-bit code at 0x10, flat data at 0x18 */
	assert_int_equal(r64(ram + st.gdt_base + 0x10), 0x00af9a000000ffffull);
	assert_int_equal(r64(ram + st.gdt_base + 0x18), 0x00cf92000000ffffull);
	assert_int_equal(st.gdt_limit, 31);
	/* page tables: identity for the first 4 GiB, 2 MiB pages */
	uint64_t pml4e = r64(ram + st.cr3);
	assert_int_equal(pml4e & 1, 1);
	uint64_t pdpt = pml4e & ~0xfffull;
	for (uint64_t va = 0; va < (4ull << 30); va += 511 * 2 * MIB + 4096) {
		uint64_t pdpte = r64(ram + pdpt + 8 * (va >> 30));
		assert_int_equal(pdpte & 1, 1);
		uint64_t pde = r64(ram + (pdpte & ~0xfffull) + 8 * ((va >> 21) & 511));
		assert_int_equal(pde & 0x83, 0x83);
		assert_int_equal((pde & ~0x1fffffull) | (va & 0x1fffff), va);
	}
	/* the RSDP pointer (protocol 2.14+) */
	assert_int_equal(linux_boot_set_rsdp(ram, &st, 0xf0000), 0);
	assert_int_equal(r64(ram + st.zero_page_gpa + 0x70), 0xf0000);

	free(rd);
	free(ram);
}

static void test_real_kernel_errors(void **state)
{
	(void)state;
	NEED_KERNEL();
	char err[200] = "";
	struct e820_entry map[8];
	struct linux_boot_state st;
	uint64_t ram_size = 64 * MIB;   /* lightpath's default mem= */
	uint8_t *ram = calloc(1, 256 * MIB);
	unsigned n = pc_map(map, ram_size);
	uint32_t init_size = r32(kernel + 0x260);
	uint64_t need = (16 * MIB + init_size + MIB - 1) / MIB;
	char want[200];
	snprintf(want, sizeof(want), "the kernel needs %lu MiB; the VM has 64 MiB",
		 (unsigned long)need);
	assert_int_equal(linux_boot_prepare(ram, ram_size, kernel, kernel_len, NULL, 0, "",
					    map, n, &st, err, sizeof(err)), -1);
	if (strncmp(err, want, strlen(want)))
		fail_msg("got \"%s\", want \"%s...\"", err, want);

	/* an initrd that cannot fit */
	ram_size = 128 * MIB;
	n = pc_map(map, ram_size);
	uint64_t big = 100 * MIB;
	uint8_t *rd = calloc(1, big);
	assert_int_equal(linux_boot_prepare(ram, ram_size, kernel, kernel_len, rd, big, "",
					    map, n, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the initrd (100 MiB) does not fit"));
	free(rd);

	/* a command line over the kernel's cmdline_size */
	uint32_t cmax = r32(kernel + 0x238);
	char *cl = malloc(cmax + 2);
	memset(cl, 'x', cmax + 1);
	cl[cmax + 1] = 0;
	assert_int_equal(linux_boot_prepare(ram, ram_size, kernel, kernel_len, NULL, 0, cl,
					    map, n, &st, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "the command line is %u bytes; this kernel takes at most %u",
		 cmax + 1, cmax);
	assert_string_equal(err, want);
	cl[cmax] = 0;                   /* exactly cmdline_size: fine */
	assert_int_equal(linux_boot_prepare(ram, ram_size, kernel, kernel_len, NULL, 0, cl,
					    map, n, &st, err, sizeof(err)), 0);
	free(cl);

	/* the kernel's area must be RAM in the map, not just in the buffer */
	map[3].size = 20 * MIB;
	assert_int_equal(linux_boot_prepare(ram, ram_size, kernel, kernel_len, NULL, 0, "",
					    map, n, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not usable RAM in the memory map"));
	/* the real kernel cut short */
	assert_int_equal(linux_boot_check(kernel, kernel_len / 2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated bzImage"));
	free(ram);
}

/* ---- fabricated images ---- */

#define FAKE_LEN (64 * 1024)
static uint8_t fake[FAKE_LEN];

/* A minimal well-formed 2.15 bzImage: 4 setup sectors, a 1 MiB init area. */
static void make_fake(void)
{
	memset(fake, 0, sizeof(fake));
	fake[0x1f1] = 4;
	w32(fake + 0x1f4, (FAKE_LEN - 5 * 512) / 16);   /* syssize */
	w16(fake + 0x1fe, 0xaa55);
	fake[0x200] = 0xeb;
	fake[0x201] = 0x66;                             /* header ends at 0x268 */
	memcpy(fake + 0x202, "HdrS", 4);
	w16(fake + 0x206, 0x020f);
	fake[0x211] = LINUX_LOADED_HIGH;
	w32(fake + 0x22c, 0x7fffffff);                  /* initrd_addr_max */
	w32(fake + 0x230, 0x200000);                    /* kernel_alignment */
	fake[0x234] = 1;                                /* relocatable */
	w16(fake + 0x236, LINUX_XLF_KERNEL_64 | LINUX_XLF_CAN_BE_LOADED_ABOVE_4G);
	w32(fake + 0x238, 255);                         /* cmdline_size */
	w64(fake + 0x258, 0x1000000);                   /* pref_address */
	w32(fake + 0x260, 0x100000);                    /* init_size */
	for (unsigned i = 5 * 512; i < FAKE_LEN; i++)
		fake[i] = (uint8_t)i;
}

static void expect_rejected(uint64_t len, const char *want)
{
	char err[200] = "";
	assert_int_equal(linux_boot_check(fake, len, err, sizeof(err)), -1);
	assert_string_equal(err, want);
}

static void test_fake_headers(void **state)
{
	(void)state;
	char err[200];
	make_fake();
	assert_int_equal(linux_boot_check(fake, FAKE_LEN, err, sizeof(err)), 0);

	/* garbage: an ELF file, random bytes */
	uint8_t junk[4096];
	for (unsigned i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	memcpy(junk, "\177ELF", 4);
	assert_int_equal(linux_boot_check(junk, sizeof(junk), err, sizeof(err)), -1);
	assert_string_equal(err, "not a bzImage (no HdrS magic at 0x202)");
	/* truncated before and after the magic */
	expect_rejected(0x100, "not a bzImage (only 256 bytes)");
	expect_rejected(0x230, "truncated bzImage: 560 bytes end inside the setup header");
	expect_rejected(5 * 512, "truncated bzImage: 2560 bytes, but the setup code alone is 2560");
	expect_rejected(FAKE_LEN - 16, "truncated bzImage: the kernel is 62976 bytes after the "
				    "setup code, the file has 62960");
	/* boot flag */
	w16(fake + 0x1fe, 0x1234);
	expect_rejected(FAKE_LEN, "not a bzImage (boot_flag at 0x1fe is 0x1234, not 0xaa55)");
	make_fake();
	/* too old */
	w16(fake + 0x206, 0x0204);
	expect_rejected(FAKE_LEN, "boot protocol 2.04 is too old: 64-bit entry needs 2.06+");
	w16(fake + 0x206, 0x020a);
	expect_rejected(FAKE_LEN, "boot protocol 2.10 cannot say whether the kernel has a 64-bit "
			       "entry (xloadflags came with 2.12)");
	make_fake();
	/* 32-bit only */
	w16(fake + 0x236, 0);
	expect_rejected(FAKE_LEN, "not a 64-bit kernel: xloadflags 0x0 has no XLF_KERNEL_64 "
			       "(a 32-bit bzImage?)");
	make_fake();
	/* zImage */
	fake[0x211] = 0;
	expect_rejected(FAKE_LEN, "a zImage (LOADED_HIGH clear in loadflags): only bzImages are supported");
	make_fake();
	w32(fake + 0x230, 0x300000);
	expect_rejected(FAKE_LEN, "bad bzImage header: kernel_alignment 0x300000 is not a power of two");
}

static void test_fake_load_and_initrd_placement(void **state)
{
	(void)state;
	char err[200] = "";
	const uint64_t ram_size = 32 * MIB;
	uint8_t *ram = calloc(1, ram_size);
	struct e820_entry map[8];
	unsigned n = pc_map(map, ram_size);
	struct linux_boot_state st;
	uint8_t rd[8192];
	memset(rd, 0x5a, sizeof(rd));

	make_fake();
	w64(fake + 0x258, 0x1100000);            /* unaligned pref: aligned up to 18 MiB */
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, rd, sizeof(rd), NULL,
					    map, n, &st, err, sizeof(err)), 0);
	assert_int_equal(st.kernel_gpa, 0x1200000);
	assert_int_equal(st.rip, 0x1200200);
	assert_int_equal(st.kernel_end, 0x1300000);
	assert_int_equal(st.initrd_gpa, ram_size - 8192);
	assert_string_equal((const char *)ram + st.cmdline_gpa, "");
	assert_int_equal(linux_boot_set_rsdp(ram, &st, 0xf0000), 0);

	/* initrd_addr_max below the top of RAM: the initrd goes under it */
	make_fake();
	w32(fake + 0x22c, 0x17fffff);
	w16(fake + 0x236, LINUX_XLF_KERNEL_64);
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, rd, sizeof(rd), "x",
					    map, n, &st, err, sizeof(err)), 0);
	assert_int_equal(st.initrd_gpa, 0x1800000 - 8192);
	assert_int_equal(r32(ram + st.zero_page_gpa + 0x218), 0x1800000 - 8192);
	/* initrd_addr_max inside the kernel: it goes below the kernel */
	w32(fake + 0x22c, 0x10fffff);
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, rd, sizeof(rd), "x",
					    map, n, &st, err, sizeof(err)), 0);
	assert_int_equal(st.initrd_gpa, 0x1000000 - 8192);
	/* non-relocatable: exactly pref_address */
	make_fake();
	fake[0x234] = 0;
	w64(fake + 0x258, 0x1100000);
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    map, n, &st, err, sizeof(err)), 0);
	assert_int_equal(st.kernel_gpa, 0x1100000);
	/* protocol 2.12/2.13: no acpi_rsdp_addr field */
	w16(fake + 0x206, 0x020c);
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    map, n, &st, err, sizeof(err)), 0);
	assert_int_equal(linux_boot_set_rsdp(ram, &st, 0xf0000), -1);
	/* too many e820 entries, and no RAM for the boot structures */
	struct e820_entry many[130];
	for (unsigned i = 0; i < 130; i++)
		many[i] = (struct e820_entry){ i * 4096ull, 4096, E820_RAM };
	make_fake();
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    many, 130, &st, err, sizeof(err)), -1);
	assert_string_equal(err, "the memory map has 130 entries; the zero page holds 128");
	map[0].size = 0x8000;
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    map, n, &st, err, sizeof(err)), -1);
	assert_string_equal(err, "the boot structures at 0x1000-0x30000 need usable RAM in the memory map");
	/* a garbage pref_address does not wrap around to 0 */
	map[0].size = 0x9fc00;
	w64(fake + 0x258, 0xfffffffffff00000ull);
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    map, n, &st, err, sizeof(err)), -1);
	assert_string_equal(err, "bad bzImage header: cannot load at pref_address "
				 "0xfffffffffff00000 aligned to 0x200000");
	fake[0x234] = 0;                         /* not relocatable: taken as is */
	assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x",
					    map, n, &st, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the kernel needs"));
	free(ram);
}

/* A VM with PCI: the MCFG's ECAM window becomes a reserved e820 entry
 * after the map's own; without PCI (no MCFG) the map stays as it was. */
static void test_ecam_reserved_in_e820(void **state)
{
	(void)state;
	char err[200] = "";
	const uint64_t ram_size = 32 * MIB;
	uint8_t *ram = calloc(1, ram_size);
	struct e820_entry map[FW_MAP_ENTRIES];
	unsigned n = firmware_memory_map(ram_size, map);
	struct linux_boot_state st;
	uint64_t rsdp;
	for (unsigned pci = 0; pci < 4; pci++) {
		make_fake();
		assert_int_equal(linux_boot_prepare(ram, ram_size, fake, FAKE_LEN, NULL, 0, "x", map, n,
						    &st, err, sizeof(err)), 0);
		assert_int_equal(firmware_build(ram, ram_size, 1, pci, &rsdp), 0);
		assert_int_equal(linux_boot_set_rsdp(ram, &st, rsdp), 0);
		const uint8_t *bp = ram + st.zero_page_gpa;
		assert_int_equal(bp[0x1e8], pci ? n + 1 : n);
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(r64(bp + 0x2d0 + 20 * i), map[i].addr);
			assert_int_equal(r64(bp + 0x2d0 + 20 * i + 8), map[i].size);
		}
		if (pci) {
			const uint8_t *e = bp + 0x2d0 + 20 * n;
			assert_int_equal(r64(e), 0xe0000000u);
			assert_int_equal(r64(e + 8), 0x100000);
			assert_int_equal(r32(e + 16), E820_RESERVED);
		}
	}
	free(ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_kernel),
		cmocka_unit_test(test_real_kernel_errors),
		cmocka_unit_test(test_fake_headers),
		cmocka_unit_test(test_fake_load_and_initrd_placement),
		cmocka_unit_test(test_ecam_reserved_in_e820),
	};
	return cmocka_run_group_tests(tests, load_kernel, free_kernel);
}
