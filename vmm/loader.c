#include "vmm/loader.h"

#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/vm.h"

#define MB_HEADER_MAGIC 0x1BADB002u
#define MB_BOOT_MAGIC   0x2BADB002u
#define MB_SEARCH       8192u
#define MB_AOUT_KLUDGE  (1u << 16)
#define MB_INFO_GPA     0x9000u     /* below 1 MiB, away from the image */
#define MB_INFO_END     0x9f000u

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

struct mb_mmap { uint32_t size; uint64_t addr, len; uint32_t type; } __attribute__((packed));

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int load_segment(struct vm *vm, const uint8_t *image, uint64_t size, uint64_t off,
			uint64_t paddr, uint64_t filesz, uint64_t memsz, char *err, size_t errlen)
{
	if (filesz > memsz || off > size || filesz > size - off)
		FAIL("a program header points outside the file");
	if (paddr < 0x100000)
		FAIL("a segment loads at 0x%lx, below 1 MiB (lightpath keeps that for boot data)", paddr);
	uint8_t *dst = gpa_to_host(vm, paddr, memsz);
	if (!dst)
		FAIL("a segment at 0x%lx+0x%lx does not fit in the VM's %lu MiB of RAM", paddr, memsz,
		     vm->mem_size >> 20);
	memcpy(dst, image + off, filesz);
	memset(dst + filesz, 0, memsz - filesz);
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

static int build_info(struct vm *vm, const char *cmdline, struct loaded_guest *out, char *err,
		      size_t errlen)
{
	uint8_t *base = gpa_to_host(vm, MB_INFO_GPA, MB_INFO_END - MB_INFO_GPA);
	if (!base)
		FAIL("guest RAM too small");
	memset(base, 0, MB_INFO_END - MB_INFO_GPA);
	struct mb_info *mi = (struct mb_info *)base;
	uint32_t gpa = MB_INFO_GPA + sizeof(*mi);

	struct mb_mmap *mm = (struct mb_mmap *)(base + (gpa - MB_INFO_GPA));
	const struct { uint64_t addr, len; uint32_t type; } map[] = {
		{ 0, 0x9fc00, 1 },
		{ 0x9fc00, 0x400, 2 },
		{ 0xf0000, 0x10000, 2 },
		{ 0x100000, vm->mem_size - 0x100000, 1 },
	};
	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		mm[i].size = sizeof(mm[i]) - 4;
		mm[i].addr = map[i].addr;
		mm[i].len = map[i].len;
		mm[i].type = map[i].type;
	}
	mi->mmap_addr = gpa;
	mi->mmap_length = sizeof(map) / sizeof(map[0]) * sizeof(*mm);
	gpa += mi->mmap_length;

	size_t len = strlen(cmdline);
	if (len > 4000)
		FAIL("command line longer than 4000 characters");
	memcpy(base + (gpa - MB_INFO_GPA), cmdline, len + 1);
	mi->cmdline = gpa;
	gpa += len + 1;
	memcpy(base + (gpa - MB_INFO_GPA), "lightpath", 10);
	mi->boot_loader_name = gpa;

	mi->mem_lower = 639;
	mi->mem_upper = (uint32_t)((vm->mem_size - 0x100000) >> 10);
	mi->flags = (1u << 0) | (1u << 2) | (1u << 6) | (1u << 9);
	out->info_gpa = MB_INFO_GPA;
	return 0;
}

int load_multiboot_elf(struct vm *vm, const uint8_t *image, uint64_t size, const char *cmdline,
		       struct loaded_guest *out, char *err, size_t errlen)
{
	if (size < sizeof(struct elf32_ehdr) || memcmp(image, "\x7f" "ELF", 4) != 0)
		FAIL("not an ELF file (a multiboot ELF kernel was expected)");
	if (check_multiboot_header(image, size, err, errlen))
		return -1;
	const struct elf_ident *id = (const void *)image;
	if (id->data != 1)
		FAIL("not a little-endian ELF");
	if (id->cls == 1) {
		const struct elf32_ehdr *eh = (const void *)image;
		if (eh->machine != 3 || eh->type != 2)
			FAIL("not an i386 executable ELF");
		if (eh->phoff > size || (uint64_t)eh->phnum * sizeof(struct elf32_phdr) > size - eh->phoff)
			FAIL("program headers outside the file");
		const struct elf32_phdr *ph = (const void *)(image + eh->phoff);
		for (unsigned i = 0; i < eh->phnum; i++)
			if (ph[i].type == 1 && load_segment(vm, image, size, ph[i].offset, ph[i].paddr,
							     ph[i].filesz, ph[i].memsz, err, errlen))
				return -1;
		out->entry = eh->entry;
		out->format = "multiboot ELF32";
	} else if (id->cls == 2) {
		const struct elf64_ehdr *eh = (const void *)image;
		if (size < sizeof(*eh) || eh->machine != 62 || eh->type != 2)
			FAIL("not an x86-64 executable ELF");
		if (eh->phoff > size || (uint64_t)eh->phnum * sizeof(struct elf64_phdr) > size - eh->phoff)
			FAIL("program headers outside the file");
		const struct elf64_phdr *ph = (const void *)(image + eh->phoff);
		for (unsigned i = 0; i < eh->phnum; i++)
			if (ph[i].type == 1 && load_segment(vm, image, size, ph[i].offset, ph[i].paddr,
							     ph[i].filesz, ph[i].memsz, err, errlen))
				return -1;
		out->entry = eh->entry;
		out->format = "multiboot ELF64";
	} else {
		FAIL("unknown ELF class %u", id->cls);
	}
	if (out->entry >= vm->mem_size || out->entry >= 0x100000000ull)
		FAIL("entry point 0x%lx is outside guest RAM", out->entry);
	return build_info(vm, cmdline, out, err, errlen);
}
