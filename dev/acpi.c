/* ACPI table builder: plain byte layouts (ACPI 6.4), little-endian stores. */
#include "dev/acpi.h"

#include "dev/hpet.h"
#include "lib/string.h"

const uint8_t acpi_s5_aml[ACPI_S5_AML_LEN] = {
	0x08, 0x5c, '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0a, ACPI_S5_SLP_TYP,
	0x0a, ACPI_S5_SLP_TYP, 0x00, 0x00,
};

#define HDR_LEN   36u
#define FACS_LEN  64u
#define FADT_LEN  276u  /* revision 6 */
#define FADT_REV  6u
#define MADT_REV  3u
#define HPET_LEN  56u
#define HPET_REV  1u
#define MCFG_LEN  60u   /* one allocation */
#define MCFG_REV  1u
#define NTABLES   4u    /* at most, in the RSDT and XSDT: FADT, MADT, HPET, MCFG */

static void put8(uint8_t *p, unsigned off, uint8_t v) { p[off] = v; }
static void put16(uint8_t *p, unsigned off, uint16_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, unsigned off, uint32_t v)
{
	put16(p, off, (uint16_t)v);
	put16(p, off + 2, (uint16_t)(v >> 16));
}
static void put64(uint8_t *p, unsigned off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

/* AML (ACPI 6.4, 20.2), built inside out: each object's body in a buffer
 * of its own, then its opcode and PkgLength in front of it. */
struct aml {
	uint8_t b[ACPI_PCI_AML_MAX];
	unsigned n;
};

static void aml_bytes(struct aml *a, const void *p, unsigned n)
{
	if (n && a->n + n <= sizeof(a->b))   /* the objects below stay smaller */
		memcpy(a->b + a->n, p, n);
	a->n += n;
}

static void aml_byte(struct aml *a, uint8_t v)
{
	aml_bytes(a, &v, 1);
}

/* Name (seg, value) with value's bytes already encoded. */
static void aml_name(struct aml *a, const char seg[4], const void *val, unsigned n)
{
	aml_byte(a, 0x08);                    /* NameOp */
	aml_bytes(a, seg, 4);
	aml_bytes(a, val, n);
}

static void aml_dword(struct aml *a, uint32_t v)
{
	uint8_t d[5] = { 0x0c, (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	aml_bytes(a, d, 5);                   /* DWordPrefix */
}

/* The smallest encoding of an integer below 256. */
static void aml_small(struct aml *a, uint8_t v)
{
	if (v <= 1) {
		aml_byte(a, v);                   /* ZeroOp, OneOp */
	} else {
		aml_byte(a, 0x0a);                /* BytePrefix */
		aml_byte(a, v);
	}
}

/* op (1 or 2 bytes), PkgLength (which counts itself: 1 byte below 64,
 * else 2, bits 3:0 in the first, 11:4 in the second), the body. */
static void aml_pkg(struct aml *a, const uint8_t *op, unsigned oplen, const struct aml *body)
{
	aml_bytes(a, op, oplen);
	unsigned len = body->n + 1;
	if (len < 64) {
		aml_byte(a, (uint8_t)len);
	} else {
		len++;
		aml_byte(a, (uint8_t)(0x40 | (len & 15)));
		aml_byte(a, (uint8_t)(len >> 4));
	}
	aml_bytes(a, body->b, body->n);
}

/* The largest \\_SB: Scope's opcode and a 2-byte PkgLength, "\\_SB_";
 * Device (PCI0): opcode (2), PkgLength (2), "PCI0", _HID, _UID and _BBN
 * (22), _PRT's name (5), Package's opcode and PkgLength (3), its count and
 * ACPI_PCI_MAX_PRT entries of 12 bytes; Device (ECAM), 40 bytes. */
_Static_assert(3 + 5 + (4 + 4 + 22 + (5 + 3 + 1 + 12 * ACPI_PCI_MAX_PRT)) + 40 <= ACPI_PCI_AML_MAX,
	       "acpi_pci_aml's buffers hold the largest \\_SB");

static const uint8_t aml_package_op[1] = { 0x12 };
static const uint8_t aml_device_op[2] = { 0x5b, 0x82 };

unsigned acpi_pci_aml(uint8_t *out, const struct acpi_config *cfg)
{
	struct aml scope, pci0, prt, entry, ecam, crs;
	static const uint8_t hid_pci[5] = { 0x0c, 0x41, 0xd0, 0x0a, 0x03 };   /* EisaId ("PNP0A03") */
	static const uint8_t hid_mb[5] = { 0x0c, 0x41, 0xd0, 0x0c, 0x02 };    /* EisaId ("PNP0C02") */
	static const uint8_t zero[1] = { 0x00 };

	pci0.n = 0;
	aml_bytes(&pci0, "PCI0", 4);
	aml_name(&pci0, "_HID", hid_pci, sizeof(hid_pci));
	aml_name(&pci0, "_UID", zero, 1);
	aml_name(&pci0, "_BBN", zero, 1);
	if (cfg->nr_prt) {
		prt.n = 0;
		unsigned n = cfg->nr_prt < ACPI_PCI_MAX_PRT ? cfg->nr_prt : ACPI_PCI_MAX_PRT;
		aml_byte(&prt, (uint8_t)n);       /* NumElements */
		for (unsigned i = 0; i < n; i++) {
			entry.n = 0;
			aml_byte(&entry, 4);          /* NumElements */
			aml_dword(&entry, (uint32_t)cfg->prt[i].dev << 16 | 0xffff);   /* any function */
			aml_small(&entry, 0);         /* pin: INTA# */
			aml_small(&entry, 0);         /* source: none, a GSI */
			aml_small(&entry, cfg->prt[i].gsi);   /* source index: the GSI */
			aml_pkg(&prt, aml_package_op, 1, &entry);
		}
		aml_name(&pci0, "_PRT", 0, 0);
		aml_pkg(&pci0, aml_package_op, 1, &prt);
	}
	scope.n = 0;
	aml_bytes(&scope, "\\_SB_", 5);
	aml_pkg(&scope, aml_device_op, 2, &pci0);
	if (cfg->ecam_gpa) {
		crs.n = 0;
		aml_small(&crs, 14);              /* BufferSize */
		uint8_t res[14] = { 0x86, 9, 0, 1 };   /* Memory32Fixed, 9 bytes, read-write */
		put32(res, 4, (uint32_t)cfg->ecam_gpa);
		put32(res, 8, ACPI_ECAM_SIZE);
		res[12] = 0x79;                   /* End Tag, checksum 0: none */
		aml_bytes(&crs, res, sizeof(res));
		ecam.n = 0;
		aml_bytes(&ecam, "ECAM", 4);
		aml_name(&ecam, "_HID", hid_mb, sizeof(hid_mb));
		aml_name(&ecam, "_CRS", 0, 0);
		static const uint8_t buffer_op[1] = { 0x11 };
		aml_pkg(&ecam, buffer_op, 1, &crs);
		aml_pkg(&scope, aml_device_op, 2, &ecam);
	}
	struct aml *top = &pci0;              /* reused: Scope (\_SB) { ... } */
	top->n = 0;
	static const uint8_t scope_op[1] = { 0x10 };
	aml_pkg(top, scope_op, 1, &scope);
	memcpy(out, top->b, top->n);
	return top->n;
}

uint8_t acpi_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;
	while (len--)
		sum = (uint8_t)(sum + *b++);
	return sum;
}

static void fix_checksum(uint8_t *table, size_t len, unsigned field)
{
	table[field] = 0;
	table[field] = (uint8_t)-acpi_checksum(table, len);
}

/* The common 36-byte header; the checksum is filled in last. */
static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put32(t, 4, len);
	put8(t, 8, rev);
	memcpy(t + 10, "LPATH ", 6);          /* OEM ID */
	memcpy(t + 16, "LIGHTPTH", 8);        /* OEM table ID */
	put32(t, 24, 1);                      /* OEM revision */
	memcpy(t + 28, "LPTH", 4);            /* creator ID */
	put32(t, 32, 1);                      /* creator revision */
}

/* Generic Address Structure: SystemIO, `bits` wide, access size by width. */
static void gas_io(uint8_t *p, unsigned off, uint8_t bits, uint64_t port)
{
	put8(p, off, 1);                      /* address space: SystemIO */
	put8(p, off + 1, bits);
	put8(p, off + 2, 0);                  /* bit offset */
	put8(p, off + 3, bits == 8 ? 1 : bits == 16 ? 2 : 3); /* access size */
	put64(p, off + 4, port);
}

static unsigned align_up(unsigned v, unsigned a)
{
	return (v + a - 1) & ~(a - 1);
}

static void build_fadt(uint8_t *t, uint32_t facs, uint32_t dsdt)
{
	header(t, "FACP", FADT_LEN, FADT_REV);
	put32(t, 36, facs);                   /* FIRMWARE_CTRL */
	put32(t, 40, dsdt);                   /* DSDT */
	put8(t, 45, 0);                       /* preferred PM profile: unspecified */
	put16(t, 46, ACPI_SCI_IRQ);           /* SCI_INT */
	put32(t, 48, 0);                      /* SMI_CMD: none, always in ACPI mode */
	put32(t, 56, ACPI_PM1A_EVT_PORT);     /* PM1a_EVT_BLK */
	put32(t, 64, ACPI_PM1A_CNT_PORT);     /* PM1a_CNT_BLK */
	put32(t, 76, ACPI_PM_TMR_PORT);       /* PM_TMR_BLK */
	put8(t, 88, 4);                       /* PM1_EVT_LEN */
	put8(t, 89, 2);                       /* PM1_CNT_LEN */
	put8(t, 91, 4);                       /* PM_TMR_LEN */
	put16(t, 96, 0x0fff);                 /* P_LVL2_LAT > 100: no C2 */
	put16(t, 98, 0x0fff);                 /* P_LVL3_LAT > 1000: no C3 */
	put8(t, 108, 0x32);                   /* CENTURY: CMOS index */
	/* IAPC_BOOT_ARCH: LEGACY_DEVICES | VGA_NOT_PRESENT; no 8042 */
	put16(t, 109, (1u << 0) | (1u << 2));
	/* Flags: WBINVD, PROC_C1, PWR_BUTTON and SLP_BUTTON (none as fixed
	 * features), FIX_RTC, RESET_REG_SUP; TMR_VAL_EXT clear (24-bit timer) */
	put32(t, 112, (1u << 0) | (1u << 2) | (1u << 4) | (1u << 5) | (1u << 6) | (1u << 10));
	gas_io(t, 116, 8, ACPI_RESET_PORT);   /* RESET_REG */
	put8(t, 128, ACPI_RESET_VALUE);
	put8(t, 131, 0);                      /* FADT minor version: 6.0 */
	/* X_FIRMWARE_CTRL stays 0: with both set, Linux installs the FACS
	 * twice (QEMU sets only the 32-bit one too). */
	put64(t, 140, dsdt);                  /* X_DSDT */
	gas_io(t, 148, 32, ACPI_PM1A_EVT_PORT); /* X_PM1a_EVT_BLK */
	gas_io(t, 172, 16, ACPI_PM1A_CNT_PORT); /* X_PM1a_CNT_BLK */
	gas_io(t, 208, 32, ACPI_PM_TMR_PORT);   /* X_PM_TMR_BLK */
	memcpy(t + 268, "LPATH   ", 8);       /* hypervisor vendor identity */
	fix_checksum(t, FADT_LEN, 9);
}

static unsigned build_madt(uint8_t *t, const struct acpi_config *cfg)
{
	unsigned off = HDR_LEN;
	put32(t, off, 0xfee00000u);           /* local APIC address */
	put32(t, off + 4, 1);                 /* PCAT_COMPAT */
	off += 8;
	for (unsigned i = 0; i < cfg->ncpus; i++, off += 8) {
		put8(t, off, 0);                  /* processor local APIC */
		put8(t, off + 1, 8);
		put8(t, off + 2, (uint8_t)i);     /* ACPI processor UID */
		put8(t, off + 3, (uint8_t)i);     /* APIC ID */
		put32(t, off + 4, 1);             /* enabled */
	}
	put8(t, off, 1);                      /* I/O APIC */
	put8(t, off + 1, 12);
	put8(t, off + 2, cfg->ioapic_id);
	put8(t, off + 3, 0);
	put32(t, off + 4, 0xfec00000u);
	put32(t, off + 8, 0);                 /* GSI base */
	off += 12;
	static const struct { uint8_t irq; uint32_t gsi; uint16_t flags; } iso[2] = {
		{ 0, 2, 0x0000 },                 /* PIT: conforms to the ISA bus */
		{ ACPI_SCI_IRQ, ACPI_SCI_IRQ, 0x000d }, /* SCI: level, active high */
	};
	for (unsigned i = 0; i < 2; i++, off += 10) {
		put8(t, off, 2);                  /* interrupt source override */
		put8(t, off + 1, 10);
		put8(t, off + 2, 0);              /* bus: ISA */
		put8(t, off + 3, iso[i].irq);
		put32(t, off + 4, iso[i].gsi);
		put16(t, off + 8, iso[i].flags);
	}
	put8(t, off, 4);                      /* local APIC NMI */
	put8(t, off + 1, 6);
	put8(t, off + 2, 0xff);               /* all processors */
	put16(t, off + 3, 0);                 /* flags: bus default */
	put8(t, off + 5, 1);                  /* LINT1 */
	off += 6;
	header(t, "APIC", off, MADT_REV);
	fix_checksum(t, off, 9);
	return off;
}

/* PCI Firmware Specification 3.0, 4.1.2: one allocation, bus 0 only. */
static void build_mcfg(uint8_t *t, uint64_t ecam)
{
	header(t, "MCFG", MCFG_LEN, MCFG_REV);
	put64(t, 36, 0);                      /* reserved */
	put64(t, 44, ecam);                   /* base address */
	put16(t, 52, 0);                      /* PCI segment group */
	put8(t, 54, 0);                       /* start bus */
	put8(t, 55, 0);                       /* end bus */
	put32(t, 56, 0);                      /* reserved */
	fix_checksum(t, MCFG_LEN, 9);
}

/* IA-PC HPET 1.0a, 3.2.4: the event timer block's ID is its capabilities
 * register's low half; its registers are a 4 KiB page of memory. */
static void build_hpet(uint8_t *t)
{
	header(t, "HPET", HPET_LEN, HPET_REV);
	put32(t, 36, HPET_CAP_LOW);           /* event timer block ID */
	put8(t, 40, 0);                       /* base address: GAS, SystemMemory */
	put8(t, 41, 64);                      /* register width */
	put8(t, 42, 0);                       /* bit offset */
	put8(t, 43, 0);                       /* access size: undefined (32 or 64) */
	put64(t, 44, HPET_BASE);
	put8(t, 52, 0);                       /* HPET number */
	put16(t, 53, HPET_MIN_TICK);          /* minimum clock tick in periodic mode */
	put8(t, 55, 0);                       /* page protection: no guarantee */
	fix_checksum(t, HPET_LEN, 9);
}

int acpi_build(uint8_t *mem, uint64_t mem_gpa_base, size_t len, const struct acpi_config *cfg,
	       uint64_t *rsdp_gpa)
{
	uint64_t r = cfg->rsdp_gpa, tb = cfg->tables_gpa;
	if (cfg->ncpus < 1 || cfg->ncpus > ACPI_MAX_CPUS)
		return -1;
	if ((r & 15) || r < ACPI_RSDP_SCAN_START || r + 36 > ACPI_RSDP_SCAN_END)
		return -1;
	if ((tb & 63) || tb + ACPI_TABLES_MAX_SIZE > 0x100000000ull)
		return -1; /* the RSDT holds 32-bit addresses */
	if (r < mem_gpa_base || r + 36 > mem_gpa_base + len)
		return -1;
	if (tb < mem_gpa_base || tb + ACPI_TABLES_MAX_SIZE > mem_gpa_base + len)
		return -1;
	if (r + 36 > tb && tb + ACPI_TABLES_MAX_SIZE > r)
		return -1;
	if (cfg->nr_prt > ACPI_PCI_MAX_PRT || (!cfg->pci_root && (cfg->nr_prt || cfg->ecam_gpa)))
		return -1;
	if ((cfg->ecam_gpa & (ACPI_ECAM_SIZE - 1)) || cfg->ecam_gpa + ACPI_ECAM_SIZE > 0x100000000ull)
		return -1; /* Memory32Fixed: below 4 GiB */

	uint8_t *base = mem + (tb - mem_gpa_base);
	memset(base, 0, ACPI_TABLES_MAX_SIZE);
	unsigned off = 0;

	/* FACS first: it must be 64-byte aligned. No checksum. */
	uint32_t facs = (uint32_t)(tb + off);
	memcpy(base + off, "FACS", 4);
	put32(base + off, 4, FACS_LEN);
	put8(base + off, 32, 2);              /* version */
	off += FACS_LEN;

	uint32_t dsdt = (uint32_t)(tb + off);
	uint8_t *t = base + off;
	unsigned aml = ACPI_S5_AML_LEN;
	memcpy(t + HDR_LEN, acpi_s5_aml, ACPI_S5_AML_LEN);
	if (cfg->pci_root)
		aml += acpi_pci_aml(t + HDR_LEN + ACPI_S5_AML_LEN, cfg);
	header(t, "DSDT", HDR_LEN + aml, 2);
	fix_checksum(t, HDR_LEN + aml, 9);
	off = align_up(off + HDR_LEN + aml, 16);

	uint32_t fadt = (uint32_t)(tb + off);
	build_fadt(base + off, facs, dsdt);
	off = align_up(off + FADT_LEN, 16);

	uint32_t madt = (uint32_t)(tb + off);
	off = align_up(off + build_madt(base + off, cfg), 16);

	uint32_t hpet = (uint32_t)(tb + off);
	build_hpet(base + off);
	off = align_up(off + HPET_LEN, 16);

	uint32_t tables[NTABLES] = { fadt, madt, hpet };
	unsigned ntables = 3;
	if (cfg->ecam_gpa) {
		tables[ntables++] = (uint32_t)(tb + off);
		build_mcfg(base + off, cfg->ecam_gpa);
		off = align_up(off + MCFG_LEN, 16);
	}

	uint32_t rsdt = (uint32_t)(tb + off);
	t = base + off;
	header(t, "RSDT", HDR_LEN + ntables * 4, 1);
	for (unsigned i = 0; i < ntables; i++)
		put32(t, HDR_LEN + 4 * i, tables[i]);
	fix_checksum(t, HDR_LEN + ntables * 4, 9);
	off = align_up(off + HDR_LEN + ntables * 4, 16);

	uint64_t xsdt = tb + off;
	t = base + off;
	header(t, "XSDT", HDR_LEN + ntables * 8, 1);
	for (unsigned i = 0; i < ntables; i++)
		put64(t, HDR_LEN + 8 * i, tables[i]);
	fix_checksum(t, HDR_LEN + ntables * 8, 9);

	uint8_t *p = mem + (r - mem_gpa_base);
	memset(p, 0, 36);
	memcpy(p, "RSD PTR ", 8);
	memcpy(p + 9, "LPATH ", 6);
	put8(p, 15, 2);                       /* revision: ACPI 2.0+ */
	put32(p, 16, rsdt);
	put32(p, 20, 36);                     /* length */
	put64(p, 24, xsdt);
	fix_checksum(p, 20, 8);               /* ACPI 1.0 checksum: first 20 bytes */
	fix_checksum(p, 36, 32);              /* extended checksum: all 36 */
	*rsdp_gpa = r;
	return 0;
}
