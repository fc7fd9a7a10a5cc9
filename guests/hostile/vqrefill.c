/* vqrefill: one doorbell that a sibling vCPU tries to make endless. A VM of
 * two vCPUs with a disk (`disk =`, `cpus = 2`), flat 32-bit:
 *  - the boot vCPU brings up the virtio-blk queue (128 entries), every
 *    avail entry naming one chain: a header, a read of the whole image
 *    (`sectors=` sectors) and a status byte;
 *  - it starts the second vCPU (INIT, SIPI), which keeps avail.idx a whole
 *    ring ahead of used.idx for ever, without an exit: every chain the
 *    device gives back is offered again at once;
 *  - the boot vCPU rings the doorbell, and rings it again each time it
 *    returns (the sibling alone may not keep up with the device on an
 *    emulator that runs the vCPUs in turn).
 * Before the doorbell budget, that one doorbell served chains for as long as
 * the sibling refilled: the CPU never left lightpath, so neither the VM's
 * time limit nor anything else stopped it. Now each turn serves at most a
 * budget (descriptors, bytes) and the vCPU passes its heavy path between
 * turns: the VM is stopped by its time limit (`timeout =`), and the harness
 * checks that line and the device's count of budget stops, while another VM
 * with a disk runs its self-test beside it. */
#define QSIZE 128u
#include "guests/selftest/vdrv.h"

#ifdef __x86_64__
#error "vqrefill is a flat 32-bit guest"
#endif

#define BLK_DEVFN  ((3u << 3) | 0)
#define SECTOR     512u
#define MAX_SECTORS 2048u   /* 1 MiB: each chain's copy a long window for the sibling */
#define ICR_LO     0x300u
#define ICR_HI     0x310u
#define ICR_BUSY   (1u << 12)
#define DM_INIT    (5u << 8)
#define DM_SIPI    (6u << 8)
#define ICR_ASSERT (1u << 14)

static struct queue q;
static struct { uint32_t type, reserved; uint64_t sector; } hdr;
static uint8_t data[MAX_SECTORS * SECTOR];
static volatile uint8_t status;
static struct vdev dev = { .devfn = BLK_DEVFN };
static volatile uint32_t ap_up;
static uint8_t ap_stack[4096] __attribute__((aligned(16)));

/* The sibling: the ring full again as soon as the device gives a chain
 * back (avail.idx may run a queue ahead of what the device took, never
 * more: that is the spec's bound, which the device checks). */
__attribute__((noreturn)) static void ap_main(void)
{
	__atomic_store_n(&ap_up, 1, __ATOMIC_RELEASE);
	for (;;) {
		uint16_t used = *(volatile uint16_t *)&q.used.idx;
		*(volatile uint16_t *)&q.avail.idx = (uint16_t)(used + QSIZE);
	}
}

static void icr(uint32_t dest, uint32_t lo)
{
	while (r32(RT_LAPIC + ICR_LO) & ICR_BUSY)
		asm volatile("pause");
	w32(RT_LAPIC + ICR_HI, dest << 24);
	w32(RT_LAPIC + ICR_LO, lo);
}

int guest_main(void)
{
	tap_begin("vqrefill");
	unsigned sectors = (unsigned)rt_arg_u64("sectors", MAX_SECTORS);
	if (sectors > MAX_SECTORS)
		sectors = MAX_SECTORS;
	tap_eq(cfg_rd(BLK_DEVFN, 0, 4), 0x10421af4u, "00:03.0 is virtio-blk (1af4:1042)");
	uint32_t bar4 = cfg_rd(BLK_DEVFN, 0x10 + 4 * 4, 4) & ~0xfu;
	bool caps = vdrv_walk_caps(&dev, bar4);
	tap_ok(caps, caps, "true", "common, notify, ISR, device and MSI-X capabilities");
	if (!caps)
		return tap_end();
	tap_eq(vdrv_negotiate(&dev, 0), 0x0b, "FEATURES_OK kept (VERSION_1 only)");
	vdrv_queue(&dev, 0, QSIZE, q.desc, &q.avail, &q.used);
	w8(dev.common + C_STATUS, 0x0f);
	tap_eq(r8(dev.common + C_STATUS), 0x0f, "DRIVER_OK");

	hdr.type = 0;   /* VIRTIO_BLK_T_IN, sector 0 */
	q.desc[0] = (struct desc){ (uintptr_t)&hdr, sizeof(hdr), 1, 1 };
	q.desc[1] = (struct desc){ (uintptr_t)data, sectors * SECTOR, 3, 2 };
	q.desc[2] = (struct desc){ (uintptr_t)&status, 1, 2, 0 };
	for (unsigned i = 0; i < QSIZE; i++)
		q.avail.ring[i] = 0;
	q.avail.idx = QSIZE;

	rt_ap_install(ap_main);
	rt_ap_set_stack(ap_stack + sizeof(ap_stack));
	w32(RT_LAPIC + 0xf0, 0x1ff);   /* this APIC enabled (SVR) */
	icr(1, ICR_ASSERT | DM_INIT);
	icr(1, ICR_ASSERT | DM_SIPI | RT_AP_SIPI_VECTOR);
	uint64_t t0 = rdtsc();
	while (!__atomic_load_n(&ap_up, __ATOMIC_ACQUIRE) && rdtsc() - t0 < 20000000000ull)
		asm volatile("pause");
	bool up = __atomic_load_n(&ap_up, __ATOMIC_ACQUIRE);
	tap_ok(up, up, "true", "the second vCPU started and refills the ring");
	if (!up)
		return tap_end();
	rt_printf("vqrefill: ringing the doorbell; the sibling refills the ring for ever\n");
	w16(dev.notify, 0);
	/* The doorbell returned (maybe after the device's further turns, which
	 * the next exits give it): again, until the time limit. */
	rt_printf("vqrefill: the doorbell returned; ringing it until the time limit\n");
	for (;;)
		w16(dev.notify, 0);
}
