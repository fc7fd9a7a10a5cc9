/* The firmware's SMBIOS strings that say what machine this is: the BIOS
 * vendor and version (structure type 0) and the system's manufacturer and
 * product (type 1). The entry point is found as a legacy BIOS leaves it, on
 * a 16-byte boundary in 0xF0000-0xFFFFF ("_SM3_" or "_SM_"); a machine
 * booted by UEFI usually has it elsewhere, and then nothing is found. Read
 * as defensively as the ACPI tables (core/madt.h): checksums checked, every
 * structure and string bounded by the table's length, and through the same
 * kind of accessor, so tests/unit/test_smbios.c runs it on a buffer. */
#ifndef CORE_SMBIOS_H
#define CORE_SMBIOS_H

#include <stddef.h>
#include <stdint.h>

#include "core/madt.h"   /* madt_phys_fn */

#define SMBIOS_STR_MAX 48   /* longer strings are cut (NUL-terminated) */

struct smbios_ids {
	char bios_vendor[SMBIOS_STR_MAX];   /* type 0, string 1 */
	char bios_version[SMBIOS_STR_MAX];  /* type 0, string 2 */
	char sys_vendor[SMBIOS_STR_MAX];    /* type 1, string 1 */
	char sys_product[SMBIOS_STR_MAX];   /* type 1, string 2 */
};

/* Fills *out (empty strings for what is absent); 0 when an entry point and
 * its table were found and read, -1 otherwise (*out all empty). */
int smbios_read_ids(madt_phys_fn *phys, void *ctx, struct smbios_ids *out);

#endif
