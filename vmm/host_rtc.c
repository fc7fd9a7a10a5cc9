/* The host's wall clock, read from its CMOS RTC once per VM: the guest's
 * RTC starts there. */
#include "vmm/host_rtc.h"

#include "core/cpu.h"

static uint8_t host_cmos(uint8_t reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static unsigned bcd(uint8_t v, bool binary)
{
	return binary ? v : (v >> 4) * 10 + (v & 0xf);
}

void host_wall_clock(struct rtc_time *t)
{
	for (int tries = 0; tries < 1000000 && (host_cmos(0x0a) & 0x80); tries++)
		;   /* wait out an update in progress */
	bool binary = host_cmos(0x0b) & 0x04;
	t->second = (uint8_t)bcd(host_cmos(0x00), binary);
	t->minute = (uint8_t)bcd(host_cmos(0x02), binary);
	t->hour = (uint8_t)bcd(host_cmos(0x04) & 0x7f, binary);
	t->day = (uint8_t)bcd(host_cmos(0x07), binary);
	t->month = (uint8_t)bcd(host_cmos(0x08), binary);
	t->year = (uint16_t)(2000 + bcd(host_cmos(0x09), binary));
	if (!t->day || t->day > 31 || !t->month || t->month > 12 || t->hour > 23)
		*t = (struct rtc_time){ 2026, 1, 1, 0, 0, 0 };   /* no usable host RTC */
}
