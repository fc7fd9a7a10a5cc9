/* The host's wall clock (vmm/host_rtc.c). */
#ifndef VMM_HOST_RTC_H
#define VMM_HOST_RTC_H

#include "dev/rtc.h"

/* Reads the host's CMOS RTC; 2026-01-01 00:00:00 when it has no usable time. */
void host_wall_clock(struct rtc_time *t);

#endif
