/* The virtio 1.x PCI transport: capabilities, common configuration, ISR,
 * notifications and the PCI_CFG window (virtio spec 1.2, 4.1). */
#include "dev/virtio_pci.h"

#include <stddef.h>

#define CAP_VENDOR 0x09   /* PCI vendor-specific capability */

static uint64_t size_mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

/* A virtio_pci_cap (4.1.4) of `len` bytes pointing at [off, off + length)
 * of the BAR; returns its offset in configuration space. */
static int add_virtio_cap(struct pci_func *f, uint8_t type, unsigned len, uint32_t off,
			  uint32_t length)
{
	int c = pci_func_add_cap(f, CAP_VENDOR, len);
	if (c < 0)
		return -1;
	f->cfg[c + 2] = (uint8_t)len;
	f->cfg[c + 3] = type;
	f->cfg[c + 4] = VIRTIO_PCI_BAR;
	pci_put_le(f->cfg, c + 8, 4, off);
	pci_put_le(f->cfg, c + 12, 4, length);
	return c;
}

static void queues_reset(struct virtio_pci *t)
{
	for (unsigned i = 0; i < VIRTIO_PCI_MAX_QUEUES; i++) {
		struct virtio_pci_queue *q = &t->q[i];
		q->enabled = false;
		q->size = i < t->ops->num_queues ? t->ops->queue_max : 0;
		q->msix_vector = VIRTIO_NO_VECTOR;
		q->desc = q->driver = q->device = 0;
		vq_reset(&q->vq);
	}
}

/* The transport's own state at reset (and at init). */
static void transport_reset(struct virtio_pci *t)
{
	queues_reset(t);
	t->status = 0;
	t->driver_features = 0;
	t->dfselect = t->gfselect = 0;
	t->queue_select = 0;
	t->isr = 0;
	t->msix_config = VIRTIO_NO_VECTOR;
	t->more = 0;
}

static void device_reset(struct virtio_pci *t)
{
	transport_reset(t);
	t->resets++;
	if (t->ops->reset)
		t->ops->reset(t);
}

static void msix_release_pending(struct virtio_pci *t);

/* The PCI_CFG capability's window (4.1.4.9): pci_cfg_data reads and writes
 * `length` bytes at `offset` of the BAR `bar` names. */
static void pci_cfg_window(struct pci_func *f, unsigned off, unsigned size, bool is_write)
{
	struct virtio_pci *t = (struct virtio_pci *)f;   /* pci is its first member */
	unsigned c = t->pci_cfg_cap, data = c + 16;
	if (is_write && off < t->msix_cap + 4u && off + size > t->msix_cap + 2u)
		msix_release_pending(t);   /* MSI-X enabled or unmasked */
	if (off + size <= data || off >= data + 4)
		return;
	uint32_t boff = pci_get_le(f->cfg, c + 8, 4), len = pci_get_le(f->cfg, c + 12, 4);
	if (f->cfg[c + 4] != VIRTIO_PCI_BAR || (len != 1 && len != 2 && len != 4) ||
	    (boff & (len - 1)) || boff >= VIRTIO_PCI_BAR_SIZE) {
		t->bad_accesses++;
		return;
	}
	if (is_write)
		virtio_pci_write(t, boff, len, pci_get_le(f->cfg, data, 4) & size_mask(len));
	else
		pci_put_le(f->cfg, data, 4, virtio_pci_read(t, boff, len));
}

int virtio_pci_init(struct virtio_pci *t, uint8_t devfn, const struct virtio_pci_ops *ops,
		    const struct vq_guest_mem *mem)
{
	if (!ops->num_queues || ops->num_queues > VIRTIO_PCI_MAX_QUEUES || !ops->queue_max ||
	    (ops->queue_max & (ops->queue_max - 1)) || ops->queue_max > VQ_MAX_SIZE ||
	    ops->cfg_len > VIRTIO_PCI_DEVCFG_MAX || !ops->kick ||
	    (ops->cfg_len && !ops->cfg_read))
		return -1;
	*t = (struct virtio_pci){ .ops = ops };
	struct pci_func *f = &t->pci;
	pci_func_init(f, devfn, VIRTIO_PCI_VENDOR, (uint16_t)(VIRTIO_PCI_DEVICE_BASE + ops->device_id),
		      ops->class_rev | 1, VIRTIO_PCI_VENDOR, 0x40, 1);
	if (pci_func_add_bar(f, VIRTIO_PCI_BAR, VIRTIO_PCI_BAR_SIZE, PCI_BAR_MEM64 | PCI_BAR_PREFETCH))
		return -1;
	int notify = add_virtio_cap(f, VIRTIO_PCI_CAP_NOTIFY_CFG, 20, VIRTIO_PCI_NOTIFY,
				    ops->num_queues * VIRTIO_PCI_NOTIFY_MULT);
	if (add_virtio_cap(f, VIRTIO_PCI_CAP_COMMON_CFG, 16, VIRTIO_PCI_COMMON,
			   VIRTIO_PCI_COMMON_LEN) < 0 || notify < 0 ||
	    add_virtio_cap(f, VIRTIO_PCI_CAP_ISR_CFG, 16, VIRTIO_PCI_ISR, 1) < 0 ||
	    (ops->cfg_len &&
	     add_virtio_cap(f, VIRTIO_PCI_CAP_DEVICE_CFG, 16, VIRTIO_PCI_DEVCFG, ops->cfg_len) < 0))
		return -1;
	pci_put_le(f->cfg, notify + 16, 4, VIRTIO_PCI_NOTIFY_MULT);
	t->msix_vectors = (uint16_t)(ops->num_queues + 1);
	int m = pci_func_add_cap(f, 0x11, 12);
	if (m < 0 || pci_func_add_bar(f, VIRTIO_PCI_MSIX_BAR, VIRTIO_PCI_MSIX_BAR_SIZE, 0))
		return -1;
	pci_put_le(f->cfg, m + 2, 2, t->msix_vectors - 1u);   /* table size - 1; disabled, unmasked */
	f->wmask[m + 3] = (PCI_MSIX_ENABLE | PCI_MSIX_MASKALL) >> 8;
	pci_put_le(f->cfg, m + 4, 4, 0x000 | VIRTIO_PCI_MSIX_BAR);
	pci_put_le(f->cfg, m + 8, 4, VIRTIO_PCI_MSIX_PBA | VIRTIO_PCI_MSIX_BAR);
	t->msix_cap = (uint8_t)m;
	for (unsigned v = 0; v < t->msix_vectors; v++)
		t->msix_table[v][3] = 1;   /* every vector masked at reset */
	int c = add_virtio_cap(f, VIRTIO_PCI_CAP_PCI_CFG, 20, 0, 0);
	if (c < 0)
		return -1;
	/* its bar, offset, length and data are the driver's */
	f->wmask[c + 4] = 0xff;
	pci_put_le(f->wmask, c + 8, 4, ~0u);
	pci_put_le(f->wmask, c + 12, 4, ~0u);
	pci_put_le(f->wmask, c + 16, 4, ~0u);
	t->pci_cfg_cap = (uint8_t)c;
	f->cfg_access = pci_cfg_window;
	t->device_features = ops->features | 1ull << VIRTIO_F_VERSION_1;
	for (unsigned i = 0; i < VIRTIO_PCI_MAX_QUEUES; i++)
		vq_init(&t->q[i].vq, mem);
	transport_reset(t);
	return 0;
}

static struct virtio_pci_queue *selected(struct virtio_pci *t)
{
	return t->queue_select < t->ops->num_queues ? &t->q[t->queue_select] : NULL;
}

/* ---- interrupts: MSI-X when the driver enabled it, else INTx ---- */

static uint16_t msix_control(const struct virtio_pci *t)
{
	return (uint16_t)pci_get_le(t->pci.cfg, t->msix_cap + 2u, 2);
}

static bool msix_on(const struct virtio_pci *t)
{
	return msix_control(t) & PCI_MSIX_ENABLE;
}

static bool msix_masked(const struct virtio_pci *t, unsigned v)
{
	return (msix_control(t) & PCI_MSIX_MASKALL) || (t->msix_table[v][3] & 1);
}

static void msix_send(struct virtio_pci *t, unsigned v)
{
	if (t->msi)
		t->msi(t, t->msix_table[v][0] | (uint64_t)t->msix_table[v][1] << 32,
		       t->msix_table[v][2]);
}

/* A masked vector waits in the pending bits; an unmask sends it. */
static void msix_release_pending(struct virtio_pci *t)
{
	for (unsigned v = 0; v < t->msix_vectors; v++) {
		if ((t->msix_pending >> v & 1) && msix_on(t) && !msix_masked(t, v)) {
			t->msix_pending &= ~(1ull << v);
			msix_send(t, v);
		}
	}
}

static void signal(struct virtio_pci *t, uint16_t vector)
{
	if (!msix_on(t)) {
		if (t->intx)
			t->intx(t, true);
		return;
	}
	if (vector >= t->msix_vectors)
		return;   /* NO_VECTOR: the driver wants none */
	if (msix_masked(t, vector))
		t->msix_pending |= 1ull << vector;
	else
		msix_send(t, vector);
}

/* A vector the driver maps: NO_VECTOR when the table has no such entry
 * (4.1.5.1.2: the read-back tells the driver the mapping failed). */
static uint16_t vector_checked(const struct virtio_pci *t, uint64_t v)
{
	return v < t->msix_vectors ? (uint16_t)v : VIRTIO_NO_VECTOR;
}

static void raise_config(struct virtio_pci *t)
{
	t->isr |= VIRTIO_ISR_CONFIG;
	signal(t, t->msix_config);
}

void virtio_pci_config_changed(struct virtio_pci *t)
{
	t->config_generation++;
	raise_config(t);
}

void virtio_pci_queue_broken(struct virtio_pci *t)
{
	t->status |= VIRTIO_STATUS_NEEDS_RESET;
	if (t->status & VIRTIO_STATUS_DRIVER_OK)
		raise_config(t);   /* 2.1.2: tell the driver */
}

/* virtio_pci_serve's loop, out of line: the idle doorbell builds no frame. */
static __attribute__((noinline)) bool serve_chains(struct virtio_pci *t, unsigned q,
						   struct vq_seg *segs, unsigned max_segs,
						   virtio_serve_fn *serve)
{
	struct virtqueue *vq = &t->q[q].vq;
	struct vq_chain c;
	bool pushed = false, ok = true, more = false;
	uint64_t bytes = 0;
	vq_budget_refill(vq);
	for (;;) {
		int r = vq_pop(vq, segs, max_segs, &c);
		if (r == VQ_MORE) {
			more = true;
			break;
		}
		if (r == VQ_EMPTY) {
			/* ask for the next kick (with EVENT_IDX: avail_event), then
			 * look again: the driver may have added chains before it
			 * saw the request, and sends no kick for those */
			r = vq_enable_notify(vq);
			if (r == 1)
				continue;
			if (r == 0)
				break;
		}
		if (!vq_err_needs_reset(r))
			r = vq_push(vq, c.head, serve(t, r, segs, &c));
		if (vq_err_needs_reset(r)) {
			virtio_pci_queue_broken(t);
			ok = false;
			break;
		}
		pushed = true;
		bytes += c.readable_bytes + c.writable_bytes;
		if (bytes >= VIRTIO_DOORBELL_BYTES) {
			more = true;
			break;
		}
	}
	if (pushed)
		virtio_pci_used(t, q);
	if (more)
		virtio_pci_more(t, q, bytes);
	return ok;
}

bool virtio_pci_serve(struct virtio_pci *t, unsigned q, struct vq_seg *segs, unsigned max_segs,
		      virtio_serve_fn *serve)
{
	if (vq_idle(&t->q[q].vq))   /* a doorbell for nothing new */
		return true;
	return serve_chains(t, q, segs, max_segs, serve);
}

void virtio_pci_more(struct virtio_pci *t, unsigned q, uint64_t bytes)
{
	const struct virtqueue *vq = &t->q[q].vq;
	uint64_t descs = vq->budget_full - vq->budget;
	if (descs > t->longest_turn_descs)
		t->longest_turn_descs = descs;
	if (bytes > t->longest_turn_bytes)
		t->longest_turn_bytes = bytes;
	t->budget_stops++;
	t->more |= 1u << q;
	if (t->resume_later)
		t->resume_later(t);
}

void virtio_pci_resume(struct virtio_pci *t)
{
	uint32_t m = t->more;
	t->more = 0;
	for (unsigned q = 0; m; q++, m >>= 1)
		if ((m & 1) && virtio_pci_queue_live(t, q))
			t->ops->kick(t, q);
}

bool virtio_pci_queue_live(const struct virtio_pci *t, unsigned q)
{
	return q < t->ops->num_queues && t->q[q].enabled && (t->status & VIRTIO_STATUS_DRIVER_OK) &&
	       !(t->status & VIRTIO_STATUS_NEEDS_RESET);
}

void virtio_pci_used(struct virtio_pci *t, unsigned q)
{
	if (q >= t->ops->num_queues || !vq_should_interrupt(&t->q[q].vq))
		return;
	t->isr |= VIRTIO_ISR_QUEUE;
	signal(t, t->q[q].msix_vector);
}

uint64_t virtio_pci_msix_read(struct virtio_pci *t, uint64_t off, unsigned size)
{
	uint64_t table_end = 16ull * t->msix_vectors;
	if ((size != 4 && size != 8) || (off & (size - 1))) {
		t->bad_accesses++;
		return 0;
	}
	if (off < table_end) {
		const uint32_t *e = t->msix_table[off / 16];
		unsigned w = (unsigned)(off % 16) / 4;
		return size == 8 ? e[w] | (uint64_t)e[w + 1] << 32 : e[w];
	}
	if (off == VIRTIO_PCI_MSIX_PBA)
		return size == 8 ? t->msix_pending : (uint32_t)t->msix_pending;
	if (off == VIRTIO_PCI_MSIX_PBA + 4 && size == 4)
		return (uint32_t)(t->msix_pending >> 32);
	return 0;   /* reserved: reads 0 */
}

void virtio_pci_msix_write(struct virtio_pci *t, uint64_t off, unsigned size, uint64_t val)
{
	uint64_t table_end = 16ull * t->msix_vectors;
	if ((size != 4 && size != 8) || (off & (size - 1)) || off >= table_end) {
		t->bad_accesses++;   /* the pending bits are read-only */
		return;
	}
	uint32_t *e = t->msix_table[off / 16];
	for (unsigned i = 0; i < size / 4; i++) {
		unsigned w = (unsigned)(off % 16) / 4 + i;
		uint32_t v = (uint32_t)(val >> (32 * i));
		e[w] = w == 0 ? v & ~0x3u : w == 3 ? v & 1 : v;   /* address dword-aligned; control: mask only */
	}
	msix_release_pending(t);
}

/* The width each common configuration field is accessed with (the 64-bit
 * queue addresses also as two 32-bit halves); 0 for no field there. */
static unsigned common_width(unsigned off)
{
	switch (off) {
	case VIRTIO_COMMON_DFSELECT: case VIRTIO_COMMON_DF:
	case VIRTIO_COMMON_GFSELECT: case VIRTIO_COMMON_GF:
		return 4;
	case VIRTIO_COMMON_MSIX: case VIRTIO_COMMON_NUMQ: case VIRTIO_COMMON_Q_SELECT:
	case VIRTIO_COMMON_Q_SIZE: case VIRTIO_COMMON_Q_MSIX: case VIRTIO_COMMON_Q_ENABLE:
	case VIRTIO_COMMON_Q_NOFF:
		return 2;
	case VIRTIO_COMMON_STATUS: case VIRTIO_COMMON_CFGGEN:
		return 1;
	case VIRTIO_COMMON_Q_DESC: case VIRTIO_COMMON_Q_DRIVER: case VIRTIO_COMMON_Q_DEVICE:
		return 8;
	default:
		return 0;
	}
}

static uint64_t *queue_addr(struct virtio_pci_queue *q, unsigned base)
{
	return base == VIRTIO_COMMON_Q_DESC ? &q->desc
	     : base == VIRTIO_COMMON_Q_DRIVER ? &q->driver : &q->device;
}

/* A defined access: the field at `off` (or a 64-bit field's half) and its
 * width. */
static bool common_access_ok(unsigned off, unsigned size, unsigned *base)
{
	*base = off;
	if (off >= VIRTIO_COMMON_Q_DESC && off < VIRTIO_PCI_COMMON_LEN && (off & 7) == 4) {
		*base = off - 4;   /* the upper half of a queue address */
		return size == 4;
	}
	unsigned w = common_width(off);
	return w && (size == w || (w == 8 && size == 4));
}

static uint64_t common_read(struct virtio_pci *t, unsigned off, unsigned size)
{
	struct virtio_pci_queue *q = selected(t);
	unsigned base;
	if (!common_access_ok(off, size, &base)) {
		t->bad_accesses++;
		return 0;
	}
	switch (base) {
	case VIRTIO_COMMON_DFSELECT: return t->dfselect;
	case VIRTIO_COMMON_DF:
		return t->dfselect < 2 ? (uint32_t)(t->device_features >> (32 * t->dfselect)) : 0;
	case VIRTIO_COMMON_GFSELECT: return t->gfselect;
	case VIRTIO_COMMON_GF:
		return t->gfselect < 2 ? (uint32_t)(t->driver_features >> (32 * t->gfselect)) : 0;
	case VIRTIO_COMMON_MSIX: return t->msix_config;
	case VIRTIO_COMMON_NUMQ: return t->ops->num_queues;
	case VIRTIO_COMMON_STATUS: return t->status;
	case VIRTIO_COMMON_CFGGEN: return t->config_generation;
	case VIRTIO_COMMON_Q_SELECT: return t->queue_select;
	case VIRTIO_COMMON_Q_SIZE: return q ? q->size : 0;
	case VIRTIO_COMMON_Q_MSIX: return q ? q->msix_vector : VIRTIO_NO_VECTOR;
	case VIRTIO_COMMON_Q_ENABLE: return q && q->enabled;
	case VIRTIO_COMMON_Q_NOFF: return q ? t->queue_select : 0;
	default: {   /* a queue address, whole or a half */
		uint64_t a = q ? *queue_addr(q, base) : 0;
		return (off != base ? a >> 32 : a) & size_mask(size);
	}
	}
}

static void status_write(struct virtio_pci *t, uint8_t s)
{
	if (!s) {
		device_reset(t);
		return;
	}
	/* FEATURES_OK sticks only for a subset of what was offered, with
	 * VERSION_1 (a legacy driver is not served) */
	if ((s & VIRTIO_STATUS_FEATURES_OK) && !(t->status & VIRTIO_STATUS_FEATURES_OK) &&
	    ((t->driver_features & ~t->device_features) ||
	     !(t->driver_features >> VIRTIO_F_VERSION_1 & 1)))
		s &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
	t->status = (uint8_t)((s & ~VIRTIO_STATUS_NEEDS_RESET) | (t->status & VIRTIO_STATUS_NEEDS_RESET));
}

static void queue_enable(struct virtio_pci *t, struct virtio_pci_queue *q)
{
	struct vq_layout l = {
		.size = q->size, .desc_gpa = q->desc, .avail_gpa = q->driver,
		.used_gpa = q->device, .features = t->driver_features,
	};
	if (q->size > t->ops->queue_max || vq_setup(&q->vq, &l)) {
		vq_reset(&q->vq);
		virtio_pci_queue_broken(t);
		return;
	}
	q->enabled = true;
}

static void common_write(struct virtio_pci *t, unsigned off, unsigned size, uint64_t v)
{
	struct virtio_pci_queue *q = selected(t);
	unsigned base;
	if (!common_access_ok(off, size, &base)) {
		t->bad_accesses++;
		return;
	}
	/* a queue's setup is fixed once it is enabled (4.1.4.3.2) */
	bool q_open = q && !q->enabled;
	switch (base) {
	case VIRTIO_COMMON_DFSELECT: t->dfselect = (uint32_t)v; return;
	case VIRTIO_COMMON_GFSELECT: t->gfselect = (uint32_t)v; return;
	case VIRTIO_COMMON_GF:
		if (t->gfselect < 2 && !(t->status & VIRTIO_STATUS_FEATURES_OK)) {
			unsigned sh = 32 * t->gfselect;
			t->driver_features = (t->driver_features & ~(0xffffffffull << sh)) |
					     ((v & 0xffffffffull) << sh);
		}
		return;
	case VIRTIO_COMMON_MSIX: t->msix_config = vector_checked(t, v); return;
	case VIRTIO_COMMON_STATUS: status_write(t, (uint8_t)v); return;
	case VIRTIO_COMMON_Q_SELECT: t->queue_select = (uint16_t)v; return;
	case VIRTIO_COMMON_Q_SIZE:
		if (q_open)
			q->size = (uint16_t)v;
		return;
	case VIRTIO_COMMON_Q_MSIX:
		if (q)
			q->msix_vector = vector_checked(t, v);
		return;
	case VIRTIO_COMMON_Q_ENABLE:
		if (q_open && v == 1)
			queue_enable(t, q);
		return;
	case VIRTIO_COMMON_Q_DESC: case VIRTIO_COMMON_Q_DRIVER: case VIRTIO_COMMON_Q_DEVICE:
		if (q_open) {
			uint64_t *a = queue_addr(q, base);
			if (size == 8)
				*a = v;
			else if (off == base)
				*a = (*a & ~0xffffffffull) | (uint32_t)v;
			else
				*a = (*a & 0xffffffffull) | (uint64_t)(uint32_t)v << 32;
		}
		return;
	default:   /* num_queues, config_generation, queue_notify_off: read-only */
		t->bad_accesses++;
		return;
	}
}

uint64_t virtio_pci_read(struct virtio_pci *t, uint64_t off, unsigned size)
{
	if (size != 1 && size != 2 && size != 4 && size != 8)
		size = 0;
	if (size && off < VIRTIO_PCI_COMMON_LEN)
		return common_read(t, (unsigned)off, size);
	if (size == 1 && off == VIRTIO_PCI_ISR) {
		uint8_t isr = t->isr;   /* read to clear (4.1.4.5) */
		t->isr = 0;
		if (t->intx && !msix_on(t))
			t->intx(t, false);
		return isr;
	}
	if (size && size <= 4 && off >= VIRTIO_PCI_DEVCFG &&
	    off + size <= VIRTIO_PCI_DEVCFG + t->ops->cfg_len)
		return t->ops->cfg_read(t, (unsigned)(off - VIRTIO_PCI_DEVCFG), size);
	t->bad_accesses++;
	return 0;
}

/* Everything but a doorbell, out of the doorbell's way. */
static __attribute__((noinline)) void virtio_pci_write_other(struct virtio_pci *t, uint64_t off,
							       unsigned size, uint64_t val)
{
	if (size != 1 && size != 2 && size != 4 && size != 8)
		size = 0;
	if (size && off < VIRTIO_PCI_COMMON_LEN) {
		common_write(t, (unsigned)off, size, val & size_mask(size));
		return;
	}
	if (size && size <= 4 && off >= VIRTIO_PCI_DEVCFG &&
	    off + size <= VIRTIO_PCI_DEVCFG + t->ops->cfg_len) {
		if (!t->ops->cfg_write) {   /* a read-only configuration */
			t->bad_accesses++;
			return;
		}
		t->ops->cfg_write(t, (unsigned)(off - VIRTIO_PCI_DEVCFG), size,
				  (uint32_t)(val & size_mask(size)));
		return;
	}
	t->bad_accesses++;
}

void virtio_pci_write(struct virtio_pci *t, uint64_t off, unsigned size, uint64_t val)
{
	/* the doorbell first: the write a driver makes most (off below the
	 * notify structure wraps to a large n) */
	uint64_t n = off - VIRTIO_PCI_NOTIFY;
	if (n < (uint64_t)t->ops->num_queues * VIRTIO_PCI_NOTIFY_MULT && !(n % VIRTIO_PCI_NOTIFY_MULT) &&
	    (size == 2 || size == 4)) {
		unsigned qi = (unsigned)(n / VIRTIO_PCI_NOTIFY_MULT);
		/* a doorbell counts for a live queue of a running device only */
		if (virtio_pci_queue_live(t, qi))
			t->ops->kick(t, qi);
		return;
	}
	virtio_pci_write_other(t, off, size, val);
}
