/* vbench: the virtio rows of `make bench`, flat 32-bit, in two
 * VMs side by side (tools/bench.py, run_virtio: QEMU -icount -smp 2, where
 * the TSC counts the instructions of both CPUs):
 *
 *   role=main (disk = and net = link): on virtio-blk,
 *     virtio_notify     a 32-bit doorbell write with nothing new on the
 *                       queue: the exit, the device's look at the ring, back
 *     virtio_notify16   the same as a 16-bit write, as Linux rings it
 *     blk_read_4k       one 4 KiB read request: descriptors, avail index,
 *                       doorbell, the device's copy, until the used index
 *                       moved (no interrupt: the queue has no vector)
 *   then on the link,
 *     net_rtt_1514      a 1514-byte frame to the echo VM and its echo back,
 *                       each received by an MSI-X interrupt that wakes a
 *                       HLT: both VMs' exits, the link, the kicks, both
 *                       guests' drivers (two frames, one each way)
 *   role=echo (net = link): sends every frame it receives back.
 *
 * Each row: n samples, bracketed by RDTSC; "bench: mode=virtio exit=ROW
 * n=N min=M mean=X" lines as bench.c prints them. */
#include "guests/bench/bench_site.h"
#include "guests/selftest/vdrv.h"

#define BLK_DEVFN  ((3u << 3) | 0)
#define NET_DEVFN  ((4u << 3) | 0)
#define HDR        12u
#define FRAME      1514u
#define VEC_RX     0x61u
#define STOP_TYPE  0x88bfu   /* a frame of this type ends the echo VM */
#define WARMUP_TSC 20000000u /* instructions to wait for the echo VM's first answer */


static struct queue blkq, rxq, txq;
static struct vdev blk = { .devfn = BLK_DEVFN }, net = { .devfn = NET_DEVFN };
static struct { uint32_t type, reserved; uint64_t sector; } req;
static uint8_t data[4096];
static volatile uint8_t status;
static uint8_t rxbuf[QSIZE][HDR + FRAME];
static uint8_t txbuf[HDR + FRAME];

struct row { const char *name; uint32_t min; uint64_t sum; };

static void report(const struct row *r, uint32_t n)
{
	uint64_t m = r->sum * 100 / n;
	rt_printf("bench: mode=virtio exit=%s n=%u min=%u mean=%llu.%02llu\n", r->name, n, r->min,
		  (unsigned long long)(m / 100), (unsigned long long)(m % 100));
}

static void sample(struct row *r, uint32_t t)
{
	if (t < r->min)
		r->min = t;
	r->sum += t;
}

static void on_rx(struct rt_frame *f)
{
	(void)f;
	w32(RT_LAPIC + 0xb0, 0);   /* EOI (xAPIC) */
}


static bool up(struct vdev *d, uint32_t features, unsigned queues)
{
	uint32_t bar4 = cfg_rd(d->devfn, 0x10 + 4 * 4, 4) & ~0xfu;
	if (!bar4 || !vdrv_walk_caps(d, bar4) || vdrv_negotiate(d, features) != 0x0b)
		return false;
	struct queue *qs[2] = { queues == 1 ? &blkq : &rxq, &txq };
	for (unsigned q = 0; q < queues; q++)
		vdrv_queue(d, q, QSIZE, qs[q]->desc, &qs[q]->avail, &qs[q]->used);
	return true;
}

static void rx_post(uint16_t k)
{
	rxq.desc[k] = (struct desc){ (uintptr_t)rxbuf[k], HDR + FRAME, 2, 0 };
	vdrv_post(&rxq, k);
}

/* Brings the network device up with MSI-X for received frames. */
static bool net_up(void)
{
	if (!up(&net, 1u << 5, 2))
		return false;
	rt_set_handler(VEC_RX, on_rx);
	w32(RT_LAPIC + 0xf0, 0x1ff);   /* the APIC enabled (SVR) */
	vdrv_msix(&net, cfg_rd(NET_DEVFN, 0x14, 4) & ~0xfu, 0, VEC_RX);
	w16(net.common + C_QSELECT, 0);
	w16(net.common + C_QMSIX, 0);
	w16(net.common + C_QSELECT, 1);
	w16(net.common + C_QMSIX, 0xffff);
	w8(net.common + C_STATUS, 0x0f);
	for (uint16_t k = 0; k < QSIZE; k++)
		rx_post(k);
	w16(net.notify, 0);
	return true;
}

/* Waits (HLT, woken by the receive interrupt) for the next frame; returns
 * its descriptor. */
static uint16_t rx_wait(void)
{
	while (*(volatile uint16_t *)&rxq.used.idx == rxq.seen_used)
		asm volatile("sti; hlt; cli" ::: "memory");
	return (uint16_t)rxq.used.ring[rxq.seen_used++ % QSIZE].id;
}

static void tx(const uint8_t *frame)
{
	uint16_t k = txq.next_avail % QSIZE;
	memcpy(txbuf + HDR, frame, FRAME);
	txq.desc[k] = (struct desc){ (uintptr_t)txbuf, HDR + FRAME, 0, 0 };
	vdrv_post(&txq, k);
	w32(net.notify + net.notify_mult, 1);
}

static int echo_main(void)
{
	if (!net_up()) {
		rt_printf("bench: check FAILED: no virtio-net device\n");
		return 1;
	}
	for (;;) {   /* until the main VM says stop */
		uint16_t k = rx_wait();
		uint8_t *f = rxbuf[k % QSIZE] + HDR, mac[6];
		if ((f[12] << 8 | f[13]) == STOP_TYPE)
			return 0;
		memcpy(mac, f, 6);
		memcpy(f, f + 6, 6);
		memcpy(f + 6, mac, 6);
		tx(f);
		rx_post(k);
		w16(net.notify, 0);
	}
}

static int main_main(uint32_t n)
{
	if (!up(&blk, 0, 1)) {
		rt_printf("bench: check FAILED: no virtio-blk device\n");
		return 1;
	}
	w16(blk.common + C_QSELECT, 0);
	w16(blk.common + C_QMSIX, 0xffff);   /* no interrupt: the bracket ends at the used index */
	blkq.avail.flags = 1;                /* NO_INTERRUPT: a polling driver */
	w8(blk.common + C_STATUS, 0x0f);
	uintptr_t bell = blk.notify;
	struct row rows[4] = { { "virtio_notify", ~0u, 0 }, { "virtio_notify16", ~0u, 0 },
			       { "blk_read_4k", ~0u, 0 }, { "net_rtt_1514", ~0u, 0 } };
	uint32_t t0, t1;
	for (uint32_t i = 0; i < n; i++) {
		/* mov %reg, (bell): the encodings a driver's iowrite32/iowrite16 use */
		asm volatile("rdtsc\n\t" BENCH_SITE("virtio_notify") "mov %%eax, %0\n\t"
			     "movl %3, (%2)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1) : "r"(bell), "r"(0u) : "edx", "memory");
		sample(&rows[0], t1 - t0);
		asm volatile("rdtsc\n\t" BENCH_SITE("virtio_notify16") "mov %%eax, %0\n\t"
			     "movw %w3, (%2)\n\trdtsc"
			     : "=&r"(t0), "=a"(t1) : "r"(bell), "r"(0u) : "edx", "memory");
		sample(&rows[1], t1 - t0);
	}
	blkq.desc[0] = (struct desc){ (uintptr_t)&req, sizeof(req), 1, 1 };
	blkq.desc[1] = (struct desc){ (uintptr_t)data, sizeof(data), 3, 2 };
	blkq.desc[2] = (struct desc){ (uintptr_t)&status, 1, 2, 0 };
	for (uint32_t i = 0; i < n; i++) {
		req.type = 0;
		req.sector = (i * 8) % 64;
		status = 0xee;
		asm volatile("rdtsc\n\t" BENCH_SITE("blk_read_4k") "mov %%eax, %0"
			     : "=r"(t0) : : "eax", "edx", "memory");
		vdrv_post(&blkq, 0);
		asm volatile("movl %1, (%0)" : : "r"(bell), "r"(0u) : "memory");   /* as iowrite32 */
		while (*(volatile uint16_t *)&blkq.used.idx == blkq.seen_used)
			;
		asm volatile("rdtsc" : "=a"(t1) : : "edx", "memory");
		blkq.seen_used++;
		if (status != 0) {
			rt_printf("bench: check FAILED: a 4 KiB read ended with status %u\n", status);
			return 1;
		}
		sample(&rows[2], t1 - t0);
	}
	if (!net_up()) {
		rt_printf("bench: check FAILED: no virtio-net device\n");
		return 1;
	}
	uint8_t frame[FRAME];
	for (unsigned i = 0; i < FRAME; i++)
		frame[i] = (uint8_t)i;
	for (unsigned i = 0; i < 6; i++) {
		frame[i] = 0xff;   /* broadcast: to the echo VM, the only other port */
		frame[6 + i] = r8(net.devcfg + i);
	}
	/* until the echo VM is on the link (frames before that reach nobody),
	 * then a pause to let late echoes of the tries arrive and be dropped */
	bool answered = false;
	for (unsigned tries = 0; !answered && tries < 500; tries++) {
		tx(frame);
		for (uint64_t t = rdtsc(); !answered && rdtsc() - t < WARMUP_TSC;)
			answered = *(volatile uint16_t *)&rxq.used.idx != rxq.seen_used;
	}
	if (!answered) {
		rt_printf("bench: check FAILED: the echo VM never answered\n");
		return 1;
	}
	for (uint64_t t = rdtsc(); rdtsc() - t < 4 * WARMUP_TSC;)
		while (*(volatile uint16_t *)&rxq.used.idx != rxq.seen_used) {
			rx_post((uint16_t)rxq.used.ring[rxq.seen_used++ % QSIZE].id);
			w16(net.notify, 0);
		}
	for (uint32_t i = 0; i < n; i++) {
		t0 = (uint32_t)rdtsc();
		tx(frame);
		uint16_t k = rx_wait();
		t1 = (uint32_t)rdtsc();
		if (memcmp(rxbuf[k % QSIZE] + HDR + 12, frame + 12, FRAME - 12)) {
			rt_printf("bench: check FAILED: the echo differs from the frame\n");
			return 1;
		}
		rx_post(k);
		w16(net.notify, 0);
		sample(&rows[3], t1 - t0);
	}
	frame[12] = STOP_TYPE >> 8;
	frame[13] = STOP_TYPE & 0xff;
	tx(frame);
	for (unsigned r = 0; r < 4; r++)
		report(&rows[r], n);
	rt_printf("bench: mode=virtio done\n");
	return 0;
}

int guest_main(void)
{
	char role[8] = "";
	rt_arg("role", role, sizeof(role));
	uint32_t n = (uint32_t)rt_arg_u64("n", 200);
	if (!n)
		n = 1;
	return strcmp(role, "echo") ? main_main(n) : echo_main();
}
