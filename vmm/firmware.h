/* What a PC's firmware leaves in memory before an OS starts, for every guest
 * (multiboot kernels and Linux alike): the memory map, the BIOS data area,
 * the EBDA and the ACPI tables (dev/acpi.h). lightpath has no BIOS code; it
 * writes these the way SeaBIOS leaves them under QEMU. Pure functions over a
 * guest-RAM buffer, testable on the host.
 *
 * Guest-physical layout below 1 MiB (inclusive ends):
 *   0x00000-0x003ff  real-mode IVT: not written (no BIOS to point at); RAM
 *   0x00400-0x004ff  BIOS data area (below); RAM in the memory map, as on a
 *                    PC, but filled by lightpath: no image may load there
 *   0x00500-0x9fbff  RAM
 *   0x9fc00-0x9ffff  EBDA, 1 KiB (its first byte: its size in KiB); reserved
 *   0xa0000-0xdffff  video memory and option ROMs on a PC: a hole in the map
 *   0xe0000-0xfffff  BIOS area: ACPI tables from 0xe0000, RSDP at 0xf0000;
 *                    reserved (E820 type 2), where an OS scans for the RSDP
 * RAM again from 1 MiB to the end of the VM's memory.
 *
 * The BIOS data area (word fields):
 *   0x400 COM1 base 0x3f8; 0x402-0x406 COM2-4: 0 (absent)
 *   0x408-0x40c LPT1-3: 0;  0x40e EBDA segment 0x9fc0
 *   0x410 equipment word: x87 present (bit 1), one serial port (bits 9-11)
 *   0x413 base memory in KiB: 639, where the EBDA starts (multiboot mem_lower) */
#ifndef VMM_FIRMWARE_H
#define VMM_FIRMWARE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "vmm/linux_boot.h"   /* struct e820_entry */

#define FW_BDA_GPA         0x400ull
#define FW_BDA_END         0x500ull
#define FW_EBDA_GPA        0x9fc00ull
#define FW_EBDA_END        0xa0000ull
#define FW_HOLE_END        0xe0000ull    /* the video/ROM hole: 0xa0000-0xdffff */
#define FW_BIOS_GPA        0xe0000ull
#define FW_HIGH_RAM_GPA    0x100000ull

#define FW_BDA_COM1        0x00
#define FW_BDA_EBDA_SEG    0x0e
#define FW_BDA_EQUIPMENT   0x10
#define FW_BDA_BASE_MEM_KB 0x13
#define FW_COM1_PORT       0x3f8u
#define FW_EQUIPMENT       0x0202u  /* x87 (bit 1), one serial port (bits 9-11 = 1) */
#define FW_BASE_MEM_KB     ((unsigned)(FW_EBDA_GPA >> 10))   /* 639 */

#define FW_MAP_ENTRIES     4u

/* A range of guest-physical memory lightpath fills or leaves out of RAM,
 * named for the line that refuses an image loading into it. */
struct fw_region {
	uint64_t start, end;     /* end exclusive */
	const char *what;
};

extern const struct fw_region firmware_regions[];
extern const unsigned firmware_nregions;

/* The guest's memory map for a VM of mem_size bytes (at least 2 MiB):
 * FW_MAP_ENTRIES entries, ascending. Both loaders give the guest this. */
unsigned firmware_memory_map(uint64_t mem_size, struct e820_entry map[FW_MAP_ENTRIES]);

/* The PCI functions a VM may have (vmm/pc_virtio.c places them: keep these
 * in step with its BLK_* and NET_*): the device number on bus 0 and the GSI
 * its INTA# is wired to, for the DSDT's _PRT. */
#define FW_PCI_DISK        (1u << 0)   /* virtio-blk, 00:03.0 */
#define FW_PCI_NET         (1u << 1)   /* virtio-net, 00:04.0 */
#define FW_PCI_DISK_DEV    3u
#define FW_PCI_DISK_GSI    11u
#define FW_PCI_NET_DEV     4u
#define FW_PCI_NET_GSI     10u

/* Writes the BIOS data area, the EBDA and the ACPI tables (the MADT with
 * ncpus local APICs, IDs 0..ncpus-1) into ram (guest-physical 0 .. ram_size,
 * at least 1 MiB). With PCI functions (`pci`: FW_PCI_* bits), the DSDT
 * declares the PCI root bridge with a _PRT entry for each of them and the
 * ECAM window (dev/pci_host.h) as a motherboard resource, and the MCFG
 * announces that window. Returns 0 and the RSDP's address in *rsdp_gpa, or
 * -1 if ram is too small. */
int firmware_build(uint8_t *ram, uint64_t ram_size, unsigned ncpus, unsigned pci,
		       uint64_t *rsdp_gpa);

#endif
