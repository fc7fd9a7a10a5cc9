/* Loading a Linux bzImage by the x86 boot protocol's 64-bit entry
 * (Documentation/arch/x86/boot.rst), as pure functions over a guest-RAM
 * buffer: no struct vm, testable on the host.
 *
 * linux_boot_prepare() checks the setup header, copies the protected-mode
 * kernel to its load address, places the initrd and the command line,
 * builds the zero page (struct boot_params) with the e820 map, and builds
 * what the 64-bit entry needs: a GDT with the flat __BOOT_CS (0x10) and
 * __BOOT_DS (0x18) and identity-mapping page tables for the first 4 GiB
 * (2 MiB pages). The hypervisor then starts the vCPU in long mode with the
 * values in struct linux_boot_state.
 *
 * Guest-physical layout below 1 MiB (all in e820 RAM the kernel reclaims):
 *   0x1000 GDT   0x2000 PML4   0x3000 PDPT   0x4000-0x7fff four PDs
 *   0x8000 zero page   0x9000-0x1ffff stack (RSP = 0x20000)
 *   0x20000 command line (up to the header's cmdline_size)
 * The kernel goes at pref_address (16 MiB for x86-64 kernels), aligned to
 * kernel_alignment, with init_size bytes free from there for the
 * decompressor; the initrd as high as possible below initrd_addr_max (or
 * above it when XLF_CAN_BE_LOADED_ABOVE_4G allows and it would not fit). */
#ifndef VMM_LINUX_BOOT_H
#define VMM_LINUX_BOOT_H

#include <stddef.h>
#include <stdint.h>

#define E820_RAM       1u
#define E820_RESERVED  2u
#define E820_ACPI      3u
#define E820_NVS       4u
#define E820_MAX_ENTRIES 128u  /* what the zero page holds */

struct e820_entry {
	uint64_t addr, size;
	uint32_t type;
} __attribute__((packed));

/* Fixed guest-physical addresses of the boot structures. */
#define LINUX_GDT_GPA        0x1000ull
#define LINUX_PML4_GPA       0x2000ull
#define LINUX_PDPT_GPA       0x3000ull
#define LINUX_PD_GPA         0x4000ull  /* four of them */
#define LINUX_ZERO_PAGE_GPA  0x8000ull
#define LINUX_STACK_TOP      0x20000ull
#define LINUX_CMDLINE_GPA    0x20000ull
#define LINUX_LOW_END        0x30000ull /* RAM below this must be usable */

#define LINUX_BOOT_CS        0x10u
#define LINUX_BOOT_DS        0x18u

/* Setup-header offsets (in the image and in the zero page). */
#define LINUX_HDR_SETUP_SECTS      0x1f1
#define LINUX_HDR_BOOT_FLAG        0x1fe
#define LINUX_HDR_JUMP             0x200
#define LINUX_HDR_MAGIC            0x202
#define LINUX_HDR_VERSION          0x206
#define LINUX_HDR_VID_MODE         0x1fa
#define LINUX_HDR_TYPE_OF_LOADER   0x210
#define LINUX_HDR_LOADFLAGS        0x211
#define LINUX_HDR_CODE32_START     0x214
#define LINUX_HDR_RAMDISK_IMAGE    0x218
#define LINUX_HDR_RAMDISK_SIZE     0x21c
#define LINUX_HDR_CMD_LINE_PTR     0x228
#define LINUX_HDR_INITRD_ADDR_MAX  0x22c
#define LINUX_HDR_KERNEL_ALIGNMENT 0x230
#define LINUX_HDR_RELOCATABLE      0x234
#define LINUX_HDR_XLOADFLAGS       0x236
#define LINUX_HDR_CMDLINE_SIZE     0x238
#define LINUX_HDR_SETUP_DATA       0x250
#define LINUX_HDR_PREF_ADDRESS     0x258
#define LINUX_HDR_INIT_SIZE        0x260

/* Zero-page offsets outside the header. */
#define LINUX_BP_ACPI_RSDP_ADDR    0x070
#define LINUX_BP_EXT_RAMDISK_IMAGE 0x0c0
#define LINUX_BP_EXT_RAMDISK_SIZE  0x0c4
#define LINUX_BP_EXT_CMD_LINE_PTR  0x0c8
#define LINUX_BP_E820_ENTRIES      0x1e8
#define LINUX_BP_E820_TABLE        0x2d0

#define LINUX_LOADED_HIGH          0x01
#define LINUX_XLF_KERNEL_64        0x01
#define LINUX_XLF_CAN_BE_LOADED_ABOVE_4G 0x02

struct linux_boot_state {
	/* where things went */
	uint64_t kernel_gpa, kernel_size;   /* protected-mode kernel */
	uint64_t kernel_end;                /* kernel_gpa + init_size: kept free */
	uint64_t initrd_gpa, initrd_size;
	uint64_t cmdline_gpa;
	uint64_t zero_page_gpa;
	uint16_t version;                   /* boot protocol, e.g. 0x020f */
	/* the vCPU at the 64-bit entry */
	uint64_t rip;                       /* kernel_gpa + 0x200 */
	uint64_t rsi;                       /* zero page */
	uint64_t rsp;
	uint64_t cr0, cr3, cr4, efer;       /* long mode, paging on; the backend adds EFER.SVME */
	uint64_t rflags;                    /* 0x2: interrupts off */
	uint64_t gdt_base;
	uint16_t gdt_limit;
	uint16_t cs, ds;                    /* selectors: 0x10, 0x18 (DS = ES = SS) */
	uint64_t cs_desc, ds_desc;          /* the raw GDT descriptors */
};

/* Loads bzimage into ram (guest-physical 0..ram_size) as described above.
 * map/nmap is the guest's memory map (at most E820_MAX_ENTRIES), copied into
 * the zero page; the kernel, initrd and boot structures must lie in its RAM
 * (type 1) entries. cmdline may be 0 (empty); initrd may be 0. On error
 * returns -1 with one line in err, e.g. "not a bzImage (no HdrS magic at
 * 0x202)"; guest RAM may have been partly written then. */
int linux_boot_prepare(uint8_t *ram, uint64_t ram_size, const uint8_t *bzimage, uint64_t len,
		       const uint8_t *initrd, uint64_t initrd_len, const char *cmdline,
		       const struct e820_entry *map, unsigned nmap, struct linux_boot_state *out,
		       char *err, size_t errlen);

/* Records the ACPI RSDP's address in the zero page (boot_params.acpi_rsdp_addr,
 * protocol 2.14+), sparing the kernel the scan of 0xE0000-0xFFFFF. Returns
 * -1 for an older protocol (the scan still finds it). With any protocol, each
 * ECAM window an MCFG listed in the XSDT announces (the tables below
 * LINUX_ACPI_END, as vmm/firmware.c writes them for a VM with PCI) is added
 * to the e820 map as reserved, after the other entries: Linux takes an MCFG
 * window at boot only when the e820 reserves it (else only later, from an
 * ACPI motherboard resource, once its namespace is up). A VM without PCI has
 * no MCFG and keeps its map. */
#define LINUX_ACPI_END       0x100000ull
int linux_boot_set_rsdp(uint8_t *ram, const struct linux_boot_state *st, uint64_t rsdp_gpa);

/* Checks only the header (no RAM needed): 0, or -1 with the reason. */
int linux_boot_check(const uint8_t *bzimage, uint64_t len, char *err, size_t errlen);

#endif
