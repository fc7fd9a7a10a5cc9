/* The firmware's SMBIOS identification strings (core/smbios.h). */
#include "core/smbios.h"

#include <stdbool.h>

#include "lib/string.h"

#define SCAN_START   0xf0000u
#define SCAN_END     0x100000u
#define EP2_LEN_MIN  0x1eu    /* "_SM_": 0x1f, some 2.1 firmware says 0x1e */
#define EP3_LEN_MIN  0x18u    /* "_SM3_" */
#define TABLE_MAX    (1u << 20)
#define TYPE_BIOS    0u
#define TYPE_SYSTEM  1u
#define TYPE_END     127u

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get32(const uint8_t *p)
{
	return get16(p) | get16(p + 2) << 16;
}

static uint8_t sum8(const uint8_t *p, uint64_t n)
{
	uint8_t s = 0;
	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

/* The structure table's address and length from a valid entry point at
 * `e` (`room` bytes readable there). */
static bool entry_point(const uint8_t *e, uint64_t room, uint64_t *pa, uint32_t *len)
{
	if (room >= EP3_LEN_MIN && memcmp(e, "_SM3_", 5) == 0) {
		uint8_t n = e[6];
		if (n < EP3_LEN_MIN || n > room || sum8(e, n) != 0)
			return false;
		*len = get32(e + 12);   /* the table's maximum size */
		*pa = get32(e + 16) | (uint64_t)get32(e + 20) << 32;
		return true;
	}
	if (room >= EP2_LEN_MIN && memcmp(e, "_SM_", 4) == 0) {
		uint8_t n = e[5];
		if (n < EP2_LEN_MIN || n > room || sum8(e, n) != 0 || memcmp(e + 16, "_DMI_", 5) != 0 ||
		    sum8(e + 16, 15) != 0)
			return false;
		*len = get16(e + 22);
		*pa = get32(e + 24);
		return true;
	}
	return false;
}

/* String `n` (from 1) of the string set s[0..end); cut to fit. */
static void take_string(const uint8_t *s, uint32_t end, uint8_t n, char *dst)
{
	dst[0] = '\0';
	if (!n)
		return;
	uint32_t i = 0;
	while (--n) {   /* skip n - 1 strings */
		while (i < end && s[i])
			i++;
		if (++i >= end)
			return;
	}
	size_t k = 0;
	while (i < end && s[i] && k < SMBIOS_STR_MAX - 1)
		dst[k++] = (char)s[i++];
	dst[k] = '\0';
}

int smbios_read_ids(madt_phys_fn *phys, void *ctx, struct smbios_ids *out)
{
	memset(out, 0, sizeof(*out));
	const uint8_t *seg = phys(SCAN_START, SCAN_END - SCAN_START, ctx);
	if (!seg)
		return -1;
	uint64_t pa = 0;
	uint32_t len = 0;
	bool found = false;
	for (uint32_t off = 0; off < SCAN_END - SCAN_START && !found; off += 16)
		found = entry_point(seg + off, SCAN_END - SCAN_START - off, &pa, &len);
	if (!found || len < 4 || len > TABLE_MAX)
		return -1;
	const uint8_t *t = phys(pa, len, ctx);
	if (!t)
		return -1;
	uint32_t off = 0;
	while (len - off >= 4) {
		uint8_t type = t[off], hlen = t[off + 1];
		if (hlen < 4 || hlen > len - off)
			break;
		/* the string set: NUL-terminated strings, then one more NUL */
		uint32_t s = off + hlen, end = s;
		while (end + 1 < len && (t[end] || t[end + 1]))
			end++;
		if (end + 1 >= len)
			break;
		end += 2;
		const uint8_t *f = t + off;
		if (type == TYPE_BIOS && hlen > 5) {
			take_string(t + s, end - s, f[4], out->bios_vendor);
			take_string(t + s, end - s, f[5], out->bios_version);
		} else if (type == TYPE_SYSTEM && hlen > 5) {
			take_string(t + s, end - s, f[4], out->sys_vendor);
			take_string(t + s, end - s, f[5], out->sys_product);
		} else if (type == TYPE_END) {
			break;
		}
		off = end;
	}
	return 0;
}
