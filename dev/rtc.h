/* MC146818 CMOS RTC at 0x70 (index, bit 7 = NMI disable) / 0x71 (data):
 * seconds..year (BCD or binary per register B's DM bit, 24- or 12-hour),
 * registers A (UIP), B, C, D (VRT: the battery is good) and 128 bytes of
 * CMOS RAM, with the century at 0x32 and the memory sizes at 0x15-0x18,
 * 0x30-0x31, 0x34-0x35 and 0x5b-0x5d as QEMU/SeaBIOS lay them out.
 *
 * Time is the wall-clock time given at init plus the TSC time elapsed since.
 * A guest may set the clock (SET bit in register B, write the registers,
 * clear SET). Update-in-progress reads 1 for the 244 us before each second
 * boundary. Alarm, periodic and update interrupts (IRQ8) are not raised;
 * register C reads 0. */
#ifndef DEV_RTC_H
#define DEV_RTC_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define RTC_BASE   0x70u
#define RTC_PORTS  2u

#define RTC_SECONDS       0x00
#define RTC_SECONDS_ALARM 0x01
#define RTC_MINUTES       0x02
#define RTC_MINUTES_ALARM 0x03
#define RTC_HOURS         0x04
#define RTC_HOURS_ALARM   0x05
#define RTC_DAY_OF_WEEK   0x06
#define RTC_DAY_OF_MONTH  0x07
#define RTC_MONTH         0x08
#define RTC_YEAR          0x09
#define RTC_REG_A         0x0a
#define RTC_REG_B         0x0b
#define RTC_REG_C         0x0c
#define RTC_REG_D         0x0d
#define RTC_CENTURY       0x32

#define RTC_A_UIP   0x80
#define RTC_B_SET   0x80
#define RTC_B_DM    0x04  /* 1 = binary, 0 = BCD */
#define RTC_B_24H   0x02
#define RTC_D_VRT   0x80
#define RTC_UIP_US  244u

struct rtc_time {
	uint16_t year;      /* e.g. 2025 */
	uint8_t month;      /* 1-12 */
	uint8_t day;        /* 1-31 */
	uint8_t hour, minute, second;
};

struct rtc {
	uint64_t tsc_hz;
	struct guest_clock *clock;
	int64_t base_secs;   /* seconds since 1970-01-01 at base_tsc (the VM's time) */
	uint64_t base_tsc;
	uint8_t index;
	bool nmi_disabled;   /* bit 7 of the last index write */
	uint8_t cmos[128];   /* RAM and the registers' stored values */
	bool time_regs_set;  /* SET: cmos[0..9] hold the guest's time */
};

/* The clock starts at the host's wall clock (dev_wall_clock, UTC) and runs
 * on the VM's (dev_clock); register B = 24-hour BCD (0x02), A = 0x26
 * (32.768 kHz, 1024 Hz rate), D = VRT; the memory-size bytes tell the
 * VM's RAM and vCPUs (rtc_set_memory). */
void rtc_init(void *dev, struct dev_host *h);

/* The CMOS memory-size bytes: base memory 640 KiB (0x15-0x16), KiB above
 * 1 MiB up to 64 MiB (0x17-0x18, 0x30-0x31), 64 KiB units above 16 MiB up
 * to 4 GiB (0x34-0x35), 64 KiB units above 4 GiB (0x5b-0x5d), CPU count - 1
 * (0x5f). */
void rtc_set_memory(struct rtc *rtc, uint64_t ram_below_4g, uint64_t ram_above_4g,
		    unsigned ncpus);

int rtc_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc rtc_desc;

/* The current time (what the guest's registers hold), for tests. */
void rtc_now(struct rtc *rtc, struct rtc_time *t);

/* Days since 1970-01-01 of a civil date, and back (proleptic Gregorian). */
int64_t rtc_days_from_civil(int64_t y, unsigned m, unsigned d);
void rtc_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

#endif
