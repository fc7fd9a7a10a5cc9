/* The VM's clock (struct guest_clock, dev/device.h): the guest's TSC and the
 * time every timer device counts (PIT, ACPI PM timer, HPET, local APIC timer and
 * TSC deadline, RTC), one clock for all of them.
 *
 * Normally it is the host TSC plus an offset (the VMCB's or VMCS's TSC
 * offset): RDTSC does not exit. Linux calibrates its TSC by timing port
 * reads of the PIT and the PM timer with RDTSC and trusts the result only
 * if a read costs about a microsecond (arch/x86/kernel/tsc.c: the fast PIT
 * calibration wants the error of two reads below 1/2048 of at most 50 ms,
 * the slow one 1000 reads in 10 ms, the PM-timer reference three reads in
 * 0x20000 TSC ticks). A VM exit under QEMU's TCG costs 20-50 us, so every
 * calibration fails and Linux gives up its TSC. So, when the guest reads a
 * clock device again within CLOCK_POLL_GAP_MIN_NS..CLOCK_POLL_GAP_MAX_NS of its last read (it
 * polls a clock, and each read costs more than on a PC), the clock starts
 * polling: RDTSC and RDTSCP exit, and the guest's time advances by
 * CLOCK_POLL_STEP_NS per exit of the guest's (RDTSC, a port access, an
 * interrupt handler's EOI...) instead of the host's time, as if each exit
 * cost what a port read costs on hardware; host interrupts and interrupt
 * windows neither advance it nor end it. The guest's clocks still agree with
 * each other exactly; they fall behind the host's by the time hidden.
 * Polling ends after CLOCK_POLL_QUIET_EXITS exits in a row that access no
 * clock device (the guest went on to other work: RDTSCs count too), at a
 * HLT that waits, or when the guest made no exit for CLOCK_POLL_IDLE_NS of
 * host time (it computes, or waits for an interrupt in a loop that makes no
 * exit; 250 ms, because a host that stalls QEMU under load looks the same
 * and ending a calibration halfway fails it); then the offset takes over
 * from the guest's time at that point,
 * so the TSC never goes back. A few other exits in between keep it: Linux's
 * clocksource watchdog reads the PM timer, the TSC and the PM timer twice
 * with interrupts off, then takes the tick that waited, then tries again if
 * the first read took more than 100 us. The first read of a polling loop
 * still costs what the exit costs. On hardware, and under QEMU -icount or
 * Bochs, where exits are fast, polling never starts.
 *
 * Only a guest that times its clock reads with the TSC needs this (Linux's
 * calibrations read the TSC at every poll): a spell in whose first
 * CLOCK_POLL_PROBE_EXITS exits no RDTSC came ends, and polling does not
 * start again until the guest's clock reads are more than
 * CLOCK_POLL_GAP_MAX_NS apart (it stopped polling). A busy wait on the PM
 * timer alone (resetcheck's 5 ms window, forever mode=busy) then runs at
 * the host's speed: the probe's exits hide nothing (the offset goes back to
 * where it was before the spell), host stalls among them included.
 *
 * A guest that polls a clock for long (a busy wait of seconds) would see
 * its time crawl: the lag is bounded by CLOCK_POLL_MAX_LAG_MS, beyond which
 * polling stops (and does not start again) and the guest's time runs with
 * the host's. It never catches up: a jump forward would look to the guest
 * like a frozen machine (Linux, ticking from a one-shot timer, would lose
 * jiffies). Under TCG an exit costs 20-50 us (100 us and more on a loaded
 * host), so each millisecond the guest polls hides 20-100 ms: Linux's fast
 * PIT calibration (about 25 ms of PIT, 25,000 exits) hides 0.5-2.5 s, once,
 * at boot; the timers self-test hides 1.5-4 s. A 3 s cap was reached on a
 * loaded host (the self-test's later calibrations then failed), hence 10 s.
 * The cost: a guest that busy-waits on a clock device for a second, reading
 * the TSC as it goes, takes up to 11 s of host time. vm.timeout counts host time and is not affected.
 *
 * The guest's TSC, in all: host TSC + clock.offset (0 or less: what polling
 * hid, the VM's time; or vt while polling) + lapic.tsc_offset (the guest's
 * own IA32_TSC and IA32_TSC_ADJUST writes, vmm/exit_msr.c). The timer
 * devices count the VM's time, without the guest's offset, as a PC's PIT and
 * PM timer do not follow its TSC; the TSC deadline is compared in guest TSC.
 *
 * One vCPU per VM: several would need one polling state for all of them
 * (their TSCs must agree). */
#ifndef VMM_GUEST_CLOCK_H
#define VMM_GUEST_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define CLOCK_POLL_STEP_NS     1000u      /* guest time per exit while polling */
#define CLOCK_POLL_GAP_MIN_NS  2000u      /* reads closer than this: exits are fast */
#define CLOCK_POLL_GAP_MAX_NS  1000000u   /* reads further apart: not one polling loop */
#define CLOCK_POLL_IDLE_NS     250000000u /* no exit for this long (host time): polling ends */
#define CLOCK_POLL_QUIET_EXITS 32u        /* exits in a row with no clock device access */
#define CLOCK_POLL_MAX_LAG_MS  10000u     /* the guest's time at most this far behind */
#define CLOCK_POLL_PROBE_EXITS 16u        /* a spell with no RDTSC in this many exits ends */

struct vm;
struct vcpu;

/* The hypervisor's side of the clock (struct vm's clock_poll). */
struct clock_poll {
	uint64_t step;          /* CLOCK_POLL_STEP_NS in TSC ticks */
	uint64_t idle;          /* CLOCK_POLL_IDLE_NS in TSC ticks */
	uint64_t max_lag;       /* CLOCK_POLL_MAX_LAG_MS in TSC ticks */
	uint64_t gap_min, gap_span;  /* guest_clock's range when not polling */
	uint64_t last_exit;     /* host TSC of the last exit that kept polling */
	unsigned quiet;         /* exits since the last clock device access */
	unsigned probe;         /* exits of this polling spell, up to CLOCK_POLL_PROBE_EXITS */
	bool probe_rdtsc;       /* an RDTSC came in this spell */
	bool rdtsc_exit;        /* the current exit is an RDTSC */
	struct vm_timer idle_timer;
	/* statistics */
	uint64_t polls;         /* times polling started */
	uint64_t exits;         /* exits while polling */
	uint64_t rdtscs;        /* RDTSC/RDTSCP exits */
	uint64_t untimed;       /* spells ended for want of an RDTSC */
	uint64_t hidden;        /* TSC ticks of host time hidden in all, caught up or not */
	bool lag_capped;        /* polling stopped once at CLOCK_POLL_MAX_LAG_MS */
};

/* A new VM's clock: the host TSC, offset 0, not polling. Before the devices
 * are created (they keep dev_clock()'s pointer). */
void guest_clock_init(struct vm *vm);
/* Once per exit while polling, from exit_inject_interrupts (the light
 * path's hazard check and the heavy path both end there while polling:
 * polling keeps VCPU_PENDING_CLOCK set). */
void guest_clock_after_exit(struct vcpu *v);
/* vCPU v wrote IA32_TSC or IA32_TSC_ADJUST (its lapic.tsc_offset changed),
 * or its VMCB/VMCS was set up again (INIT and STARTUP, which keep the TSC):
 * its TSC offset follows. On v's CPU. */
void guest_clock_tsc_offset_changed(struct vcpu *v);
/* RDTSC or RDTSCP, which exit only while polling: EDX:EAX (and ECX) from
 * the VM's time plus the guest's own TSC offset. The caller moves RIP. */
void guest_clock_rdtsc(struct vcpu *v, bool rdtscp);
/* The guest halts (a HLT that waits): polling ends (its time must pass). */
void guest_clock_halt(struct vm *vm);
/* One line on what polling did in this VM (nothing if it never polled). */
void guest_clock_print_stats(struct vm *vm);

#endif
