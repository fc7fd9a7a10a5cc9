/* Finding the host's CPUs in the firmware's ACPI MADT (core/madt.h). */
#include "core/madt.h"

#include "lib/printf.h"
#include "lib/string.h"

#define SDT_HDR_LEN    36u     /* signature, length, revision, checksum, OEM fields */
#define MADT_HDR_LEN   44u     /* the SDT header, local APIC address, flags */
#define RSDP_V1_LEN    20u
#define RSDP_V2_LEN    36u
#define BDA_EBDA_SEG   0x40eu
#define EBDA_SCAN_LEN  1024u
#define BIOS_SCAN_START 0xe0000u
#define BIOS_SCAN_END   0x100000u
#define FADT_PM_TMR_BLK_OFF 76u
#define FADT_PM_TMR_LEN_OFF 91u

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint8_t sum8(const uint8_t *p, uint64_t n)
{
	uint8_t s = 0;
	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

static void add_cpu(struct madt_info *out, uint8_t type, uint32_t apic_id, uint32_t uid,
		    uint32_t flags)
{
	if (!(flags & MADT_FLAG_ENABLED)) {
		out->nr_not_enabled++;
		return;
	}
	if ((type == MADT_TYPE_LAPIC && apic_id == 0xff) || apic_id == 0xffffffffu) {
		out->nr_invalid_id++;
		return;
	}
	for (unsigned i = 0; i < out->nr_cpus; i++) {
		if (out->cpus[i].apic_id == apic_id) {
			out->nr_duplicate++;
			return;
		}
	}
	if (out->nr_cpus == MADT_MAX_CPUS) {
		out->nr_beyond++;
		return;
	}
	out->cpus[out->nr_cpus++] = (struct madt_cpu){ apic_id, uid, type };
}

int madt_parse(const uint8_t *t, uint64_t avail, struct madt_info *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (avail < MADT_HDR_LEN) {
		snprintf(err, errlen, "ACPI MADT: only %lu bytes, shorter than its %u-byte header",
			 (unsigned long)avail, MADT_HDR_LEN);
		return MADT_BAD;
	}
	if (memcmp(t, "APIC", 4) != 0) {
		snprintf(err, errlen, "ACPI MADT: signature is not 'APIC'");
		return MADT_BAD;
	}
	uint32_t len = get32(t + 4);
	if (len < MADT_HDR_LEN || len > avail || len > MADT_MAX_TABLE_LEN) {
		snprintf(err, errlen, "ACPI MADT: bad length %u (header %u, at most %lu)", len,
			 MADT_HDR_LEN, (unsigned long)(avail < MADT_MAX_TABLE_LEN ? avail
							: MADT_MAX_TABLE_LEN));
		return MADT_BAD;
	}
	if (sum8(t, len) != 0) {
		snprintf(err, errlen, "ACPI MADT: bad checksum (the %u bytes sum to 0x%x, not 0)", len,
			 sum8(t, len));
		return MADT_BAD;
	}
	out->lapic_base = get32(t + 36);
	for (uint32_t off = MADT_HDR_LEN; off < len;) {
		if (len - off < 2) {
			snprintf(err, errlen, "ACPI MADT: truncated entry at offset %u (1 byte left)", off);
			return MADT_BAD;
		}
		uint8_t type = t[off], elen = t[off + 1];
		if (elen < 2 || elen > len - off) {
			snprintf(err, errlen, "ACPI MADT: entry of type %u at offset %u has length %u "
				 "(%u bytes left in the table)", type, off, elen, len - off);
			return MADT_BAD;
		}
		const uint8_t *e = t + off;
		/* each type's fixed size, as ACPI 6.5 5.2.12 gives it; longer is
		 * allowed (a later revision may add fields), shorter is not */
		uint8_t need = type == MADT_TYPE_LAPIC ? 8 : type == MADT_TYPE_X2APIC ? 16
			     : type == MADT_TYPE_LAPIC_OVERRIDE ? 12 : 2;
		if (elen < need) {
			snprintf(err, errlen, "ACPI MADT: entry of type %u at offset %u has length %u, "
				 "less than its %u bytes", type, off, elen, need);
			return MADT_BAD;
		}
		if (type == MADT_TYPE_LAPIC)
			add_cpu(out, type, e[3], e[2], get32(e + 4));
		else if (type == MADT_TYPE_X2APIC)
			add_cpu(out, type, get32(e + 4), get32(e + 12), get32(e + 8));
		else if (type == MADT_TYPE_LAPIC_OVERRIDE)
			out->lapic_base = get64(e + 4);
		off += elen;
	}
	return MADT_OK;
}

/* The SDT at pa, checked: its header readable, the signature, a length that
 * covers the header and stays within MADT_MAX_TABLE_LEN, the checksum. */
static const uint8_t *map_sdt(madt_phys_fn *phys, void *ctx, uint64_t pa, const char *sig,
			      uint32_t *len, char *err, size_t errlen)
{
	const char *name = sig;
	if (memcmp(sig, "APIC", 4) == 0)
		name = "MADT";
	const uint8_t *h = phys(pa, SDT_HDR_LEN, ctx);
	if (!h) {
		snprintf(err, errlen, "ACPI %s at 0x%lx is not in readable memory", name,
			 (unsigned long)pa);
		return NULL;
	}
	if (memcmp(h, sig, 4) != 0)
		return NULL;      /* not this table: the caller goes on looking */
	*len = get32(h + 4);
	if (*len < SDT_HDR_LEN || *len > MADT_MAX_TABLE_LEN) {
		snprintf(err, errlen, "ACPI %s at 0x%lx: bad length %u", name, (unsigned long)pa, *len);
		return NULL;
	}
	const uint8_t *t = phys(pa, *len, ctx);
	if (!t) {
		snprintf(err, errlen, "ACPI %s at 0x%lx: its %u bytes are not in readable memory", name,
			 (unsigned long)pa, *len);
		return NULL;
	}
	if (sum8(t, *len) != 0) {
		snprintf(err, errlen, "ACPI %s at 0x%lx: bad checksum", name, (unsigned long)pa);
		return NULL;
	}
	return t;
}

static const uint8_t *scan_rsdp(madt_phys_fn *phys, void *ctx, uint64_t start, uint64_t end)
{
	const uint8_t *m = phys(start, end - start, ctx);
	if (!m)
		return NULL;
	for (uint64_t off = 0; off + RSDP_V1_LEN <= end - start; off += 16) {
		const uint8_t *r = m + off;
		if (memcmp(r, "RSD PTR ", 8) != 0 || sum8(r, RSDP_V1_LEN) != 0)
			continue;
		if (r[15] >= 2) {   /* ACPI 2.0+: the extended checksum covers 36 bytes */
			if (off + RSDP_V2_LEN > end - start || get32(r + 20) < RSDP_V2_LEN ||
			    sum8(r, RSDP_V2_LEN) != 0)
				continue;
		}
		return r;
	}
	return NULL;
}

/* The MADT among the entries of an RSDT (4-byte entries) or XSDT (8). */
static int find_in_sdt(madt_phys_fn *phys, void *ctx, uint64_t sdt_pa, bool xsdt,
		       struct madt_info *out, char *err, size_t errlen)
{
	const char *sig = xsdt ? "XSDT" : "RSDT";
	uint32_t len;
	err[0] = '\0';
	const uint8_t *sdt = map_sdt(phys, ctx, sdt_pa, sig, &len, err, errlen);
	if (!sdt) {
		if (!err[0])
			snprintf(err, errlen, "ACPI %s at 0x%lx: signature is not '%s'", sig,
				 (unsigned long)sdt_pa, sig);
		return MADT_BAD;
	}
	unsigned esize = xsdt ? 8 : 4;
	unsigned n = (len - SDT_HDR_LEN) / esize, unreadable = 0;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = sdt + SDT_HDR_LEN + i * esize;
		uint64_t pa = xsdt ? get64(e) : get32(e);
		uint32_t tlen;
		if (!phys(pa, SDT_HDR_LEN, ctx)) {   /* e.g. above 4 GiB: not the MADT we can use */
			unreadable++;
			continue;
		}
		err[0] = '\0';
		const uint8_t *t = map_sdt(phys, ctx, pa, "APIC", &tlen, err, errlen);
		if (!t) {
			if (err[0])
				return MADT_BAD;
			continue;     /* another table */
		}
		int rc = madt_parse(t, tlen, out, err, errlen);
		out->madt_pa = pa;
		return rc;
	}
	if (unreadable)
		snprintf(err, errlen, "no MADT in the ACPI %s (%u of its %u entries point outside "
			 "readable memory)", sig, unreadable, n);
	else
		snprintf(err, errlen, "no MADT in the ACPI %s", sig);
	return MADT_NONE;
}

static const uint8_t *find_rsdp(madt_phys_fn *phys, void *ctx)
{
	const uint8_t *rsdp = NULL;
	const uint8_t *bda = phys(BDA_EBDA_SEG, 2, ctx);
	if (bda) {
		uint64_t ebda = (uint64_t)(bda[0] | bda[1] << 8) << 4;
		if (ebda >= 0x400 && ebda < BIOS_SCAN_START)
			rsdp = scan_rsdp(phys, ctx, ebda, ebda + EBDA_SCAN_LEN);
	}
	if (!rsdp)
		rsdp = scan_rsdp(phys, ctx, BIOS_SCAN_START, BIOS_SCAN_END);
	return rsdp;
}

/* The FADT's PM_TMR_BLK among an RSDT's or XSDT's entries; 0 when none. */
static uint16_t pm_timer_in_sdt(madt_phys_fn *phys, void *ctx, uint64_t sdt_pa, bool xsdt)
{
	char err[8];
	uint32_t len;
	const uint8_t *sdt = map_sdt(phys, ctx, sdt_pa, xsdt ? "XSDT" : "RSDT", &len, err,
				     sizeof(err));
	if (!sdt)
		return 0;
	unsigned esize = xsdt ? 8 : 4;
	for (unsigned i = 0; i < (len - SDT_HDR_LEN) / esize; i++) {
		const uint8_t *e = sdt + SDT_HDR_LEN + i * esize;
		uint64_t pa = xsdt ? get64(e) : get32(e);
		uint32_t tlen;
		if (!phys(pa, SDT_HDR_LEN, ctx))
			continue;
		const uint8_t *t = map_sdt(phys, ctx, pa, "FACP", &tlen, err, sizeof(err));
		if (!t)
			continue;
		/* PM_TMR_BLK at 76, PM_TMR_LEN (4 for a timer that exists) at 91 */
		if (tlen < FADT_PM_TMR_LEN_OFF + 1 || t[FADT_PM_TMR_LEN_OFF] != 4)
			return 0;
		uint32_t port = get32(t + FADT_PM_TMR_BLK_OFF);
		return port && port <= 0xfffc ? (uint16_t)port : 0;
	}
	return 0;
}

uint16_t acpi_pm_timer_port(madt_phys_fn *phys, void *ctx)
{
	const uint8_t *rsdp = find_rsdp(phys, ctx);
	if (!rsdp)
		return 0;
	uint64_t xsdt = rsdp[15] >= 2 ? get64(rsdp + 24) : 0;
	uint16_t port = xsdt ? pm_timer_in_sdt(phys, ctx, xsdt, true) : 0;
	if (!port && get32(rsdp + 16))
		port = pm_timer_in_sdt(phys, ctx, get32(rsdp + 16), false);
	return port;
}

int madt_find(madt_phys_fn *phys, void *ctx, struct madt_info *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	const uint8_t *rsdp = find_rsdp(phys, ctx);
	if (!rsdp) {
		snprintf(err, errlen, "no ACPI RSDP in the EBDA or at 0xe0000-0xfffff");
		return MADT_NONE;
	}
	uint64_t xsdt = rsdp[15] >= 2 ? get64(rsdp + 24) : 0;
	uint32_t rsdt = get32(rsdp + 16);
	int rc = MADT_NONE;
	if (xsdt) {
		rc = find_in_sdt(phys, ctx, xsdt, true, out, err, errlen);
		if (rc == MADT_OK || !rsdt)
			return rc;
	}
	if (rsdt) {
		/* a bad XSDT's message is kept if the RSDT has no MADT either */
		char xerr[160];
		memcpy(xerr, err, errlen < sizeof(xerr) ? errlen : sizeof(xerr));
		xerr[sizeof(xerr) - 1] = '\0';
		int r2 = find_in_sdt(phys, ctx, rsdt, false, out, err, errlen);
		if (r2 != MADT_OK && xsdt && rc == MADT_BAD) {
			snprintf(err, errlen, "%s", xerr);
			return MADT_BAD;
		}
		return r2;
	}
	snprintf(err, errlen, "the ACPI RSDP names neither an RSDT nor an XSDT");
	return MADT_NONE;
}
