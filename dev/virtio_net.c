/* virtio-net: frames between the transmit/receive queues and a link port. */
#include "dev/virtio_net.h"

#include "lib/string.h"

/* The device configuration (5.1.4): mac[6], status, max_virtqueue_pairs
 * (meaningful with MQ only, which is not offered: 1). */
#define CFG_MAC      0u
#define CFG_STATUS   6u
#define CFG_PAIRS    8u
#define CFG_LEN      10u

static struct virtio_net *net_of(struct virtio_pci *t)
{
	return (struct virtio_net *)t;   /* t is its first member */
}

static uint32_t net_cfg_read(struct virtio_pci *t, unsigned off, unsigned size)
{
	struct virtio_net *n = net_of(t);
	uint8_t cfg[CFG_LEN] = { 0 };
	memcpy(cfg + CFG_MAC, n->port->mac, NET_MAC_BYTES);
	cfg[CFG_STATUS] = VIRTIO_NET_S_LINK_UP;
	cfg[CFG_PAIRS] = 1;
	return pci_get_le(cfg, off, size);
}

/* One transmit chain: the header and one frame in its readable buffers. */
static uint32_t net_tx_serve(struct virtio_pci *t, int r, const struct vq_seg *segs,
			     const struct vq_chain *c)
{
	struct virtio_net *n = net_of(t);
	uint64_t len = c->readable_bytes;
	if (r != VQ_CHAIN || c->nr_readable != c->nr_segs || len < VIRTIO_NET_HDR_BYTES + NET_FRAME_MIN ||
	    len > sizeof(n->frame) ||
	    vq_copy(t->q[VIRTIO_NET_TX].vq.mem, segs, c->nr_segs, 0, n->frame, len, false)) {
		n->stats.tx_bad++;
		return 0;
	}
	unsigned frame_len = (unsigned)len - VIRTIO_NET_HDR_BYTES;
	n->stats.tx_frames++;
	n->stats.tx_bytes += frame_len;
	net_link_send(n->port, n->frame + VIRTIO_NET_HDR_BYTES, frame_len);
	return 0;   /* the device writes nothing into a transmit buffer */
}

/* The frame f into the next receive chain. Returns 1 when it is done with
 * it (delivered, or dropped because the chain was too small), 0 when the
 * driver has posted no buffer (the frame stays in the inbox), VQ_MORE when
 * the doorbell's budget is spent, or -1 when the ring is broken. */
static int net_rx_deliver(struct virtio_net *n, const struct net_frame *f)
{
	struct virtio_pci *t = &n->t;
	struct virtqueue *vq = &t->q[VIRTIO_NET_RX].vq;
	struct vq_seg segs[VIRTIO_NET_SEGS_MAX];
	struct vq_chain c;
	unsigned len = f->len;
	for (;;) {
		int r = vq_pop(vq, segs, VIRTIO_NET_SEGS_MAX, &c);
		if (r == VQ_MORE)
			return VQ_MORE;
		if (r == VQ_EMPTY) {
			r = vq_enable_notify(vq);   /* a kick when buffers come */
			if (r == 1)
				continue;
			if (r == 0)
				return 0;
		}
		if (vq_err_needs_reset(r))
			break;
		uint32_t written = 0;
		bool done = false;
		if (r != VQ_CHAIN || c.nr_readable) {
			n->stats.rx_bad++;           /* the frame waits for a sound chain */
		} else if (c.writable_bytes < VIRTIO_NET_HDR_BYTES + len) {
			n->stats.rx_short++;         /* a NIC drops what does not fit */
			done = true;
		} else {
			uint8_t hdr[VIRTIO_NET_HDR_BYTES] = { 0 };
			hdr[10] = 1;                 /* num_buffers */
			if (vq_copy(vq->mem, segs, c.nr_segs, 0, hdr, sizeof(hdr), true) ||
			    /* (to the guest: the frame is only read) */
			    vq_copy(vq->mem, segs, c.nr_segs, sizeof(hdr), (uint8_t *)f->data, len, true)) {
				n->stats.rx_bad++;
			} else {
				written = VIRTIO_NET_HDR_BYTES + len;
				n->stats.rx_frames++;
				n->stats.rx_bytes += len;
			}
			done = true;
		}
		r = vq_push(vq, c.head, written);
		if (vq_err_needs_reset(r))
			break;
		if (done)
			return 1;
	}
	n->stats.queue_errors++;
	virtio_pci_queue_broken(t);
	return -1;
}

void virtio_net_receive(struct virtio_net *n)
{
	if (!virtio_pci_queue_live(&n->t, VIRTIO_NET_RX) || !virtio_net_rx_waiting(n))
		return;
	struct virtqueue *vq = &n->t.q[VIRTIO_NET_RX].vq;
	vq_budget_refill(vq);
	int r = 1;
	uint64_t bytes = 0;
	/* one frame at a time, from the inbox into a buffer; the port's lock
	 * only to let go of it */
	const struct net_frame *f;
	while (r == 1 && (f = net_port_peek(n->port))) {
		r = net_rx_deliver(n, f);
		if (r == 1) {
			bytes += VIRTIO_NET_HDR_BYTES + f->len;
			net_port_drop(n->port);
		}
	}
	virtio_pci_used(&n->t, VIRTIO_NET_RX);   /* (nothing if nothing was given back) */
	if (r == VQ_MORE)
		virtio_pci_more(&n->t, VIRTIO_NET_RX, bytes);
}

static void net_kick(struct virtio_pci *t, unsigned q)
{
	struct virtio_net *n = net_of(t);
	if (q == VIRTIO_NET_RX) {   /* new receive buffers: frames may be waiting */
		virtio_net_receive(n);
		return;
	}
	struct vq_seg segs[VIRTIO_NET_SEGS_MAX];
	if (!virtio_pci_serve(t, q, segs, VIRTIO_NET_SEGS_MAX, net_tx_serve))
		n->stats.queue_errors++;
}

static const struct virtio_pci_ops net_ops = {
	.device_id = VIRTIO_NET_DEVICE_ID,
	.class_rev = 0x02000000,   /* network controller, Ethernet */
	.features = 1ull << VIRTIO_NET_F_MAC | 1ull << VIRTIO_NET_F_STATUS |
		    1ull << VIRTIO_F_INDIRECT_DESC | 1ull << VIRTIO_F_EVENT_IDX,
	.num_queues = 2,
	.queue_max = VIRTIO_NET_QUEUE_SIZE,
	.cfg_len = CFG_LEN,
	.cfg_read = net_cfg_read,   /* read-only for a modern driver (5.1.4.2: the MAC too) */
	.kick = net_kick,
};

int virtio_net_init(struct virtio_net *n, uint8_t devfn, struct net_port *port,
		    const struct vq_guest_mem *mem)
{
	memset(n, 0, sizeof(*n));
	n->port = port;
	return virtio_pci_init(&n->t, devfn, &net_ops, mem);
}
