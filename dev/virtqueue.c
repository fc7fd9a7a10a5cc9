/* Split virtqueue, device side: every guest value is read once into a local
 * copy, checked, and only then used. */
#include "dev/virtqueue.h"

#include "lib/string.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "ring fields are little-endian and read as host integers");

/* Guest layout of a descriptor and a used element. */
struct vq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
_Static_assert(sizeof(struct vq_desc) == 16, "virtq_desc is 16 bytes");

struct vq_used_elem {
	uint32_t id;
	uint32_t len;
};
_Static_assert(sizeof(struct vq_used_elem) == 8, "virtq_used_elem is 8 bytes");

/* Offsets inside the avail and used rings. */
#define AVAIL_FLAGS 0u
#define AVAIL_IDX   2u
#define AVAIL_RING  4u
#define USED_FLAGS  0u
#define USED_IDX    2u
#define USED_RING   4u

/* [gpa, gpa + len) does not wrap and is in guest RAM. */
static bool range_in_ram(const struct vq_guest_mem *m, uint64_t gpa, uint64_t len)
{
	if (gpa + len < gpa)
		return false;
	return m->in_ram(m->ctx, gpa, len);
}

/* Stops the queue on a queue error; keeps the first reason. */
static int vq_fail(struct virtqueue *vq, int err)
{
	if (!vq->broken)
		vq->broken = err;
	vq->ready = false;
	return err;
}

/* Ring accesses: the rings were checked against RAM at setup, so a failure
 * here means guest RAM changed under the queue; stop it rather than guess. */
static int ring_read(struct virtqueue *vq, uint64_t gpa, void *dst, size_t len)
{
	if (vq->ram) {
		memcpy(dst, vq->ram + gpa, len);
		return 0;
	}
	if (vq->mem->read(vq->mem->ctx, gpa, dst, len))
		return vq_fail(vq, VQ_ERR_GUEST_MEM);
	return 0;
}

static int ring_write(struct virtqueue *vq, uint64_t gpa, const void *src, size_t len)
{
	if (vq->ram) {
		memcpy(vq->ram + gpa, src, len);
		return 0;
	}
	if (vq->mem->write(vq->mem->ctx, gpa, src, len))
		return vq_fail(vq, VQ_ERR_GUEST_MEM);
	return 0;
}

/* (16-bit ring fields are 2-aligned: the rings' alignment) */
static int ring_read16(struct virtqueue *vq, uint64_t gpa, uint16_t *v)
{
	if (vq->ram) {
		*v = *(const volatile uint16_t *)(vq->ram + gpa);
		return 0;
	}
	return ring_read(vq, gpa, v, sizeof(*v));
}

static int ring_write16(struct virtqueue *vq, uint64_t gpa, uint16_t v)
{
	if (vq->ram) {
		*(volatile uint16_t *)(vq->ram + gpa) = v;
		return 0;
	}
	return ring_write(vq, gpa, &v, sizeof(v));
}

/* used_event follows the avail ring's entries, avail_event the used ring's. */
static uint64_t used_event_gpa(const struct virtqueue *vq)
{
	return vq->avail_gpa + AVAIL_RING + 2ull * vq->size;
}

static uint64_t avail_event_gpa(const struct virtqueue *vq)
{
	return vq->used_gpa + USED_RING + 8ull * vq->size;
}

void vq_init(struct virtqueue *vq, const struct vq_guest_mem *mem)
{
	*vq = (struct virtqueue){ .mem = mem, .budget = VQ_DOORBELL_BUDGET,
				  .budget_full = VQ_DOORBELL_BUDGET };
}

void vq_reset(struct virtqueue *vq)
{
	struct virtqueue old = *vq;
	vq_init(vq, old.mem);
	vq->chains = old.chains;
	vq->failed_requests = old.failed_requests;
	vq->pushed = old.pushed;
	vq->budget_stops = old.budget_stops;
	vq->budget = vq->budget_full = old.budget_full;
}

static bool ring_ok(const struct vq_guest_mem *m, uint64_t gpa, uint64_t bytes,
		    unsigned align, int *err)
{
	if (gpa & (align - 1)) {
		*err = VQ_ERR_RING_ALIGN;
		return false;
	}
	if (!range_in_ram(m, gpa, bytes)) {
		*err = VQ_ERR_RING_RANGE;
		return false;
	}
	return true;
}

int vq_setup(struct virtqueue *vq, const struct vq_layout *l)
{
	vq_reset(vq);
	if (l->size == 0 || l->size > VQ_MAX_SIZE || (l->size & (l->size - 1)))
		return vq_fail(vq, VQ_ERR_SIZE);
	int err = 0;
	if (!ring_ok(vq->mem, l->desc_gpa, VQ_DESC_BYTES(l->size), VQ_DESC_ALIGN, &err) ||
	    !ring_ok(vq->mem, l->avail_gpa, VQ_AVAIL_BYTES(l->size), VQ_AVAIL_ALIGN, &err) ||
	    !ring_ok(vq->mem, l->used_gpa, VQ_USED_BYTES(l->size), VQ_USED_ALIGN, &err))
		return vq_fail(vq, err);

	vq->ram = vq->mem->ram ? vq->mem->ram(vq->mem->ctx) : 0;
	vq->desc_gpa = l->desc_gpa;
	vq->avail_gpa = l->avail_gpa;
	vq->used_gpa = l->used_gpa;
	vq->size = (uint16_t)l->size;
	vq->event_idx = l->features & (1ull << VIRTIO_F_EVENT_IDX);
	vq->indirect = l->features & (1ull << VIRTIO_F_INDIRECT_DESC);
	vq->ready = true;
	return 0;
}

/* Chains between last_avail and avail.idx; reads avail.idx only when the
 * last value read is used up, so a batch costs one read of it. */
static int avail_pending(struct virtqueue *vq)
{
	if (vq->avail_idx != vq->last_avail)
		return 1;
	uint16_t idx;
	int err = ring_read16(vq, vq->avail_gpa + AVAIL_IDX, &idx);
	if (err)
		return err;
	/* The driver can never have more than size chains outstanding. */
	if ((uint16_t)(idx - vq->last_avail) > vq->size)
		return vq_fail(vq, VQ_ERR_AVAIL_IDX);
	vq->avail_idx = idx;
	/* The entries and descriptors are read after the idx that exposed them. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return idx != vq->last_avail;
}

/* The chain being walked: which table, how far, what it gave so far, and
 * how many more descriptors the doorbell's budget lets it read. */
struct walk {
	struct vq_seg *segs;
	unsigned max_segs;
	struct vq_chain *chain;
	bool seen_writable;
	unsigned left;
};

/* The walk ran out of budget (internal to vq_pop: never returned). */
#define WALK_OUT_OF_BUDGET (-16)

/* Every descriptor read costs one from the budget, whatever it holds. */
static int read_desc(struct virtqueue *vq, struct walk *w, uint64_t gpa, struct vq_desc *d)
{
	if (!w->left)
		return WALK_OUT_OF_BUDGET;
	w->left--;
	return ring_read(vq, gpa, d, sizeof(*d));
}

/* One buffer descriptor (not INDIRECT) into the segments. */
static int take_buffer(struct walk *w, const struct vq_guest_mem *m, const struct vq_desc *d)
{
	bool writable = d->flags & VIRTQ_DESC_F_WRITE;
	if (!writable && w->seen_writable)
		return VQ_ERR_WRITE_ORDER;
	w->seen_writable |= writable;
	if (d->len == 0)
		return 0;
	if (!range_in_ram(m, d->addr, d->len))
		return VQ_ERR_BUF_RANGE;
	struct vq_chain *c = w->chain;
	if (c->nr_segs == w->max_segs)
		return VQ_ERR_TOO_MANY_SEGS;
	w->segs[c->nr_segs++] = (struct vq_seg){ .gpa = d->addr, .len = d->len, .writable = writable };
	if (writable) {
		c->writable_bytes += d->len;
	} else {
		c->nr_readable++;
		c->readable_bytes += d->len;
	}
	return 0;
}

/* The indirect table `d` points to: at most `entries` links from entry 0,
 * each read once; INDIRECT inside it is forbidden. */
static int walk_indirect(struct virtqueue *vq, struct walk *w, const struct vq_desc *d)
{
	if (d->len == 0 || d->len % sizeof(struct vq_desc))
		return VQ_ERR_INDIRECT_LEN;
	uint32_t entries = d->len / sizeof(struct vq_desc);
	if (entries > VQ_INDIRECT_MAX)
		return VQ_ERR_INDIRECT_TOO_LARGE;
	if (!range_in_ram(vq->mem, d->addr, d->len))
		return VQ_ERR_INDIRECT_RANGE;

	uint64_t table = d->addr;
	uint32_t i = 0;
	for (uint32_t visited = 1;; visited++) {
		struct vq_desc e;
		int err = read_desc(vq, w, table + (uint64_t)i * sizeof(e), &e);
		if (err)
			return err;
		if (e.flags & VIRTQ_DESC_F_INDIRECT)
			return VQ_ERR_INDIRECT_NESTED;
		err = take_buffer(w, vq->mem, &e);
		if (err)
			return err;
		if (!(e.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (e.next >= entries)
			return VQ_ERR_NEXT_INDEX;
		if (visited == entries)
			return VQ_ERR_CHAIN_LOOP;
		i = e.next;
	}
}

/* The chain from `head` in the descriptor table: at most size links, the
 * last of which may be an indirect table. */
static int walk_chain(struct virtqueue *vq, struct walk *w, uint16_t head)
{
	uint16_t i = head;
	for (unsigned visited = 1;; visited++) {
		struct vq_desc d;
		int err = read_desc(vq, w, vq->desc_gpa + (uint64_t)i * sizeof(d), &d);
		if (err)
			return err;
		if (d.flags & VIRTQ_DESC_F_INDIRECT) {
			if (!vq->indirect || (d.flags & VIRTQ_DESC_F_NEXT))
				return VQ_ERR_INDIRECT_FLAGS;
			/* its WRITE flag means nothing (the spec) */
			return walk_indirect(vq, w, &d);
		}
		err = take_buffer(w, vq->mem, &d);
		if (err)
			return err;
		if (!(d.flags & VIRTQ_DESC_F_NEXT))
			return 0;
		if (d.next >= vq->size)
			return VQ_ERR_NEXT_INDEX;
		if (visited == vq->size)
			return VQ_ERR_CHAIN_LOOP;
		i = d.next;
	}
}

int vq_pop(struct virtqueue *vq, struct vq_seg *segs, unsigned max_segs,
	   struct vq_chain *chain)
{
	*chain = (struct vq_chain){ 0 };
	if (vq->broken)
		return VQ_ERR_BROKEN;
	if (!vq->ready)
		return VQ_EMPTY;
	int r = avail_pending(vq);
	if (r <= 0)
		return r;
	if (!vq->budget) {   /* a chain waits: the next doorbell's */
		vq->budget_stops++;
		return VQ_MORE;
	}

	uint16_t head;
	r = ring_read16(vq, vq->avail_gpa + AVAIL_RING + 2ull * (vq->last_avail & (vq->size - 1)),
			&head);
	if (r)
		return r;
	if (head >= vq->size)
		return vq_fail(vq, VQ_ERR_HEAD_INDEX);
	/* Taken from here on: a request error still gives the head back. */
	vq->last_avail++;
	chain->head = head;

	struct walk w = { .segs = segs, .max_segs = max_segs, .chain = chain, .left = vq->budget };
	r = walk_chain(vq, &w, head);
	bool whole_budget = vq->budget == vq->budget_full;
	vq->budget = w.left;
	if (r == WALK_OUT_OF_BUDGET) {
		vq->budget = 0;
		if (whole_budget) {   /* it will never fit: refused */
			r = VQ_ERR_CHAIN_BUDGET;
		} else {              /* not taken: walked again with a fresh budget */
			vq->last_avail--;
			*chain = (struct vq_chain){ 0 };
			vq->budget_stops++;
			return VQ_MORE;
		}
	}
	if (vq_err_needs_reset(r))
		return vq_fail(vq, r);
	if (r) {
		vq->failed_requests++;
		return r;
	}
	vq->chains++;
	return VQ_CHAIN;
}

int vq_push(struct virtqueue *vq, uint16_t head, uint32_t written)
{
	if (vq->broken)
		return VQ_ERR_BROKEN;
	/* used_idx may not pass last_avail: what is pushed was popped */
	if (!vq->ready || head >= vq->size || vq->used_idx == vq->last_avail)
		return VQ_ERR_PUSH;
	struct vq_used_elem e = { .id = head, .len = written };
	uint64_t slot = vq->used_gpa + USED_RING + 8ull * (vq->used_idx & (vq->size - 1));
	int err = ring_write(vq, slot, &e, sizeof(e));
	if (err)
		return err;
	/* The element must be visible before the idx that exposes it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	err = ring_write16(vq, vq->used_gpa + USED_IDX, (uint16_t)(vq->used_idx + 1));
	if (err)
		return err;
	vq->used_idx++;
	vq->pushed++;
	return 0;
}

bool vq_should_interrupt(struct virtqueue *vq)
{
	if (!vq->ready)
		return false;
	uint16_t old = vq->signalled_used, now = vq->used_idx;
	if (old == now)
		return false;
	vq->signalled_used = now;
	/* Our used.idx store must be visible before we read what the driver
	 * asked for, or a driver re-arming in between would miss its
	 * interrupt (a store-load order: a full fence on x86). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint16_t v;
	if (!vq->event_idx) {
		if (ring_read16(vq, vq->avail_gpa + AVAIL_FLAGS, &v))
			return false;
		return !(v & VIRTQ_AVAIL_F_NO_INTERRUPT);
	}
	if (ring_read16(vq, used_event_gpa(vq), &v))
		return false;
	/* Did used.idx step over used_event + 1 in old .. now (mod 2^16)? */
	return (uint16_t)(now - v - 1) < (uint16_t)(now - old);
}

int vq_enable_notify(struct virtqueue *vq)
{
	if (vq->broken)
		return VQ_ERR_BROKEN;
	if (!vq->ready)
		return 0;
	if (vq->notify_asked && (!vq->event_idx || vq->asked_at == vq->last_avail))
		return 0;   /* the driver has seen this request since before the last pop */
	vq->notify_asked = true;
	vq->asked_at = vq->last_avail;
	int err = vq->event_idx ? ring_write16(vq, avail_event_gpa(vq), vq->last_avail)
				: ring_write16(vq, vq->used_gpa + USED_FLAGS, 0);
	if (err)
		return err;
	/* The request must be visible before we look at avail.idx again, or a
	 * buffer added in between would get neither a kick nor a pop. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return avail_pending(vq);
}

int vq_disable_notify(struct virtqueue *vq)
{
	if (vq->broken)
		return VQ_ERR_BROKEN;
	if (!vq->ready || vq->event_idx)
		return 0;
	vq->notify_asked = false;
	return ring_write16(vq, vq->used_gpa + USED_FLAGS, VIRTQ_USED_F_NO_NOTIFY);
}

int vq_copy(const struct vq_guest_mem *m, const struct vq_seg *segs, unsigned n, uint64_t skip,
	    uint8_t *host, uint64_t len, bool to_guest)
{
	for (unsigned i = 0; i < n && len; i++) {
		if (skip >= segs[i].len) {
			skip -= segs[i].len;
			continue;
		}
		uint64_t chunk = segs[i].len - skip;
		if (chunk > len)
			chunk = len;
		int r = to_guest ? m->write(m->ctx, segs[i].gpa + skip, host, chunk)
				 : m->read(m->ctx, segs[i].gpa + skip, host, chunk);
		if (r)
			return -1;
		host += chunk;
		len -= chunk;
		skip = 0;
	}
	return 0;
}
