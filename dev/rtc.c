/* MC146818 RTC and CMOS RAM, time from the TSC. */
#include "dev/rtc.h"

#include "dev/tick_math.h"
#include "lib/string.h"

/* Howard Hinnant's civil-calendar algorithms (public domain). */
int64_t rtc_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void rtc_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int64_t secs_from_time(const struct rtc_time *t)
{
	return rtc_days_from_civil(t->year, t->month, t->day) * 86400 +
	       t->hour * 3600 + t->minute * 60 + t->second;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void time_from_secs(int64_t s, struct rtc_time *t, unsigned *dow)
{
	int64_t days = floor_div(s, 86400), y;
	int64_t rem = s - days * 86400;
	unsigned m, d;
	rtc_civil_from_days(days, &y, &m, &d);
	t->year = (uint16_t)y;
	t->month = (uint8_t)m;
	t->day = (uint8_t)d;
	t->hour = (uint8_t)(rem / 3600);
	t->minute = (uint8_t)(rem / 60 % 60);
	t->second = (uint8_t)(rem % 60);
	if (dow) /* 1970-01-01 was a Thursday; the RTC counts Sunday = 1 */
		*dow = (unsigned)((days % 7 + 7 + 4) % 7) + 1;
}

void rtc_init(void *opaque, struct dev_host *h)
{
	struct rtc *rtc = opaque;
	struct rtc_time boot;
	dev_wall_clock(h, &boot);
	memset(rtc, 0, sizeof(*rtc));
	rtc->tsc_hz = platform_tsc_hz();
	if (!rtc->tsc_hz)
		rtc->tsc_hz = TICK_DEFAULT_TSC_HZ;
	rtc->clock = dev_clock(h);
	rtc->base_secs = secs_from_time(&boot);
	rtc->base_tsc = clock_now(rtc->clock);
	rtc->cmos[RTC_REG_A] = 0x26;
	rtc->cmos[RTC_REG_B] = RTC_B_24H;
	rtc->cmos[RTC_REG_D] = RTC_D_VRT;
	rtc_set_memory(rtc, dev_ram_size(h), 0, dev_nr_vcpus(h));   /* (RAM is below 4 GiB) */
}

void rtc_set_memory(struct rtc *rtc, uint64_t ram_below_4g, uint64_t ram_above_4g,
		    unsigned ncpus)
{
	uint8_t *c = rtc->cmos;
	c[0x15] = 0x80; /* 640 KiB */
	c[0x16] = 0x02;
	uint64_t ext = ram_below_4g > (1u << 20) ? (ram_below_4g >> 10) - 1024 : 0;
	if (ext > 0xffff)
		ext = 0xffff;
	c[0x17] = c[0x30] = (uint8_t)ext;
	c[0x18] = c[0x31] = (uint8_t)(ext >> 8);
	uint64_t above16 = ram_below_4g > (16u << 20) ? (ram_below_4g - (16u << 20)) >> 16 : 0;
	if (above16 > 0xffff)
		above16 = 0xffff;
	c[0x34] = (uint8_t)above16;
	c[0x35] = (uint8_t)(above16 >> 8);
	uint64_t high = ram_above_4g >> 16;
	c[0x5b] = (uint8_t)high;
	c[0x5c] = (uint8_t)(high >> 8);
	c[0x5d] = (uint8_t)(high >> 16);
	c[0x5f] = (uint8_t)(ncpus ? ncpus - 1 : 0);
}

const struct dev_desc rtc_desc = {
	.name = "cmos-rtc",
	DEV_RANGES({ .base = RTC_BASE, .len = RTC_PORTS, .fn = rtc_io, .light = true }),
	.init = rtc_init,
};

static int64_t now_secs(const struct rtc *rtc, uint64_t now, uint64_t *frac)
{
	uint64_t delta = now - rtc->base_tsc;
	if (frac)
		*frac = delta % rtc->tsc_hz;
	return rtc->base_secs + (int64_t)(delta / rtc->tsc_hz);
}

static bool binary(const struct rtc *rtc)
{
	return rtc->cmos[RTC_REG_B] & RTC_B_DM;
}

static uint8_t encode(const struct rtc *rtc, unsigned v)
{
	return binary(rtc) ? (uint8_t)v : (uint8_t)(((v / 10) << 4) | (v % 10));
}

static unsigned decode(const struct rtc *rtc, uint8_t v)
{
	return binary(rtc) ? v : (unsigned)(v >> 4) * 10 + (v & 0xf);
}

static uint8_t encode_hour(const struct rtc *rtc, unsigned h)
{
	if (rtc->cmos[RTC_REG_B] & RTC_B_24H)
		return encode(rtc, h);
	unsigned h12 = h % 12 ? h % 12 : 12;
	return (uint8_t)(encode(rtc, h12) | (h >= 12 ? 0x80 : 0));
}

static unsigned decode_hour(const struct rtc *rtc, uint8_t v)
{
	if (rtc->cmos[RTC_REG_B] & RTC_B_24H)
		return decode(rtc, v);
	unsigned h = decode(rtc, v & 0x7f) % 12;
	return (v & 0x80) ? h + 12 : h;
}

void rtc_now(struct rtc *rtc, struct rtc_time *t)
{
	time_from_secs(now_secs(rtc, clock_now(rtc->clock), 0), t, 0);
}

/* Writes the time at `now` into the time registers, in the current format. */
static void snapshot(struct rtc *rtc, uint64_t now)
{
	struct rtc_time t;
	unsigned dow;
	time_from_secs(now_secs(rtc, now, 0), &t, &dow);
	rtc->cmos[RTC_SECONDS] = encode(rtc, t.second);
	rtc->cmos[RTC_MINUTES] = encode(rtc, t.minute);
	rtc->cmos[RTC_HOURS] = encode_hour(rtc, t.hour);
	rtc->cmos[RTC_DAY_OF_WEEK] = encode(rtc, dow);
	rtc->cmos[RTC_DAY_OF_MONTH] = encode(rtc, t.day);
	rtc->cmos[RTC_MONTH] = encode(rtc, t.month);
	rtc->cmos[RTC_YEAR] = encode(rtc, t.year % 100);
	rtc->cmos[RTC_CENTURY] = encode(rtc, t.year / 100);
}

/* The clock continues from what the time registers say, from `now`. */
static void rebase(struct rtc *rtc, uint64_t now)
{
	struct rtc_time t = {
		.year = (uint16_t)(decode(rtc, rtc->cmos[RTC_CENTURY]) * 100 +
				   decode(rtc, rtc->cmos[RTC_YEAR])),
		.month = (uint8_t)decode(rtc, rtc->cmos[RTC_MONTH]),
		.day = (uint8_t)decode(rtc, rtc->cmos[RTC_DAY_OF_MONTH]),
		.hour = (uint8_t)decode_hour(rtc, rtc->cmos[RTC_HOURS]),
		.minute = (uint8_t)decode(rtc, rtc->cmos[RTC_MINUTES]),
		.second = (uint8_t)decode(rtc, rtc->cmos[RTC_SECONDS]),
	};
	if (t.month < 1 || t.month > 12)
		t.month = 1;
	if (t.day < 1 || t.day > 31)
		t.day = 1;
	rtc->base_secs = secs_from_time(&t);
	rtc->base_tsc = now;
}

static bool is_time_reg(unsigned i)
{
	return (i <= RTC_YEAR && i != RTC_SECONDS_ALARM && i != RTC_MINUTES_ALARM &&
		i != RTC_HOURS_ALARM) || i == RTC_CENTURY;
}

static uint8_t read_reg(struct rtc *rtc, unsigned i, uint64_t now)
{
	uint64_t frac;
	switch (i) {
	case RTC_REG_A:
		now_secs(rtc, now, &frac);
		/* UIP: an update of the time registers starts within 244 us. */
		if (!(rtc->cmos[RTC_REG_B] & RTC_B_SET) &&
		    frac >= rtc->tsc_hz - muldiv64(rtc->tsc_hz, RTC_UIP_US, 1000000))
			return rtc->cmos[RTC_REG_A] | RTC_A_UIP;
		return rtc->cmos[RTC_REG_A];
	case RTC_REG_C:
		return 0;    /* no interrupt flags: IRQ8 is not raised */
	case RTC_REG_D:
		return RTC_D_VRT;
	default:
		if (is_time_reg(i) && !rtc->time_regs_set)
			snapshot(rtc, now);
		return rtc->cmos[i];
	}
}

static void write_reg(struct rtc *rtc, unsigned i, uint8_t v, uint64_t now)
{
	switch (i) {
	case RTC_REG_A:
		rtc->cmos[i] = v & 0x7f; /* UIP is read-only */
		break;
	case RTC_REG_B:
		if ((v & RTC_B_SET) && !rtc->time_regs_set) {
			snapshot(rtc, now);  /* freeze the registers as they are */
			rtc->time_regs_set = true;
		}
		rtc->cmos[i] = (v & RTC_B_SET) ? (v & ~0x10) : v; /* SET clears UIE */
		if (!(v & RTC_B_SET) && rtc->time_regs_set) {
			rtc->time_regs_set = false;
			rebase(rtc, now);
		}
		break;
	case RTC_REG_C:
	case RTC_REG_D:
		break;       /* read-only */
	default:
		if (is_time_reg(i) && !rtc->time_regs_set) {
			/* Without SET the write takes effect at once. */
			snapshot(rtc, now);
			rtc->cmos[i] = v;
			rebase(rtc, now);
		} else {
			rtc->cmos[i] = v;
		}
		break;
	}
}

int rtc_io(void *opaque, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct rtc *rtc = opaque;
	/* reading the time or the update flag is reading a clock */
	bool clock_read = !is_write && addr + size > RTC_BASE + 1 &&
			  (is_time_reg(rtc->index) || rtc->index == RTC_REG_A);
	uint64_t now = clock_access(rtc->clock, clock_read), value = 0;

	for (unsigned i = 0; i < size; i++) {
		uint64_t off = addr + i - RTC_BASE;
		if (is_write) {
			uint8_t v = (uint8_t)(*data >> (8 * i));
			if (off == 0) {
				rtc->index = v & 0x7f;
				rtc->nmi_disabled = v & 0x80;
			} else if (off == 1) {
				write_reg(rtc, rtc->index, v, now);
			}
		} else {
			uint8_t b = off == 1 ? read_reg(rtc, rtc->index, now) : 0xff;
			value |= (uint64_t)b << (8 * i);
		}
	}
	if (!is_write)
		*data = value;
	return IO_OK;
}
