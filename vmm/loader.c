/* Multiboot (v1) loader (vmm/loader.h has where things go). */
#include "vmm/loader.h"

#include <stdbool.h>

#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/firmware.h"

#define MB_HEADER_MAGIC 0x1BADB002u
#define MB_SEARCH       8192u
#define MB_AOUT_KLUDGE  (1u << 16)
#define PAGE            0x1000ull

/* multiboot information flags */
#define MBI_MEMORY      (1u << 0)
#define MBI_CMDLINE     (1u << 2)
#define MBI_MODS        (1u << 3)
#define MBI_MMAP        (1u << 6)
#define MBI_LOADER_NAME (1u << 9)

#define MBI_SIZE        128u   /* the structure through the framebuffer fields, rounded up */
#define LOADER_NAME     "lightpath"

struct elf_ident { uint8_t magic[4], cls, data, version, osabi, pad[8]; };

struct elf32_ehdr {
	struct elf_ident id;
	uint16_t type, machine; uint32_t version, entry, phoff, shoff, flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf32_phdr { uint32_t type, offset, vaddr, paddr, filesz, memsz, flags, align; };
struct elf64_ehdr {
	struct elf_ident id;
	uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff; uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf64_phdr { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; };

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
	uint32_t syms[4], mmap_length, mmap_addr, drives_length, drives_addr, config_table;
	uint32_t boot_loader_name;
} __attribute__((packed));
_Static_assert(sizeof(struct mb_info) <= MBI_SIZE, "multiboot information size");

struct mb_mmap { uint32_t size; uint64_t addr, len; uint32_t type; } __attribute__((packed));
struct mb_mod { uint32_t mod_start, mod_end, string, reserved; } __attribute__((packed));
_Static_assert(sizeof(struct mb_mmap) == 24 && sizeof(struct mb_mod) == 16, "multiboot layouts");

/* A PT_LOAD program header, already checked against the file. */
struct segment {
	unsigned index;                 /* program header number, for error lines */
	uint64_t off, paddr, filesz, memsz;
};

struct range { uint64_t start, end; };   /* end exclusive */

/* The guest's RAM while it is being filled: what is taken so far. */
struct layout {
	uint8_t *ram;
	uint64_t ram_size;
	struct e820_entry map[FW_MAP_ENTRIES];
	unsigned nmap;
	struct range busy[MB_MAX_SEGMENTS + MB_MAX_MODULES + 1];
	unsigned nbusy;
};

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static bool overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* The lowest page-aligned address >= from where n bytes fit in RAM (as the
 * memory map says), clear of page 0 and of everything placed so far; 0 if
 * there is none. */
static uint64_t place(const struct layout *l, uint64_t n, uint64_t from)
{
	if (n == 0)
		n = 1;   /* an empty module still gets an address of its own */
	for (unsigned i = 0; i < l->nmap; i++) {
		if (l->map[i].type != E820_RAM)
			continue;
		uint64_t lo = l->map[i].addr, hi = l->map[i].addr + l->map[i].size;
		if (hi > l->ram_size)
			hi = l->ram_size;
		if (lo < from)
			lo = from;
		if (lo < MB_LOW_LIMIT)
			lo = MB_LOW_LIMIT;
		uint64_t s = align_up(lo, PAGE);
		while (s < hi && hi - s >= n) {
			bool moved = false;
			for (unsigned b = 0; b < l->nbusy; b++) {
				if (overlaps(s, s + n, l->busy[b].start, l->busy[b].end)) {
					s = align_up(l->busy[b].end, PAGE);
					moved = true;
					break;
				}
			}
			if (!moved)
				return s;
		}
	}
	return 0;
}

static void take(struct layout *l, uint64_t start, uint64_t n)
{
	l->busy[l->nbusy++] = (struct range){ start, start + (n ? n : 1) };
}

/* A segment goes anywhere in RAM but the firmware's ranges. */
static int check_segment(const struct layout *l, const struct segment *s, char *err,
			 size_t errlen)
{
	uint64_t end = s->paddr + s->memsz;
	if (end < s->paddr || end > l->ram_size)
		FAIL("program header %u loads 0x%lx-0x%lx, beyond the VM's %lu MiB of RAM", s->index,
		     (unsigned long)s->paddr, (unsigned long)(s->paddr + (s->memsz - 1)),
		     (unsigned long)(l->ram_size >> 20));
	for (unsigned i = 0; i < firmware_nregions; i++) {
		const struct fw_region *r = &firmware_regions[i];
		if (overlaps(s->paddr, end, r->start, r->end))
			FAIL("program header %u loads 0x%lx-0x%lx, which overlaps 0x%lx-0x%lx, %s",
			     s->index, (unsigned long)s->paddr,
			     (unsigned long)(end - 1), (unsigned long)r->start,
			     (unsigned long)(r->end - 1), r->what);
	}
	return 0;
}

static int check_multiboot_header(const uint8_t *image, uint64_t size, char *err, size_t errlen)
{
	uint64_t limit = size < MB_SEARCH ? size : MB_SEARCH;
	for (uint64_t off = 0; off + 12 <= limit; off += 4) {
		const uint32_t *h = (const uint32_t *)(image + off);
		if (h[0] != MB_HEADER_MAGIC)
			continue;
		if (h[0] + h[1] + h[2] != 0)
			FAIL("its multiboot header checksum is wrong");
		if (h[1] & MB_AOUT_KLUDGE)
			FAIL("it uses the multiboot a.out kludge, which lightpath does not load");
		return 0;
	}
	FAIL("no multiboot header in its first 8 KiB");
}

/* Collects the PT_LOAD program headers (those with bytes to load). */
static int read_segments(const uint8_t *image, uint64_t size, struct segment *seg, unsigned *nseg,
			 uint64_t *entry, const char **format, char *err, size_t errlen)
{
	const struct elf_ident *id = (const void *)image;
	uint64_t phoff, phnum, phsize;
	bool is64 = id->cls == 2;
	if (id->data != 1)
		FAIL("not a little-endian ELF");
	if (id->cls == 1) {
		const struct elf32_ehdr *eh = (const void *)image;
		if (eh->machine != 3 || eh->type != 2)
			FAIL("not an i386 executable ELF");
		phoff = eh->phoff, phnum = eh->phnum, phsize = sizeof(struct elf32_phdr);
		*entry = eh->entry;
		*format = "multiboot ELF32";
	} else if (is64) {
		const struct elf64_ehdr *eh = (const void *)image;
		if (size < sizeof(*eh) || eh->machine != 62 || eh->type != 2)
			FAIL("not an x86-64 executable ELF");
		phoff = eh->phoff, phnum = eh->phnum, phsize = sizeof(struct elf64_phdr);
		*entry = eh->entry;
		*format = "multiboot ELF64";
	} else {
		FAIL("unknown ELF class %u", id->cls);
	}
	if (phoff > size || phnum * phsize > size - phoff)
		FAIL("program headers outside the file");
	*nseg = 0;
	for (unsigned i = 0; i < phnum; i++) {
		struct segment s = { .index = i };
		uint32_t type;
		if (is64) {
			const struct elf64_phdr *ph = (const void *)(image + phoff + i * phsize);
			type = ph->type;
			s.off = ph->offset, s.paddr = ph->paddr, s.filesz = ph->filesz, s.memsz = ph->memsz;
		} else {
			const struct elf32_phdr *ph = (const void *)(image + phoff + i * phsize);
			type = ph->type;
			s.off = ph->offset, s.paddr = ph->paddr, s.filesz = ph->filesz, s.memsz = ph->memsz;
		}
		if (type != 1 || s.memsz == 0)
			continue;
		if (s.filesz > s.memsz || s.off > size || s.filesz > size - s.off)
			FAIL("program header %u points outside the file", i);
		if (*nseg == MB_MAX_SEGMENTS)
			FAIL("more than %u loadable segments", MB_MAX_SEGMENTS);
		seg[(*nseg)++] = s;
	}
	if (!*nseg)
		FAIL("no loadable segment");
	return 0;
}

/* The first word of a module string, for error lines. */
static int name_len(const char *s)
{
	int n = 0;
	while (s[n] && s[n] != ' ' && n < 64)
		n++;
	return n;
}

int load_multiboot_elf(uint8_t *ram, uint64_t ram_size, const uint8_t *image, uint64_t size,
		       const char *cmdline, const struct mb_module *mods, unsigned nmods,
		       struct loaded_guest *out, char *err, size_t errlen)
{
	struct layout l;   /* on the stack: VMs side by side load at the same time (under 1 KiB) */
	struct segment seg[MB_MAX_SEGMENTS];
	unsigned nseg;

	if (size < sizeof(struct elf32_ehdr) || memcmp(image, "\x7f" "ELF", 4) != 0)
		FAIL("not an ELF file (a multiboot ELF kernel was expected)");
	if (check_multiboot_header(image, size, err, errlen))
		return -1;
	memset(out, 0, sizeof(*out));
	if (read_segments(image, size, seg, &nseg, &out->entry, &out->format, err, errlen))
		return -1;
	if (ram_size < 2 * FW_HIGH_RAM_GPA)
		FAIL("guest RAM too small");
	if (nmods > MB_MAX_MODULES)
		FAIL("%u modules; lightpath passes at most %u", nmods, MB_MAX_MODULES);

	l.ram = ram;
	l.ram_size = ram_size;
	l.nmap = firmware_memory_map(ram_size, l.map);
	l.nbusy = 0;
	for (unsigned i = 0; i < nseg; i++) {
		if (check_segment(&l, &seg[i], err, errlen))
			return -1;
		take(&l, seg[i].paddr, seg[i].memsz);
		if (seg[i].paddr + seg[i].memsz > out->image_end)
			out->image_end = seg[i].paddr + seg[i].memsz;
	}
	if (out->entry >= ram_size || out->entry >= 0x100000000ull)
		FAIL("entry point 0x%lx is outside guest RAM", (unsigned long)out->entry);
	for (unsigned i = 0; i < nseg; i++) {
		memcpy(ram + seg[i].paddr, image + seg[i].off, seg[i].filesz);
		memset(ram + seg[i].paddr + seg[i].filesz, 0, seg[i].memsz - seg[i].filesz);
	}

	/* One block for the information and everything it points to. */
	size_t clen = strlen(cmdline);
	if (clen > MB_CMDLINE_MAX)
		FAIL("command line longer than %u characters", MB_CMDLINE_MAX);
	uint64_t info_size = MBI_SIZE + l.nmap * sizeof(struct mb_mmap) +
			     nmods * sizeof(struct mb_mod) + clen + 1 + sizeof(LOADER_NAME);
	for (unsigned i = 0; i < nmods; i++) {
		size_t n = strlen(mods[i].string);
		if (n > MB_CMDLINE_MAX)
			FAIL("module %u's string is longer than %u characters", i, MB_CMDLINE_MAX);
		info_size += n + 1;
	}
	uint64_t info = place(&l, info_size, MB_INFO_PREFERRED);
	if (!info)
		info = place(&l, info_size, MB_LOW_LIMIT);
	if (!info)
		FAIL("no room for the multiboot information (%lu bytes) next to the kernel",
		     (unsigned long)info_size);
	take(&l, info, info_size);
	uint8_t *base = ram + info;
	memset(base, 0, align_up(info_size, PAGE));
	struct mb_info *mi = (struct mb_info *)base;
	uint64_t at = info + MBI_SIZE;

	struct mb_mmap *mm = (struct mb_mmap *)(ram + at);
	for (unsigned i = 0; i < l.nmap; i++)
		mm[i] = (struct mb_mmap){ sizeof(mm[i]) - 4, l.map[i].addr, l.map[i].size, l.map[i].type };
	mi->mmap_addr = (uint32_t)at;
	mi->mmap_length = l.nmap * sizeof(*mm);
	at += mi->mmap_length;

	struct mb_mod *ml = (struct mb_mod *)(ram + at);
	mi->mods_addr = (uint32_t)at;
	mi->mods_count = nmods;
	at += nmods * sizeof(*ml);

	memcpy(ram + at, cmdline, clen + 1);
	mi->cmdline = (uint32_t)at;
	at += clen + 1;
	memcpy(ram + at, LOADER_NAME, sizeof(LOADER_NAME));
	mi->boot_loader_name = (uint32_t)at;
	at += sizeof(LOADER_NAME);

	/* Modules after the kernel, in order, each on its own pages. */
	uint64_t from = align_up(out->image_end, PAGE);
	for (unsigned i = 0; i < nmods; i++) {
		const struct mb_module *m = &mods[i];
		uint64_t s = place(&l, m->size, from);
		if (!s)
			s = place(&l, m->size, MB_LOW_LIMIT);
		if (!s)
			FAIL("module '%.*s' (%lu KiB) does not fit in the free RAM of the VM's %lu MiB",
			     name_len(m->string), m->string, (unsigned long)((m->size + 1023) >> 10),
			     (unsigned long)(ram_size >> 20));
		take(&l, s, m->size);
		memcpy(ram + s, m->data, m->size);
		size_t n = strlen(m->string);
		memcpy(ram + at, m->string, n + 1);
		ml[i] = (struct mb_mod){ (uint32_t)s, (uint32_t)(s + m->size), (uint32_t)at, 0 };
		at += n + 1;
		from = s + m->size;
	}

	mi->mem_lower = FW_BASE_MEM_KB;
	mi->mem_upper = (uint32_t)((ram_size - FW_HIGH_RAM_GPA) >> 10);
	mi->flags = MBI_MEMORY | MBI_CMDLINE | MBI_MODS | MBI_MMAP | MBI_LOADER_NAME;
	out->info_gpa = (uint32_t)info;
	out->nr_modules = nmods;
	return 0;
}
