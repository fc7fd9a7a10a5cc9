/* timerfill: a VM of many vCPUs that arms every timer it has at once, then
 * ends (docs/SECURITY.md, case 28). Armed: each vCPU's local APIC timer
 * (one-shot, the longest count), the HPET's three comparators, the PIT's
 * channel 0 and the test timer (LP_HC_TIMER, 10 s); lightpath adds the
 * console's poll and, with a time limit, the limit's two: vCPUs + 8 in
 * all. A VM's list of armed timers once had 16 places, and a VM of 9 or
 * more vCPUs doing this panicked the hypervisor ("more than 16 timers
 * armed"). Flat 32-bit.
 *
 * The vCPU count is the RTC's CMOS byte 0x5f (vCPUs - 1, as QEMU's firmware
 * leaves it on a PC); vCPU i has APIC ID i. The APs are started one at a
 * time (INIT, 10 ms, STARTUP, 200 us, STARTUP: the SDM's sequence), each on
 * its own stack; each arms its timer and reports, then halts with
 * interrupts off: only the VM's end stops it. Prints one line and ends with
 * status 0, every timer still armed; status 1 if an AP did not report. */
#include "guests/rt/hpet.h"
#include "guests/rt/rt.h"

#ifdef __x86_64__
#error "timerfill is a flat 32-bit guest"
#endif

#define HPET         0xfed00000u
#define MAX_CPUS     64u
#define AP_STACK     4096u
#define AP_WAIT_MS   5000u       /* of PM time: an AP reports long before */

#define LAPIC_SVR    0x0f0u
#define LAPIC_ICR_LO 0x300u
#define LAPIC_ICR_HI 0x310u
#define LAPIC_LVT_TIMER 0x320u
#define LAPIC_TIMER_ICR 0x380u
#define LAPIC_TIMER_DCR 0x3e0u
#define ICR_BUSY     (1u << 12)
#define ICR_INIT     (5u << 8 | 1u << 14)
#define ICR_SIPI     (6u << 8 | 1u << 14 | RT_AP_SIPI_VECTOR)
#define VEC_TIMER    0x40u       /* never delivered: IF stays 0 */

#define PM_MASK      0xffffffu

static uint8_t ap_stacks[MAX_CPUS][AP_STACK] __attribute__((aligned(16)));
static volatile unsigned aps_armed;

static uint32_t pm_since(uint32_t t0)
{
	return (rt_pm_now() - t0) & PM_MASK;
}

static void pm_wait_us(uint32_t us)
{
	uint32_t t0 = rt_pm_now();
	while (pm_since(t0) < (uint32_t)((uint64_t)us * LP_PMTIMER_HZ / 1000000))
		asm volatile("pause");
}

static void apic_write(unsigned off, uint32_t v)
{
	*(volatile uint32_t *)(uintptr_t)(RT_LAPIC + off) = v;
}

static void ipi(uint32_t apic_id, uint32_t lo)
{
	while (*(volatile uint32_t *)(uintptr_t)(RT_LAPIC + LAPIC_ICR_LO) & ICR_BUSY)
		asm volatile("pause");
	apic_write(LAPIC_ICR_HI, apic_id << 24);
	apic_write(LAPIC_ICR_LO, lo);
}

/* This CPU's local APIC timer: one-shot, divide by 128, the largest count. */
static void arm_apic_timer(void)
{
	apic_write(LAPIC_SVR, 0x1ff);
	apic_write(LAPIC_TIMER_DCR, 0xa);
	apic_write(LAPIC_LVT_TIMER, VEC_TIMER);
	apic_write(LAPIC_TIMER_ICR, 0xffffffffu);
}

__attribute__((noreturn)) static void ap_main(void)
{
	arm_apic_timer();
	__atomic_fetch_add(&aps_armed, 1, __ATOMIC_RELEASE);
	for (;;)
		asm volatile("cli\n\thlt" ::: "memory");
}

static unsigned vcpus(void)
{
	outb(0x70, 0x5f);
	return (unsigned)inb(0x71) + 1;
}

/* Starts AP `id` and waits for its report; false if none came. */
static bool start_ap(unsigned id)
{
	unsigned before = __atomic_load_n(&aps_armed, __ATOMIC_ACQUIRE);
	rt_ap_set_stack(ap_stacks[id] + AP_STACK);
	ipi(id, ICR_INIT);
	pm_wait_us(10000);
	ipi(id, ICR_SIPI);
	pm_wait_us(200);
	ipi(id, ICR_SIPI);
	uint32_t t0 = rt_pm_now();
	while (__atomic_load_n(&aps_armed, __ATOMIC_ACQUIRE) == before) {
		if (pm_since(t0) > (uint32_t)((uint64_t)AP_WAIT_MS * (LP_PMTIMER_HZ / 1000)))
			return false;
		asm volatile("pause");
	}
	return true;   /* it runs on its stack now: the next AP may have the slot */
}

/* The HPET counting, its three comparators 100 s ahead (64-bit, interrupts
 * on, routed to the I/O APIC pin of their first route); the PIT's channel
 * 0 as a rate generator of the longest period. */
static void arm_devices(void)
{
	uint32_t routes = rt_hpet_read(HPET, HPET_TCFG(0) + 4);
	unsigned pin = routes ? (unsigned)__builtin_ctz(routes) : 2;
	rt_hpet_write(HPET, HPET_CONFIG, HPET_CFG_ENABLE);
	uint64_t due = rt_hpet_counter(HPET) + 10000000000ull;
	for (unsigned n = 0; n < 3; n++) {
		rt_hpet_write(HPET, HPET_TCFG(n), HPET_TN_INT_ENB | HPET_TN_ROUTE(pin));
		rt_hpet_write(HPET, HPET_TCMP(n), (uint32_t)due);
		rt_hpet_write(HPET, HPET_TCMP(n) + 4, (uint32_t)(due >> 32));
	}
	outb(0x43, 0x34);   /* channel 0, lobyte/hibyte, mode 2 */
	outb(0x40, 0);
	outb(0x40, 0);      /* 0: 65536 */
}

int guest_main(void)
{
	unsigned n = vcpus();
	if (n > MAX_CPUS)
		n = MAX_CPUS;
	rt_ap_install(ap_main);
	for (unsigned id = 1; id < n; id++) {
		if (!start_ap(id)) {
			rt_printf("timerfill: vCPU %u (APIC id %u) did not report within %u ms\n", id, id,
				  AP_WAIT_MS);
			return 1;
		}
	}
	arm_apic_timer();
	arm_devices();
	sreg_t r = lp_hypercall(LP_HC_TIMER, 10000000, 0xfe, 0, NULL, NULL);
	rt_printf("timerfill: %u vCPUs armed their local APIC timers; HPET x3, PIT and the test "
		  "timer (%s) armed: ending with all of them armed\n", n, r ? "refused" : "taken");
	return 0;
}
