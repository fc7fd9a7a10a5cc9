/* Linux x86 boot protocol, 64-bit entry. Pure: works on a RAM buffer. */
#include "vmm/linux_boot.h"

#include <stdbool.h>

#include "lib/printf.h"
#include "lib/string.h"

#define MIB (1ull << 20)
#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static uint16_t rd16(const uint8_t *p, unsigned off) { return (uint16_t)(p[off] | p[off + 1] << 8); }
static uint32_t rd32(const uint8_t *p, unsigned off) { return rd16(p, off) | (uint32_t)rd16(p, off + 2) << 16; }
static uint64_t rd64(const uint8_t *p, unsigned off) { return rd32(p, off) | (uint64_t)rd32(p, off + 4) << 32; }
static void wr16(uint8_t *p, unsigned off, uint16_t v) { p[off] = (uint8_t)v; p[off + 1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, unsigned off, uint32_t v) { wr16(p, off, (uint16_t)v); wr16(p, off + 2, (uint16_t)(v >> 16)); }
static void wr64(uint8_t *p, unsigned off, uint64_t v) { wr32(p, off, (uint32_t)v); wr32(p, off + 4, (uint32_t)(v >> 32)); }

static uint64_t mib_up(uint64_t v) { return (v + MIB - 1) / MIB; }

/* The file offset of the protected-mode kernel: after the boot sector and
 * the setup sectors (0 means 4). */
static uint64_t setup_size(const uint8_t *img)
{
	unsigned sects = img[LINUX_HDR_SETUP_SECTS];
	return ((uint64_t)(sects ? sects : 4) + 1) * 512;
}

int linux_boot_check(const uint8_t *img, uint64_t len, char *err, size_t errlen)
{
	if (len < LINUX_HDR_MAGIC + 4)
		FAIL("not a bzImage (only %lu bytes)", (unsigned long)len);
	if (memcmp(img + LINUX_HDR_MAGIC, "HdrS", 4))
		FAIL("not a bzImage (no HdrS magic at 0x202)");
	uint16_t flag = rd16(img, LINUX_HDR_BOOT_FLAG);
	if (flag != 0xaa55)
		FAIL("not a bzImage (boot_flag at 0x1fe is 0x%04x, not 0xaa55)", flag);
	if (len < LINUX_HDR_INIT_SIZE + 4)
		FAIL("truncated bzImage: %lu bytes end inside the setup header", (unsigned long)len);
	uint16_t v = rd16(img, LINUX_HDR_VERSION);
	if (v < 0x0206)
		FAIL("boot protocol %u.%02u is too old: 64-bit entry needs 2.06+", v >> 8, v & 0xff);
	if (v < 0x020c)
		FAIL("boot protocol %u.%02u cannot say whether the kernel has a 64-bit entry "
		     "(xloadflags came with 2.12)", v >> 8, v & 0xff);
	uint16_t xlf = rd16(img, LINUX_HDR_XLOADFLAGS);
	if (!(xlf & LINUX_XLF_KERNEL_64))
		FAIL("not a 64-bit kernel: xloadflags 0x%x has no XLF_KERNEL_64 (a 32-bit bzImage?)", xlf);
	if (!(img[LINUX_HDR_LOADFLAGS] & LINUX_LOADED_HIGH))
		FAIL("a zImage (LOADED_HIGH clear in loadflags): only bzImages are supported");
	uint64_t setup = setup_size(img);
	if (len <= setup)
		FAIL("truncated bzImage: %lu bytes, but the setup code alone is %lu",
		     (unsigned long)len, (unsigned long)setup);
	uint64_t syssize = (uint64_t)rd32(img, 0x1f4) * 16;
	if (syssize > len - setup)
		FAIL("truncated bzImage: the kernel is %lu bytes after the setup code, the file has %lu",
		     (unsigned long)syssize, (unsigned long)(len - setup));
	uint32_t align = rd32(img, LINUX_HDR_KERNEL_ALIGNMENT);
	if (img[LINUX_HDR_RELOCATABLE] && (align == 0 || (align & (align - 1))))
		FAIL("bad bzImage header: kernel_alignment 0x%x is not a power of two", align);
	return 0;
}

/* The e820 RAM entry that holds [a, a + n), if any. */
static bool in_ram(const struct e820_entry *map, unsigned nmap, uint64_t a, uint64_t n)
{
	for (unsigned i = 0; i < nmap; i++)
		if (map[i].type == E820_RAM && a >= map[i].addr &&
		    a + n <= map[i].addr + map[i].size)
			return true;
	return false;
}

/* The highest page-aligned start for n bytes in [lo, hi), or 0. */
static uint64_t fit_top(uint64_t lo, uint64_t hi, uint64_t n)
{
	if (hi <= lo || hi - lo < n)
		return 0;
	uint64_t s = (hi - n) & ~0xfffull;
	return s >= lo ? s : 0;
}

/* Where the initrd goes: the highest place in RAM below `limit` that avoids
 * the boot structures and the kernel's [kstart, kend). 0 if none. */
static uint64_t place_initrd(const struct e820_entry *map, unsigned nmap, uint64_t ram_size,
			     uint64_t limit, uint64_t kstart, uint64_t kend, uint64_t n)
{
	uint64_t best = 0;
	if (limit > ram_size)
		limit = ram_size;
	for (unsigned i = 0; i < nmap; i++) {
		if (map[i].type != E820_RAM)
			continue;
		uint64_t a = map[i].addr, b = map[i].addr + map[i].size;
		if (a < LINUX_LOW_END)
			a = LINUX_LOW_END;
		if (b > limit)
			b = limit;
		/* below the kernel, then above it */
		uint64_t s1 = fit_top(a, b < kstart ? b : kstart, n);
		uint64_t s2 = fit_top(a > kend ? a : kend, b, n);
		if (s1 > best)
			best = s1;
		if (s2 > best)
			best = s2;
	}
	return best;
}

static void build_page_tables(uint8_t *ram)
{
	uint8_t *pml4 = ram + LINUX_PML4_GPA, *pdpt = ram + LINUX_PDPT_GPA;
	memset(pml4, 0, 0x1000);
	memset(pdpt, 0, 0x1000);
	wr64(pml4, 0, LINUX_PDPT_GPA | 0x3);             /* present, writable */
	for (unsigned i = 0; i < 4; i++) {
		uint64_t pd_gpa = LINUX_PD_GPA + 0x1000ull * i;
		uint8_t *pd = ram + pd_gpa;
		wr64(pdpt, 8 * i, pd_gpa | 0x3);
		for (unsigned j = 0; j < 512; j++)       /* 2 MiB pages: P | RW | PS */
			wr64(pd, 8 * j, (((uint64_t)i * 512 + j) << 21) | 0x83);
	}
}

#define GDT_CODE64 0x00af9a000000ffffull /* base 0, limit 4G, L=1, execute/read */
#define GDT_DATA   0x00cf92000000ffffull /* base 0, limit 4G, read/write */

int linux_boot_prepare(uint8_t *ram, uint64_t ram_size, const uint8_t *img, uint64_t len,
		       const uint8_t *initrd, uint64_t initrd_len, const char *cmdline,
		       const struct e820_entry *map, unsigned nmap, struct linux_boot_state *out,
		       char *err, size_t errlen)
{
	if (linux_boot_check(img, len, err, errlen))
		return -1;
	if (nmap > E820_MAX_ENTRIES)
		FAIL("the memory map has %u entries; the zero page holds %u", nmap, E820_MAX_ENTRIES);
	if (ram_size < LINUX_LOW_END || !in_ram(map, nmap, LINUX_GDT_GPA, LINUX_LOW_END - LINUX_GDT_GPA))
		FAIL("the boot structures at 0x%lx-0x%lx need usable RAM in the memory map",
		     (unsigned long)LINUX_GDT_GPA, (unsigned long)LINUX_LOW_END);

	uint16_t version = rd16(img, LINUX_HDR_VERSION);
	uint64_t setup = setup_size(img);
	uint64_t ksize = len - setup;
	uint64_t init_size = rd32(img, LINUX_HDR_INIT_SIZE);
	uint64_t pref = rd64(img, LINUX_HDR_PREF_ADDRESS);
	uint64_t align = rd32(img, LINUX_HDR_KERNEL_ALIGNMENT);
	uint16_t xlf = rd16(img, LINUX_HDR_XLOADFLAGS);
	if (!pref)
		pref = 0x1000000;
	uint64_t load = pref;
	if (img[LINUX_HDR_RELOCATABLE])
		load = (pref + align - 1) & ~(align - 1);
	if (load < pref || load < LINUX_LOW_END)
		FAIL("bad bzImage header: cannot load at pref_address 0x%lx aligned to 0x%lx",
		     (unsigned long)pref, (unsigned long)align);
	uint64_t need = init_size > ksize ? init_size : ksize;
	uint64_t kend = load + need;

	/* command line */
	uint64_t cmax = rd32(img, LINUX_HDR_CMDLINE_SIZE); /* without the NUL */
	if (!cmdline)
		cmdline = "";
	uint64_t clen = strlen(cmdline);
	if (clen > cmax)
		FAIL("the command line is %lu bytes; this kernel takes at most %lu",
		     (unsigned long)clen, (unsigned long)cmax);

	if (load >= ram_size || need > ram_size - load)
		FAIL("the kernel needs %lu MiB; the VM has %lu MiB (it loads at %lu MiB and "
		     "unpacks into %lu MiB from there)", (unsigned long)mib_up(kend),
		     (unsigned long)(ram_size / MIB), (unsigned long)(load / MIB),
		     (unsigned long)mib_up(need));
	if (!in_ram(map, nmap, load, need))
		FAIL("the kernel's area 0x%lx-0x%lx is not usable RAM in the memory map",
		     (unsigned long)load, (unsigned long)kend);

	/* initrd */
	uint64_t rd_gpa = 0;
	if (initrd && initrd_len) {
		uint64_t limit = (uint64_t)rd32(img, LINUX_HDR_INITRD_ADDR_MAX) + 1;
		rd_gpa = place_initrd(map, nmap, ram_size, limit, load, kend, initrd_len);
		if (!rd_gpa && (xlf & LINUX_XLF_CAN_BE_LOADED_ABOVE_4G))
			rd_gpa = place_initrd(map, nmap, ram_size, ~0ull, load, kend, initrd_len);
		if (!rd_gpa)
			FAIL("the initrd (%lu MiB) does not fit: the kernel needs %lu MiB and the "
			     "VM has %lu MiB", (unsigned long)mib_up(initrd_len),
			     (unsigned long)mib_up(kend), (unsigned long)(ram_size / MIB));
		memcpy(ram + rd_gpa, initrd, initrd_len);
	}

	/* the protected-mode kernel; the rest of its init area is the
	 * decompressor's business */
	memcpy(ram + load, img + setup, ksize);

	memcpy(ram + LINUX_CMDLINE_GPA, cmdline, clen + 1);

	/* zero page: the setup header as the image has it, then ours */
	uint8_t *bp = ram + LINUX_ZERO_PAGE_GPA;
	memset(bp, 0, 0x1000);
	uint64_t hdr_end = LINUX_HDR_MAGIC + img[LINUX_HDR_JUMP + 1];
	if (hdr_end > 0x290)
		hdr_end = 0x290;
	if (hdr_end > len)
		hdr_end = len;
	memcpy(bp + LINUX_HDR_SETUP_SECTS, img + LINUX_HDR_SETUP_SECTS, hdr_end - LINUX_HDR_SETUP_SECTS);
	wr16(bp, LINUX_HDR_VID_MODE, 0xffff);                  /* "normal" */
	bp[LINUX_HDR_TYPE_OF_LOADER] = 0xff;                   /* undefined loader */
	wr32(bp, LINUX_HDR_CMD_LINE_PTR, (uint32_t)LINUX_CMDLINE_GPA);
	wr32(bp, LINUX_BP_EXT_CMD_LINE_PTR, 0);
	wr32(bp, LINUX_HDR_RAMDISK_IMAGE, (uint32_t)rd_gpa);
	wr32(bp, LINUX_HDR_RAMDISK_SIZE, (uint32_t)(rd_gpa ? initrd_len : 0));
	wr32(bp, LINUX_BP_EXT_RAMDISK_IMAGE, (uint32_t)(rd_gpa >> 32));
	wr32(bp, LINUX_BP_EXT_RAMDISK_SIZE, (uint32_t)((rd_gpa ? initrd_len : 0) >> 32));
	wr64(bp, LINUX_HDR_SETUP_DATA, 0);
	wr32(bp, LINUX_HDR_CODE32_START, (uint32_t)load);
	bp[LINUX_BP_E820_ENTRIES] = (uint8_t)nmap;
	for (unsigned i = 0; i < nmap; i++) {
		uint8_t *e = bp + LINUX_BP_E820_TABLE + 20 * i;
		wr64(e, 0, map[i].addr);
		wr64(e, 8, map[i].size);
		wr32(e, 16, map[i].type);
	}

	/* GDT and identity page tables */
	uint8_t *gdt = ram + LINUX_GDT_GPA;
	memset(gdt, 0, 32);
	wr64(gdt, LINUX_BOOT_CS, GDT_CODE64);
	wr64(gdt, LINUX_BOOT_DS, GDT_DATA);
	build_page_tables(ram);

	memset(out, 0, sizeof(*out));
	out->kernel_gpa = load;
	out->kernel_size = ksize;
	out->kernel_end = kend;
	out->initrd_gpa = rd_gpa;
	out->initrd_size = rd_gpa ? initrd_len : 0;
	out->cmdline_gpa = LINUX_CMDLINE_GPA;
	out->zero_page_gpa = LINUX_ZERO_PAGE_GPA;
	out->version = version;
	out->rip = load + 0x200;
	out->rsi = LINUX_ZERO_PAGE_GPA;
	out->rsp = LINUX_STACK_TOP;
	out->cr0 = 0x80000031ull;      /* PG | NE | ET | PE */
	out->cr3 = LINUX_PML4_GPA;
	out->cr4 = 0x20;               /* PAE */
	out->efer = 0x500;             /* LME | LMA */
	out->rflags = 0x2;
	out->gdt_base = LINUX_GDT_GPA;
	out->gdt_limit = 31;
	out->cs = LINUX_BOOT_CS;
	out->ds = LINUX_BOOT_DS;
	out->cs_desc = GDT_CODE64;
	out->ds_desc = GDT_DATA;
	return 0;
}

/* The ECAM windows the MCFG announces (in lightpath's own tables, below
 * LINUX_ACPI_END) become reserved e820 entries, after the others. */
static void reserve_mcfg(const uint8_t *ram, uint8_t *bp, uint64_t rsdp)
{
	if (rsdp + 36 > LINUX_ACPI_END || memcmp(ram + rsdp, "RSD PTR ", 8))
		return;
	uint64_t xsdt = rd64(ram, (unsigned)rsdp + 24);
	if (xsdt + 36 > LINUX_ACPI_END || memcmp(ram + xsdt, "XSDT", 4))
		return;
	uint32_t xlen = rd32(ram, (unsigned)xsdt + 4);
	if (xsdt + xlen > LINUX_ACPI_END)
		return;
	for (uint32_t i = 36; i + 8 <= xlen; i += 8) {
		uint64_t t = rd64(ram, (unsigned)(xsdt + i));
		if (t + 36 > LINUX_ACPI_END || memcmp(ram + t, "MCFG", 4))
			continue;
		uint32_t tlen = rd32(ram, (unsigned)t + 4);
		if (t + tlen > LINUX_ACPI_END)
			continue;
		for (uint32_t a = 44; a + 16 <= tlen; a += 16) {   /* allocations */
			const uint8_t *c = ram + t + a;
			unsigned n = bp[LINUX_BP_E820_ENTRIES];
			if (c[11] < c[10] || n >= E820_MAX_ENTRIES)
				continue;
			uint8_t *e = bp + LINUX_BP_E820_TABLE + 20 * n;
			wr64(e, 0, rd64(c, 0) + ((uint64_t)c[10] << 20));   /* its start bus */
			wr64(e, 8, (uint64_t)(c[11] - c[10] + 1) << 20);     /* 1 MiB a bus */
			wr32(e, 16, E820_RESERVED);
			bp[LINUX_BP_E820_ENTRIES] = (uint8_t)(n + 1);
		}
	}
}

int linux_boot_set_rsdp(uint8_t *ram, const struct linux_boot_state *st, uint64_t rsdp_gpa)
{
	reserve_mcfg(ram, ram + st->zero_page_gpa, rsdp_gpa);
	if (st->version < 0x020e)
		return -1;
	wr64(ram + st->zero_page_gpa, LINUX_BP_ACPI_RSDP_ADDR, rsdp_gpa);
	return 0;
}
