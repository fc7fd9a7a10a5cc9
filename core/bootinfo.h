/* What the boot loader told us (multiboot v1 or v2), in one common form. */
#ifndef CORE_BOOTINFO_H
#define CORE_BOOTINFO_H

#include <stdint.h>

#define BOOT_MAX_MODULES 8
/* Modules beyond BOOT_MAX_MODULES are not run; the first this many are
 * remembered so that each can be reported by name. */
#define BOOT_MAX_IGNORED 32
#define BOOT_MAX_RAM     32

struct boot_module {
	uint64_t start, end;    /* physical, end exclusive */
	const char *cmdline;    /* "path args..." */
};

struct boot_range {
	uint64_t start, end;
};

struct boot_info {
	const char *cmdline;
	unsigned nr_modules;
	struct boot_module modules[BOOT_MAX_MODULES];
	unsigned nr_ignored;                 /* modules given beyond BOOT_MAX_MODULES */
	const char *ignored[BOOT_MAX_IGNORED]; /* their strings ("path args...") */
	unsigned nr_ram;
	struct boot_range ram[BOOT_MAX_RAM]; /* usable RAM from the memory map */
	uint64_t highest_used;               /* end of boot loader data we must keep */
};

/* Returns 0, or negative if magic is neither multiboot v1 nor v2. */
int bootinfo_parse(struct boot_info *bi, uint32_t magic, uint64_t info);

#endif
