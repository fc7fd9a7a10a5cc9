/* virtionet: the network device a VM description's `net =` gives
 * (docs/VIRTIO.md), driven as a virtio 1.x driver does, flat 32-bit, in one of three
 * roles (arguments: role=ping|echo|other, n=frames, me/peer/other = MAC
 * addresses as 48-bit numbers):
 *  - every role: virtio-net (1af4:1041) at 00:04.0, class Ethernet, BARs at
 *    0xfe008000/0xfe00c000, INTA# line 10, the MAC in its configuration
 *    the one the description gave, link up; negotiation; receive buffers.
 *  - ping: says hello (broadcast) until the echo VM answers, then sends n
 *    frames of growing length (the last 1514 bytes) to it and checks each
 *    echo (its bytes inverted); then the echo's broadcast and its frame to
 *    `other`'s address (which nobody on this link has: flooded here).
 *    Polls with interrupts off.
 *  - echo: waits with HLT (an MSI-X interrupt wakes it), answers the hello,
 *    echoes n frames; then hostile frames (too long, too short, a writable
 *    transmit buffer, a buffer outside RAM: given back, sent nowhere), a
 *    broadcast and a frame to `other`.
 *  - other: on another link, sends broadcasts for a while; nothing of
 *    link0 may reach it, nothing of its own may reach link0 (ping and echo
 *    check the type of every frame they get).
 * The harness checks lightpath's `net` statistics lines as well. */
#include "guests/selftest/vdrv.h"

#define NET_DEVFN  ((4u << 3) | 0)
#define HDR        12u
#define FRAME_MAX  1514u
#define VEC_RX     0x61u
/* how long ping waits for an answer: seconds at any TSC rate a TCG host has */
#define WAIT_TSC   20000000000ull
#define RXQ        0u
#define TXQ        1u

/* frame types (the IEEE's local experimental EtherTypes and the next ones) */
#define T_HELLO    0x88b5u
#define T_READY    0x88b6u
#define T_DATA     0x88b7u
#define T_ECHO     0x88b8u
#define T_BCAST    0x88b9u
#define T_TO_OTHER 0x88bau
#define T_OTHER    0x88bbu


static struct queue rxq, txq;
static uint8_t rxbuf[QSIZE][HDR + FRAME_MAX];
static uint8_t txbuf[HDR + FRAME_MAX + 16];
static struct vdev dev = { .devfn = NET_DEVFN };
static uint8_t me[6], peer[6], other[6];
static volatile unsigned irqs;
/* echo (gap=, 0 by default): TSC ticks to spin between a look at the
 * empty ring and the HLT, at every second such look from the first one
 * after READY: the frame and its interrupt come inside that window then,
 * the others while the VM is halted */
static uint64_t gap;
static unsigned looks;
static unsigned foreign;   /* frames of a type this VM must never see */

static void mac_of(uint64_t v, uint8_t *mac)
{
	for (unsigned i = 0; i < 6; i++)
		mac[i] = (uint8_t)(v >> (8 * (5 - i)));
}

static void on_rx(struct rt_frame *f)
{
	(void)f;
	irqs++;
	w32(RT_LAPIC + 0xb0, 0);   /* EOI (xAPIC) */
}


static void doorbell(unsigned q)
{
	w16(dev.notify + q * dev.notify_mult, (uint16_t)q);
}

static void rx_post(uint16_t d)
{
	rxq.desc[d] = (struct desc){ (uintptr_t)rxbuf[d], HDR + FRAME_MAX, 2, 0 };
	vdrv_post(&rxq, d);
}

/* Sends txbuf's frame of `len` bytes in one descriptor (or as given in
 * `d`); returns the used length, or ~0 if the device gave nothing back. */
static uint32_t send_desc(struct desc d)
{
	uint16_t k = txq.next_avail % QSIZE;
	txq.desc[k] = d;
	vdrv_post(&txq, k);
	doorbell(TXQ);
	if (*(volatile uint16_t *)&txq.used.idx == txq.seen_used)
		return ~0u;
	return txq.used.ring[txq.seen_used++ % QSIZE].len;
}

static void frame(const uint8_t *dst, unsigned type, uint32_t seq, unsigned len, uint8_t x)
{
	uint8_t *f = txbuf + HDR;
	memset(txbuf, 0, HDR);
	memcpy(f, dst, 6);
	memcpy(f + 6, me, 6);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	memcpy(f + 14, &seq, 4);
	for (unsigned i = 18; i < len; i++)
		f[i] = (uint8_t)((seq * 7 + i) ^ x);
}

static uint32_t send(const uint8_t *dst, unsigned type, uint32_t seq, unsigned len, uint8_t x)
{
	frame(dst, type, seq, len, x);
	return send_desc((struct desc){ (uintptr_t)txbuf, HDR + len, 0, 0 });
}

/* The next received frame (its length in *len), or 0 if none came before
 * `wait` TSC ticks passed (wait 0: HLT until one comes). The caller gives
 * the buffer back with rx_done. The ring is looked at with interrupts off,
 * and `sti; hlt` opens them only for the HLT (STI's shadow), so that the
 * interrupt of a frame that comes after the look ends the HLT. With them
 * on, it could be taken between the look and the HLT, which then slept
 * with the frame in the ring (the echo VM once did, until its time limit). */
static uint8_t *receive(unsigned *len, uint64_t wait, uint16_t *d)
{
	uint64_t start = rdtsc();
	cli();
	while (*(volatile uint16_t *)&rxq.used.idx == rxq.seen_used) {
		if (!wait) {
			uint64_t spin = looks++ & 1 ? 0 : gap;
			for (uint64_t t = rdtsc(); rdtsc() - t < spin;)
				asm volatile("pause");
			asm volatile("sti; hlt; cli" ::: "memory");
		} else {
			if (rdtsc() - start > wait)
				return 0;
			asm volatile("pause");
		}
	}
	struct used_elem e = rxq.used.ring[rxq.seen_used++ % QSIZE];
	*d = (uint16_t)e.id;
	*len = e.len >= HDR ? e.len - HDR : 0;
	uint8_t *f = rxbuf[e.id % QSIZE] + HDR;
	unsigned type = (unsigned)f[12] << 8 | f[13];
	foreign += type == T_OTHER || (*len >= 6 && memcmp(f, me, 6) && !(f[0] & 1) &&
				       type != T_TO_OTHER);
	return f;
}

static void rx_done(uint16_t d)
{
	rx_post(d);
	doorbell(RXQ);
}

static unsigned type_of(const uint8_t *f)
{
	return (unsigned)f[12] << 8 | f[13];
}

static uint32_t seq_of(const uint8_t *f)
{
	uint32_t s;
	memcpy(&s, f + 14, 4);
	return s;
}

static bool payload_ok(const uint8_t *f, uint32_t seq, unsigned len, uint8_t x)
{
	for (unsigned i = 18; i < len; i++)
		if (f[i] != (uint8_t)((seq * 7 + i) ^ x))
			return false;
	return true;
}

static unsigned data_len(unsigned i, unsigned n)
{
	return i + 1 == n ? FRAME_MAX : 60 + (i * 211) % 1400;
}

static void ping(unsigned n)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	unsigned len, hellos = 0;
	uint16_t d;
	uint8_t *f = 0;
	/* hello until the echo VM is up (its port may not be on the link yet) */
	while (hellos < 2000) {
		send(bcast, T_HELLO, hellos++, 60, 0);
		f = receive(&len, 20000000, &d);
		if (f)
			break;
	}
	tap_ok(f && type_of(f) == T_READY && !memcmp(f + 6, peer, 6), f ? type_of(f) : 0,
	       "READY from the echo VM", "the echo VM answered hello (after %u)", hellos);
	if (!f)
		return;
	rx_done(d);
	unsigned good = 0, stale = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned want = data_len(i, n);
		tap_eq(send(peer, T_DATA, i, want, 0), 0, "frame %u (%u bytes) sent, given back", i, want);
		for (;;) {
			f = receive(&len, WAIT_TSC, &d);
			if (!f || type_of(f) != T_READY)
				break;
			stale++;   /* an answer to a later hello */
			rx_done(d);
		}
		if (!f)
			break;
		good += len == want && type_of(f) == T_ECHO && seq_of(f) == i && !memcmp(f, me, 6) &&
			!memcmp(f + 6, peer, 6) && payload_ok(f, i, len, 0xff);
		rx_done(d);
	}
	tap_eq(good, n, "%u echoes, each the frame sent with its bytes inverted", n);
	unsigned bcasts = 0, to_other = 0;
	for (unsigned k = 0; k < 2; k++) {
		f = receive(&len, WAIT_TSC, &d);
		if (!f)
			break;
		bcasts += type_of(f) == T_BCAST && f[0] == 0xff;
		to_other += type_of(f) == T_TO_OTHER && !memcmp(f, other, 6);
		rx_done(d);
	}
	tap_eq(bcasts, 1, "the echo VM's broadcast reached this VM");
	tap_eq(to_other, 1, "its frame to an address nobody on the link has: flooded here");
	tap_eq(foreign, 0, "no frame from another link, none for another VM's address");
	(void)stale;
}

static void echo(unsigned n)
{
	unsigned len, got = 0;
	uint16_t d;
	uint8_t *f;
	/* the first hello: answered once (later ones, sent before it arrived, are dropped) */
	for (;;) {
		f = receive(&len, 0, &d);
		if (type_of(f) == T_HELLO)
			break;
		rx_done(d);
	}
	rx_done(d);
	tap_eq(send(peer, T_READY, 0, 60, 0), 0, "READY sent");
	looks = 0;
	unsigned good = 0;
	while (got < n) {
		f = receive(&len, 0, &d);
		if (type_of(f) != T_DATA) {
			rx_done(d);   /* a late hello */
			continue;
		}
		uint32_t seq = seq_of(f);
		good += seq == got && len == data_len(got, n) && payload_ok(f, seq, len, 0);
		got++;
		rx_done(d);
		send(peer, T_ECHO, seq, len, 0xff);
	}
	tap_eq(good, n, "%u frames from the ping VM, in order, intact", n);
	tap_ge(irqs, 1, "MSI-X interrupts woke the HLT");
	/* hostile frames: given back, sent nowhere */
	frame(peer, T_DATA, 99, FRAME_MAX, 0);
	tap_eq(send_desc((struct desc){ (uintptr_t)txbuf, HDR + FRAME_MAX + 1, 0, 0 }), 0,
	       "a frame of 1515 bytes: given back");
	tap_eq(send_desc((struct desc){ (uintptr_t)txbuf, HDR + 13, 0, 0 }), 0,
	       "a frame of 13 bytes: given back");
	tap_eq(send_desc((struct desc){ (uintptr_t)txbuf, HDR + 60, 2, 0 }), 0,
	       "a writable transmit buffer: given back");
	tap_eq(send_desc((struct desc){ 0xf0000000u, HDR + 60, 0, 0 }), 0,
	       "a transmit buffer outside RAM: given back");
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	tap_eq(send(bcast, T_BCAST, 0, 100, 0), 0, "a broadcast sent");
	tap_eq(send(other, T_TO_OTHER, 0, 100, 0), 0, "a frame to the other link's VM sent");
	tap_eq(foreign, 0, "no frame from another link, none for another VM's address");
}

static void other_role(void)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	unsigned sent = 0, len;
	uint16_t d;
	uint8_t *f = 0;
	for (unsigned i = 0; i < 200; i++) {
		sent += send(bcast, T_OTHER, i, 80, 0) == 0;
		f = receive(&len, 2000000, &d);
		if (f)
			break;
	}
	tap_eq(sent, 200, "200 broadcasts sent on its own link");
	tap_ok(!f, f ? type_of(f) : 0, "none", "nothing received: its link has no other VM");
}

int guest_main(void)
{
	tap_begin("virtionet");
	char role[8] = "";
	rt_arg("role", role, sizeof(role));
	unsigned n = (unsigned)rt_arg_u64("n", 20);
	gap = rt_arg_u64("gap", 0);
	mac_of(rt_arg_u64("me", 0), me);
	mac_of(rt_arg_u64("peer", 0), peer);
	mac_of(rt_arg_u64("other", 0), other);

	tap_eq(cfg_rd(NET_DEVFN, 0, 4), 0x10411af4u, "00:04.0 is virtio-net (1af4:1041)");
	tap_eq(cfg_rd(NET_DEVFN, 8, 4) >> 8, 0x020000, "its class is Ethernet");
	uint32_t bar4 = cfg_rd(NET_DEVFN, 0x10 + 4 * 4, 4);
	tap_eq(bar4, 0xfe00800cu, "BAR 4 placed at 0xfe008000 (64-bit, prefetchable)");
	tap_eq(cfg_rd(NET_DEVFN, 0x3c, 1), 10, "interrupt line 10 (INTA#)");
	bool caps = vdrv_walk_caps(&dev, bar4 & ~0xfu);
	tap_ok(caps, caps, "true", "common, notify, ISR, device and MSI-X capabilities");
	if (!caps)
		return tap_end();
	uintptr_t msix_table = cfg_rd(NET_DEVFN, 0x14, 4) & ~0xfu;
	tap_eq(msix_table, 0xfe00c000u, "BAR 1 (the MSI-X table) placed at 0xfe00c000");
	uint8_t mac[6];
	for (unsigned i = 0; i < 6; i++)
		mac[i] = r8(dev.devcfg + i);
	tap_ok(!memcmp(mac, me, 6), mac[5], "the description's", "the MAC address in the configuration");
	tap_eq(r16(dev.devcfg + 6), 1, "link up");
	w32(dev.common + C_DFSELECT, 0);
	uint32_t df = r32(dev.common + C_DF);
	tap_eq(df & (1u << 5 | 1u << 0), 1u << 5, "MAC offered, no checksum offload");
	tap_eq(vdrv_negotiate(&dev, 1u << 5 | 1u << 16), 0x0b, "FEATURES_OK kept (MAC, STATUS)");
	vdrv_queue(&dev, RXQ, QSIZE, rxq.desc, &rxq.avail, &rxq.used);
	vdrv_queue(&dev, TXQ, QSIZE, txq.desc, &txq.avail, &txq.used);
	rt_set_handler(VEC_RX, on_rx);
	w32(RT_LAPIC + 0xf0, 0x1ff);   /* the APIC enabled (SVR) */
	vdrv_msix(&dev, msix_table, 0, VEC_RX);
	w16(dev.common + C_QSELECT, RXQ);
	w16(dev.common + C_QMSIX, 0);
	w16(dev.common + C_QSELECT, TXQ);
	w16(dev.common + C_QMSIX, 0xffff);   /* no interrupt for sent frames */
	w8(dev.common + C_STATUS, 0x0f);
	for (uint16_t d = 0; d < QSIZE; d++)
		rx_post(d);
	doorbell(RXQ);

	if (!strcmp(role, "ping"))
		ping(n);
	else if (!strcmp(role, "echo"))
		echo(n);
	else
		other_role();
	return tap_end();
}
