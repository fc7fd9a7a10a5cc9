#include "core/bootinfo.h"

#include "lib/string.h"

#define MB1_BOOT_MAGIC 0x2BADB002u
#define MB2_BOOT_MAGIC 0x36D76289u

struct mb1_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
	uint32_t mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr;
} __attribute__((packed));

struct mb1_module {
	uint32_t start, end, string, reserved;
};

struct mb_mmap_entry {   /* v1 entries are preceded by their size */
	uint64_t addr, len;
	uint32_t type;
} __attribute__((packed));

static void note_used(struct boot_info *bi, uint64_t end)
{
	if (end > bi->highest_used)
		bi->highest_used = end;
}

static void add_ram(struct boot_info *bi, uint64_t addr, uint64_t len, uint32_t type)
{
	if (type != 1 || bi->nr_ram == BOOT_MAX_RAM)
		return;
	bi->ram[bi->nr_ram].start = addr;
	bi->ram[bi->nr_ram].end = addr + len;
	bi->nr_ram++;
}

static void add_module(struct boot_info *bi, uint64_t start, uint64_t end, const char *cmd)
{
	note_used(bi, end);
	if (cmd)
		note_used(bi, (uint64_t)(uintptr_t)cmd + strlen(cmd) + 1);
	if (bi->nr_modules == BOOT_MAX_MODULES) {
		if (bi->nr_ignored < BOOT_MAX_IGNORED)
			bi->ignored[bi->nr_ignored] = cmd ? cmd : "";
		bi->nr_ignored++;
		return;
	}
	bi->modules[bi->nr_modules].start = start;
	bi->modules[bi->nr_modules].end = end;
	bi->modules[bi->nr_modules].cmdline = cmd ? cmd : "";
	bi->nr_modules++;
}

static void parse_mb1(struct boot_info *bi, const struct mb1_info *mi)
{
	note_used(bi, (uintptr_t)mi + sizeof(*mi));
	if (mi->flags & (1u << 2)) {
		bi->cmdline = (const char *)(uintptr_t)mi->cmdline;
		note_used(bi, mi->cmdline + strlen(bi->cmdline) + 1);
	}
	if (mi->flags & (1u << 3)) {
		const struct mb1_module *m = (const void *)(uintptr_t)mi->mods_addr;
		note_used(bi, mi->mods_addr + mi->mods_count * sizeof(*m));
		for (uint32_t i = 0; i < mi->mods_count; i++)
			add_module(bi, m[i].start, m[i].end,
				   m[i].string ? (const char *)(uintptr_t)m[i].string : 0);
	}
	if (mi->flags & (1u << 6)) {
		uint64_t p = mi->mmap_addr, end = p + mi->mmap_length;
		note_used(bi, end);
		while (p < end) {
			uint32_t size = *(const uint32_t *)(uintptr_t)p;
			const struct mb_mmap_entry *e = (const void *)(uintptr_t)(p + 4);
			add_ram(bi, e->addr, e->len, e->type);
			p += size + 4;
		}
	} else if (mi->flags & 1u) {
		add_ram(bi, 0x100000, (uint64_t)mi->mem_upper * 1024, 1);
	}
}

static void parse_mb2(struct boot_info *bi, uint64_t info)
{
	uint32_t total = *(const uint32_t *)(uintptr_t)info;
	note_used(bi, info + total);
	uint64_t p = info + 8;
	while (p + 8 <= info + total) {
		uint32_t type = *(const uint32_t *)(uintptr_t)p;
		uint32_t size = *(const uint32_t *)(uintptr_t)(p + 4);
		if (type == 0)
			break;
		if (type == 1) {                       /* command line */
			bi->cmdline = (const char *)(uintptr_t)(p + 8);
		} else if (type == 3) {                /* module */
			const uint32_t *m = (const uint32_t *)(uintptr_t)(p + 8);
			add_module(bi, m[0], m[1], (const char *)(uintptr_t)(p + 16));
		} else if (type == 6) {                /* memory map */
			uint32_t esize = *(const uint32_t *)(uintptr_t)(p + 8);
			for (uint64_t e = p + 16; esize && e + esize <= p + size; e += esize) {
				const struct mb_mmap_entry *me = (const void *)(uintptr_t)e;
				add_ram(bi, me->addr, me->len, me->type);
			}
		}
		p += (size + 7) & ~7u;
	}
}

int bootinfo_parse(struct boot_info *bi, uint32_t magic, uint64_t info)
{
	memset(bi, 0, sizeof(*bi));
	bi->cmdline = "";
	if (magic == MB1_BOOT_MAGIC)
		parse_mb1(bi, (const struct mb1_info *)(uintptr_t)info);
	else if (magic == MB2_BOOT_MAGIC)
		parse_mb2(bi, info);
	else
		return -1;
	return 0;
}
