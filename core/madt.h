/* The host's CPUs, from the firmware's ACPI tables: the RSDP found as on a
 * PC (the first KiB of the EBDA, then 0xE0000-0xFFFFF on 16-byte
 * boundaries), its XSDT (or RSDT), and the MADT ("APIC") it lists. Only the
 * processor entries are taken: local APIC (type 0) and local x2APIC
 * (type 9). The tables come from firmware, not from a guest, but they are
 * read defensively all the same: every length is checked against its
 * container before anything behind it is read, every checksum is checked,
 * and a bad table is refused with one line saying what is wrong.
 *
 * Memory is read only through a caller's accessor, so the same code runs in
 * lightpath (physical = virtual below 4 GiB) and in the host unit test
 * (tests/unit/test_madt.c, on a buffer). */
#ifndef CORE_MADT_H
#define CORE_MADT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"

/* The most CPUs lightpath takes (keep in step with core/smp.h). */
#define MADT_MAX_CPUS LP_MAX_CPUS
/* No table this code reads is longer: a MADT of 4096 x2APIC entries is 64 KiB. */
#define MADT_MAX_TABLE_LEN (1u << 20)

/* Returns a pointer to `len` readable bytes of physical memory at `pa`, or
 * NULL when [pa, pa + len) is not readable (out of range, wrapping). */
typedef const void *madt_phys_fn(uint64_t pa, uint64_t len, void *ctx);

#define MADT_TYPE_LAPIC   0u
#define MADT_TYPE_LAPIC_OVERRIDE 5u
#define MADT_TYPE_X2APIC  9u

#define MADT_FLAG_ENABLED        (1u << 0)
#define MADT_FLAG_ONLINE_CAPABLE (1u << 1)

struct madt_cpu {
	uint32_t apic_id;
	uint32_t uid;       /* the ACPI processor UID */
	uint8_t type;       /* MADT_TYPE_LAPIC or MADT_TYPE_X2APIC */
};

struct madt_info {
	uint64_t madt_pa;          /* where the MADT was found (0 for madt_parse alone) */
	uint64_t lapic_base;       /* from the header, or a type 5 override */
	unsigned nr_cpus;          /* enabled processors, in table order */
	struct madt_cpu cpus[MADT_MAX_CPUS];
	unsigned nr_not_enabled;   /* entries with the enabled flag clear (online-capable
				      ones included: hot-plug is not supported) */
	unsigned nr_beyond;        /* enabled processors past MADT_MAX_CPUS */
	unsigned nr_duplicate;     /* a second entry for an APIC ID already seen */
	unsigned nr_invalid_id;    /* APIC ID 0xff (type 0) or 0xffffffff (type 9) */
};

/* Results of madt_find / madt_parse. */
#define MADT_OK     0
#define MADT_NONE  (-1)   /* no RSDP, or no MADT listed: err says which */
#define MADT_BAD   (-2)   /* a table is malformed: err says how */

/* Parses the MADT at t, of which `avail` bytes are readable (the table's own
 * length must fit in them). Returns MADT_OK or MADT_BAD with one line (no
 * newline) in err. */
int madt_parse(const uint8_t *t, uint64_t avail, struct madt_info *out, char *err, size_t errlen);

/* Finds the RSDP (EBDA segment from the BDA at 0x40E, then the BIOS area),
 * then the MADT through the XSDT (revision 2 and a non-zero address) or the
 * RSDT, and parses it. */
int madt_find(madt_phys_fn *phys, void *ctx, struct madt_info *out, char *err, size_t errlen);

/* The host's ACPI PM timer port, from the FADT (FACP) the same RSDP lists
 * (PM_TMR_BLK, with PM_TMR_LEN 4); 0 when there is none or a table is bad.
 * core/tsc.c calibrates the TSC against it. */
uint16_t acpi_pm_timer_port(madt_phys_fn *phys, void *ctx);

#endif
