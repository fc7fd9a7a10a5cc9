/* virtio: the disk a VM description's `disk =` gives (docs/VIRTIO.md), found and
 * driven the way a virtio 1.x driver does it, flat 32-bit:
 *  - PCI mechanism #1: the host bridge at 00.0, virtio-blk (1af4:1042) at
 *    00:03.0 with its BARs placed and memory decode on, as firmware leaves
 *    them; the vendor capabilities and MSI-X found by walking the list;
 *  - reset, ACKNOWLEDGE, DRIVER, VERSION_1 (and RO where offered),
 *    FEATURES_OK, one queue in guest memory, DRIVER_OK;
 *  - the capacity; reads checked against the image the test made (sector
 *    s byte i is (s * 31 + i * 7 + 0x5a) & 0xff); a write and its read-back
 *    (on a read-only disk: IOERR, the sector unchanged); a read at the
 *    capacity: IOERR; GET_ID;
 *  - MSI-X: the queue's vector through the APIC, one interrupt per request;
 *  - a hostile ring: a buffer outside RAM (given back empty), then a
 *    descriptor linked to itself (the device needs a reset), a reset, and
 *    a healthy read after it.
 * Arguments: sectors=N (the image's), ro=1 for a read-only disk. */
#include "guests/selftest/vdrv.h"

#define BLK_DEVFN    ((3u << 3) | 0)
#define SECTOR       512u
#define VEC_BLK      0x60u


static struct desc descs[QSIZE] __attribute__((aligned(16)));
static struct avail avail __attribute__((aligned(2)));
static struct used used __attribute__((aligned(4)));
static struct { uint32_t type, reserved; uint64_t sector; } hdr;
static uint8_t data[4 * SECTOR];
static volatile uint8_t status;
static volatile unsigned irqs;
static bool ring_with_df;   /* ring the doorbell with RFLAGS.DF set */

static struct vdev dev = { .devfn = BLK_DEVFN };
static uintptr_t common, notify, devcfg, msix_table;
static unsigned notify_mult, msix_cap;
static uint16_t next_avail, seen_used;

static uint8_t pattern(uint64_t sector, unsigned i)
{
	return (uint8_t)(sector * 31 + i * 7 + 0x5a);
}

/* what the write puts in its sector */
static uint8_t flipped(uint64_t sector, unsigned i)
{
	return (uint8_t)(pattern(sector, i) ^ 0xffu);
}

/* ---- the device ---- */

static void on_blk(struct rt_frame *f)
{
	(void)f;
	irqs++;
	w32(RT_LAPIC + 0xb0, 0);   /* EOI (xAPIC) */
}

/* Finds the vendor capabilities and MSI-X; false if one is missing. */
static bool walk_caps(uintptr_t bar4)
{
	bool ok = vdrv_walk_caps(&dev, bar4);
	common = dev.common;
	notify = dev.notify;
	devcfg = dev.devcfg;
	notify_mult = dev.notify_mult;
	msix_cap = dev.msix_cap;
	return ok;
}

/* Reset and bring the device up with `features` word 0; returns the status
 * read back after FEATURES_OK. */
static uint8_t device_init(uint32_t features)
{
	memset(descs, 0, sizeof(descs));
	memset(&avail, 0, sizeof(avail));
	memset(&used, 0, sizeof(used));
	next_avail = seen_used = 0;
	uint8_t st = vdrv_negotiate(&dev, features);   /* (a reset first) */
	vdrv_queue(&dev, 0, QSIZE, descs, &avail, &used);
	w8(common + C_STATUS, 0x0f);
	return st;
}

/* One request of up to three buffers: header, data (`len` bytes, device
 * writable for IN), status. Returns the used length, or ~0 if the device
 * gave nothing back. */
static uint32_t request(uint32_t type, uint64_t sector, void *buf, uint32_t len, bool in)
{
	hdr.type = type;
	hdr.reserved = 0;
	hdr.sector = sector;
	status = 0xee;
	/* descriptors 0, 1 (the data, if any) and then the status, linked */
	unsigned n = 0;
	descs[n++] = (struct desc){ (uintptr_t)&hdr, sizeof(hdr), 1, 1 };
	if (len) {
		descs[n] = (struct desc){ (uintptr_t)buf, len, (uint16_t)(1 | (in ? 2 : 0)), 2 };
		n++;
	}
	descs[n - 1].next = (uint16_t)n;
	descs[n] = (struct desc){ (uintptr_t)&status, 1, 2, 0 };
	avail.ring[next_avail % QSIZE] = 0;
	asm volatile("" ::: "memory");
	avail.idx = ++next_avail;
	asm volatile("" ::: "memory");
	if (ring_with_df)   /* the device's copy must not run with the guest's DF */
		asm volatile("std\n\tmovw %w1, (%0)\n\tcld" : : "r"(notify), "r"(0u) : "memory", "cc");
	else
		w16(notify + 0 * notify_mult, 0);   /* queue 0's doorbell */
	if (*(volatile uint16_t *)&used.idx == seen_used)
		return ~0u;
	uint32_t got = used.ring[seen_used % QSIZE].len;
	seen_used++;
	return got;
}

static bool pattern_ok(const uint8_t *p, uint64_t sector, unsigned sectors)
{
	for (unsigned s = 0; s < sectors; s++)
		for (unsigned i = 0; i < SECTOR; i++)
			if (p[s * SECTOR + i] != pattern(sector + s, i))
				return false;
	return true;
}

int guest_main(void)
{
	tap_begin("virtio");
	uint64_t sectors = rt_arg_u64("sectors", 0);
	bool ro = rt_arg_u64("ro", 0);

	tap_eq(cfg_rd(0, 0, 4), 0x12378086u, "00.0 is the host bridge (8086:1237)");
	tap_eq(cfg_rd(BLK_DEVFN, 0, 4), 0x10421af4u, "00:03.0 is virtio-blk (1af4:1042)");
	tap_eq(cfg_rd(BLK_DEVFN, 8, 4) >> 8, 0x010000, "its class is mass storage");
	unsigned others = 0;
	for (unsigned dev = 1; dev < 32; dev++)
		others += dev != 3 && cfg_rd(dev << 3, 0, 2) != 0xffff;
	tap_eq(others, 0, "no other function on bus 0");
	uint32_t bar4 = cfg_rd(BLK_DEVFN, 0x10 + 4 * 4, 4), bar4hi = cfg_rd(BLK_DEVFN, 0x14 + 4 * 4, 4);
	tap_eq(bar4, 0xfe00000cu, "BAR 4 placed at 0xfe000000 (64-bit, prefetchable)");
	tap_eq(bar4hi, 0, "BAR 4's upper half 0");
	tap_eq(cfg_rd(BLK_DEVFN, 4, 2) & 6, 6, "memory decode and bus mastering on");
	tap_eq(cfg_rd(BLK_DEVFN, 0x3c, 1), 11, "interrupt line 11 (INTA#)");
	bool caps = walk_caps(bar4 & ~0xfu);
	tap_ok(caps, caps, "true", "common, notify, ISR, device and MSI-X capabilities");
	if (!caps)
		return tap_end();
	msix_table = cfg_rd(BLK_DEVFN, 0x14, 4) & ~0xfu;   /* BAR 1 */
	tap_eq(msix_table, 0xfe004000u, "BAR 1 (the MSI-X table) placed at 0xfe004000");

	/* negotiation */
	w8(common + C_STATUS, 0);
	tap_eq(r8(common + C_STATUS), 0, "status 0 after reset");
	w32(common + C_DFSELECT, 1);
	tap_eq(r32(common + C_DF) & 1, 1, "VERSION_1 offered");
	w32(common + C_DFSELECT, 0);
	uint32_t df = r32(common + C_DF);
	tap_eq(!!(df & (1u << 5)), ro, "RO offered exactly when the disk is read-only");
	tap_eq(device_init(df & (1u << 5)), 0x0b, "FEATURES_OK kept");
	tap_eq(r16(common + C_QENABLE), 1, "queue 0 enabled");
	uint64_t cap = r32(devcfg) | (uint64_t)r32(devcfg + 4) << 32;
	tap_eq(cap, sectors, "capacity: the image's sectors");

	/* reads, a write, the edges */
	memset(data, 0, sizeof(data));
	tap_eq(request(0, 1, data, 2 * SECTOR, true), 2 * SECTOR + 1, "read sectors 1-2: used length");
	tap_eq(status, 0, "read: OK");
	tap_ok(pattern_ok(data, 1, 2), data[0], "the image's bytes", "read: the image's data");
	/* sector 3 as the image has it: a VM given the same image after one
	 * that wrote it must not see that write */
	memset(data, 0, sizeof(data));
	request(0, 3, data, SECTOR, true);
	tap_ok(pattern_ok(data, 3, 1), data[0], "the image's bytes",
	       "sector 3 before the write: the image's, whatever another VM wrote");
	for (unsigned i = 0; i < SECTOR; i++)
		data[i] = flipped(3, i);
	request(1, 3, data, SECTOR, false);
	tap_eq(status, ro ? 1 : 0, ro ? "write on a read-only disk: IOERR" : "write sector 3: OK");
	memset(data, 0, sizeof(data));
	request(0, 3, data, SECTOR, true);
	bool written = data[0] == flipped(3, 0) && data[511] == flipped(3, 511);
	tap_ok(written != ro, data[0], ro ? "the old bytes" : "the bytes written",
	       "sector 3 read back");
	request(0, sectors, data, SECTOR, true);
	tap_eq(status, 1, "read at the capacity: IOERR");
	request(0, sectors - 1, data, 2 * SECTOR, true);
	tap_eq(status, 1, "read across the end: IOERR");
	memset(data, 0, 32);
	tap_eq(request(8, 0, data, 20, true), 21, "GET_ID: 20 bytes and the status");
	tap_ok(!memcmp(data, "lightpath-vda", 14), data[0], "lightpath-vda", "GET_ID: the serial");

	/* MSI-X: entry 0 to this CPU's APIC, vector VEC_BLK; queue 0 on it */
	rt_set_handler(VEC_BLK, on_blk);
	w32(RT_LAPIC + 0xf0, 0x1ff);   /* the APIC enabled (SVR) */
	vdrv_msix(&dev, msix_table, 0, VEC_BLK);
	w16(common + C_QSELECT, 0);
	w16(common + C_QMSIX, 0);
	tap_eq(r16(common + C_QMSIX), 0, "queue 0 mapped to MSI-X vector 0");
	irqs = 0;
	sti();
	request(0, 0, data, SECTOR, true);
	request(0, 4, data, SECTOR, true);
	for (unsigned spin = 0; spin < 1000 && irqs < 2; spin++)
		asm volatile("pause");
	cli();
	tap_eq(irqs, 2, "two requests, two MSI-X interrupts");
	tap_ok(pattern_ok(data, 4, 1), data[0], "the image's bytes", "and the data read");

	/* hostile: an MSI-X entry aimed at the guest's own RAM instead of the
	 * APICs (a device write there would be a DMA write lightpath does on
	 * the guest's behalf): dropped, the RAM untouched, no interrupt */
	static volatile uint32_t canary = 0x5a5a5a5au;
	w32(msix_table + 16 + 0, (uint32_t)(uintptr_t)&canary);
	w32(msix_table + 16 + 4, 0);
	w32(msix_table + 16 + 8, 0xdeadbeefu);
	w32(msix_table + 16 + 12, 0);
	w16(common + C_QMSIX, 1);
	irqs = 0;
	sti();
	request(0, 0, data, SECTOR, true);
	for (unsigned spin = 0; spin < 1000; spin++)
		asm volatile("pause");
	cli();
	tap_ok(canary == 0x5a5a5a5au && irqs == 0, canary, "0x5a5a5a5a and no interrupt",
	       "an MSI-X message aimed at RAM: dropped, RAM untouched");
	w16(common + C_QMSIX, 0);

	/* hostile: a buffer outside RAM, then a ring that loops */
	status = 0xee;
	tap_eq(request(0, 0, (void *)0xf0000000u, SECTOR, true), 0,
	       "a buffer outside RAM: given back with nothing written");
	tap_eq(status, 0xee, "and the status byte untouched");
	descs[0] = (struct desc){ (uintptr_t)&hdr, sizeof(hdr), 1, 0 };   /* next = itself */
	avail.ring[next_avail % QSIZE] = 0;
	avail.idx = ++next_avail;
	w16(notify, 0);
	tap_eq(r8(common + C_STATUS) & 0x40, 0x40, "a looping chain: DEVICE_NEEDS_RESET");
	tap_eq(device_init(df & (1u << 5)), 0x0b, "reset and up again");
	memset(data, 0, sizeof(data));
	request(0, 5, data, SECTOR, true);
	tap_ok(status == 0 && pattern_ok(data, 5, 1), status, "OK and the image's bytes",
	       "a healthy read after the reset");

	/* hostile: BAR 4 moved onto the local APIC's page, then onto this VM's
	 * RAM. The APIC is looked up first, so it still answers; RAM stays RAM
	 * (a status byte written there resets nothing). Moved back, the device
	 * works as it did. */
	const unsigned bar4_reg = 0x10 + 4 * 4;
	uint32_t apic_version = r32(RT_LAPIC + 0x30);
	cfg_wr(BLK_DEVFN, bar4_reg, 4, 0xfee00000u);
	tap_eq(cfg_rd(BLK_DEVFN, bar4_reg, 4), 0xfee0000cu, "BAR 4 moved onto the local APIC");
	tap_eq(r32(RT_LAPIC + 0x30), apic_version, "the APIC's version register still the APIC's");
	const uintptr_t ram = 0x00800000u;   /* 8 MiB: free RAM of this 32 MiB VM */
	w32(ram + C_STATUS, 0x5a5a5a5au);
	cfg_wr(BLK_DEVFN, bar4_reg, 4, (uint32_t)ram);
	w8(ram + C_STATUS, 0);               /* on the device this would be a reset */
	tap_eq(r32(ram + C_STATUS), 0x5a5a5a00u, "BAR 4 moved onto RAM: RAM answers there");
	cfg_wr(BLK_DEVFN, bar4_reg, 4, 0xfe000000u);
	tap_eq(r8(common + C_STATUS), 0x0f, "moved back: the device's status as it was");
	memset(data, 0, sizeof(data));
	request(0, 6, data, SECTOR, true);
	tap_ok(status == 0 && pattern_ok(data, 6, 1), status, "OK and the image's bytes",
	       "and a read works");

	/* hostile: the doorbell rung with RFLAGS.DF set. lightpath copies with
	 * REP MOVS; the guest's DF must not reach it (the exit gives the host
	 * its own RFLAGS), or the copy would run backwards over its memory. */
	memset(data, 0, sizeof(data));
	ring_with_df = true;
	request(0, 8, data, 4 * SECTOR, true);
	ring_with_df = false;
	tap_ok(status == 0 && pattern_ok(data, 8, 4), status, "OK and the image's bytes",
	       "a 2 KiB read rung with DF=1: the right bytes, in place");

	/* ECAM: the same configuration space as mechanism #1; what a guest
	 * cannot change there it cannot change here */
	const uintptr_t ecam = 0xe0000000u, blk_cfg = ecam + ((uintptr_t)BLK_DEVFN << 12);
	tap_eq(r32(blk_cfg), 0x10421af4u, "ECAM: 00:03.0's IDs");
	w32(blk_cfg, 0);
	tap_eq(cfg_rd(BLK_DEVFN, 0, 4), 0x10421af4u, "ECAM: the IDs are read-only");
	tap_eq(r32(blk_cfg + 0x100), 0, "ECAM: no extended capability at 0x100");
	tap_eq(r32(blk_cfg + 2), 0xffffffffu, "ECAM: a misaligned dword reads all-ones");
	tap_eq(r32(ecam + (9u << 15)), 0xffffffffu, "ECAM: an absent device reads all-ones");
	tap_eq(r32(blk_cfg + 0x10 + 4 * 4), 0xfe00000cu, "ECAM: BAR 4 where mechanism #1 says");
	memset(data, 0, sizeof(data));
	request(0, 7, data, SECTOR, true);
	tap_ok(status == 0 && pattern_ok(data, 7, 1), status, "OK and the image's bytes",
	       "and the device still works");
	return tap_end();
}
