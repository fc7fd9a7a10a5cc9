/* dev/acpi.c: every table's checksum and contents, the RSDP found by the
 * standard scan; dev/acpi_pm.c: PM1 registers and the S5 power-off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dev/acpi.h"
#include "dev/hpet.h"
#include "dev/acpi_pm.h"
#include "tests/unit/stubs.h"

#define MEM (1u << 20)   /* guest-physical 0 .. 1 MiB */
static uint8_t *mem;

static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t r32(const uint8_t *p) { return r16(p) | (uint32_t)r16(p + 2) << 16; }
static uint64_t r64(const uint8_t *p) { return r32(p) | (uint64_t)r32(p + 4) << 32; }

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	mem = calloc(1, MEM);
	assert_non_null(mem);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static uint64_t build(unsigned ncpus)
{
	struct acpi_config cfg = {
		.rsdp_gpa = ACPI_DEFAULT_RSDP_GPA,
		.tables_gpa = ACPI_DEFAULT_TABLES_GPA,
		.ncpus = ncpus,
		.ioapic_id = 0,
	};
	uint64_t rsdp = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	return rsdp;
}

/* The scan an OS does: "RSD PTR " on a 16-byte boundary in 0xE0000-0xFFFFF
 * with a valid checksum. */
static const uint8_t *find_rsdp(void)
{
	for (uint64_t a = 0xe0000; a < 0x100000; a += 16)
		if (!memcmp(mem + a, "RSD PTR ", 8) && acpi_checksum(mem + a, 20) == 0)
			return mem + a;
	return NULL;
}

/* A table at gpa with its signature and a valid checksum. */
static const uint8_t *table(uint64_t gpa, const char *sig)
{
	assert_true(gpa > 0 && gpa < MEM);
	const uint8_t *t = mem + gpa;
	assert_memory_equal(t, sig, 4);
	uint32_t len = r32(t + 4);
	assert_true(len >= 36 && gpa + len <= MEM);
	assert_int_equal(acpi_checksum(t, len), 0);
	return t;
}

static void test_rsdp_scan_and_roots(void **state)
{
	(void)state;
	uint64_t rsdp_gpa = build(1);
	const uint8_t *rsdp = find_rsdp();
	assert_non_null(rsdp);
	assert_int_equal(rsdp - mem, rsdp_gpa);
	assert_int_equal(rsdp_gpa, 0xf0000);
	assert_int_equal(rsdp[15], 2);                 /* revision */
	assert_int_equal(r32(rsdp + 20), 36);          /* length */
	assert_int_equal(acpi_checksum(rsdp, 36), 0);  /* extended checksum */

	const uint8_t *rsdt = table(r32(rsdp + 16), "RSDT");
	const uint8_t *xsdt = table(r64(rsdp + 24), "XSDT");
	assert_int_equal(r32(rsdt + 4), 36 + 3 * 4);
	assert_int_equal(r32(xsdt + 4), 36 + 3 * 8);
	/* both list FADT, MADT and HPET, at the same addresses */
	assert_int_equal(r32(rsdt + 36), r64(xsdt + 36));
	assert_int_equal(r32(rsdt + 40), r64(xsdt + 44));
	assert_int_equal(r32(rsdt + 44), r64(xsdt + 52));
	table(r32(rsdt + 36), "FACP");
	table(r32(rsdt + 40), "APIC");
	table(r32(rsdt + 44), "HPET");
	/* OEM fields */
	assert_memory_equal(rsdt + 10, "LPATH ", 6);
	assert_memory_equal(rsdp + 9, "LPATH ", 6);
}

/* IA-PC HPET 1.0a, 3.2.4: 56 bytes, the block ID the device's
 * capabilities give, its page in a SystemMemory GAS, number 0. */
static void test_hpet_table(void **state)
{
	(void)state;
	build(4);
	const uint8_t *rsdp = find_rsdp();
	const uint8_t *rsdt = table(r32(rsdp + 16), "RSDT");
	const uint8_t *h = table(r32(rsdt + 44), "HPET");
	assert_int_equal(r32(h + 4), 56);
	assert_int_equal(h[8], 1);                     /* revision */
	assert_int_equal(r32(h + 36), 0x8086a201u);    /* rev 1, 3 timers, 64-bit, legacy */
	assert_int_equal(r32(h + 36), HPET_CAP_LOW);
	assert_int_equal(h[40], 0);                    /* SystemMemory */
	assert_int_equal(r64(h + 44), 0xfed00000u);
	assert_int_equal(h[52], 0);                    /* HPET number */
	assert_int_equal(h[53] | h[54] << 8, HPET_MIN_TICK);
	assert_int_equal(h[55], 0);
	assert_true(r32(rsdt + 44) % 16 == 0);
}

static const uint8_t *fadt_of(void)
{
	const uint8_t *rsdp = find_rsdp();
	const uint8_t *xsdt = table(r64(rsdp + 24), "XSDT");
	return table(r64(xsdt + 36), "FACP");
}

static void test_fadt_facs_dsdt(void **state)
{
	(void)state;
	build(1);
	const uint8_t *f = fadt_of();
	assert_int_equal(r32(f + 4), 276);
	assert_int_equal(f[8], 6);                     /* revision */
	assert_int_equal(r16(f + 46), 9);              /* SCI_INT */
	assert_int_equal(r32(f + 48), 0);              /* no SMI_CMD */
	assert_int_equal(r32(f + 56), 0x600);          /* PM1a_EVT_BLK */
	assert_int_equal(r32(f + 64), 0x604);          /* PM1a_CNT_BLK */
	assert_int_equal(r32(f + 76), 0x608);          /* PM_TMR_BLK */
	assert_int_equal(f[88], 4);
	assert_int_equal(f[89], 2);
	assert_int_equal(f[91], 4);
	assert_int_equal(f[108], 0x32);                /* century */
	uint16_t boot_arch = r16(f + 109);
	assert_int_equal(boot_arch & 0x2, 0);          /* no 8042 */
	assert_int_equal(boot_arch & 0x20, 0);         /* CMOS RTC present */
	uint32_t flags = r32(f + 112);
	assert_int_equal(flags & (1u << 8), 0);        /* TMR_VAL_EXT: 24-bit */
	assert_int_equal(flags & (1u << 20), 0);       /* not HW-reduced */
	assert_true(flags & (1u << 10));               /* RESET_REG_SUP */
	assert_int_equal(f[116], 1);                   /* RESET_REG: SystemIO */
	assert_int_equal(r64(f + 120), 0x64);
	assert_int_equal(f[128], 0xfe);
	/* X_ fields: the same blocks as generic addresses in I/O space */
	assert_int_equal(f[148], 1);
	assert_int_equal(f[149], 32);
	assert_int_equal(r64(f + 152), 0x600);
	assert_int_equal(f[172], 1);
	assert_int_equal(f[173], 16);
	assert_int_equal(r64(f + 176), 0x604);
	assert_int_equal(f[208], 1);
	assert_int_equal(f[209], 32);
	assert_int_equal(r64(f + 212), 0x608);
	/* FACS: 64-byte aligned, no checksum; only the 32-bit pointer (with
	 * both, Linux installs it twice) */
	uint32_t facs = r32(f + 36);
	assert_int_equal(r64(f + 132), 0);
	assert_int_equal(facs & 63, 0);
	assert_memory_equal(mem + facs, "FACS", 4);
	assert_int_equal(r32(mem + facs + 4), 64);
	/* DSDT: the header and exactly the \_S5 package */
	uint32_t dsdt_gpa = r32(f + 40);
	assert_int_equal(r64(f + 140), dsdt_gpa);
	const uint8_t *dsdt = table(dsdt_gpa, "DSDT");
	assert_int_equal(r32(dsdt + 4), 36 + 15);
	static const uint8_t s5[15] = {
		0x08, 0x5c, 0x5f, 0x53, 0x35, 0x5f, 0x12, 0x08, 0x04,
		0x0a, 0x05, 0x0a, 0x05, 0x00, 0x00,
	};
	assert_memory_equal(dsdt + 36, s5, sizeof(s5));
	assert_memory_equal(acpi_s5_aml, s5, sizeof(s5));
}

/* The DSDT of a VM with a PCI function, found through the FADT. */
static const uint8_t *dsdt_of(uint64_t rsdp)
{
	const uint8_t *rsdt = table(r32(mem + rsdp + 16), "RSDT");
	const uint8_t *f = table(r32(rsdt + 36), "FACP");
	return table(r32(f + 40), "DSDT");
}

/* pci_root alone: \_SB.PCI0 (PNP0A03, _UID 0, _BBN 0) after \_S5, 36
 * bytes, and still three tables in the RSDT. The AML's package lengths are
 * checked by hand: each counts its own byte and everything after it in the
 * scope or device. */
static void test_dsdt_pci_root(void **state)
{
	(void)state;
	struct acpi_config cfg = { .rsdp_gpa = ACPI_DEFAULT_RSDP_GPA,
				   .tables_gpa = ACPI_DEFAULT_TABLES_GPA, .ncpus = 1,
				   .pci_root = true };
	uint64_t rsdp = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	const uint8_t *dsdt = dsdt_of(rsdp);
	assert_int_equal(r32(dsdt + 4), 36 + 15 + 36);
	static const uint8_t pci0[36] = {
		0x10, 0x23, 0x5c, '_', 'S', 'B', '_',                 /* Scope (\_SB), 35 bytes */
		0x5b, 0x82, 0x1b, 'P', 'C', 'I', '0',                 /* Device (PCI0), 27 bytes */
		0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x0a, 0x03, /* _HID EisaId ("PNP0A03") */
		0x08, '_', 'U', 'I', 'D', 0x00,
		0x08, '_', 'B', 'B', 'N', 0x00,
	};
	assert_memory_equal(dsdt + 36 + 15, pci0, sizeof(pci0));
	assert_int_equal(r32(table(r32(mem + rsdp + 16), "RSDT") + 4), 36 + 3 * 4);
}

/* What firmware_build gives a VM with a disk and a network device: the
 * _PRT (devices 3 and 4, INTA#, GSI form), the motherboard resource that
 * reserves the ECAM window, and the MCFG in both RSDT and XSDT. The AML is
 * compared byte by byte with a hand encoding (ACPI 6.4, 20.2): the scope's
 * PkgLength takes two bytes (108 = 0x6c: 0x4c, 0x06). */
static void test_dsdt_prt_and_mcfg(void **state)
{
	(void)state;
	struct acpi_config cfg = { .rsdp_gpa = ACPI_DEFAULT_RSDP_GPA,
				   .tables_gpa = ACPI_DEFAULT_TABLES_GPA, .ncpus = 2,
				   .pci_root = true, .ecam_gpa = 0xe0000000u, .nr_prt = 2,
				   .prt = { { 3, 11 }, { 4, 10 } } };
	uint64_t rsdp = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	static const uint8_t sb[109] = {
		0x10, 0x4c, 0x06, 0x5c, '_', 'S', 'B', '_',           /* Scope (\_SB), 108 bytes */
		0x5b, 0x82, 0x3b, 'P', 'C', 'I', '0',                 /* Device (PCI0), 59 bytes */
		0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x0a, 0x03,
		0x08, '_', 'U', 'I', 'D', 0x00,
		0x08, '_', 'B', 'B', 'N', 0x00,
		0x08, '_', 'P', 'R', 'T', 0x12, 0x1a, 0x02,           /* Name (_PRT, Package (2) */
		0x12, 0x0b, 0x04, 0x0c, 0xff, 0xff, 0x03, 0x00,       /* { 0x0003FFFF, */
		0x00, 0x00, 0x0a, 0x0b,                               /*   Zero, Zero, 11 } */
		0x12, 0x0b, 0x04, 0x0c, 0xff, 0xff, 0x04, 0x00,       /* { 0x0004FFFF, */
		0x00, 0x00, 0x0a, 0x0a,                               /*   Zero, Zero, 10 } */
		0x5b, 0x82, 0x26, 'E', 'C', 'A', 'M',                 /* Device (ECAM), 38 bytes */
		0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x0c, 0x02, /* EisaId ("PNP0C02") */
		0x08, '_', 'C', 'R', 'S', 0x11, 0x11, 0x0a, 0x0e,     /* Buffer (14) */
		0x86, 0x09, 0x00, 0x01,                               /* Memory32Fixed, ReadWrite */
		0x00, 0x00, 0x00, 0xe0, 0x00, 0x00, 0x10, 0x00,       /* 0xE0000000, 1 MiB */
		0x79, 0x00,                                           /* End Tag */
	};
	const uint8_t *dsdt = dsdt_of(rsdp);
	assert_int_equal(r32(dsdt + 4), 36 + 15 + sizeof(sb));
	assert_memory_equal(dsdt + 36 + 15, sb, sizeof(sb));
	uint8_t aml[ACPI_PCI_AML_MAX];
	assert_int_equal(acpi_pci_aml(aml, &cfg), sizeof(sb));

	/* the MCFG: fourth in both lists, 60 bytes, one allocation */
	const uint8_t *rsdt = table(r32(mem + rsdp + 16), "RSDT");
	const uint8_t *xsdt = table(r64(mem + rsdp + 24), "XSDT");
	assert_int_equal(r32(rsdt + 4), 36 + 4 * 4);
	assert_int_equal(r32(xsdt + 4), 36 + 4 * 8);
	assert_int_equal(r32(rsdt + 48), r64(xsdt + 60));
	const uint8_t *m = table(r32(rsdt + 48), "MCFG");
	assert_int_equal(r32(m + 4), 60);
	assert_int_equal(m[8], 1);                     /* revision */
	assert_int_equal(r64(m + 36), 0);              /* reserved */
	assert_int_equal(r64(m + 44), 0xe0000000u);    /* base */
	assert_int_equal(r16(m + 52), 0);              /* segment */
	assert_int_equal(m[54], 0);                    /* buses 0-0 */
	assert_int_equal(m[55], 0);
	assert_int_equal(r32(m + 56), 0);
	table(r32(rsdt + 36), "FACP");
	table(r32(rsdt + 40), "APIC");
	table(r32(rsdt + 44), "HPET");

	/* one device: one _PRT entry, every length one package smaller */
	cfg.nr_prt = 1;
	cfg.prt[0] = (struct acpi_pci_intx){ 4, 10 };
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	dsdt = dsdt_of(rsdp);
	assert_int_equal(r32(dsdt + 4), 36 + 15 + sizeof(sb) - 12);
	const uint8_t *a = dsdt + 36 + 15;
	assert_int_equal(a[1], 0x40 | ((108 - 12) & 15));
	assert_int_equal(a[2], (108 - 12) >> 4);
	assert_int_equal(a[10], 0x3b - 12);
	assert_memory_equal(a + 38, "_PRT\x12\x0e\x01\x12\x0b\x04\x0c\xff\xff\x04\x00", 14);
	/* no ECAM: no motherboard resource, no MCFG */
	cfg.ecam_gpa = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	dsdt = dsdt_of(rsdp);
	assert_int_equal(r32(dsdt + 4), 36 + 15 + sizeof(sb) - 12 - 40 - 1);
	assert_int_equal(r32(table(r32(mem + rsdp + 16), "RSDT") + 4), 36 + 3 * 4);
}

static void test_madt(void **state)
{
	(void)state;
	build(3);
	const uint8_t *rsdp = find_rsdp();
	const uint8_t *rsdt = table(r32(rsdp + 16), "RSDT");
	const uint8_t *m = table(r32(rsdt + 40), "APIC");
	uint32_t len = r32(m + 4);
	assert_int_equal(r32(m + 36), 0xfee00000u);
	assert_int_equal(r32(m + 40), 1);              /* PCAT_COMPAT */
	unsigned lapics = 0, ioapics = 0, isos = 0, nmis = 0;
	bool iso0 = false, iso9 = false;
	for (uint32_t off = 44; off < len;) {
		const uint8_t *e = m + off;
		assert_true(e[1] >= 2 && off + e[1] <= len);
		switch (e[0]) {
		case 0:
			assert_int_equal(e[1], 8);
			assert_int_equal(e[2], lapics);    /* UID */
			assert_int_equal(e[3], lapics);    /* APIC ID */
			assert_int_equal(r32(e + 4), 1);   /* enabled */
			lapics++;
			break;
		case 1:
			assert_int_equal(e[1], 12);
			assert_int_equal(e[2], 0);
			assert_int_equal(r32(e + 4), 0xfec00000u);
			assert_int_equal(r32(e + 8), 0);
			ioapics++;
			break;
		case 2:
			assert_int_equal(e[1], 10);
			assert_int_equal(e[2], 0);         /* ISA */
			if (e[3] == 0) {
				assert_int_equal(r32(e + 4), 2);
				assert_int_equal(r16(e + 8), 0);
				iso0 = true;
			} else if (e[3] == 9) {
				assert_int_equal(r32(e + 4), 9);
				assert_int_equal(r16(e + 8), 0x000d); /* level, active high */
				iso9 = true;
			}
			isos++;
			break;
		case 4:
			assert_int_equal(e[1], 6);
			assert_int_equal(e[2], 0xff);
			assert_int_equal(e[5], 1);         /* LINT1 */
			nmis++;
			break;
		default:
			fail_msg("unexpected MADT entry type %u", e[0]);
		}
		off += e[1];
	}
	assert_int_equal(lapics, 3);
	assert_int_equal(ioapics, 1);
	assert_int_equal(isos, 2);
	assert_true(iso0 && iso9);
	assert_int_equal(nmis, 1);
}

static void test_bad_configs(void **state)
{
	(void)state;
	uint64_t rsdp = 0;
	struct acpi_config cfg = { .rsdp_gpa = 0xf0000, .tables_gpa = 0xe0000, .ncpus = 1 };
	cfg.rsdp_gpa = 0xf0008;                          /* misaligned */
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.rsdp_gpa = 0xd0000;                          /* not where the scan looks */
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.rsdp_gpa = 0xe0400;                          /* inside the tables */
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.rsdp_gpa = 0xf0000;
	cfg.ncpus = 0;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.ncpus = 1;
	assert_int_equal(acpi_build(mem, 0x80000, MEM - 0x80000, &cfg, &rsdp), 0);
	assert_int_equal(acpi_build(mem, 0xe8000, 0x18000, &cfg, &rsdp), -1); /* tables outside */
	assert_int_equal(rsdp, 0xf0000);
	/* a buffer that starts at the BIOS area works */
	memset(mem, 0, MEM);
	assert_int_equal(acpi_build(mem, 0xe0000, 0x20000, &cfg, &rsdp), 0);
	assert_memory_equal(mem + 0x10000, "RSD PTR ", 8);
	/* PCI: a _PRT or an ECAM window needs the root bridge; at most
	 * ACPI_PCI_MAX_PRT entries; the window 1 MiB aligned, below 4 GiB */
	cfg.nr_prt = 1;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.nr_prt = 0;
	cfg.ecam_gpa = 0xe0000000u;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.pci_root = true;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	cfg.nr_prt = ACPI_PCI_MAX_PRT + 1;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.nr_prt = ACPI_PCI_MAX_PRT;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	cfg.ecam_gpa = 0xe0080000u;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
	cfg.ecam_gpa = 0xfff00000u;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), 0);
	cfg.ecam_gpa = 0x100000000ull;
	assert_int_equal(acpi_build(mem, 0, MEM, &cfg, &rsdp), -1);
}

static int pm_out(struct acpi_pm *pm, uint16_t port, uint64_t v, unsigned size)
{
	return acpi_pm_io(pm, port, &v, size, true);
}

static uint64_t pm_in(struct acpi_pm *pm, uint16_t port, unsigned size)
{
	uint64_t v = 0xdead;
	assert_int_equal(acpi_pm_io(pm, port, &v, size, false), IO_OK);
	return v;
}

static void test_pm1_power_off(void **state)
{
	(void)state;
	struct acpi_pm pm;
	acpi_pm_init(&pm, FAKE_HOST);
	/* heavy: it may end the VM */
	assert_true(stub_desc_range_is(&acpi_pm_desc, 0, 0x600, 6, acpi_pm_io, false));
	assert_true(acpi_pm_desc.init == acpi_pm_init);
	assert_int_equal(pm.sci_line.gsi, 9);           /* the FADT's SCI_INT */
	assert_int_equal(pm_in(&pm, 0x604, 2), 1);      /* SCI_EN: ACPI mode */
	/* Linux's acpi_hw_legacy_sleep: SLP_TYP first, then SLP_TYP | SLP_EN */
	assert_int_equal(pm_out(&pm, 0x604, 5u << 10 | 1, 2), IO_OK);
	assert_int_equal(stub_vm_end_calls, 0);
	assert_int_equal(pm_in(&pm, 0x604, 2), 5u << 10 | 1);
	assert_int_equal(pm_out(&pm, 0x604, 5u << 10 | 0x2000 | 1, 2), IO_VM_END);
	assert_int_equal(stub_vm_end_calls, 1);
	assert_int_equal(stub_vm_end_status, 0);
	assert_string_equal(stub_vm_end_why, "ACPI power-off");
	assert_ptr_equal(stub_vm_end_host, FAKE_HOST);

	/* another sleep type is ignored; SLP_EN reads 0 */
	stubs_reset();
	acpi_pm_init(&pm, FAKE_HOST);
	assert_int_equal(pm_out(&pm, 0x604, 1u << 10 | 0x2000, 2), IO_OK);
	assert_int_equal(stub_vm_end_calls, 0);
	assert_int_equal(pm_in(&pm, 0x604, 2) & 0x2000, 0);
	/* a byte write of the high half does it too (SLP_TYP 5, SLP_EN) */
	assert_int_equal(pm_out(&pm, 0x605, 0x34, 1), IO_VM_END);
	assert_int_equal(stub_vm_end_calls, 1);
	/* a 32-bit write at 0x604 reaches past the block harmlessly */
	stubs_reset();
	acpi_pm_init(&pm, FAKE_HOST);
	assert_int_equal(pm_out(&pm, 0x604, 0xffff0000u | 5u << 10 | 0x2000, 4), IO_VM_END);
}

static void test_pm1_status_enable_sci(void **state)
{
	(void)state;
	struct acpi_pm pm;
	acpi_pm_init(&pm, FAKE_HOST);
	pm_out(&pm, 0x602, 0xffff, 2);
	assert_int_equal(pm_in(&pm, 0x602, 2), PM1_EN_MASK);
	assert_int_equal(stub_irq_calls, 0);
	/* a status bit with its enable raises the SCI (IRQ 9)... */
	pm.sts = PM1_STS_PWRBTN;
	pm_out(&pm, 0x602, PM1_STS_PWRBTN, 2);
	assert_true(stub_irq_level[9]);
	/* a 32-bit read: status, then enable in the high half */
	assert_int_equal(pm_in(&pm, 0x600, 4), PM1_STS_PWRBTN | (uint64_t)PM1_STS_PWRBTN << 16);
	/* ...writing 1 clears it and lowers the SCI */
	pm_out(&pm, 0x600, 0x0001, 2);               /* another bit: no effect */
	assert_true(stub_irq_level[9]);
	pm_out(&pm, 0x600, PM1_STS_PWRBTN, 2);
	assert_int_equal(pm_in(&pm, 0x600, 2), 0);
	assert_false(stub_irq_level[9]);
	assert_int_equal(pm_in(&pm, 0x606, 2), 0xffff); /* past the block */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rsdp_scan_and_roots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fadt_facs_dsdt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hpet_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dsdt_pci_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dsdt_prt_and_mcfg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_madt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_configs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pm1_power_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pm1_status_enable_sci, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
