/* ACPI PM1a event and control registers (PIIX4-style block at 0x600):
 *   0x600 PM1_STS (16 bits, write 1 to clear), 0x602 PM1_EN (16 bits),
 *   0x604 PM1_CNT (16 bits): SCI_EN (bit 0, reads 1: always in ACPI mode),
 *   SLP_TYP (bits 12:10), SLP_EN (bit 13, write-only).
 * Writing SLP_EN with SLP_TYP = 5 (the DSDT's \_S5) ends the VM with status
 * 0 and "ACPI power-off" (IO_VM_END). Other sleep types are ignored (the
 * DSDT offers no other state). The SCI (ISA IRQ 9, level) is driven with
 * (PM1_STS & PM1_EN) != 0; no status bit is set by lightpath yet (no
 * power button, no PM timer overflow event). The PM timer at 0x608 is
 * dev/pmtimer.c. Any access size; bytes outside the six ports read 0xff. */
#ifndef DEV_ACPI_PM_H
#define DEV_ACPI_PM_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define ACPI_PM_BASE   0x600u
#define ACPI_PM_PORTS  6u

#define PM1_STS_TMR    0x0001u
#define PM1_STS_GBL    0x0020u
#define PM1_STS_PWRBTN 0x0100u
#define PM1_STS_SLPBTN 0x0200u
#define PM1_STS_RTC    0x0400u
#define PM1_STS_WAK    0x8000u
#define PM1_STS_MASK   0x8731u
#define PM1_EN_MASK    0x0721u

#define PM1_CNT_SCI_EN      0x0001u
#define PM1_CNT_SLP_TYP(v)  (((v) >> 10) & 7)
#define PM1_CNT_SLP_EN      0x2000u
#define PM1_CNT_RW_MASK     0x1c07u  /* SCI_EN, BM_RLD, GBL_RLS, SLP_TYP */

struct acpi_pm {
	struct dev_host *host;
	struct irq_line sci_line;
	uint16_t sts, en, cnt;
	bool sci;            /* SCI level last driven */
};

/* Its line is the SCI the FADT names (SCI_INT, ACPI_SCI_IRQ). */
void acpi_pm_init(void *dev, struct dev_host *h);
int acpi_pm_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc acpi_pm_desc;

#endif
