/* clockpoll64: a guest that polls its clocks forever (vmm/guest_clock.h;
 * docs/SECURITY.md, case 17).
 *
 * While a guest polls a clock device through slow exits, lightpath makes
 * RDTSC exit and advances the guest's time by a fixed step per exit
 * (vmm/guest_clock.h), so the guest's time falls behind the host's, up to a
 * cap. This guest polls the ACPI PM timer, PIT channel 2 (latched, as
 * Linux's calibration reads it) and RDTSC in a loop with interrupts off and
 * never stops by itself. What must hold:
 *  - the host's time limit (vm.timeout=, host time) still stops it: polling
 *    stalls neither lightpath nor the VMs after it;
 *  - its own clocks never go back, before, at and after the cap: every RDTSC
 *    at least the last one, the PM timer (24 bits, read far more often than
 *    it wraps) never stepping back (otherwise it prints the step and ends
 *    with status 1, which the test sees);
 *  - lightpath reports the cap in the VM's statistics ("(capped)").
 * The next VM must start with a fresh clock (the test runs the timers
 * self-test after it: its calibrations need the lag budget a new VM has).
 *
 *   mode=poll (default)  the loop above, forever */
#include "guests/rt/rt.h"

#define PM_MASK 0xffffffu
#define PIT_CH2 0x42
#define PIT_CMD 0x43
#define PORT61  0x61

int guest_main(void)
{
	cli();
	outb(PORT61, (uint8_t)((inb(PORT61) & ~0x02) | 0x01));   /* gate channel 2 on */
	outb(PIT_CMD, 0xb4);                                        /* channel 2, mode 2 */
	outb(PIT_CH2, 0xff);
	outb(PIT_CH2, 0xff);
	rt_printf("clockpoll64: polling the PM timer, PIT channel 2 and RDTSC with interrupts off, "
		  "forever\n");
	uint64_t last_tsc = rdtsc();
	uint32_t last_pm = inl(LP_PMTIMER_PORT) & PM_MASK;
	for (uint64_t i = 0;; i++) {
		uint32_t pm = inl(LP_PMTIMER_PORT) & PM_MASK;
		outb(PIT_CMD, 0x80);                                /* latch channel 2 */
		(void)inb(PIT_CH2);
		(void)inb(PIT_CH2);
		uint64_t t = rdtsc();
		/* backwards by more than half the PM timer's range: it went back */
		if (((pm - last_pm) & PM_MASK) > PM_MASK / 2) {
			rt_printf("clockpoll64: the PM timer went back from 0x%x to 0x%x after %llu "
				  "polls\n", last_pm, pm, (unsigned long long)i);
			return 1;
		}
		if (t < last_tsc) {
			rt_printf("clockpoll64: the TSC went back from %llu to %llu after %llu polls\n",
				  (unsigned long long)last_tsc, (unsigned long long)t,
				  (unsigned long long)i);
			return 1;
		}
		last_pm = pm;
		last_tsc = t;
	}
}
