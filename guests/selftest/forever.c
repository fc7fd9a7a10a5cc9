/* forever: a guest that does not end by itself (docs/SECURITY.md, case 9), for the
 * time limit (`timeout =`, vm.timeout=) and the console key.
 *
 *   mode=spin     CLI, then a jump to itself: no VM exit at all, only the
 *                 host's timer interrupts it
 *   mode=sti-spin the same with interrupts enabled
 *   mode=hlt      STI; HLT in a loop with no interrupt source programmed:
 *                 nothing will ever wake it
 *   mode=cli-hlt  CLI; HLT: not even an interrupt could wake it
 *   mode=busy     reads the ACPI PM timer (a VM exit each time) for ms=N
 *                 milliseconds, then ends with status 0; ms=0 (the default)
 *                 never ends. With a limit longer than N it is the check that
 *                 a limit does not end a VM early. report=R (ms=0 only):
 *                 prints "forever: PM timer at N ms" every R ms of it, so a
 *                 test sees how much PM time the VM had when its limit
 *                 stopped it.
 *
 * It prints one line saying what it does, then does it. */
#include "guests/rt/rt.h"

#define PM_HZ   3579545u
#define PM_MASK 0xffffffu

static void busy(uint64_t ms, uint64_t report_ms)
{
	uint64_t need = (uint64_t)PM_HZ * ms / 1000, elapsed = 0;
	uint64_t step = (uint64_t)PM_HZ * report_ms / 1000, next = step;
	uint32_t last = inl(LP_PMTIMER_PORT) & PM_MASK;
	while (!ms || elapsed < need) {
		uint32_t now = inl(LP_PMTIMER_PORT) & PM_MASK;
		elapsed += (now - last) & PM_MASK;
		last = now;
		if (step && elapsed >= next) {
			rt_printf("forever: PM timer at %llu ms\n",
				  (unsigned long long)(elapsed * 1000 / PM_HZ));
			next += step;
		}
	}
}

int guest_main(void)
{
	char mode[16];
	if (!rt_arg("mode", mode, sizeof(mode)))
		memcpy(mode, "spin", 5);
	uint64_t ms = rt_arg_u64("ms", 0);

	if (!strcmp(mode, "busy") && ms) {
		rt_printf("forever: mode=busy, reading the PM timer for %llu ms\n", (unsigned long long)ms);
		busy(ms, 0);
		rt_printf("forever: done after %llu ms\n", (unsigned long long)ms);
		return 0;
	}
	rt_printf("forever: mode=%s, never ending by itself\n", mode);
	if (!strcmp(mode, "spin"))
		asm volatile("cli\n1:\tjmp 1b" ::: "memory");
	else if (!strcmp(mode, "sti-spin"))
		asm volatile("sti\n1:\tjmp 1b" ::: "memory");
	else if (!strcmp(mode, "hlt"))
		asm volatile("sti\n1:\thlt\n\tjmp 1b" ::: "memory");
	else if (!strcmp(mode, "cli-hlt"))
		asm volatile("cli\n1:\thlt\n\tjmp 1b" ::: "memory");
	else if (!strcmp(mode, "busy"))
		busy(0, rt_arg_u64("report", 0));
	rt_printf("forever: unknown mode '%s' (spin, sti-spin, hlt, cli-hlt, busy)\n", mode);
	return 2;
}
