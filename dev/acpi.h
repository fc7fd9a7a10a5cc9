/* ACPI tables lightpath writes into guest memory for an unmodified OS:
 * RSDP (revision 2) in the BIOS area 0xE0000-0xFFFFF where the standard
 * scan finds it, RSDT and XSDT, FADT (revision 6), FACS, MADT, HPET and a
 * DSDT whose only object is \_S5 (what Linux needs to power off).
 *
 * The platform it describes (each value is one of this file's constants):
 *  - PM1a event block 0x600 (4 bytes: status, enable), PM1a control 0x604
 *    (2 bytes), PM timer 0x608 (24-bit), SCI on ISA IRQ 9, no SMI command
 *    port (the machine is always in ACPI mode), no GPE blocks;
 *  - reset register: SystemIO port 0x64, value 0xFE (the i8042's reset);
 *  - IAPC_BOOT_ARCH: legacy devices present, no 8042 (Linux then skips
 *    probing it), no VGA; CMOS RTC present (century at CMOS 0x32);
 *  - MADT: local APIC address 0xFEE00000, PCAT_COMPAT (8259s present), one
 *    local APIC per CPU (IDs 0..n-1), one I/O APIC at 0xFEC00000 with GSI
 *    base 0, interrupt source overrides IRQ0 -> GSI 2 (bus default
 *    polarity/trigger) and IRQ9 -> GSI 9 level, active high; LINT1 = NMI;
 *  - HPET (IA-PC HPET 1.0a): event timer block ID = the HPET's capabilities
 *    register's low half (dev/hpet.h), registers at 0xFED00000 (SystemMemory),
 *    HPET number 0, minimum tick HPET_MIN_TICK; RSDT and XSDT list FADT,
 *    MADT, HPET in that order;
 *  - FACS through FIRMWARE_CTRL only (X_FIRMWARE_CTRL = 0); DSDT through
 *    both DSDT and X_DSDT; the PM blocks through both the 32-bit and X_ fields;
 *  - DSDT: Name(\_S5, Package(){5, 5, 0, 0}): writing SLP_TYP 5 with SLP_EN
 *    to PM1a_CNT powers off (dev/acpi_pm.c).
 *
 * The AML of \_S5, byte by byte (ACPI 6.4, 20.2):
 *   08             NameOp
 *   5C 5F 53 35 5F RootChar '\' + NameSeg "_S5_"
 *   12             PackageOp
 *   08             PkgLength: 8 bytes, this one included, to the end
 *   04             NumElements
 *   0A 05          BytePrefix 5   SLP_TYPa
 *   0A 05          BytePrefix 5   SLP_TYPb
 *   00             ZeroOp         reserved
 *   00             ZeroOp         reserved */
#ifndef DEV_ACPI_H
#define DEV_ACPI_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/limits.h"

#define ACPI_PM1A_EVT_PORT   0x600u
#define ACPI_PM1A_CNT_PORT   0x604u
#define ACPI_PM_TMR_PORT     0x608u
#define ACPI_SCI_IRQ         9u
#define ACPI_S5_SLP_TYP      5u
#define ACPI_RESET_PORT      0x64u
#define ACPI_RESET_VALUE     0xfeu

#define ACPI_RSDP_SCAN_START 0xe0000ull
#define ACPI_RSDP_SCAN_END   0x100000ull

#define ACPI_MAX_CPUS        LP_MAX_CPUS

#define ACPI_S5_AML_LEN      15u
extern const uint8_t acpi_s5_aml[ACPI_S5_AML_LEN];
/* For a VM with a PCI function, the DSDT also gets, after \_S5:
 *   Scope (\_SB) {
 *     Device (PCI0) {                 a PCI host bridge: with ACPI an OS finds
 *       Name (_HID, EisaId ("PNP0A03"))   PCI root buses only in the namespace
 *       Name (_UID, Zero)
 *       Name (_BBN, Zero)              bus 0; no _CRS: the OS takes its
 *                                      default windows
 *       Name (_PRT, Package () {       INTx routing, GSI form (ACPI 6.4,
 *         Package () { 0x0003FFFF, Zero, Zero, 11 },   6.2.13): INTA# (pin 0)
 *         ...                          of each device listed to its GSI
 *       })                             (omitted with no entry)
 *     }
 *     Device (ECAM) {                  motherboard resources: the ECAM window
 *       Name (_HID, EisaId ("PNP0C02"))   reserved, which Linux wants before
 *       Name (_CRS, ResourceTemplate () {   it uses the MCFG's window
 *         Memory32Fixed (ReadWrite, ecam_gpa, 0x100000) })
 *     }                                (omitted with ecam_gpa 0)
 *   }
 * and the RSDT and XSDT list a fourth table, the MCFG (PCI Firmware 3.0,
 * 4.1.2): one allocation, ecam_gpa for segment 0, buses 0-0. A VM without
 * a PCI function keeps the tables above exactly. */
#define ACPI_PCI_MAX_PRT     4u
#define ACPI_ECAM_SIZE       0x100000u   /* bus 0 only */

struct acpi_pci_intx {
	uint8_t dev;            /* device number on bus 0 */
	uint8_t gsi;            /* where its INTA# goes */
};

struct acpi_config {
	uint64_t rsdp_gpa;      /* 16-byte aligned, within 0xE0000-0xFFFFF */
	uint64_t tables_gpa;    /* where the other tables go (64-byte aligned) */
	unsigned ncpus;         /* 1..ACPI_MAX_CPUS local APICs, IDs 0..ncpus-1 */
	uint8_t ioapic_id;
	bool pci_root;          /* the DSDT declares \_SB.PCI0 */
	/* with pci_root: */
	uint64_t ecam_gpa;      /* bus 0's ECAM window (below 4 GiB, 1 MiB aligned), 0: none */
	unsigned nr_prt;        /* _PRT entries, at most ACPI_PCI_MAX_PRT */
	struct acpi_pci_intx prt[ACPI_PCI_MAX_PRT];
};

/* The AML of \_SB above for cfg (pci_root set) into out (at least
 * ACPI_PCI_AML_MAX bytes); returns its length. */
#define ACPI_PCI_AML_MAX     160u
unsigned acpi_pci_aml(uint8_t *out, const struct acpi_config *cfg);

/* A sensible default: RSDP at 0xF0000, tables from 0xE0000, one CPU,
 * I/O APIC ID 0. The tables fit in ACPI_TABLES_MAX_SIZE (about 1.4 KiB
 * with 64 CPUs and PCI). */
#define ACPI_DEFAULT_RSDP_GPA   0xf0000ull
#define ACPI_DEFAULT_TABLES_GPA 0xe0000ull
#define ACPI_TABLES_MAX_SIZE    0x1000u

/* Writes the tables into guest memory: mem is the host view of guest-physical
 * [mem_gpa_base, mem_gpa_base + len), which must contain rsdp_gpa (36 bytes)
 * and tables_gpa (ACPI_TABLES_MAX_SIZE bytes), the two not overlapping.
 * Returns 0 and the RSDP's address in *rsdp_gpa, or -1 if the configuration
 * is invalid (nothing is written then). The area should be reserved in the
 * guest's memory map. */
int acpi_build(uint8_t *mem, uint64_t mem_gpa_base, size_t len, const struct acpi_config *cfg,
	       uint64_t *rsdp_gpa);

/* Sum of the bytes, mod 256 (0 for a table with a correct checksum). */
uint8_t acpi_checksum(const void *p, size_t len);

#endif
