/* The firmware part of the PC platform (vmm/firmware.h has the layout). */
#include "vmm/firmware.h"

#include "dev/acpi.h"
#include "dev/pci_host.h"
#include "lib/string.h"

const struct fw_region firmware_regions[] = {
	{ FW_BDA_GPA, FW_BDA_END, "the BIOS data area" },
	{ FW_EBDA_GPA, FW_EBDA_END, "the EBDA" },
	{ FW_EBDA_END, FW_HOLE_END, "the video and option-ROM hole (not RAM in the memory map)" },
	{ FW_BIOS_GPA, FW_HIGH_RAM_GPA, "the BIOS area with the ACPI tables" },
};
const unsigned firmware_nregions = sizeof(firmware_regions) / sizeof(firmware_regions[0]);

unsigned firmware_memory_map(uint64_t mem_size, struct e820_entry map[FW_MAP_ENTRIES])
{
	map[0] = (struct e820_entry){ 0, FW_EBDA_GPA, E820_RAM };
	map[1] = (struct e820_entry){ FW_EBDA_GPA, FW_EBDA_END - FW_EBDA_GPA, E820_RESERVED };
	map[2] = (struct e820_entry){ FW_BIOS_GPA, FW_HIGH_RAM_GPA - FW_BIOS_GPA, E820_RESERVED };
	map[3] = (struct e820_entry){ FW_HIGH_RAM_GPA, mem_size - FW_HIGH_RAM_GPA, E820_RAM };
	return FW_MAP_ENTRIES;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

int firmware_build(uint8_t *ram, uint64_t ram_size, unsigned ncpus, unsigned pci,
		       uint64_t *rsdp_gpa)
{
	if (ram_size < FW_HIGH_RAM_GPA)
		return -1;
	uint8_t *bda = ram + FW_BDA_GPA;
	memset(bda, 0, FW_BDA_END - FW_BDA_GPA);
	put16(bda + FW_BDA_COM1, FW_COM1_PORT);          /* COM2-4, LPT1-3 stay 0 */
	put16(bda + FW_BDA_EBDA_SEG, (uint16_t)(FW_EBDA_GPA >> 4));
	put16(bda + FW_BDA_EQUIPMENT, FW_EQUIPMENT);
	put16(bda + FW_BDA_BASE_MEM_KB, FW_BASE_MEM_KB);

	memset(ram + FW_EBDA_GPA, 0, FW_EBDA_END - FW_EBDA_GPA);
	ram[FW_EBDA_GPA] = (uint8_t)((FW_EBDA_END - FW_EBDA_GPA) >> 10);   /* size in KiB */

	struct acpi_config cfg = { .rsdp_gpa = ACPI_DEFAULT_RSDP_GPA,
				   .tables_gpa = ACPI_DEFAULT_TABLES_GPA, .ncpus = ncpus };
	if (pci & (FW_PCI_DISK | FW_PCI_NET)) {
		cfg.pci_root = true;
		cfg.ecam_gpa = PCI_ECAM_GPA;
		if (pci & FW_PCI_DISK)
			cfg.prt[cfg.nr_prt++] = (struct acpi_pci_intx){ FW_PCI_DISK_DEV, FW_PCI_DISK_GSI };
		if (pci & FW_PCI_NET)
			cfg.prt[cfg.nr_prt++] = (struct acpi_pci_intx){ FW_PCI_NET_DEV, FW_PCI_NET_GSI };
	}
	return acpi_build(ram + FW_BIOS_GPA, FW_BIOS_GPA, FW_HIGH_RAM_GPA - FW_BIOS_GPA, &cfg,
			  rsdp_gpa);
}

