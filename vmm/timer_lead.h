/* The timer lead (timer=lead, the default): a VM's timers run ahead of
 * their deadlines, so that the exit path's work lies before the deadline
 * and not between it and the guest's handler (KVM's lapic_timer_advance).
 *
 * The host timer for the VM's earliest device timer is programmed `lead`
 * ticks before it; at that exit vm_timers_run fires every device timer due
 * within the lead as if at its deadline (fire() gets the deadline as its
 * time) and notes the latest such deadline; the injection follows, and
 * before the vCPU enters, it waits until the VM's time has reached that
 * deadline (vm_timer_lead_wait). The guest runs again only after every
 * timer that fired is due, so it cannot see one fire early: from its side
 * the hypervisor's path took the time it always took, and the interrupt
 * came right at the deadline.
 *
 * Only in a VM of one vCPU (no other vCPU can read a device that fired
 * early while this one waits) and while the VM's time is the host's (while
 * the guest polls its clocks its time advances only at exits). The lead
 * adapts, as KVM's does: a timer that fired `late` past its deadline (the
 * host timer came later than the lead: a slow host interrupt, a long exit)
 * or a wait that found the deadline already passed by `late` lengthens it
 * by that and a margin, unless `late` exceeds the bound; a wait of more
 * than twice the margin shortens it by a quarter of the excess. It never
 * exceeds `max`, below half the shortest period vm_timers_run lets a timer
 * re-arm with, so that a timer re-armed by its early fire is never due
 * within the lead of the same run, and a guest cannot make a wait longer
 * than `max`. */
#ifndef VMM_TIMER_LEAD_H
#define VMM_TIMER_LEAD_H

#include <stdbool.h>
#include <stdint.h>

#define TIMER_LEAD_START_NS 1000u   /* where the lead starts */
#define TIMER_LEAD_MAX_NS   10000u  /* its bound: below TIMER_MIN_PERIOD_US / 2 */
#define TIMER_LEAD_MARGIN_NS 30u    /* what a wait aims to have to spare */

struct timer_lead {
	bool on;            /* timer=lead, one vCPU */
	uint64_t lead;      /* ticks of the VM's time */
	uint64_t programmed; /* the lead the host timer was last programmed with */
	uint64_t max, margin;
	uint64_t release;   /* the latest deadline fired early, not yet waited for (0: none) */
	/* what the VM's end reports */
	uint64_t early;     /* timers fired ahead of their deadline */
	uint64_t waits;     /* waits that had time to spare */
	uint64_t late;      /* waits that found the deadline passed */
	uint64_t missed;    /* timers that fired past their deadline */
	uint64_t waited;    /* ticks waited in all */
};

/* How far ahead of its deadline vm_timers_run may fire a device timer:
 * the lead the host timer was programmed with, or the current one, if
 * longer. 0 when off. */
static inline uint64_t timer_lead_window(const struct timer_lead *l)
{
	if (!l->on)
		return 0;
	return l->lead > l->programmed ? l->lead : l->programmed;
}

/* A device timer due at `deadline` fired early. */
static inline void timer_lead_fired_early(struct timer_lead *l, uint64_t deadline)
{
	l->early++;
	if (deadline > l->release)
		l->release = deadline;
}

/* The lead, `more` ticks longer (at most max). Lateness beyond the bound
 * is not the path's doing (a vCPU that halted or waited on the heavy path
 * in between, a host timer far off): it changes nothing, as in KVM. */
static inline void timer_lead_lengthen(struct timer_lead *l, uint64_t more)
{
	if (more > l->max)
		return;
	uint64_t room = l->max - l->lead;
	l->lead = more + l->margin >= room ? l->max : l->lead + more + l->margin;
}

/* A device timer fired `late` ticks past its deadline, the lead on. */
static inline void timer_lead_fired_late(struct timer_lead *l, uint64_t late)
{
	l->missed++;
	timer_lead_lengthen(l, late);
}

/* The vCPU is about to enter at VM time `now`, with l->release set: how
 * many ticks it must wait (0: the deadline has passed), the lead adapted
 * to what this exit found. */
static inline uint64_t timer_lead_arrived(struct timer_lead *l, uint64_t now)
{
	uint64_t release = l->release;
	l->release = 0;
	if (now >= release) {
		l->late++;
		timer_lead_lengthen(l, now - release);
		return 0;
	}
	uint64_t spare = release - now;
	l->waits++;
	l->waited += spare;
	if (spare > 2 * l->margin) {
		uint64_t less = (spare - l->margin) / 4;
		l->lead = less > l->lead ? 0 : l->lead - less;
	}
	return spare;
}

#endif
