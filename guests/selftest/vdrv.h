/* A virtio 1.x PCI driver's basics for the flat 32-bit self-tests
 * (virtio.c, virtionet.c): configuration space by mechanism #1, MMIO
 * accessors, the capability walk, the split ring's layout. */
#ifndef GUESTS_SELFTEST_VDRV_H
#define GUESTS_SELFTEST_VDRV_H

#include "guests/rt/rt.h"

/* common configuration */
#define C_DFSELECT 0x00
#define C_DF       0x04
#define C_GFSELECT 0x08
#define C_GF       0x0c
#define C_STATUS   0x14
#define C_QSELECT  0x16
#define C_QSIZE    0x18
#define C_QMSIX    0x1a
#define C_QENABLE  0x1c
#define C_QNOFF    0x1e
#define C_QDESC    0x20
#define C_QDRIVER  0x28
#define C_QDEVICE  0x30

struct desc { uint64_t addr; uint32_t len; uint16_t flags, next; };
struct used_elem { uint32_t id, len; };

/* A split queue of QSIZE entries in the guest's memory, as a driver keeps
 * it (QSIZE: the including file's, 8 by default). */
#ifndef QSIZE
#define QSIZE 8u
#endif
struct avail { uint16_t flags, idx, ring[QSIZE], used_event; };
struct used { uint16_t flags, idx; struct used_elem ring[QSIZE]; uint16_t avail_event; };
struct queue {
	struct desc desc[QSIZE] __attribute__((aligned(16)));
	struct avail avail __attribute__((aligned(2)));
	struct used used __attribute__((aligned(4)));
	uint16_t next_avail, seen_used;
};

/* Makes descriptor chain `d` available (the device sees it at its next
 * look: a doorbell, or a kick it asked for). */
static inline void vdrv_post(struct queue *q, uint16_t d)
{
	q->avail.ring[q->next_avail % QSIZE] = d;
	asm volatile("" ::: "memory");
	q->avail.idx = ++q->next_avail;
	asm volatile("" ::: "memory");
}

/* Where a function's structures are (vdrv_walk_caps). */
struct vdev {
	unsigned devfn;
	uintptr_t common, notify, isr, devcfg;
	unsigned notify_mult, msix_cap;
};

static inline uint32_t cfg_rd(unsigned devfn, unsigned off, unsigned size)
{
	outl(0xcf8, 0x80000000u | devfn << 8 | (off & 0xfc));
	if (size == 4)
		return inl(0xcfc);
	if (size == 2)
		return inw(0xcfc + (off & 2));
	return inb(0xcfc + (off & 3));
}

static inline void cfg_wr(unsigned devfn, unsigned off, unsigned size, uint32_t v)
{
	outl(0xcf8, 0x80000000u | devfn << 8 | (off & 0xfc));
	if (size == 4)
		outl(0xcfc, v);
	else if (size == 2)
		outw(0xcfc + (off & 2), (uint16_t)v);
	else
		outb(0xcfc + (off & 3), (uint8_t)v);
}

static inline uint8_t r8(uintptr_t a) { return *(volatile uint8_t *)a; }
static inline uint16_t r16(uintptr_t a) { return *(volatile uint16_t *)a; }
static inline uint32_t r32(uintptr_t a) { return *(volatile uint32_t *)a; }
static inline void w8(uintptr_t a, uint8_t v) { *(volatile uint8_t *)a = v; }
static inline void w16(uintptr_t a, uint16_t v) { *(volatile uint16_t *)a = v; }
static inline void w32(uintptr_t a, uint32_t v) { *(volatile uint32_t *)a = v; }

/* Finds the vendor capabilities (common, notify, ISR, device) and MSI-X of
 * d->devfn, its BAR 4 at bar4; false if one is missing. */
static inline bool vdrv_walk_caps(struct vdev *d, uintptr_t bar4)
{
	unsigned found = 0, fn = d->devfn;
	for (unsigned p = cfg_rd(fn, 0x34, 1), n = 0; p && n < 48; p = cfg_rd(fn, p + 1, 1), n++) {
		unsigned id = cfg_rd(fn, p, 1);
		if (id == 0x11) {
			d->msix_cap = p;
			found |= 1u << 6;
			continue;
		}
		if (id != 0x09 || cfg_rd(fn, p + 4, 1) != 4)
			continue;
		unsigned type = cfg_rd(fn, p + 3, 1);
		uintptr_t at = bar4 + cfg_rd(fn, p + 8, 4);
		if (type == 1)
			d->common = at;
		else if (type == 2) {
			d->notify = at;
			d->notify_mult = cfg_rd(fn, p + 16, 4);
		} else if (type == 3)
			d->isr = at;
		else if (type == 4)
			d->devcfg = at;
		found |= 1u << type;
	}
	return (found & 0x5e) == 0x5e;
}

/* Queue q of size `size` on the rings at desc/avail/used (below 4 GiB), enabled. */
static inline void vdrv_queue(const struct vdev *d, unsigned q, unsigned size, const void *desc,
			      const void *avail, const void *used)
{
	w16(d->common + C_QSELECT, (uint16_t)q);
	w16(d->common + C_QSIZE, (uint16_t)size);
	w32(d->common + C_QDESC, (uint32_t)(uintptr_t)desc);
	w32(d->common + C_QDESC + 4, 0);
	w32(d->common + C_QDRIVER, (uint32_t)(uintptr_t)avail);
	w32(d->common + C_QDRIVER + 4, 0);
	w32(d->common + C_QDEVICE, (uint32_t)(uintptr_t)used);
	w32(d->common + C_QDEVICE + 4, 0);
	w16(d->common + C_QENABLE, 1);
}

/* Reset, ACKNOWLEDGE, DRIVER, `features` (word 0) and VERSION_1,
 * FEATURES_OK; returns the status read back then. */
static inline uint8_t vdrv_negotiate(const struct vdev *d, uint32_t features)
{
	w8(d->common + C_STATUS, 0);
	w8(d->common + C_STATUS, 1);
	w8(d->common + C_STATUS, 3);
	w32(d->common + C_GFSELECT, 0);
	w32(d->common + C_GF, features);
	w32(d->common + C_GFSELECT, 1);
	w32(d->common + C_GF, 1);   /* VERSION_1 */
	w8(d->common + C_STATUS, 0x0b);
	return r8(d->common + C_STATUS);
}

/* MSI-X table entry e to this CPU's local APIC with `vector`; MSI-X on. */
static inline void vdrv_msix(const struct vdev *d, uintptr_t table, unsigned e, uint8_t vector)
{
	uint32_t apic_id = r32(RT_LAPIC + 0x20) >> 24;
	cfg_wr(d->devfn, d->msix_cap + 2, 2, 0x8000);
	w32(table + 16 * e + 0, 0xfee00000u | apic_id << 12);
	w32(table + 16 * e + 4, 0);
	w32(table + 16 * e + 8, vector);
	w32(table + 16 * e + 12, 0);
}

#endif
