/* rxwalk: a receive ring built to make the network device walk as long as
 * possible, and a sender that keeps frames coming to it (`net =`, flat
 * 32-bit; arguments role=walk|flood, me=MAC as a 48-bit number):
 *  - walk: negotiates INDIRECT_DESC and posts a receive queue of 256
 *    entries that all name one chain: 255 empty descriptors, then an
 *    indirect table of 1024 entries, 1023 of them empty and the last a
 *    device-readable buffer, so that the device refuses the chain after
 *    walking all 1279 descriptors and the frame waits for the next chain.
 *    Whenever the device has given chains back it offers the whole ring
 *    again and rings the receive doorbell, for ever.
 *  - flood: sends broadcasts on the link for ever, so that a frame is
 *    always waiting for the walker.
 * Before the doorbell budget, each frame made the walker's device walk the
 * whole ring, 256 x 1279 descriptors, holding the one lock every link
 * shared: a VM alone on another link sent several times fewer frames. Now a turn
 * walks at most VQ_DOORBELL_BUDGET descriptors, no lock is held while it
 * walks, and links share no lock. Both VMs are stopped by their time limit
 * (`timeout =`); the harness runs a healthy pair on another link beside
 * them (guests/selftest/virtionet.c) and checks the walker's count of
 * budget stops. */
#define QSIZE 256u
#include "guests/selftest/vdrv.h"

#ifdef __x86_64__
#error "rxwalk is a flat 32-bit guest"
#endif

#define NET_DEVFN  ((4u << 3) | 0)
#define HDR        12u
#define RXQ        0u
#define TXQ        1u
#define TABLE      1024u
#define F_INDIRECT (1u << 28)

static struct queue rxq, txq;
static struct desc table[TABLE] __attribute__((aligned(16)));
static uint8_t readable[64];
static uint8_t txbuf[HDR + 64];
static struct vdev dev = { .devfn = NET_DEVFN };

static void doorbell(unsigned q)
{
	w16(dev.notify + q * dev.notify_mult, (uint16_t)q);
}

__attribute__((noreturn)) static void walk(void)
{
	for (unsigned i = 0; i + 1 < QSIZE; i++)
		rxq.desc[i] = (struct desc){ (uintptr_t)readable, 0, 1, (uint16_t)(i + 1) };
	rxq.desc[QSIZE - 1] = (struct desc){ (uintptr_t)table, sizeof(table), 4, 0 };
	for (unsigned i = 0; i + 1 < TABLE; i++)
		table[i] = (struct desc){ (uintptr_t)readable, 0, 1, (uint16_t)(i + 1) };
	table[TABLE - 1] = (struct desc){ (uintptr_t)readable, sizeof(readable), 0, 0 };
	for (unsigned i = 0; i < QSIZE; i++)
		rxq.avail.ring[i] = 0;
	rt_printf("rxwalk: walker: 256 chains of 1279 descriptors on the receive ring, for ever\n");
	for (;;) {
		/* the whole ring offered again (never more than a queue ahead) */
		uint16_t used = *(volatile uint16_t *)&rxq.used.idx;
		*(volatile uint16_t *)&rxq.avail.idx = (uint16_t)(used + QSIZE);
		doorbell(RXQ);
	}
}

__attribute__((noreturn)) static void flood(const uint8_t *me)
{
	memset(txbuf, 0, sizeof(txbuf));
	memset(txbuf + HDR, 0xff, 6);
	memcpy(txbuf + HDR + 6, me, 6);
	txbuf[HDR + 12] = 0x88;
	txbuf[HDR + 13] = 0xbc;
	txq.desc[0] = (struct desc){ (uintptr_t)txbuf, sizeof(txbuf), 0, 0 };
	for (unsigned i = 0; i < QSIZE; i++)
		txq.avail.ring[i] = 0;
	rt_printf("rxwalk: flooder: broadcasts on the link, for ever\n");
	for (;;) {
		uint16_t used = *(volatile uint16_t *)&txq.used.idx;
		*(volatile uint16_t *)&txq.avail.idx = (uint16_t)(used + 1);
		doorbell(TXQ);
	}
}

int guest_main(void)
{
	tap_begin("rxwalk");
	char role[8] = "";
	rt_arg("role", role, sizeof(role));
	uint64_t mac = rt_arg_u64("me", 0);
	uint8_t me[6];
	for (unsigned i = 0; i < 6; i++)
		me[i] = (uint8_t)(mac >> (8 * (5 - i)));
	tap_eq(cfg_rd(NET_DEVFN, 0, 4), 0x10411af4u, "00:04.0 is virtio-net (1af4:1041)");
	uint32_t bar4 = cfg_rd(NET_DEVFN, 0x10 + 4 * 4, 4) & ~0xfu;
	bool caps = vdrv_walk_caps(&dev, bar4);
	tap_ok(caps, caps, "true", "common, notify, ISR, device and MSI-X capabilities");
	if (!caps)
		return tap_end();
	tap_eq(vdrv_negotiate(&dev, 1u << 5 | F_INDIRECT), 0x0b, "FEATURES_OK kept (MAC, INDIRECT_DESC)");
	vdrv_queue(&dev, RXQ, QSIZE, rxq.desc, &rxq.avail, &rxq.used);
	vdrv_queue(&dev, TXQ, QSIZE, txq.desc, &txq.avail, &txq.used);
	w8(dev.common + C_STATUS, 0x0f);
	tap_eq(r8(dev.common + C_STATUS), 0x0f, "DRIVER_OK");
	if (!strcmp(role, "walk"))
		walk();
	flood(me);
}
