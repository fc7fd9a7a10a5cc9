/* The multiboot (v1) loader: an ELF32 or ELF64 kernel, its modules and its
 * multiboot information, written into guest RAM as GRUB and QEMU do. Pure:
 * works on a guest-RAM buffer (no struct vm), testable on the host.
 *
 * Where things go (guest-physical):
 *  - the kernel's segments at their physical addresses (p_paddr), anywhere
 *    in the VM's RAM except the ranges lightpath fills itself or leaves out
 *    of RAM (firmware_regions: the BIOS data area 0x400-0x4ff, the EBDA,
 *    the video/ROM hole and the BIOS area 0x9fc00-0xfffff); a segment that
 *    overlaps one, or lies beyond RAM, is refused with one line naming
 *    both ranges;
 *  - the multiboot information, memory map, module list and strings in one
 *    block on the first free pages from 0x9000 (where QEMU puts its
 *    multiboot information), or else from 0x1000;
 *  - each module page-aligned, in order, from the first page after the
 *    kernel's highest segment (as GRUB and QEMU do), or lower where the
 *    space above is too small.
 * Page 0 and everything the memory map does not call RAM are never used
 * for boot data. The memory map is firmware_memory_map()'s. */
#ifndef VMM_LOADER_H
#define VMM_LOADER_H

#include <stddef.h>
#include <stdint.h>

#define MB_BOOT_MAGIC     0x2BADB002u
#define MB_MAX_MODULES    9u      /* a description's initrd plus its modules = list */
#define MB_CMDLINE_MAX    4000u   /* characters of a command line or module string */
#define MB_MAX_SEGMENTS   32u     /* PT_LOAD program headers */
#define MB_INFO_PREFERRED 0x9000u
#define MB_LOW_LIMIT      0x1000u /* nothing of lightpath's in page 0 */

/* One module for the guest: its string (by convention "name args") and
 * its contents. */
struct mb_module {
	const char *string;
	const uint8_t *data;
	uint64_t size;
};

struct loaded_guest {
	uint64_t entry;
	uint32_t info_gpa;     /* the multiboot information, for EBX */
	const char *format;    /* "multiboot ELF32" / "multiboot ELF64" */
	uint64_t image_end;    /* end of the highest segment */
	unsigned nr_modules;
};

/* Loads the kernel image into ram (guest-physical 0 .. ram_size) and builds
 * its multiboot information with cmdline and the modules mods[0..nmods).
 * The firmware areas (vmm/firmware.h) are not written here. On error
 * returns -1 with one line in err; ram may have been partly written. */
int load_multiboot_elf(uint8_t *ram, uint64_t ram_size, const uint8_t *image, uint64_t size,
		       const char *cmdline, const struct mb_module *mods, unsigned nmods,
		       struct loaded_guest *out, char *err, size_t errlen);

#endif
