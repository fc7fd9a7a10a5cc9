/* dev/virtio_pci.c: what a virtio 1.x driver finds and does through the PCI
 * transport (virtio spec 1.2, 4.1), and a guest that writes anything
 * anywhere in the BAR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/virtio_pci.h"
#include "tests/unit/stubs.h"


static unsigned kicks[VIRTIO_PCI_MAX_QUEUES], dev_resets;
static uint8_t devcfg[8] = { 0x00, 0x10, 0, 0, 0, 0, 0, 0 };   /* capacity 4096 */

static uint32_t cfg_read(struct virtio_pci *t, unsigned off, unsigned size)
{
	(void)t;
	uint32_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint32_t)devcfg[off + i] << (8 * i);
	return v;
}

static void cfg_write(struct virtio_pci *t, unsigned off, unsigned size, uint32_t val)
{
	(void)t;
	(void)off;
	(void)size;
	(void)val;   /* read-only, like virtio-blk's capacity */
}

static void kick(struct virtio_pci *t, unsigned q)
{
	(void)t;
	kicks[q]++;
}

static void dev_reset(struct virtio_pci *t)
{
	(void)t;
	dev_resets++;
}

static const struct virtio_pci_ops blk_like = {
	.device_id = 2, .class_rev = 0x01000000, .features = 1ull << 9 | 1ull << 28,
	.num_queues = 2, .queue_max = 128, .cfg_len = sizeof(devcfg),
	.cfg_read = cfg_read, .cfg_write = cfg_write, .kick = kick, .reset = dev_reset,
};

static struct pci_bus bus;
static struct virtio_pci t;
#define DEVFN PCI_DEVFN(4, 0)

static int setup(void **state)
{
	(void)state;
	memset(kicks, 0, sizeof(kicks));
	dev_resets = 0;
	pci_bus_init(&bus);
	assert_int_equal(virtio_pci_init(&t, DEVFN, &blk_like, &stub_ram_mem), 0);
	assert_int_equal(pci_bus_add(&bus, &t.pci), 0);
	return 0;
}

static uint64_t rd(uint64_t off, unsigned size) { return virtio_pci_read(&t, off, size); }
static void wr(uint64_t off, unsigned size, uint64_t v) { virtio_pci_write(&t, off, size, v); }
static uint32_t cfg(unsigned off, unsigned size) { return pci_bus_read(&bus, 0, DEVFN, off, size); }

static void test_refused_devices(void **state)
{
	(void)state;
	struct virtio_pci_ops bad = blk_like;
	bad.num_queues = 0;
	assert_int_equal(virtio_pci_init(&t, DEVFN, &bad, &stub_ram_mem), -1);
	bad = blk_like;
	bad.queue_max = 100;
	assert_int_equal(virtio_pci_init(&t, DEVFN, &bad, &stub_ram_mem), -1);
	bad = blk_like;
	bad.num_queues = VIRTIO_PCI_MAX_QUEUES + 1;
	assert_int_equal(virtio_pci_init(&t, DEVFN, &bad, &stub_ram_mem), -1);
	bad = blk_like;
	bad.cfg_read = NULL;
	assert_int_equal(virtio_pci_init(&t, DEVFN, &bad, &stub_ram_mem), -1);
}

/* What Linux's virtio_pci_modern probe reads: IDs, then the vendor
 * capabilities by type, each naming BAR 4 and a range inside it. */
static void test_ids_and_capabilities(void **state)
{
	(void)state;
	assert_int_equal(cfg(PCI_VENDOR_ID, 4), 0x10421af4u);
	assert_int_equal(cfg(PCI_CLASS_REVISION, 4), 0x01000001u);
	assert_int_equal(cfg(PCI_SUBSYS_ID, 2), 0x40);
	assert_int_equal(cfg(PCI_INTR_PIN, 1), 1);
	unsigned types = 0, n = 0, msix = 0;
	for (unsigned p = cfg(PCI_CAP_PTR, 1); p; p = cfg(p + 1, 1)) {
		if (cfg(p, 1) == 0x11) {
			msix = p;
			continue;
		}
		n++;
		assert_int_equal(cfg(p, 1), 0x09);
		unsigned type = cfg(p + 3, 1);
		types |= 1u << type;
		assert_int_equal(cfg(p + 4, 1), VIRTIO_PCI_BAR);
		uint32_t off = cfg(p + 8, 4), len = cfg(p + 12, 4);
		switch (type) {
		case VIRTIO_PCI_CAP_COMMON_CFG:
			assert_int_equal(off, 0);
			assert_int_equal(len, VIRTIO_PCI_COMMON_LEN);
			break;
		case VIRTIO_PCI_CAP_NOTIFY_CFG:
			assert_int_equal(cfg(p + 2, 1), 20);
			assert_int_equal(off, VIRTIO_PCI_NOTIFY);
			assert_int_equal(len, 2 * VIRTIO_PCI_NOTIFY_MULT);
			assert_int_equal(cfg(p + 16, 4), VIRTIO_PCI_NOTIFY_MULT);
			break;
		case VIRTIO_PCI_CAP_ISR_CFG:
			assert_int_equal(off, VIRTIO_PCI_ISR);
			break;
		case VIRTIO_PCI_CAP_DEVICE_CFG:
			assert_int_equal(off, VIRTIO_PCI_DEVCFG);
			assert_int_equal(len, sizeof(devcfg));
			break;
		}
		assert_true(off + len <= VIRTIO_PCI_BAR_SIZE);
	}
	assert_int_equal(n, 5);
	assert_int_equal(types, 0x3e);   /* types 1-5 */
	/* MSI-X: 3 vectors (two queues and the configuration), off, its
	 * table at BAR 1 + 0, its pending bits at BAR 1 + 0x800 */
	assert_int_equal(msix, t.msix_cap);
	assert_int_equal(cfg(msix + 2, 2), 2);
	assert_int_equal(cfg(msix + 4, 4), VIRTIO_PCI_MSIX_BAR);
	assert_int_equal(cfg(msix + 8, 4), VIRTIO_PCI_MSIX_PBA | VIRTIO_PCI_MSIX_BAR);
	pci_bus_write(&bus, 0, DEVFN, msix + 2, 2, 0xffff);
	assert_int_equal(cfg(msix + 2, 2), 0xc002);   /* only enable and mask-all move */
	pci_bus_write(&bus, 0, DEVFN, PCI_BAR0 + 4, 4, 0xffffffffu);
	assert_int_equal(cfg(PCI_BAR0 + 4, 4), 0xfffff000u);
	/* BAR 4: 16 KiB, 64-bit, prefetchable */
	pci_bus_write(&bus, 0, DEVFN, PCI_BAR0 + 16, 4, 0xffffffffu);
	pci_bus_write(&bus, 0, DEVFN, PCI_BAR0 + 20, 4, 0xffffffffu);
	assert_int_equal(cfg(PCI_BAR0 + 16, 4), 0xffffc00cu);
	assert_int_equal(cfg(PCI_BAR0 + 20, 4), 0xffffffffu);
}

static void test_feature_negotiation(void **state)
{
	(void)state;
	assert_int_equal(rd(VIRTIO_COMMON_DF, 4), 1u << 9 | 1u << 28);
	wr(VIRTIO_COMMON_DFSELECT, 4, 1);
	assert_int_equal(rd(VIRTIO_COMMON_DF, 4), 1);   /* VERSION_1 */
	wr(VIRTIO_COMMON_DFSELECT, 4, 2);
	assert_int_equal(rd(VIRTIO_COMMON_DF, 4), 0);
	wr(VIRTIO_COMMON_STATUS, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	/* a bit the device did not offer: FEATURES_OK does not stick */
	wr(VIRTIO_COMMON_GFSELECT, 4, 0);
	wr(VIRTIO_COMMON_GF, 4, 1u << 9 | 1u << 5);
	wr(VIRTIO_COMMON_GFSELECT, 4, 1);
	wr(VIRTIO_COMMON_GF, 4, 1);
	wr(VIRTIO_COMMON_STATUS, 1, 0x0b);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0x03);
	/* without VERSION_1 neither */
	wr(VIRTIO_COMMON_GFSELECT, 4, 0);
	wr(VIRTIO_COMMON_GF, 4, 1u << 9);
	wr(VIRTIO_COMMON_GFSELECT, 4, 1);
	wr(VIRTIO_COMMON_GF, 4, 0);
	wr(VIRTIO_COMMON_STATUS, 1, 0x0b);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0x03);
	/* a subset with VERSION_1: accepted, then fixed */
	wr(VIRTIO_COMMON_GF, 4, 1);
	wr(VIRTIO_COMMON_STATUS, 1, 0x0b);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0x0b);
	wr(VIRTIO_COMMON_GFSELECT, 4, 0);
	wr(VIRTIO_COMMON_GF, 4, 1u << 28);
	assert_int_equal(rd(VIRTIO_COMMON_GF, 4), 1u << 9);
	assert_int_equal(t.driver_features, 1ull << 32 | 1ull << 9);
}

static void negotiate(void)
{
	wr(VIRTIO_COMMON_STATUS, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(VIRTIO_COMMON_GFSELECT, 4, 1);
	wr(VIRTIO_COMMON_GF, 4, 1);
	wr(VIRTIO_COMMON_STATUS, 1, 0x0b);
}

static void setup_queue(unsigned q, uint16_t size, uint64_t desc, uint64_t avail, uint64_t used)
{
	wr(VIRTIO_COMMON_Q_SELECT, 2, q);
	wr(VIRTIO_COMMON_Q_SIZE, 2, size);
	wr(VIRTIO_COMMON_Q_DESC, 4, (uint32_t)desc);
	wr(VIRTIO_COMMON_Q_DESC + 4, 4, desc >> 32);
	wr(VIRTIO_COMMON_Q_DRIVER, 8, avail);
	wr(VIRTIO_COMMON_Q_DEVICE, 4, (uint32_t)used);
	wr(VIRTIO_COMMON_Q_DEVICE + 4, 4, used >> 32);
	wr(VIRTIO_COMMON_Q_ENABLE, 2, 1);
}

static void test_queues_and_doorbells(void **state)
{
	(void)state;
	assert_int_equal(rd(VIRTIO_COMMON_NUMQ, 2), 2);
	assert_int_equal(rd(VIRTIO_COMMON_Q_SIZE, 2), 128);
	wr(VIRTIO_COMMON_Q_SELECT, 2, 2);   /* no such queue */
	assert_int_equal(rd(VIRTIO_COMMON_Q_SIZE, 2), 0);
	assert_int_equal(rd(VIRTIO_COMMON_Q_MSIX, 2), VIRTIO_NO_VECTOR);
	negotiate();
	setup_queue(1, 64, 0x1000, 0x2000, 0x3000);
	assert_int_equal(rd(VIRTIO_COMMON_Q_ENABLE, 2), 1);
	assert_int_equal(rd(VIRTIO_COMMON_Q_NOFF, 2), 1);
	assert_int_equal(rd(VIRTIO_COMMON_Q_DESC, 8), 0x1000);
	assert_int_equal(rd(VIRTIO_COMMON_Q_DRIVER + 4, 4), 0);
	assert_true(t.q[1].vq.ready);
	assert_int_equal(t.q[1].vq.size, 64);
	/* fixed once enabled */
	wr(VIRTIO_COMMON_Q_SIZE, 2, 32);
	wr(VIRTIO_COMMON_Q_DESC, 8, 0x5000);
	assert_int_equal(rd(VIRTIO_COMMON_Q_SIZE, 2), 64);
	assert_int_equal(rd(VIRTIO_COMMON_Q_DESC, 8), 0x1000);
	/* doorbells: only for an enabled queue of a running device */
	wr(VIRTIO_PCI_NOTIFY + 4, 2, 1);
	assert_int_equal(kicks[1], 0);   /* not DRIVER_OK yet */
	wr(VIRTIO_COMMON_STATUS, 1, 0x0f);
	wr(VIRTIO_PCI_NOTIFY + 4, 2, 1);
	wr(VIRTIO_PCI_NOTIFY + 4, 4, 1);
	wr(VIRTIO_PCI_NOTIFY + 0, 2, 0);   /* queue 0 is not enabled */
	wr(VIRTIO_PCI_NOTIFY + 8, 2, 2);   /* no queue 2 */
	wr(VIRTIO_PCI_NOTIFY + 5, 1, 1);   /* not a doorbell */
	assert_int_equal(kicks[1], 2);
	assert_int_equal(kicks[0], 0);
	/* reset: everything back, the device told */
	wr(VIRTIO_COMMON_STATUS, 1, 0);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0);
	assert_int_equal(dev_resets, 1);
	wr(VIRTIO_COMMON_Q_SELECT, 2, 1);
	assert_int_equal(rd(VIRTIO_COMMON_Q_ENABLE, 2), 0);
	assert_int_equal(rd(VIRTIO_COMMON_Q_SIZE, 2), 128);
	assert_int_equal(rd(VIRTIO_COMMON_Q_DESC, 8), 0);
	assert_false(t.q[1].vq.ready);
	wr(VIRTIO_PCI_NOTIFY + 4, 2, 1);
	assert_int_equal(kicks[1], 2);
}

/* Rings outside RAM, misaligned, or a size the device did not offer: the
 * queue stays off, the device needs a reset and says so; only a reset
 * clears it. */
static void test_bad_rings_need_reset(void **state)
{
	(void)state;
	negotiate();
	wr(VIRTIO_COMMON_STATUS, 1, 0x0f);
	setup_queue(0, 64, STUB_RAM_SIZE - 0x10, 0x2000, 0x3000);
	assert_int_equal(rd(VIRTIO_COMMON_Q_ENABLE, 2), 0);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0x0f | VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(rd(VIRTIO_PCI_ISR, 1), VIRTIO_ISR_CONFIG);
	assert_int_equal(rd(VIRTIO_PCI_ISR, 1), 0);   /* read to clear */
	/* the driver cannot clear NEEDS_RESET but by a reset */
	wr(VIRTIO_COMMON_STATUS, 1, 0x0f);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET,
			 VIRTIO_STATUS_NEEDS_RESET);
	wr(VIRTIO_COMMON_STATUS, 1, 0);
	negotiate();
	setup_queue(0, 256, 0x1000, 0x2000, 0x3000);   /* above queue_max */
	assert_int_equal(rd(VIRTIO_COMMON_Q_ENABLE, 2), 0);
	wr(VIRTIO_COMMON_STATUS, 1, 0);
	negotiate();
	setup_queue(0, 64, 0x1008, 0x2000, 0x3000);    /* descriptors misaligned */
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET,
			 VIRTIO_STATUS_NEEDS_RESET);
	wr(VIRTIO_COMMON_STATUS, 1, 0);
	negotiate();
	setup_queue(0, 64, 0x1000, 0x2000, 0x3000);
	assert_int_equal(rd(VIRTIO_COMMON_Q_ENABLE, 2), 1);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0x0b);
}

static void test_isr_config_and_bad_widths(void **state)
{
	(void)state;
	assert_int_equal(rd(VIRTIO_PCI_DEVCFG, 4), 0x1000);
	assert_int_equal(rd(VIRTIO_PCI_DEVCFG + 1, 1), 0x10);
	uint8_t gen = (uint8_t)rd(VIRTIO_COMMON_CFGGEN, 1);
	virtio_pci_config_changed(&t);
	assert_int_equal(rd(VIRTIO_COMMON_CFGGEN, 1), (uint8_t)(gen + 1));
	assert_int_equal(rd(VIRTIO_PCI_ISR, 1), VIRTIO_ISR_CONFIG);
	uint64_t bad = t.bad_accesses;
	assert_int_equal(rd(VIRTIO_COMMON_DF, 2), 0);              /* the field's width is 4 */
	assert_int_equal(rd(VIRTIO_PCI_DEVCFG + 6, 4), 0);         /* beyond the device's 8 */
	assert_int_equal(rd(VIRTIO_PCI_ISR, 4), 0);
	assert_int_equal(rd(0x37, 1), 0);
	wr(VIRTIO_COMMON_NUMQ, 2, 7);                              /* read-only */
	assert_int_equal(rd(VIRTIO_COMMON_NUMQ, 2), 2);
	wr(0x3ffc, 4, 1);
	assert_int_equal(t.bad_accesses, bad + 6);
}

static unsigned intx_level, msis;
static uint64_t msi_addr;
static uint32_t msi_data;

static void on_intx(struct virtio_pci *f, bool level)
{
	(void)f;
	intx_level = level;
}

static void on_msi(struct virtio_pci *f, uint64_t addr, uint32_t data)
{
	(void)f;
	msis++;
	msi_addr = addr;
	msi_data = data;
}

/* INTx until the driver enables MSI-X; then each vector as its table entry
 * says, held in the pending bits while masked, sent at the unmask. */
static void test_intx_and_msix(void **state)
{
	(void)state;
	t.intx = on_intx;
	t.msi = on_msi;
	intx_level = msis = 0;
	virtio_pci_config_changed(&t);
	assert_int_equal(intx_level, 1);
	assert_int_equal(rd(VIRTIO_PCI_ISR, 1), VIRTIO_ISR_CONFIG);
	assert_int_equal(intx_level, 0);   /* the ISR read lowers the line */
	/* vectors: the table has 3 entries; a bigger one does not map */
	wr(VIRTIO_COMMON_MSIX, 2, 7);
	assert_int_equal(rd(VIRTIO_COMMON_MSIX, 2), VIRTIO_NO_VECTOR);
	wr(VIRTIO_COMMON_MSIX, 2, 2);
	assert_int_equal(rd(VIRTIO_COMMON_MSIX, 2), 2);
	/* entry 2: address and data, then enable MSI-X; the entry is still
	 * masked (its reset state), so the change waits in the pending bits */
	virtio_pci_msix_write(&t, 2 * 16, 8, 0xfee01000ull);
	virtio_pci_msix_write(&t, 2 * 16 + 8, 4, 0x4041);
	assert_int_equal(virtio_pci_msix_read(&t, 2 * 16 + 12, 4), 1);
	pci_bus_write(&bus, 0, DEVFN, t.msix_cap + 2, 2, PCI_MSIX_ENABLE);
	virtio_pci_config_changed(&t);
	assert_int_equal(msis, 0);
	assert_int_equal(intx_level, 0);   /* no INTx with MSI-X on */
	assert_int_equal(virtio_pci_msix_read(&t, VIRTIO_PCI_MSIX_PBA, 8), 1u << 2);
	virtio_pci_msix_write(&t, 2 * 16 + 12, 4, 0);   /* unmask: it goes now */
	assert_int_equal(msis, 1);
	assert_int_equal(msi_addr, 0xfee01000ull);
	assert_int_equal(msi_data, 0x4041);
	assert_int_equal(virtio_pci_msix_read(&t, VIRTIO_PCI_MSIX_PBA, 8), 0);
	/* the function's mask-all holds it the same way */
	pci_bus_write(&bus, 0, DEVFN, t.msix_cap + 2, 2, PCI_MSIX_ENABLE | PCI_MSIX_MASKALL);
	virtio_pci_config_changed(&t);
	assert_int_equal(msis, 1);
	pci_bus_write(&bus, 0, DEVFN, t.msix_cap + 2, 2, PCI_MSIX_ENABLE);
	assert_int_equal(msis, 2);
	/* NO_VECTOR: nothing at all */
	wr(VIRTIO_COMMON_MSIX, 2, VIRTIO_NO_VECTOR);
	virtio_pci_config_changed(&t);
	assert_int_equal(msis, 2);
	/* widths: dword or qword, aligned; the pending bits read-only */
	uint64_t bad = t.bad_accesses;
	virtio_pci_msix_write(&t, 2 * 16 + 8, 2, 0x1111);
	virtio_pci_msix_write(&t, 2 * 16 + 6, 4, 0x1111);
	virtio_pci_msix_write(&t, VIRTIO_PCI_MSIX_PBA, 8, ~0ull);
	assert_int_equal(virtio_pci_msix_read(&t, 2 * 16 + 8, 4), 0x4041);
	assert_int_equal(virtio_pci_msix_read(&t, 3 * 16, 4), 0);   /* beyond the table */
	assert_int_equal(t.bad_accesses, bad + 3);
}

/* The PCI_CFG capability: BAR 4 through configuration space. */
static void test_pci_cfg_window(void **state)
{
	(void)state;
	unsigned c = t.pci_cfg_cap;
	assert_int_equal(cfg(c + 3, 1), VIRTIO_PCI_CAP_PCI_CFG);
	pci_bus_write(&bus, 0, DEVFN, c + 4, 1, VIRTIO_PCI_BAR);
	pci_bus_write(&bus, 0, DEVFN, c + 8, 4, VIRTIO_COMMON_NUMQ);
	pci_bus_write(&bus, 0, DEVFN, c + 12, 4, 2);
	assert_int_equal(cfg(c + 16, 2), 2);
	pci_bus_write(&bus, 0, DEVFN, c + 8, 4, VIRTIO_COMMON_STATUS);
	pci_bus_write(&bus, 0, DEVFN, c + 12, 4, 1);
	pci_bus_write(&bus, 0, DEVFN, c + 16, 1, VIRTIO_STATUS_ACKNOWLEDGE);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), VIRTIO_STATUS_ACKNOWLEDGE);
	/* another BAR, a bad length, a misaligned offset: nothing */
	uint64_t bad = t.bad_accesses;
	pci_bus_write(&bus, 0, DEVFN, c + 4, 1, 0);
	pci_bus_write(&bus, 0, DEVFN, c + 16, 1, 0);
	pci_bus_write(&bus, 0, DEVFN, c + 4, 1, VIRTIO_PCI_BAR);
	pci_bus_write(&bus, 0, DEVFN, c + 12, 4, 3);
	pci_bus_write(&bus, 0, DEVFN, c + 16, 1, 0);
	pci_bus_write(&bus, 0, DEVFN, c + 12, 4, 4);
	pci_bus_write(&bus, 0, DEVFN, c + 8, 4, 0x15);
	pci_bus_write(&bus, 0, DEVFN, c + 16, 4, 0);
	assert_int_equal(t.bad_accesses, bad + 3);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), VIRTIO_STATUS_ACKNOWLEDGE);
}

/* Any access anywhere in the BAR and the PCI_CFG window, at any width, in
 * any order: nothing outside the transport is touched (ASan), no ring is
 * taken outside RAM, and a reset brings the device back. */
static void test_hostile_accesses(void **state)
{
	(void)state;
	uint64_t x = 0x2545f4914f6cdd1dull;
	static const unsigned sizes[] = { 1, 2, 3, 4, 8, 16 };
	for (unsigned i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t off = (x >> 8) % (VIRTIO_PCI_BAR_SIZE + 64);
		if (x & 0x10000)
			off &= 0x3f;   /* half the time in the common configuration */
		unsigned size = sizes[(x >> 24) % 6];
		uint64_t v = (x & 0x100000) ? x : (x >> 40) & 0xff;
		if ((x >> 32) % 16 == 0)
			pci_bus_write(&bus, 0, DEVFN, (unsigned)(x >> 44) % 256, sizes[(x >> 52) % 3],
				      (uint32_t)v);
		else if ((x >> 32) % 16 == 1)
			virtio_pci_msix_write(&t, off % VIRTIO_PCI_MSIX_BAR_SIZE, size, v);
		else if ((x >> 32) % 16 == 2)
			(void)virtio_pci_msix_read(&t, off % VIRTIO_PCI_MSIX_BAR_SIZE, size);
		else if (x & 1)
			wr(off, size, v);
		else
			(void)rd(off, size);
		for (unsigned q = 0; q < VIRTIO_PCI_MAX_QUEUES; q++)
			if (t.q[q].vq.ready)
				assert_true(t.q[q].vq.desc_gpa + 16ull * t.q[q].vq.size <= STUB_RAM_SIZE);
	}
	wr(VIRTIO_COMMON_STATUS, 1, 0);
	assert_int_equal(rd(VIRTIO_COMMON_STATUS, 1), 0);
	for (unsigned q = 0; q < VIRTIO_PCI_MAX_QUEUES; q++)
		assert_false(t.q[q].enabled || t.q[q].vq.ready);
	assert_true(t.bad_accesses > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_refused_devices, setup),
		cmocka_unit_test_setup(test_ids_and_capabilities, setup),
		cmocka_unit_test_setup(test_feature_negotiation, setup),
		cmocka_unit_test_setup(test_queues_and_doorbells, setup),
		cmocka_unit_test_setup(test_bad_rings_need_reset, setup),
		cmocka_unit_test_setup(test_isr_config_and_bad_widths, setup),
		cmocka_unit_test_setup(test_intx_and_msix, setup),
		cmocka_unit_test_setup(test_pci_cfg_window, setup),
		cmocka_unit_test_setup(test_hostile_accesses, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
