/* mbinfo: what a multiboot kernel finds when lightpath starts it, as a PC
 * with GRUB or QEMU would give it (docs/USAGE.md, "What a guest finds in
 * memory"): the multiboot information (flags, mem_lower/mem_upper agreeing
 * with the memory map, a memory map that reserves the EBDA, the BIOS area and
 * the ACPI tables, the modules with their contents and strings), the ACPI
 * tables found the way an OS finds them (RSDP by scanning 0xE0000-0xFFFFF;
 * RSDT, XSDT, FADT with a PM timer that counts, MADT with the local APIC and
 * an I/O APIC that answer), and the BIOS data area (COM1, EBDA segment, base
 * memory, equipment word).
 *
 * Built three ways: mbinfo32.elf (flat 32-bit), mbinfo64.elf (64-bit, paged)
 * and mbinfo-low32.elf (flat 32-bit linked at 0x8000, below 1 MiB, where the
 * multiboot information used to be). Before lightpath wrote them, the low one was refused,
 * and the others found no ACPI tables, an empty BIOS data area and no
 * modules.
 *
 * Arguments: mods=N, the number of modules to expect (default 0); ram=MIB,
 * the VM's memory, checked against mem_upper when given. Each module is made
 * by the test (tests/integration/itest.py, make_mb_module) so that it says
 * what it should look like:
 *   0  "LPMOD\0\0\0"     8  u32 its index in the module list
 *   12 u32 its length    16 u32 seed    20 u32 n    24 the module's string (n bytes)
 * and every byte after that is byte k of the xorshift32 stream from seed
 * (k counted from the module's start). */
#include "guests/rt/rt.h"

#define MBI_MEMORY      (1u << 0)
#define MBI_CMDLINE     (1u << 2)
#define MBI_MODS        (1u << 3)
#define MBI_MMAP        (1u << 6)
#define MBI_LOADER_NAME (1u << 9)
#define E820_RAM        1u
#define MAX_MMAP        32u
#define MAX_MODS        16u
#define MOD_HEADER      24u
#define LAPIC_BASE      0xfee00000u
#define IOAPIC_BASE     0xfec00000u
#define COM1_SCR        7u

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
	uint32_t syms[4], mmap_length, mmap_addr, drives_length, drives_addr, config_table;
	uint32_t boot_loader_name;
} __attribute__((packed));
struct mb_mod { uint32_t mod_start, mod_end, string, reserved; } __attribute__((packed));

struct range { uint64_t start, end; uint32_t type; };   /* end exclusive */

static const char *name;
static struct range mmap[MAX_MMAP];
static unsigned nmmap;

/* A pointer to a physical address (identity-mapped in both widths); the
 * asm hides the constant from the compiler's bounds checks. */
static const volatile uint8_t *phys(uint64_t a)
{
	uintptr_t p = (uintptr_t)a;
	asm("" : "+r"(p));
	return (const volatile uint8_t *)p;
}
static uint8_t rd8(uint64_t a) { return *phys(a); }
static uint16_t rd16(uint64_t a) { return (uint16_t)(rd8(a) | rd8(a + 1) << 8); }
static uint32_t rd32(uint64_t a) { return rd16(a) | (uint32_t)rd16(a + 2) << 16; }
static uint64_t rd64(uint64_t a) { return rd32(a) | (uint64_t)rd32(a + 4) << 32; }

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* The type of the memory map entry that holds all of [a, b); 0 if none. */
static uint32_t map_type(uint64_t a, uint64_t b)
{
	for (unsigned i = 0; i < nmmap; i++)
		if (a >= mmap[i].start && b <= mmap[i].end)
			return mmap[i].type;
	return 0;
}

static bool in_ram(uint64_t a, uint64_t b)
{
	return map_type(a, b) == E820_RAM;
}

/* Reserved: covered by entries that are all not RAM. */
static bool reserved(uint64_t a, uint64_t b)
{
	uint32_t t = map_type(a, b);
	return t != 0 && t != E820_RAM;
}

static bool in_image(uint64_t a, uint64_t b)
{
	return overlaps(a, b, (uintptr_t)__image_start, (uintptr_t)__image_end);
}

static uint8_t checksum(uint64_t a, uint32_t len)
{
	uint8_t s = 0;
	for (uint32_t i = 0; i < len; i++)
		s = (uint8_t)(s + rd8(a + i));
	return s;
}

static bool sig_is(uint64_t a, const char *sig)
{
	for (unsigned i = 0; sig[i]; i++)
		if (rd8(a + i) != (uint8_t)sig[i])
			return false;
	return true;
}

static size_t phys_strlen(uint64_t a, size_t max)
{
	size_t n = 0;
	while (n < max && rd8(a + n))
		n++;
	return n;
}

/* ------------------------------------------------------------ multiboot */

static void check_mmap(const struct mb_info *mi)
{
	tap_ok(mi->flags & MBI_MMAP, mi->flags, "bit 6", "flags say there is a memory map");
	uint64_t p = mi->mmap_addr, end = p + mi->mmap_length;
	bool sizes_ok = true, sorted = true;
	nmmap = 0;
	while (p + 4 <= end && nmmap < MAX_MMAP) {
		uint32_t size = rd32(p);
		if (size != 20)
			sizes_ok = false;
		struct range r = { rd64(p + 4), rd64(p + 4) + rd64(p + 12), rd32(p + 20) };
		if (nmmap && r.start < mmap[nmmap - 1].end)
			sorted = false;
		mmap[nmmap++] = r;
		p += size + 4;
	}
	tap_ok(nmmap >= 3 && p == end, nmmap, ">= 3 entries filling mmap_length exactly",
	       "memory map: %u entries in %u bytes", nmmap, mi->mmap_length);
	tap_ok(sizes_ok, 0, "20", "every memory map entry has size 20");
	tap_ok(sorted, 0, "ascending", "memory map entries ascending, not overlapping");
	tap_ok(in_ram(mi->mmap_addr, end) && !in_image(mi->mmap_addr, end), mi->mmap_addr,
	       "in RAM, outside the image", "the memory map itself lies in RAM, outside the image");

	/* lower memory: RAM from 0 for mem_lower KiB, then not RAM up to 1 MiB */
	uint64_t low = (uint64_t)mi->mem_lower << 10;
	tap_ok(mi->flags & MBI_MEMORY, mi->flags, "bit 0", "flags say mem_lower/mem_upper are valid");
	tap_ok(mi->mem_lower >= 512 && mi->mem_lower <= 640, mi->mem_lower, "512..640",
	       "mem_lower is %u KiB", mi->mem_lower);
	tap_ok(in_ram(0, low) && !in_ram(0, low + 1), low, "the end of the RAM entry at 0",
	       "mem_lower ends where the memory map's RAM at 0 ends");
	tap_ok(reserved(0xe0000, 0x100000), 0xe0000, "a reserved entry",
	       "the BIOS area 0xe0000-0xfffff is reserved in the memory map");
	bool hole_free = true;
	for (unsigned i = 0; i < nmmap; i++)
		if (mmap[i].type == E820_RAM && overlaps(mmap[i].start, mmap[i].end, low, 0x100000))
			hole_free = false;
	tap_ok(hole_free, low, "no RAM", "no RAM between mem_lower and 1 MiB");
	/* upper memory: RAM from 1 MiB for mem_upper KiB */
	uint64_t up = 0x100000 + ((uint64_t)mi->mem_upper << 10);
	tap_ok(in_ram(0x100000, up) && !in_ram(0x100000, up + 1), mi->mem_upper,
	       "the RAM entry at 1 MiB", "mem_upper (%u KiB) is the memory map's RAM from 1 MiB",
	       mi->mem_upper);
	uint64_t ram_mib = rt_arg_u64("ram", 0);
	if (ram_mib)
		tap_eq(mi->mem_upper, ram_mib * 1024 - 1024, "mem_upper is the VM's %u MiB less 1 MiB",
		       (unsigned)ram_mib);
}

static void check_strings(const struct mb_info *mi)
{
	tap_ok(mi->flags & MBI_CMDLINE, mi->flags, "bit 2", "flags say there is a command line");
	size_t n = phys_strlen(mi->cmdline, 4096);
	tap_ok(n > 0 && n < 4096 && in_ram(mi->cmdline, mi->cmdline + n + 1) &&
	       !in_image(mi->cmdline, mi->cmdline + n + 1), mi->cmdline,
	       "a string in RAM, outside the image", "the command line lies in RAM, outside the image");
	tap_ok(mi->flags & MBI_LOADER_NAME, mi->flags, "bit 9", "flags say there is a loader name");
	uint64_t ln = mi->boot_loader_name;
	tap_ok(phys_strlen(ln, 16) == 9 && sig_is(ln, "lightpath"), ln, "\"lightpath\"",
	       "the boot loader name is \"lightpath\"");
}

static uint32_t xorshift(uint32_t x)
{
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static void check_module(const struct mb_info *mi, unsigned i, uint64_t *taken, unsigned *ntaken)
{
	uint64_t e = mi->mods_addr + 16ull * i;
	uint64_t start = rd32(e), end = rd32(e + 4), str = rd32(e + 8);
	tap_ok(!(start & 0xfff), start, "page-aligned", "module %u starts on a page (0x%llx)", i,
	       (unsigned long long)start);
	tap_eq(rd32(e + 12), 0, "module %u's reserved field is 0", i);
	if (!tap_ok(end >= start + MOD_HEADER && sig_is(start, "LPMOD"), end - start,
		    "a module made by the test", "module %u holds a test module (%llu bytes)", i,
		    (unsigned long long)(end - start)))
		return;
	tap_eq(rd32(start + 8), i, "module %u is the one given in place %u", i, i);
	tap_eq(end - start, rd32(start + 12), "module %u is as long as its file", i);
	uint32_t slen = rd32(start + 20);
	bool same = slen < 4096 && phys_strlen(str, 4096) == slen;
	for (uint32_t k = 0; same && k < slen; k++)
		same = rd8(str + k) == rd8(start + MOD_HEADER + k);
	tap_ok(same, str, "the string the test gave it", "module %u's string is the one given", i);
	uint32_t x = rd32(start + 16);
	uint64_t bad = 0, first = ~0ull;
	for (uint64_t k = 0; k < end - start; k++) {
		x = xorshift(x);
		if (k >= MOD_HEADER + slen && rd8(start + k) != (uint8_t)x) {
			bad++;
			if (first == ~0ull)
				first = k;
		}
	}
	tap_ok(!bad, first, "no differing byte", "module %u's %llu bytes of content are intact", i,
	       (unsigned long long)(end - start - MOD_HEADER - slen));
	tap_ok(in_ram(start, end) && !in_image(start, end), start, "in RAM, outside the image",
	       "module %u lies in RAM, outside the image", i);
	bool apart = true;
	for (unsigned k = 0; k < *ntaken; k += 2)
		if (overlaps(start, end, taken[k], taken[k + 1]))
			apart = false;
	tap_ok(apart, start, "no overlap", "module %u overlaps no other module or boot data", i);
	taken[(*ntaken)++] = start;
	taken[(*ntaken)++] = end;
}

static void check_modules(const struct mb_info *mi)
{
	unsigned want = (unsigned)rt_arg_u64("mods", 0);
	tap_ok(mi->flags & MBI_MODS, mi->flags, "bit 3", "flags say there is a module list");
	if (!tap_eq(mi->mods_count, want, "%u modules", want) || want > MAX_MODS)
		return;
	uint64_t list = mi->mods_addr, list_end = list + 16ull * want;
	tap_ok(!want || (in_ram(list, list_end) && !in_image(list, list_end)), list,
	       "in RAM, outside the image", "the module list lies in RAM, outside the image");
	/* everything else the loader placed, for the overlap checks */
	uint64_t taken[2 * (MAX_MODS + 4)];
	unsigned ntaken = 0;
	uint64_t mbi = (uintptr_t)mi;
	taken[ntaken++] = mbi, taken[ntaken++] = mbi + sizeof(*mi);
	taken[ntaken++] = mi->mmap_addr, taken[ntaken++] = mi->mmap_addr + mi->mmap_length;
	taken[ntaken++] = list, taken[ntaken++] = list_end;
	taken[ntaken++] = mi->cmdline;
	taken[ntaken++] = mi->cmdline + phys_strlen(mi->cmdline, 4096) + 1;
	for (unsigned i = 0; i < want; i++)
		check_module(mi, i, taken, &ntaken);
}

/* ------------------------------------------------------------ ACPI */

static uint64_t find_rsdp(void)
{
	for (uint64_t a = 0xe0000; a < 0x100000; a += 16)
		if (sig_is(a, "RSD PTR ") && checksum(a, 20) == 0)
			return a;
	return 0;
}

/* A table at a (32-bit pointer) with signature sig and a good checksum. */
static bool table_ok(uint64_t a, const char *sig)
{
	if (!a || a >= 0x100000000ull || !sig_is(a, sig))
		return false;
	uint32_t len = rd32(a + 4);
	return len >= 36 && len < 0x10000 && checksum(a, len) == 0;
}

static uint64_t find_table(uint64_t rsdt, const char *sig)
{
	uint32_t n = (rd32(rsdt + 4) - 36) / 4;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t = rd32(rsdt + 36 + 4 * i);
		if (sig_is(t, sig))
			return t;
	}
	return 0;
}

static void check_pm_timer(uint64_t fadt)
{
	uint32_t port = rd32(fadt + 76), len = rd8(fadt + 91), flags = rd32(fadt + 112);
	tap_ok(port && port < 0x10000 && len == 4, port, "a port, 4 bytes", "FADT: PM timer at port "
	       "0x%x, %u bytes", port, len);
	if (rd32(fadt + 4) >= 220)
		tap_ok(rd8(fadt + 208) == 1 && rd64(fadt + 212) == port, rd64(fadt + 212),
		       "the same port in SystemIO", "FADT: X_PM_TMR_BLK is the same port");
	if (!port || port >= 0x10000)
		return;
	uint32_t first = inl((uint16_t)port), now = first;
	unsigned reads = 0;
	while (now == first && reads < 1000000) {
		now = inl((uint16_t)port);
		reads++;
	}
	bool ext = flags & (1u << 8);   /* TMR_VAL_EXT: 32 bits, else 24 */
	uint32_t mask = ext ? 0xffffffffu : 0xffffffu;
	tap_ok(!(first & ~mask) && !(now & ~mask), now, ext ? "32 bits" : "24 bits",
	       "the PM timer has the width the FADT says");
	uint32_t step = (now - first) & mask;
	tap_ok(now != first && step < mask / 2, step, "a small forward step",
	       "the PM timer at the FADT's port counts up");
}

static void check_madt(uint64_t madt)
{
	uint32_t lapic = rd32(madt + 36);
	tap_eq(lapic, LAPIC_BASE, "MADT: local APIC at 0xfee00000");
	tap_eq(rdmsr(0x1b) & 0xfffff000u, lapic, "IA32_APIC_BASE agrees with the MADT");
	uint32_t apic_id = cpuid(1, 0).ebx >> 24;
	unsigned cpus = 0, ioapics = 0;
	bool bsp = false, walk_ok = true;
	uint64_t ioapic = 0;
	uint8_t ioapic_id = 0;
	uint32_t ioapic_gsi = ~0u;
	uint64_t p = madt + 44, end = madt + rd32(madt + 4);
	while (p + 2 <= end) {
		uint8_t type = rd8(p), len = rd8(p + 1);
		if (len < 2 || p + len > end) {
			walk_ok = false;
			break;
		}
		if (type == 0 && len >= 8 && (rd32(p + 4) & 1)) {
			cpus++;
			bsp |= rd8(p + 3) == apic_id;
		} else if (type == 1 && len >= 12) {
			ioapics++;
			ioapic_id = rd8(p + 2);
			ioapic = rd32(p + 4);
			ioapic_gsi = rd32(p + 8);
		}
		p += len;
	}
	tap_ok(walk_ok && p == end, p - madt, "entries filling the table", "MADT: entries well formed");
	tap_ok(cpus >= 1 && bsp, cpus, "the running CPU's APIC ID", "MADT: an enabled local APIC "
	       "with this CPU's APIC ID (%u)", apic_id);
	tap_eq(ioapics, 1, "MADT: one I/O APIC");
	if (ioapics != 1)
		return;
	tap_ok(ioapic == IOAPIC_BASE && ioapic_gsi == 0, ioapic, "0xfec00000, GSI base 0",
	       "MADT: the I/O APIC is at 0x%llx with GSI base %u", (unsigned long long)ioapic,
	       ioapic_gsi);
	rt_map_mmio(ioapic);
	rt_map_mmio(lapic);
	volatile uint32_t *io = (volatile uint32_t *)(uintptr_t)ioapic;
	io[0] = 0;                                   /* IOREGSEL: ID */
	uint32_t id = io[4];
	io[0] = 1;                                   /* version */
	uint32_t ver = io[4];
	tap_eq((id >> 24) & 0xf, ioapic_id, "the I/O APIC answers with the MADT's ID");
	tap_ok(ver != 0xffffffffu && ((ver >> 16) & 0xff) == 23 && (ver & 0xff) != 0, ver,
	       "24 pins, a version", "the I/O APIC answers with its version (24 pins)");
	uint32_t lver = *(volatile uint32_t *)(uintptr_t)(lapic + 0x30);
	tap_ok(lver != 0xffffffffu && (lver & 0xff) != 0, lver, "a version",
	       "the local APIC answers at the MADT's address");
}

static void check_acpi(void)
{
	uint64_t rsdp = find_rsdp();
	if (!tap_ok(rsdp, 0, "an RSDP", "RSDP found by scanning 0xe0000-0xfffff"))
		return;
	tap_ok(reserved(rsdp, rsdp + 20), rsdp, "a reserved entry", "the RSDP (0x%llx) is reserved "
	       "in the memory map", (unsigned long long)rsdp);
	uint8_t rev = rd8(rsdp + 15);
	uint64_t rsdt = rd32(rsdp + 16), xsdt = 0;
	if (rev >= 2) {
		uint32_t len = rd32(rsdp + 20);
		tap_ok(len >= 36 && checksum(rsdp, len) == 0, len, "a good extended checksum",
		       "RSDP revision %u: extended checksum over %u bytes", rev, len);
		xsdt = rd64(rsdp + 24);
	}
	if (!tap_ok(table_ok(rsdt, "RSDT"), rsdt, "an RSDT with a good checksum", "RSDT"))
		return;
	if (rev >= 2 && tap_ok(table_ok(xsdt, "XSDT"), xsdt, "an XSDT with a good checksum", "XSDT")) {
		uint32_t n = (rd32(rsdt + 4) - 36) / 4;
		bool same = (rd32(xsdt + 4) - 36) / 8 == n;
		for (uint32_t i = 0; same && i < n; i++)
			same = rd64(xsdt + 36 + 8 * i) == rd32(rsdt + 36 + 4 * i);
		tap_ok(same, n, "the RSDT's tables", "XSDT lists the same %u tables as the RSDT", n);
	}
	uint64_t fadt = find_table(rsdt, "FACP"), madt = find_table(rsdt, "APIC");
	if (tap_ok(table_ok(fadt, "FACP"), fadt, "a FADT with a good checksum", "FADT")) {
		uint64_t facs = rd32(fadt + 36), dsdt = rd32(fadt + 40);
		tap_ok(table_ok(dsdt, "DSDT"), dsdt, "a DSDT", "FADT: DSDT with a good checksum");
		tap_ok(sig_is(facs, "FACS") && !(facs & 63), facs, "a FACS", "FADT: FACS, 64-byte aligned");
		bool res = reserved(rsdt, rsdt + rd32(rsdt + 4)) && reserved(fadt, fadt + rd32(fadt + 4)) &&
			   reserved(dsdt, dsdt + rd32(dsdt + 4)) && reserved(facs, facs + 64);
		tap_ok(res, fadt, "reserved entries", "the tables are reserved in the memory map");
		check_pm_timer(fadt);
	}
	if (tap_ok(table_ok(madt, "APIC"), madt, "a MADT with a good checksum", "MADT"))
		check_madt(madt);
}

/* ------------------------------------------------------------ BIOS data area */

static void check_bda(const struct mb_info *mi)
{
	tap_eq(rd16(0x400), 0x3f8, "BDA: COM1 at 0x3f8");
	tap_eq(rd16(0x402) | rd16(0x404) | rd16(0x406), 0, "BDA: no COM2-COM4");
	outb(0x3f8 + COM1_SCR, 0x5a);
	tap_eq(inb(0x3f8 + COM1_SCR), 0x5a, "a 16550 answers at COM1 (scratch register)");
	uint64_t ebda = (uint64_t)rd16(0x40e) << 4;
	tap_eq(ebda, (uint64_t)mi->mem_lower << 10, "BDA: the EBDA (segment 0x%x) starts where lower "
	       "memory ends", rd16(0x40e));
	tap_eq(rd16(0x413), mi->mem_lower, "BDA: base memory size is mem_lower");
	tap_eq(ebda + ((uint64_t)rd8(ebda) << 10), 0xa0000, "EBDA: its size (%u KiB) reaches 640 KiB",
	       rd8(ebda));
	tap_ok(reserved(ebda, 0xa0000), ebda, "a reserved entry", "the EBDA is reserved in the memory map");
	uint16_t eq = rd16(0x410);
	tap_eq((eq >> 9) & 7, 1, "BDA: the equipment word counts one serial port");
	tap_eq((eq >> 1) & 1, cpuid(1, 0).edx & 1, "BDA: the equipment word's x87 bit is CPUID's");
}

int guest_main(void)
{
#ifdef __x86_64__
	name = "mbinfo64";
#else
	name = (uintptr_t)__image_start < 0x100000 ? "mbinfo-low32" : "mbinfo32";
#endif
	tap_begin(name);
	if (!tap_eq(rt_mb_magic, 0x2BADB002u, "EAX holds the multiboot magic"))
		return tap_end();
	const struct mb_info *mi = (const struct mb_info *)(uintptr_t)rt_mb_info;
	uint64_t mbi = rt_mb_info;
	tap_ok(mbi && !in_image(mbi, mbi + sizeof(*mi)), mbi,
	       "outside the image", "the multiboot information (0x%llx) lies outside the image "
	       "0x%llx-0x%llx", (unsigned long long)mbi, (unsigned long long)(uintptr_t)__image_start,
	       (unsigned long long)(uintptr_t)__image_end);
	check_mmap(mi);
	tap_ok(in_ram(mbi, mbi + sizeof(*mi)), mbi, "in RAM", "the multiboot information lies in RAM");
	check_strings(mi);
	check_modules(mi);
	check_acpi();
	check_bda(mi);
	return tap_end();
}
