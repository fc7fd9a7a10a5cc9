/* dev/virtio_net.c and dev/net_link.c: devices on links, driven the way a
 * virtio driver drives them (rings in a fake guest RAM, one region per
 * device), and what a hostile driver or a hostile sender does (frames too
 * short or too long, writable transmit buffers, buffers outside RAM, rings
 * that loop, receive buffers too small, a MAC another VM has). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/virtio_net.h"
#include "tests/unit/stubs.h"

#define QSIZE    8u
#define REGION   0x4000u   /* each device's part of the fake RAM (4 of them) */
#define Q_RINGS(q) (0x400u * (q))   /* desc +0, avail +0x100, used +0x200 */
#define TX_BUF   0x0800u
#define RX_BUF   0x1000u   /* QSIZE buffers of RX_BUF_LEN */
#define RX_BUF_LEN 0x600u  /* 1536: the header and the largest frame */

struct drv {
	struct virtio_net n;
	struct net_port port;
	uint64_t base;
	uint16_t next_desc[2], avail_idx[2], seen_used[2];
	unsigned interrupts, wakes;
};

static struct drv A, B, C, D;

static void put16(uint64_t gpa, uint16_t v) { memcpy(stub_ram + gpa, &v, 2); }
static void put32(uint64_t gpa, uint32_t v) { memcpy(stub_ram + gpa, &v, 4); }
static void put64(uint64_t gpa, uint64_t v) { memcpy(stub_ram + gpa, &v, 8); }
static uint16_t get16(uint64_t gpa) { uint16_t v; memcpy(&v, stub_ram + gpa, 2); return v; }
static uint32_t get32(uint64_t gpa) { uint32_t v; memcpy(&v, stub_ram + gpa, 4); return v; }

static struct drv *drv_of_port(struct net_port *p)
{
	return p->owner;
}

static void on_wake(struct net_port *p)
{
	drv_of_port(p)->wakes++;
}

static void on_intx(struct virtio_pci *t, bool level)
{
	((struct drv *)t->host)->interrupts += level;
}

static uint64_t ring(const struct drv *d, unsigned q, unsigned part)
{
	return d->base + Q_RINGS(q) + 0x100u * part;
}

/* Device d (region k, 0..3) with MAC ...:k+1 on link `name`, brought up by its
 * driver: features VERSION_1 + MAC + STATUS, both queues enabled. */
static void make(struct drv *d, unsigned k, const char *name)
{
	memset(d, 0, sizeof(*d));
	d->base = REGION * k;
	memset(stub_ram + d->base, 0, REGION);
	static const uint8_t mac[5] = { 0x52, 0x54, 0x00, 0x4c, 0x50 };
	memcpy(d->port.mac, mac, 5);
	d->port.mac[5] = (uint8_t)(k + 1);
	d->port.wake = on_wake;
	d->port.owner = d;
	char err[120];
	assert_int_equal(net_link_attach(&d->port, name, err, sizeof(err)), 0);
	assert_int_equal(virtio_net_init(&d->n, PCI_DEVFN(4, 0), &d->port, &stub_ram_mem), 0);
	struct virtio_pci *t = &d->n.t;
	t->host = d;
	t->intx = on_intx;
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_pci_write(t, VIRTIO_COMMON_GFSELECT, 4, 0);
	virtio_pci_write(t, VIRTIO_COMMON_GF, 4, 1u << VIRTIO_NET_F_MAC | 1u << VIRTIO_NET_F_STATUS);
	virtio_pci_write(t, VIRTIO_COMMON_GFSELECT, 4, 1);
	virtio_pci_write(t, VIRTIO_COMMON_GF, 4, 1);
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, 0x0b);
	for (unsigned q = 0; q < 2; q++) {
		virtio_pci_write(t, VIRTIO_COMMON_Q_SELECT, 2, q);
		virtio_pci_write(t, VIRTIO_COMMON_Q_SIZE, 2, QSIZE);
		virtio_pci_write(t, VIRTIO_COMMON_Q_DESC, 8, ring(d, q, 0));
		virtio_pci_write(t, VIRTIO_COMMON_Q_DRIVER, 8, ring(d, q, 1));
		virtio_pci_write(t, VIRTIO_COMMON_Q_DEVICE, 8, ring(d, q, 2));
		virtio_pci_write(t, VIRTIO_COMMON_Q_ENABLE, 2, 1);
	}
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, 0x0f);
	assert_int_equal(virtio_pci_read(t, VIRTIO_COMMON_STATUS, 1), 0x0f);
}

struct buf { uint64_t gpa; uint32_t len; bool writable; };

/* A chain on queue q of d, without the doorbell. */
static void post(struct drv *d, unsigned q, const struct buf *b, unsigned n)
{
	uint16_t head = d->next_desc[q];
	for (unsigned i = 0; i < n; i++) {
		uint16_t k = (uint16_t)((head + i) % QSIZE);
		uint64_t at = ring(d, q, 0) + 16ull * k;
		put64(at, b[i].gpa);
		put32(at + 8, b[i].len);
		put16(at + 12, (uint16_t)((b[i].writable ? 2 : 0) | (i + 1 < n ? 1 : 0)));
		put16(at + 14, (uint16_t)((k + 1) % QSIZE));
	}
	d->next_desc[q] = (uint16_t)((head + n) % QSIZE);
	put16(ring(d, q, 1) + 4 + 2 * (d->avail_idx[q] % QSIZE), head);
	put16(ring(d, q, 1) + 2, ++d->avail_idx[q]);
}

static void doorbell(struct drv *d, unsigned q)
{
	virtio_pci_write(&d->n.t, VIRTIO_PCI_NOTIFY + VIRTIO_PCI_NOTIFY_MULT * q, 2, q);
}

static uint16_t used_idx(const struct drv *d, unsigned q) { return get16(ring(d, q, 2) + 2); }
static uint32_t used_len(const struct drv *d, unsigned q, unsigned n)
{
	return get32(ring(d, q, 2) + 4 + 8 * (n % QSIZE) + 4);
}

/* n receive buffers of RX_BUF_LEN bytes, one chain each, and the doorbell. */
static void rx_buffers(struct drv *d, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned slot = d->avail_idx[VIRTIO_NET_RX] % QSIZE;
		struct buf b = { d->base + RX_BUF + RX_BUF_LEN * slot, RX_BUF_LEN, true };
		post(d, VIRTIO_NET_RX, &b, 1);
	}
	doorbell(d, VIRTIO_NET_RX);
}

/* A frame of `len` bytes to `dst` (6 bytes) from d, its payload bytes
 * `fill`, sent as header + frame in two buffers. */
static void send(struct drv *d, const uint8_t *dst, unsigned len, uint8_t fill)
{
	uint64_t at = d->base + TX_BUF;
	memset(stub_ram + at, 0, VIRTIO_NET_HDR_BYTES);
	memcpy(stub_ram + at + VIRTIO_NET_HDR_BYTES, dst, 6);
	memcpy(stub_ram + at + VIRTIO_NET_HDR_BYTES + 6, d->port.mac, 6);
	memset(stub_ram + at + VIRTIO_NET_HDR_BYTES + 12, fill, len - 12);
	struct buf b[] = { { at, VIRTIO_NET_HDR_BYTES, false }, { at + VIRTIO_NET_HDR_BYTES, len, false } };
	post(d, VIRTIO_NET_TX, b, 2);
	doorbell(d, VIRTIO_NET_TX);
}

/* What the owner's CPU does after a wake. */
static void deliver(struct drv *d)
{
	virtio_net_receive(&d->n);
}

/* The n-th frame d received (0-based): its bytes after the header. */
static const uint8_t *rx_frame(const struct drv *d, unsigned n)
{
	return stub_ram + d->base + RX_BUF + RX_BUF_LEN * (n % QSIZE) + VIRTIO_NET_HDR_BYTES;
}

static const uint8_t BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static int setup_ab(void **state)
{
	(void)state;
	make(&A, 0, "link0");
	make(&B, 1, "link0");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	struct drv *all[] = { &A, &B, &C, &D };
	for (unsigned i = 0; i < 4; i++)
		net_link_detach(&all[i]->port);
	return 0;
}

static void test_config(void **state)
{
	(void)state;
	struct virtio_pci *t = &A.n.t;
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG, 4), 0x4c005452);
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG + 4, 2), 0x0150);
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG + 6, 2), VIRTIO_NET_S_LINK_UP);
	assert_true(t->device_features & 1ull << VIRTIO_NET_F_MAC);
	assert_false(t->device_features & 1ull);   /* no checksum offload */
	uint64_t bad = t->bad_accesses;
	virtio_pci_write(t, VIRTIO_PCI_DEVCFG, 4, 0x11111111);   /* the MAC is read-only */
	assert_int_equal(t->bad_accesses, bad + 1);
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG, 4), 0x4c005452);
	assert_int_equal(pci_bus_read(&(struct pci_bus){ .nr = 1, .funcs = { &t->pci } }, 0,
				      PCI_DEVFN(4, 0), PCI_DEVICE_ID, 2), 0x1041);
}

static void test_unicast_both_ways(void **state)
{
	(void)state;
	rx_buffers(&B, 4);
	rx_buffers(&A, 4);
	send(&A, B.port.mac, 60, 0xab);
	assert_int_equal(used_idx(&A, VIRTIO_NET_TX), 1);
	assert_int_equal(used_len(&A, VIRTIO_NET_TX, 0), 0);
	assert_int_equal(B.wakes, 1);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 0);   /* not before B's CPU takes it */
	deliver(&B);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 1);
	assert_int_equal(used_len(&B, VIRTIO_NET_RX, 0), VIRTIO_NET_HDR_BYTES + 60);
	const uint8_t *hdr = rx_frame(&B, 0) - VIRTIO_NET_HDR_BYTES;
	for (unsigned i = 0; i < VIRTIO_NET_HDR_BYTES; i++)
		assert_int_equal(hdr[i], i == 10 ? 1 : 0);   /* num_buffers = 1, nothing else */
	assert_memory_equal(rx_frame(&B, 0), B.port.mac, 6);
	assert_memory_equal(rx_frame(&B, 0) + 6, A.port.mac, 6);
	assert_int_equal(rx_frame(&B, 0)[59], 0xab);
	assert_int_equal(B.interrupts, 1);
	/* and back, the largest frame */
	send(&B, A.port.mac, NET_FRAME_MAX, 0xcd);
	deliver(&A);
	assert_int_equal(used_len(&A, VIRTIO_NET_RX, 0), VIRTIO_NET_HDR_BYTES + NET_FRAME_MAX);
	assert_int_equal(rx_frame(&A, 0)[NET_FRAME_MAX - 1], 0xcd);
	assert_int_equal(A.n.stats.rx_frames, 1);
	assert_int_equal(B.n.stats.tx_frames, 1);
	assert_int_equal(A.port.stats.delivered_bytes, NET_FRAME_MAX);
	/* nothing comes back to the sender */
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 1);
}

static void test_switching(void **state)
{
	(void)state;
	make(&C, 2, "link0");
	make(&D, 3, "link1");   /* another link: sees nothing of link0 */
	rx_buffers(&A, 4);
	rx_buffers(&B, 4);
	rx_buffers(&C, 4);
	rx_buffers(&D, 4);
	send(&A, BCAST, 42, 1);           /* B and C */
	send(&A, C.port.mac, 42, 2);      /* C only */
	uint8_t nobody[6] = { 0x52, 0x54, 0, 0, 0, 9 };
	send(&A, nobody, 42, 3);          /* an address nobody has: B and C */
	uint8_t mcast[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	send(&B, mcast, 42, 4);           /* A and C */
	deliver(&A); deliver(&B); deliver(&C); deliver(&D);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 2);
	assert_int_equal(rx_frame(&B, 0)[41], 1);
	assert_int_equal(rx_frame(&B, 1)[41], 3);
	assert_int_equal(used_idx(&C, VIRTIO_NET_RX), 4);
	assert_int_equal(rx_frame(&C, 1)[41], 2);
	assert_int_equal(used_idx(&A, VIRTIO_NET_RX), 1);
	assert_int_equal(rx_frame(&A, 0)[41], 4);
	assert_int_equal(used_idx(&D, VIRTIO_NET_RX), 0);
	assert_int_equal(D.wakes, 0);
	assert_int_equal(D.port.stats.delivered, 0);
}

static void test_frames_wait_for_buffers_and_overflow(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NET_INBOX_FRAMES + 3; i++)
		send(&A, B.port.mac, 64, (uint8_t)i);
	assert_int_equal(B.wakes, 1);                     /* told once */
	assert_int_equal(B.port.stats.inbox_full, 3);     /* the rest were dropped */
	deliver(&B);                                      /* no buffers: all wait */
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 0);
	assert_true(net_port_pending(&B.port));
	rx_buffers(&B, 2);                                /* the doorbell takes two */
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 2);
	assert_int_equal(rx_frame(&B, 0)[63], 0);
	assert_int_equal(rx_frame(&B, 1)[63], 1);
	assert_int_equal(B.interrupts, 1);
	for (unsigned k = 0; k < 10; k++)
		rx_buffers(&B, QSIZE - 2);                   /* (the ring has room for those) */
	/* (the port counts frames out of its inbox: the rest wait in it) */
	assert_int_equal(B.n.stats.rx_frames, 2 + 10 * (QSIZE - 2));
	assert_int_equal(B.port.stats.delivered, 2 + 10 * (QSIZE - 2));
	assert_int_equal(B.port.count, NET_INBOX_FRAMES - (2 + 10 * (QSIZE - 2)));
	for (unsigned k = 0; k < NET_INBOX_FRAMES && virtio_net_rx_waiting(&B.n); k++)
		rx_buffers(&B, QSIZE - 2);
	assert_false(virtio_net_rx_waiting(&B.n));
	assert_false(net_port_pending(&B.port));
	assert_int_equal(B.n.stats.rx_frames, NET_INBOX_FRAMES);
	assert_int_equal(B.port.stats.delivered, NET_INBOX_FRAMES);
	assert_int_equal(rx_frame(&B, used_idx(&B, VIRTIO_NET_RX) - 1u)[63],
			 (uint8_t)(NET_INBOX_FRAMES - 1));   /* the last frame the inbox took */
}

static unsigned rx_resumes;
static void on_resume_later(struct virtio_pci *t)
{
	(void)t;
	rx_resumes++;
}

/* The receive path: one frame at a time from the inbox (the port's lock
 * is never held across the walk), a walk bounded by the budget, the rest
 * resumed by virtio_pci_resume; a frame put after the inbox was emptied
 * always wakes the receiver again. */
static void test_receive_budget_and_wakes(void **state)
{
	(void)state;
	B.n.t.resume_later = on_resume_later;
	rx_resumes = 0;
	vq_set_budget(&B.n.t.q[VIRTIO_NET_RX].vq, 3);
	for (unsigned i = 0; i < 5; i++)
		send(&A, B.port.mac, 64, (uint8_t)i);
	assert_int_equal(B.wakes, 1);
	rx_buffers(&B, 5);                  /* the doorbell's turn: 3 descriptors, 3 frames */
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 3);
	assert_int_equal(B.n.t.more, 1u << VIRTIO_NET_RX);
	assert_int_equal(rx_resumes, 1);
	assert_int_equal(B.port.count, 2);      /* the fourth and fifth wait */
	assert_true(net_port_pending(&B.port));
	virtio_pci_resume(&B.n.t);           /* the next turn: the last two */
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 5);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(rx_frame(&B, i)[63], i);
	assert_false(virtio_net_rx_waiting(&B.n));
	assert_int_equal(B.n.t.more, 0u);
	assert_int_equal(rx_resumes, 1);
	/* the inbox emptied: the next frame wakes the receiver again */
	send(&A, B.port.mac, 64, 9);
	assert_int_equal(B.wakes, 2);
	assert_true(net_port_pending(&B.port));
	/* no receive buffer left: the frame stays in the inbox and no wake is
	 * owed for the next one (the driver's next doorbell takes both) */
	deliver(&B);
	assert_int_equal(B.port.count, 1);
	assert_true(net_port_pending(&B.port));
	send(&A, B.port.mac, 64, 10);
	assert_int_equal(B.wakes, 2);
	rx_buffers(&B, 2);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 7);
	assert_int_equal(rx_frame(&B, 5)[63], 9);
	assert_int_equal(rx_frame(&B, 6)[63], 10);
	assert_false(virtio_net_rx_waiting(&B.n));
}

/* Guest memory of B's receive queue, watched: no port lock may be held
 * while B's device reads its rings or writes its buffers. */
static unsigned watched_accesses, under_a_lock;
static bool lock_held(const struct spinlock *l)
{
	return l->next != l->serving;   /* a ticket lock: a ticket taken, not yet passed on */
}
static void watch(void)
{
	watched_accesses++;
	under_a_lock += lock_held(&A.port.lock) || lock_held(&B.port.lock) ||
			lock_held(&C.port.lock) || lock_held(&D.port.lock);
}
static bool watched_in(void *ctx, uint64_t gpa, uint64_t len)
{
	watch();
	return stub_ram_mem.in_ram(ctx, gpa, len);
}
static int watched_read(void *ctx, uint64_t gpa, void *dst, size_t len)
{
	watch();
	return stub_ram_mem.read(ctx, gpa, dst, len);
}
static int watched_write(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	watch();
	return stub_ram_mem.write(ctx, gpa, src, len);
}
static const struct vq_guest_mem watched_mem = { NULL, watched_in, watched_read, watched_write,
						 NULL };

static void test_no_lock_over_the_ring_walk(void **state)
{
	(void)state;
	make(&C, 2, "link1");
	make(&D, 3, "link1");
	struct virtqueue *vq = &B.n.t.q[VIRTIO_NET_RX].vq;
	vq->mem = &watched_mem;   /* every ring and buffer access through watch() */
	vq->ram = NULL;
	watched_accesses = under_a_lock = 0;
	rx_buffers(&B, 4);
	for (unsigned i = 0; i < 6; i++)
		send(&A, B.port.mac, 100, (uint8_t)i);   /* 4 delivered, 2 wait */
	deliver(&B);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 4);
	rx_buffers(&B, 2);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 6);
	assert_true(watched_accesses > 0);
	assert_int_equal(under_a_lock, 0);
	/* another link's port lock held (as by a CPU copying a frame there):
	 * link0 sends and receives without it */
	spin_lock(&D.port.lock);
	rx_buffers(&B, 1);
	send(&A, B.port.mac, 100, 7);
	deliver(&B);
	spin_unlock(&D.port.lock);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 7);
	assert_int_equal(rx_frame(&B, 6)[99], 7);
}

static void test_hostile_transmit(void **state)
{
	(void)state;
	rx_buffers(&B, 4);
	uint64_t at = A.base + TX_BUF;
	/* too short, too long, a writable buffer, a buffer outside RAM */
	struct buf shortf[] = { { at, VIRTIO_NET_HDR_BYTES + 13, false } };
	struct buf longf[] = { { at, VIRTIO_NET_HDR_BYTES, false },
			       { at, NET_FRAME_MAX + 1, false } };
	struct buf wr[] = { { at, VIRTIO_NET_HDR_BYTES + 60, false }, { at, 16, true } };
	struct buf outside[] = { { STUB_RAM_SIZE - 8, 72, false } };
	post(&A, VIRTIO_NET_TX, shortf, 1);
	post(&A, VIRTIO_NET_TX, longf, 2);
	post(&A, VIRTIO_NET_TX, wr, 2);
	post(&A, VIRTIO_NET_TX, outside, 1);
	doorbell(&A, VIRTIO_NET_TX);
	assert_int_equal(used_idx(&A, VIRTIO_NET_TX), 4);  /* every chain given back */
	assert_int_equal(A.n.stats.tx_bad, 4);
	assert_int_equal(A.n.stats.tx_frames, 0);
	assert_int_equal(B.wakes, 0);
	/* a descriptor that links to itself: the queue stops, the device needs a reset */
	uint16_t k = A.next_desc[VIRTIO_NET_TX];
	put64(ring(&A, VIRTIO_NET_TX, 0) + 16 * k, at);
	put32(ring(&A, VIRTIO_NET_TX, 0) + 16 * k + 8, 64);
	put16(ring(&A, VIRTIO_NET_TX, 0) + 16 * k + 12, 1);
	put16(ring(&A, VIRTIO_NET_TX, 0) + 16 * k + 14, k);
	put16(ring(&A, VIRTIO_NET_TX, 1) + 4 + 2 * (A.avail_idx[VIRTIO_NET_TX] % QSIZE), k);
	put16(ring(&A, VIRTIO_NET_TX, 1) + 2, ++A.avail_idx[VIRTIO_NET_TX]);
	doorbell(&A, VIRTIO_NET_TX);
	assert_int_equal(A.n.stats.queue_errors, 1);
	assert_true(virtio_pci_read(&A.n.t, VIRTIO_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET);
	send(&A, B.port.mac, 60, 1);                      /* ignored until a reset */
	assert_int_equal(B.wakes, 0);
	/* B never saw anything, and still works */
	send(&B, A.port.mac, 60, 1);
	assert_int_equal(B.n.stats.tx_frames, 1);
}

static void test_hostile_receive_buffers(void **state)
{
	(void)state;
	/* a buffer too small, a readable one, then a good one */
	struct buf small = { B.base + RX_BUF, 40, true };
	struct buf readable = { B.base + RX_BUF + RX_BUF_LEN, RX_BUF_LEN, false };
	struct buf good = { B.base + RX_BUF + 2 * RX_BUF_LEN, RX_BUF_LEN, true };
	post(&B, VIRTIO_NET_RX, &small, 1);
	post(&B, VIRTIO_NET_RX, &readable, 1);
	post(&B, VIRTIO_NET_RX, &good, 1);
	doorbell(&B, VIRTIO_NET_RX);
	send(&A, B.port.mac, 100, 7);   /* into the small one: dropped */
	send(&A, B.port.mac, 100, 8);   /* the readable one is refused, then the good one */
	deliver(&B);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 3);
	assert_int_equal(used_len(&B, VIRTIO_NET_RX, 0), 0);
	assert_int_equal(used_len(&B, VIRTIO_NET_RX, 1), 0);
	assert_int_equal(used_len(&B, VIRTIO_NET_RX, 2), VIRTIO_NET_HDR_BYTES + 100);
	assert_int_equal(rx_frame(&B, 2)[99], 8);
	assert_int_equal(B.n.stats.rx_short, 1);
	assert_int_equal(B.n.stats.rx_bad, 1);
	assert_int_equal(B.n.stats.rx_frames, 1);
	/* a receive buffer outside RAM: refused by the queue, nothing written */
	struct buf outside = { STUB_RAM_SIZE - 16, RX_BUF_LEN, true };
	post(&B, VIRTIO_NET_RX, &outside, 1);
	doorbell(&B, VIRTIO_NET_RX);
	send(&A, B.port.mac, 100, 9);
	deliver(&B);
	assert_int_equal(used_idx(&B, VIRTIO_NET_RX), 4);
	assert_int_equal(B.n.stats.rx_bad, 2);
	assert_true(virtio_net_rx_waiting(&B.n));   /* the frame waits for a sound buffer */
	assert_int_equal(B.port.count, 1);          /* still in the inbox, in no ring */
	assert_true(net_port_pending(&B.port));
}

static void test_attach_refusals(void **state)
{
	(void)state;
	char err[120];
	struct net_port p = { .wake = on_wake };
	memcpy(p.mac, A.port.mac, 6);
	assert_int_equal(net_link_attach(&p, "link0", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "MAC address 52:54:00:4c:50:01"));
	p.mac[5] = 0x77;
	assert_int_equal(net_link_attach(&p, "bad name", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a link name"));
	make(&C, 2, "link0");
	make(&D, 3, "link0");
	assert_int_equal(net_link_attach(&p, "link0", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "full"));
	/* a port that leaves no longer receives; its place is free again */
	net_link_detach(&D.port);
	assert_int_equal(net_link_attach(&p, "link0", err, sizeof(err)), 0);
	net_link_detach(&p);
	send(&A, D.port.mac, 60, 1);
	assert_int_equal(D.wakes, 0);
	assert_true(net_link_name_ok("link-0.a_b"));
	assert_false(net_link_name_ok(""));
	assert_false(net_link_name_ok("0123456789012345678901234567890123"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_unicast_both_ways, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_switching, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_frames_wait_for_buffers_and_overflow, setup_ab,
						teardown),
		cmocka_unit_test_setup_teardown(test_receive_budget_and_wakes, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_no_lock_over_the_ring_walk, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_transmit, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_receive_buffers, setup_ab, teardown),
		cmocka_unit_test_setup_teardown(test_attach_refusals, setup_ab, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
