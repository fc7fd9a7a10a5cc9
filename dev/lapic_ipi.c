/* Local APIC: interrupt messages on the VM's APIC bus: which APICs a
 * destination names, what a message does to its target (fixed, NMI, INIT,
 * STARTUP) and the IPIs an ICR write sends. The files of the model:
 * dev/lapic_internal.h. */
#include "dev/lapic_internal.h"

/* ---- destinations ---- */

bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical)
{
	if (lapic_x2apic(a)) {
		if (dest == 0xffffffffu)
			return true;
		if (!logical)
			return dest == a->id;
		return (dest >> 16) == (a->ldr >> 16) && (dest & a->ldr & 0xffff);
	}
	uint8_t d = (uint8_t)dest;
	if (d == 0xff)
		return true;
	if (!logical)
		return d == (uint8_t)a->id;
	uint8_t ldr = (uint8_t)(a->ldr >> 24);
	if ((a->dfr >> 28) == 0xf)      /* flat model */
		return d & ldr;
	/* cluster model: high nibble cluster, low nibble member mask */
	return (d >> 4) == (ldr >> 4) && (d & ldr & 0xf);
}

/* ---- IPIs: the message goes on the VM's APIC bus ---- */

void lapic_set_send_hook(struct lapic *a, lapic_send_fn fn, void *ctx)
{
	a->send_hook = fn;
	a->send_ctx = ctx;
}

bool lapic_msg_targets(const struct lapic *a, const struct lapic *from, const struct apic_msg *m)
{
	switch (m->shorthand) {
	case LAPIC_SH_SELF:
		return a == from;
	case LAPIC_SH_ALL:
		return true;
	case LAPIC_SH_OTHERS:
		return a != from;
	default:
		return lapic_match_dest(a, m->dest, m->logical);
	}
}

void lapic_msg_receive(struct lapic *a, const struct apic_msg *m)
{
	switch (m->delivery_mode) {
	case LAPIC_DM_FIXED:
	case LAPIC_DM_LOWEST:
		lapic_accept(a, m->vector, m->level);
		break;
	case LAPIC_DM_NMI:
		a->nmi_pending = true;
		break;
	case LAPIC_DM_INIT:
		if (a->apic_base & APIC_BASE_BSP)
			break;   /* see lapic.h: no firmware to restart */
		lapic_reset_registers(a);
		a->init_pending = a->wait_sipi = true;
		a->sipi_pending = false;
		break;
	case LAPIC_DM_SIPI:
		if (a->wait_sipi) {
			a->wait_sipi = false;
			a->sipi_pending = true;
			a->sipi_vector = m->vector;
		}
		break;
	default: /* SMI, ExtINT: see lapic.h */
		break;
	}
}

int64_t lapic_fixed_unicast_dest(const struct lapic *a, uint64_t icr)
{
	uint32_t lo = (uint32_t)icr;
	/* delivery mode, destination mode, trigger mode and shorthand all 0, a
	 * legal vector; in x2APIC mode no reserved bit (lapic_msr's #GP) */
	uint32_t must_be_0 = lapic_x2apic(a) ? 0xfff3bf00u : 0x000cbf00u;
	if (!lapic_hw_enabled(a) || (lo & must_be_0) || (uint8_t)lo < 16)
		return -1;
	if (lapic_x2apic(a))
		return (int64_t)(icr >> 32);
	uint8_t dest = (uint8_t)(a->icr_hi >> 24);
	return dest == 0xff ? -1 : dest;   /* 0xFF: the broadcast */
}

void lapic_icr_record(struct lapic *a, uint64_t icr)
{
	if (lapic_x2apic(a)) {
		a->icr_hi = (uint32_t)(icr >> 32);
		lapic_mirror(a, LAPIC_ICR_HI, a->icr_hi);
	}
	a->icr_lo = (uint32_t)icr & 0x000ccfffu;
	lapic_mirror(a, LAPIC_ICR_LO, a->icr_lo);
}

void lapic_send_ipi(struct lapic *a)
{
	uint32_t lo = a->icr_lo;
	struct apic_msg m = {
		.dest = lapic_x2apic(a) ? a->icr_hi : a->icr_hi >> 24,
		.vector = (uint8_t)lo,
		.delivery_mode = (uint8_t)((lo >> 8) & 7),
		.shorthand = (uint8_t)((lo >> 18) & 3),
		.logical = lo & (1u << 11),
		.level = false,   /* an IPI is never routed back to the I/O APIC */
	};
	/* INIT level de-assert (level-triggered, level 0): ignored by every
	 * CPU since the Pentium 4 (SDM vol. 3 11.6.1) */
	if (m.delivery_mode == LAPIC_DM_INIT && (lo & (1u << 15)) && !(lo & (1u << 14)))
		return;
	if ((m.delivery_mode == LAPIC_DM_FIXED || m.delivery_mode == LAPIC_DM_LOWEST) &&
	    m.vector < 16) {
		lapic_record_error(a, LAPIC_ESR_SEND_ILLEGAL);
		return;
	}
	if (a->send_hook)
		a->send_hook(a->send_ctx, a, &m);
	else if (lapic_msg_targets(a, a, &m))
		lapic_msg_receive(a, &m);
}

