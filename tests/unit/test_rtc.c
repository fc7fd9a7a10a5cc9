/* dev/rtc.c: time registers (BCD, binary, 12/24 h), UIP, setting the clock,
 * CMOS RAM and memory-size bytes, the calendar. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/rtc.h"
#include "tests/unit/stubs.h"

#define HZ 1000000000ull
static struct rtc rtc;

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	stub_tsc_hz = HZ;
	stub_tsc = 5000;
	/* a Thursday, the last seconds of a leap day */
	stub_wall_clock = (struct rtc_time){ 2024, 2, 29, 23, 59, 58 };
	rtc_init(&rtc, FAKE_HOST);
	return 0;
}

static void wr(uint8_t index, uint8_t v)
{
	uint64_t d = index;
	assert_int_equal(rtc_io(&rtc, 0x70, &d, 1, true), IO_OK);
	d = v;
	assert_int_equal(rtc_io(&rtc, 0x71, &d, 1, true), IO_OK);
}

static uint8_t rd(uint8_t index)
{
	uint64_t d = index;
	assert_int_equal(rtc_io(&rtc, 0x70, &d, 1, true), IO_OK);
	d = 0xdead;
	assert_int_equal(rtc_io(&rtc, 0x71, &d, 1, false), IO_OK);
	assert_true(d <= 0xff);
	return (uint8_t)d;
}

static void test_range_and_status_registers(void **state)
{
	(void)state;
	assert_true(stub_desc_range_is(&rtc_desc, 0, 0x70, 2, rtc_io, true));
	assert_int_equal(rd(RTC_REG_A), 0x26);
	assert_int_equal(rd(RTC_REG_B), 0x02);
	assert_int_equal(rd(RTC_REG_C), 0x00);
	assert_int_equal(rd(RTC_REG_D), 0x80);   /* valid RAM, bit 6 clear */
	wr(RTC_REG_D, 0x00);
	assert_int_equal(rd(RTC_REG_D), 0x80);   /* read-only */
	/* index bit 7 is the NMI mask, not part of the index */
	uint64_t d = 0x80 | RTC_REG_D;
	rtc_io(&rtc, 0x70, &d, 1, true);
	assert_true(rtc.nmi_disabled);
	d = 0;
	rtc_io(&rtc, 0x71, &d, 1, false);
	assert_int_equal(d, 0x80);
	d = 0;
	rtc_io(&rtc, 0x70, &d, 1, false);
	assert_int_equal(d, 0xff);               /* the index port is write-only */
}

static void test_bcd_time_and_rollover(void **state)
{
	(void)state;
	assert_int_equal(rd(RTC_SECONDS), 0x58);
	assert_int_equal(rd(RTC_MINUTES), 0x59);
	assert_int_equal(rd(RTC_HOURS), 0x23);
	assert_int_equal(rd(RTC_DAY_OF_WEEK), 5);  /* Thursday (Sunday = 1) */
	assert_int_equal(rd(RTC_DAY_OF_MONTH), 0x29);
	assert_int_equal(rd(RTC_MONTH), 0x02);
	assert_int_equal(rd(RTC_YEAR), 0x24);
	assert_int_equal(rd(RTC_CENTURY), 0x20);
	stub_tsc = 5000 + 2 * HZ;                  /* two seconds later */
	assert_int_equal(rd(RTC_SECONDS), 0x00);
	assert_int_equal(rd(RTC_MINUTES), 0x00);
	assert_int_equal(rd(RTC_HOURS), 0x00);
	assert_int_equal(rd(RTC_DAY_OF_WEEK), 6);
	assert_int_equal(rd(RTC_DAY_OF_MONTH), 0x01);
	assert_int_equal(rd(RTC_MONTH), 0x03);
	assert_int_equal(rd(RTC_YEAR), 0x24);
	struct rtc_time t;
	rtc_now(&rtc, &t);
	assert_int_equal(t.year, 2024);
	assert_int_equal(t.month, 3);
	assert_int_equal(t.day, 1);
}

static void test_binary_and_12h(void **state)
{
	(void)state;
	wr(RTC_REG_B, RTC_B_24H | RTC_B_DM);
	assert_int_equal(rd(RTC_SECONDS), 58);
	assert_int_equal(rd(RTC_HOURS), 23);
	assert_int_equal(rd(RTC_YEAR), 24);
	assert_int_equal(rd(RTC_CENTURY), 20);
	wr(RTC_REG_B, 0x00);                        /* 12-hour BCD */
	assert_int_equal(rd(RTC_HOURS), 0x80 | 0x11); /* 11 PM */
	stub_tsc = 5000 + 2 * HZ;
	assert_int_equal(rd(RTC_HOURS), 0x12);      /* 12 AM */
	wr(RTC_REG_B, RTC_B_DM);                     /* 12-hour binary */
	stub_tsc = 5000 + 2 * HZ + 13 * 3600 * HZ;  /* 13:00 */
	assert_int_equal(rd(RTC_HOURS), 0x80 | 1);
}

static void test_uip(void **state)
{
	(void)state;
	uint64_t window = HZ * 244 / 1000000;
	stub_tsc = 5000 + HZ / 2;
	assert_int_equal(rd(RTC_REG_A) & RTC_A_UIP, 0);
	stub_tsc = 5000 + HZ - window - 1;
	assert_int_equal(rd(RTC_REG_A) & RTC_A_UIP, 0);
	stub_tsc = 5000 + HZ - window;
	assert_int_equal(rd(RTC_REG_A), 0x26 | RTC_A_UIP);
	stub_tsc = 5000 + HZ - 1;
	assert_int_equal(rd(RTC_REG_A) & RTC_A_UIP, RTC_A_UIP);
	stub_tsc = 5000 + HZ;
	assert_int_equal(rd(RTC_REG_A) & RTC_A_UIP, 0);
	/* UIP is read-only */
	wr(RTC_REG_A, 0xa6);
	stub_tsc = 5000 + HZ / 2;
	assert_int_equal(rd(RTC_REG_A), 0x26);
}

static void test_set_clock(void **state)
{
	(void)state;
	/* as Linux's mc146818_set_time: SET, write the registers, clear SET */
	wr(RTC_REG_B, RTC_B_SET | RTC_B_24H);
	stub_tsc += 10 * HZ;
	assert_int_equal(rd(RTC_SECONDS), 0x58);   /* frozen while SET */
	wr(RTC_SECONDS, 0x30);
	wr(RTC_MINUTES, 0x15);
	wr(RTC_HOURS, 0x08);
	wr(RTC_DAY_OF_MONTH, 0x31);
	wr(RTC_MONTH, 0x12);
	wr(RTC_YEAR, 0x99);
	wr(RTC_CENTURY, 0x19);
	assert_int_equal(rd(RTC_MINUTES), 0x15);
	wr(RTC_REG_B, RTC_B_24H);
	stub_tsc += 31 * HZ;
	assert_int_equal(rd(RTC_SECONDS), 0x01);
	assert_int_equal(rd(RTC_MINUTES), 0x16);
	assert_int_equal(rd(RTC_YEAR), 0x99);
	assert_int_equal(rd(RTC_CENTURY), 0x19);
	assert_int_equal(rd(RTC_DAY_OF_WEEK), 6);   /* 1999-12-31 was a Friday */
	/* without SET a write takes effect at once */
	wr(RTC_HOURS, 0x09);
	assert_int_equal(rd(RTC_HOURS), 0x09);
	assert_int_equal(rd(RTC_MINUTES), 0x16);
}

static void test_cmos_ram_and_memory(void **state)
{
	(void)state;
	wr(0x40, 0xa5);
	wr(0x7f, 0x5a);
	assert_int_equal(rd(0x40), 0xa5);
	assert_int_equal(rd(0x7f), 0x5a);
	/* 128 MiB below 4 GiB, 1 GiB above, 2 CPUs */
	rtc_set_memory(&rtc, 128ull << 20, 1ull << 30, 2);
	assert_int_equal(rd(0x15) | rd(0x16) << 8, 640);
	assert_int_equal(rd(0x17) | rd(0x18) << 8, 0xffff);   /* 127 MiB in KiB: capped */
	assert_int_equal(rd(0x30) | rd(0x31) << 8, 0xffff);
	assert_int_equal(rd(0x34) | rd(0x35) << 8, 0x0700);   /* 112 MiB / 64 KiB */
	assert_int_equal(rd(0x5b) | rd(0x5c) << 8 | rd(0x5d) << 16, 0x4000);
	assert_int_equal(rd(0x5f), 1);
	rtc_set_memory(&rtc, 32ull << 20, 0, 1);
	assert_int_equal(rd(0x17) | rd(0x18) << 8, 31 * 1024);
	assert_int_equal(rd(0x34) | rd(0x35) << 8, 0x100);
}

/* At init the memory bytes tell the VM's RAM and vCPUs (dev_ram_size,
 * dev_nr_vcpus). */
static void test_init_from_host(void **state)
{
	(void)state;
	stub_ram_size = 64ull << 20;
	stub_nr_vcpus = 4;
	rtc_init(&rtc, FAKE_HOST);
	assert_true(rtc_desc.init == rtc_init);
	assert_int_equal(rd(0x17) | rd(0x18) << 8, 63 * 1024);
	assert_int_equal(rd(0x34) | rd(0x35) << 8, 0x300);   /* 48 MiB / 64 KiB */
	assert_int_equal(rd(0x5f), 3);
}

static void test_calendar(void **state)
{
	(void)state;
	assert_int_equal(rtc_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(rtc_days_from_civil(2000, 3, 1), 11017);
	assert_int_equal(rtc_days_from_civil(1969, 12, 31), -1);
	for (int64_t z = -1000; z < 200000; z += 37) {
		int64_t y;
		unsigned m, d;
		rtc_civil_from_days(z, &y, &m, &d);
		assert_int_equal(rtc_days_from_civil(y, m, d), z);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_range_and_status_registers, setup),
		cmocka_unit_test_setup(test_bcd_time_and_rollover, setup),
		cmocka_unit_test_setup(test_binary_and_12h, setup),
		cmocka_unit_test_setup(test_uip, setup),
		cmocka_unit_test_setup(test_set_clock, setup),
		cmocka_unit_test_setup(test_cmos_ram_and_memory, setup),
		cmocka_unit_test_setup(test_init_from_host, setup),
		cmocka_unit_test_setup(test_calendar, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
