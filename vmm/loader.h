/* Guest image loaders. */
#ifndef VMM_LOADER_H
#define VMM_LOADER_H

#include <stddef.h>
#include <stdint.h>

struct vm;

struct loaded_guest {
	uint64_t entry;
	uint32_t info_gpa;     /* multiboot information */
	const char *format;    /* "multiboot ELF32" / "multiboot ELF64" */
};

/* Loads a multiboot (v1) ELF kernel into guest RAM and builds its multiboot
 * information (memory map, command line). On error returns negative and
 * writes the reason into err. */
int load_multiboot_elf(struct vm *vm, const uint8_t *image, uint64_t size, const char *cmdline,
		       struct loaded_guest *out, char *err, size_t errlen);

#endif
