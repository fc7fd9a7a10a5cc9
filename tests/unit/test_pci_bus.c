/* dev/pci_host.c (mechanism #1 and ECAM) and dev/pci_bus.c: the empty bus a VM has
 * today, and with functions on it the host bridge, read-only and
 * write-1-to-clear bits, BAR sizing and moves, capability lists, the
 * window's edges, and a guest writing all-ones everywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pci_host.h"
#include "tests/unit/stubs.h"

static struct pci_host host;
static struct pci_func fn;
static unsigned moves;
static uint64_t moved_addr;
static bool moved_on;

static void on_bar_moved(struct pci_func *f, unsigned bar, uint64_t addr, bool enabled)
{
	(void)f;
	(void)bar;
	moves++;
	moved_addr = addr;
	moved_on = enabled;
}

#define DEVFN PCI_DEVFN(3, 0)

static int setup(void **state)
{
	(void)state;
	pci_host_init(&host, FAKE_HOST);
	/* a virtio-blk-like function: 1af4:1042, class 0x010000, INTA# */
	pci_func_init(&fn, DEVFN, 0x1af4, 0x1042, 0x01000001, 0x1af4, 0x0002, 1);
	moves = 0;
	return 0;
}

static uint32_t rd(unsigned off, unsigned size)
{
	return pci_bus_read(&host.bus, 0, DEVFN, off, size);
}

static void wr(unsigned off, unsigned size, uint32_t v)
{
	pci_bus_write(&host.bus, 0, DEVFN, off, size, v);
}

static void test_host_bridge_comes_with_the_first_function(void **state)
{
	(void)state;
	assert_int_equal(pci_bus_read(&host.bus, 0, 0, PCI_VENDOR_ID, 4), 0xffffffffu);
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	assert_int_equal(pci_bus_read(&host.bus, 0, 0, PCI_VENDOR_ID, 4), 0x12378086u);
	assert_int_equal(pci_bus_read(&host.bus, 0, 0, PCI_CLASS_REVISION, 4) >> 8, 0x060000);
	/* the bridge's command register is hardwired */
	uint32_t cmd = pci_bus_read(&host.bus, 0, 0, PCI_COMMAND, 2);
	pci_bus_write(&host.bus, 0, 0, PCI_COMMAND, 2, 0);
	assert_int_equal(pci_bus_read(&host.bus, 0, 0, PCI_COMMAND, 2), cmd);
	assert_int_equal(rd(PCI_VENDOR_ID, 2), 0x1af4);
	assert_int_equal(rd(PCI_DEVICE_ID, 2), 0x1042);
	assert_int_equal(rd(PCI_INTR_PIN, 1), 1);
	/* nothing else answers: other slots, other buses */
	assert_int_equal(pci_bus_read(&host.bus, 0, PCI_DEVFN(3, 1), 0, 4), 0xffffffffu);
	assert_int_equal(pci_bus_read(&host.bus, 1, DEVFN, 0, 2), 0xffff);
	/* no second function at a taken devfn, none at 00.0 */
	struct pci_func other;
	pci_func_init(&other, DEVFN, 1, 2, 0, 0, 0, 0);
	assert_int_equal(pci_bus_add(&host.bus, &other), -1);
	pci_func_init(&other, 0, 1, 2, 0, 0, 0, 0);
	assert_int_equal(pci_bus_add(&host.bus, &other), -1);
}

static void test_bus_has_room_for_eight(void **state)
{
	(void)state;
	static struct pci_func many[PCI_BUS_MAX_FUNCS];
	for (unsigned i = 0; i < PCI_BUS_MAX_FUNCS; i++) {
		pci_func_init(&many[i], PCI_DEVFN(i + 1, 0), 1, 2, 0, 0, 0, 0);
		assert_int_equal(pci_bus_add(&host.bus, &many[i]), i < PCI_BUS_MAX_FUNCS - 1 ? 0 : -1);
	}
}

static void test_read_only_and_w1c(void **state)
{
	(void)state;
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	wr(PCI_VENDOR_ID, 4, 0);
	wr(PCI_CLASS_REVISION, 4, 0xffffffff);
	wr(PCI_SUBSYS_VENDOR, 4, 0);
	wr(PCI_INTR_PIN, 1, 4);
	assert_int_equal(rd(PCI_VENDOR_ID, 4), 0x10421af4u);
	assert_int_equal(rd(PCI_CLASS_REVISION, 4), 0x01000001u);
	assert_int_equal(rd(PCI_SUBSYS_VENDOR, 4), 0x00021af4u);
	assert_int_equal(rd(PCI_INTR_PIN, 1), 1);
	/* command: only the defined bits stick */
	wr(PCI_COMMAND, 2, 0xffff);
	assert_int_equal(rd(PCI_COMMAND, 2), 0x0547);
	/* interrupt line and cache line size are the guest's */
	wr(PCI_INTR_LINE, 1, 11);
	assert_int_equal(rd(PCI_INTR_LINE, 1), 11);
	/* status: an error bit the device set is cleared by writing 1 only */
	fn.cfg[PCI_STATUS + 1] |= 0x20;   /* received master abort (bit 13) */
	wr(PCI_STATUS, 2, 0);
	assert_int_equal(rd(PCI_STATUS, 2) & 0x2000, 0x2000);
	wr(PCI_STATUS, 2, 0x2000);
	assert_int_equal(rd(PCI_STATUS, 2) & 0x2000, 0);
	/* sub-dword accesses see the same bytes */
	assert_int_equal(rd(PCI_DEVICE_ID + 1, 1), 0x10);
	assert_int_equal(rd(PCI_CLASS_REVISION + 2, 2), 0x0100);
}

static void test_bar_sizing_and_moves(void **state)
{
	(void)state;
	fn.bar_moved = on_bar_moved;
	assert_int_equal(pci_func_add_bar(&fn, 0, 0x1000, 0), 0);
	assert_int_equal(pci_func_add_bar(&fn, 1, 0x20, PCI_BAR_IO), 0);
	assert_int_equal(pci_func_add_bar(&fn, 2, 0x4000, PCI_BAR_MEM64 | PCI_BAR_PREFETCH), 0);
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	/* sizing: all-ones reads back the size mask and the type bits */
	for (unsigned b = 0; b < PCI_BARS; b++)
		wr(PCI_BAR0 + 4 * b, 4, 0xffffffff);
	assert_int_equal(rd(PCI_BAR0, 4), 0xfffff000u);
	assert_int_equal(rd(PCI_BAR0 + 4, 4), 0xffffffe1u);
	assert_int_equal(rd(PCI_BAR0 + 8, 4), 0xffffc00cu);
	assert_int_equal(rd(PCI_BAR0 + 12, 4), 0xffffffffu);   /* upper half */
	assert_int_equal(rd(PCI_BAR0 + 16, 4), 0);             /* not implemented */
	assert_int_equal(rd(PCI_BAR0 + 20, 4), 0);
	assert_int_equal(moves, 0);   /* decode off: nothing moved into view */
	/* placed and enabled */
	wr(PCI_BAR0, 4, 0xfebf1234);
	assert_int_equal(pci_func_bar_addr(&fn, 0), 0xfebf1000u);
	wr(PCI_BAR0 + 8, 4, 0xfe000000);
	wr(PCI_BAR0 + 12, 4, 0x1);
	assert_int_equal(pci_func_bar_addr(&fn, 2), 0x1fe000000ull);
	wr(PCI_BAR0 + 4, 4, 0xc040);
	assert_int_equal(pci_func_bar_addr(&fn, 1), 0xc040);
	assert_int_equal(pci_func_bar_addr(&fn, 3), 0);   /* the upper half is no BAR */
	moves = 0;
	wr(PCI_COMMAND, 2, PCI_CMD_MEM);
	assert_int_equal(moves, 2);   /* the two memory BARs */
	assert_true(moved_on);
	wr(PCI_BAR0, 4, 0xfebe0000);
	assert_int_equal(moves, 3);
	assert_int_equal(moved_addr, 0xfebe0000u);
	wr(PCI_BAR0, 4, 0xfebe0000);   /* the same again: no move */
	assert_int_equal(moves, 3);
	wr(PCI_COMMAND, 2, 0);
	assert_int_equal(moves, 5);
	assert_false(moved_on);
}

static void test_bad_bars_refused(void **state)
{
	(void)state;
	assert_int_equal(pci_func_add_bar(&fn, 0, 0x1800, 0), -1);           /* not a power of 2 */
	assert_int_equal(pci_func_add_bar(&fn, 0, 8, 0), -1);                /* memory below 16 */
	assert_int_equal(pci_func_add_bar(&fn, 0, 2, PCI_BAR_IO), -1);       /* I/O below 4 */
	assert_int_equal(pci_func_add_bar(&fn, 0, 16, PCI_BAR_IO | PCI_BAR_PREFETCH), -1);
	assert_int_equal(pci_func_add_bar(&fn, 0, 1ull << 32, 0), -1);       /* 32-bit, too big */
	assert_int_equal(pci_func_add_bar(&fn, 5, 0x1000, PCI_BAR_MEM64), -1);
	assert_int_equal(pci_func_add_bar(&fn, 6, 0x1000, 0), -1);
	assert_int_equal(pci_func_add_bar(&fn, 3, 1ull << 32, PCI_BAR_MEM64), 0);
	assert_int_equal(pci_func_add_bar(&fn, 4, 0x1000, 0), -1);           /* its upper half */
	assert_int_equal(pci_func_add_bar(&fn, 3, 0x1000, 0), -1);           /* taken */
	assert_int_equal(pci_func_add_bar(&fn, 2, 0x1000, PCI_BAR_MEM64), -1);   /* overlaps 3 */
}

static void test_capability_list(void **state)
{
	(void)state;
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	assert_int_equal(rd(PCI_STATUS, 2) & PCI_STATUS_CAPS, 0);
	assert_int_equal(pci_func_add_cap(&fn, 0x09, 16), 0x40);
	assert_int_equal(pci_func_add_cap(&fn, 0x11, 12), 0x50);
	assert_int_equal(pci_func_add_cap(&fn, 0x09, 5), 0x5c);
	assert_int_equal(rd(PCI_STATUS, 2) & PCI_STATUS_CAPS, PCI_STATUS_CAPS);
	/* the walk a driver makes */
	unsigned seen = 0;
	for (unsigned p = rd(PCI_CAP_PTR, 1); p; p = rd(p + 1, 1))
		seen = seen * 0x100 + rd(p, 1);
	assert_int_equal(seen, 0x091109);
	/* the pointers are read-only */
	wr(PCI_CAP_PTR, 1, 0x80);
	wr(0x40, 2, 0xffff);
	assert_int_equal(rd(PCI_CAP_PTR, 1), 0x40);
	assert_int_equal(rd(0x40, 2), 0x5009);
	/* the rest of the space fills up, then no more */
	assert_int_equal(pci_func_add_cap(&fn, 0x05, 0x100 - 0x64), 0x64);
	assert_int_equal(pci_func_add_cap(&fn, 0x05, 2), -1);
}

/* A guest writes all-ones, then zeros, to every dword: every byte no wmask
 * or w1c bit covers reads as before. */
static void test_guest_writes_everywhere(void **state)
{
	(void)state;
	assert_int_equal(pci_func_add_bar(&fn, 0, 0x1000, 0), 0);
	assert_int_equal(pci_func_add_cap(&fn, 0x11, 12), 0x40);
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	uint8_t before[PCI_CFG_SIZE];
	memcpy(before, fn.cfg, sizeof(before));
	for (unsigned v = 0; v < 2; v++)
		for (unsigned off = 0; off < PCI_CFG_SIZE; off += 4)
			wr(off, 4, v ? 0 : 0xffffffffu);
	unsigned changed = 0;
	for (unsigned o = 0; o < PCI_CFG_SIZE; o++)
		if (!fn.wmask[o] && !fn.w1c[o] && fn.cfg[o] != before[o])
			changed++;
	assert_int_equal(changed, 0);
	/* and beyond the space, nothing: the window keeps to 256 bytes */
	assert_int_equal(pci_bus_read(&host.bus, 0, DEVFN, 0xfe, 4), 0xffffffffu);
	pci_bus_write(&host.bus, 0, DEVFN, 0xfe, 4, 0);
	assert_int_equal(pci_bus_read(&host.bus, 0, DEVFN, 0xfe, 2), 0);
}

static uint64_t io(uint16_t port, unsigned size, bool w, uint64_t v)
{
	uint64_t d = w ? v : 0x1234;
	assert_int_equal(pci_host_io(&host, port, &d, size, w), IO_OK);
	return d;
}

static void test_empty_bus(void **state)
{
	(void)state;
	stubs_reset();
	pci_host_init(&host, FAKE_HOST);
	assert_false(pci_host_desc.mmio);
	assert_true(stub_desc_range_is(&pci_host_desc, 0, 0xcf8, 8, pci_host_io, true));

	/* Linux's pci_check_type1(): the address register reads back */
	io(0xcf8, 4, true, 0x80000000);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000000);
	/* reserved bits 30:24 and 1:0 read as zero */
	io(0xcf8, 4, true, 0xffffffff);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80fffffc);

	/* every configuration read is all-ones: vendor 0xffff = no device */
	for (unsigned devfn = 0; devfn < 256; devfn += 8) {
		io(0xcf8, 4, true, 0x80000000u | devfn << 8);
		assert_int_equal(io(0xcfc, 4, false, 0), 0xffffffffu);
		assert_int_equal(io(0xcfc, 2, false, 0), 0xffff);
		assert_int_equal(io(0xcfe, 2, false, 0), 0xffff);
		assert_int_equal(io(0xcff, 1, false, 0), 0xff);
	}
	/* writes are dropped */
	io(0xcf8, 4, true, 0x80000004);
	io(0xcfc, 4, true, 0x7);
	assert_int_equal(io(0xcfc, 4, false, 0), 0xffffffffu);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000004);
	assert_int_equal(host.config_reads, 4 * 32 + 1);

	/* byte/word accesses to 0xcf8-0xcfb are not the address register:
	 * the type-2 probe (outb 0 to 0xcf8/0xcfa, expect 0 back) fails */
	io(0xcfb, 1, true, 0x01);
	io(0xcf8, 1, true, 0x00);
	io(0xcfa, 1, true, 0x00);
	assert_int_equal(io(0xcf8, 1, false, 0), 0xff);
	assert_int_equal(io(0xcfa, 1, false, 0), 0xff);
	assert_int_equal(io(0xcf8, 2, false, 0), 0xffff);
	assert_int_equal(io(0xcf8, 4, false, 0), 0x80000004);
}

static void test_mechanism_1_window(void **state)
{
	(void)state;
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);
	unsigned a = 0x80000000u | (unsigned)DEVFN << 8;
	io(0xcf8, 4, true, a | PCI_VENDOR_ID);
	assert_int_equal(io(0xcfc, 4, false, 0), 0x10421af4u);
	assert_int_equal(io(0xcfe, 2, false, 0), 0x1042);
	assert_int_equal(io(0xcfd, 1, false, 0), 0x1a);
	/* crossing the dword: all-ones, not the next register */
	assert_int_equal(io(0xcfe, 4, false, 0), 0xffffffffu);
	io(0xcf8, 4, true, a | PCI_INTR_LINE);
	io(0xcfc, 1, true, 10);
	assert_int_equal(io(0xcfc, 4, false, 0), 0x010a);
	/* enable bit clear: no configuration cycle */
	io(0xcf8, 4, true, (a & 0x7fffffffu) | PCI_VENDOR_ID);
	assert_int_equal(io(0xcfc, 4, false, 0), 0xffffffffu);
	io(0xcf8, 4, true, (a & 0x7fffffffu) | PCI_INTR_LINE);
	io(0xcfc, 1, true, 3);
	io(0xcf8, 4, true, a | PCI_INTR_LINE);
	assert_int_equal(io(0xcfc, 1, false, 0), 10);
	/* the host bridge through the window: what Linux's type-1 check reads */
	io(0xcf8, 4, true, 0x80000000u | PCI_CLASS_REVISION);
	assert_int_equal(io(0xcfe, 2, false, 0), 0x0600);
}

static uint64_t ecam(unsigned devfn, unsigned reg, unsigned size, bool w, uint64_t v)
{
	uint64_t d = w ? v : 0x1234;
	assert_int_equal(pci_ecam_mmio(&host, PCI_ECAM_GPA + ((uint64_t)devfn << 12) + reg, &d, size,
				       w), IO_OK);
	return d;
}

/* ECAM: bus 0 at devfn << 12 | register, the same space as mechanism #1;
 * extended registers read 0 on a function that is there, all-ones on one
 * that is not; misaligned and 8-byte accesses read all-ones. */
static void test_ecam_window(void **state)
{
	(void)state;
	assert_true(pci_ecam_desc.mmio);
	assert_true(stub_desc_range_is(&pci_ecam_desc, 0, 0xe0000000u, 0x100000, pci_ecam_mmio,
				       false));
	assert_int_equal(pci_func_add_bar(&fn, 0, 0x1000, 0), 0);
	fn.bar_moved = on_bar_moved;
	assert_int_equal(pci_func_add_cap(&fn, 0x11, 12), 0x40);
	assert_int_equal(pci_bus_add(&host.bus, &fn), 0);

	/* the same bytes as through 0xcf8/0xcfc, at every width */
	for (unsigned devfn = 0; devfn < 256; devfn++)
		for (unsigned off = 0; off < PCI_CFG_SIZE; off += 4) {
			io(0xcf8, 4, true, 0x80000000u | devfn << 8 | off);
			uint32_t want = (uint32_t)io(0xcfc, 4, false, 0);
			assert_int_equal(ecam(devfn, off, 4, false, 0), want);
			assert_int_equal(ecam(devfn, off + 2, 2, false, 0), want >> 16);
			assert_int_equal(ecam(devfn, off + 3, 1, false, 0), want >> 24);
		}
	assert_int_equal(ecam(0, PCI_VENDOR_ID, 4, false, 0), 0x12378086u);   /* host bridge */
	assert_int_equal(ecam(DEVFN, PCI_VENDOR_ID, 4, false, 0), 0x10421af4u);
	assert_int_equal(ecam(DEVFN, PCI_CAP_PTR, 1, false, 0), 0x40);

	/* writes reach the function: sizing a BAR, the interrupt line */
	ecam(DEVFN, PCI_BAR0, 4, true, 0xffffffffu);
	assert_int_equal(ecam(DEVFN, PCI_BAR0, 4, false, 0), 0xfffff000u);
	ecam(DEVFN, PCI_BAR0, 4, true, 0xfe100000u);
	assert_int_equal(pci_func_bar_addr(&fn, 0), 0xfe100000u);
	ecam(DEVFN, PCI_INTR_LINE, 1, true, 11);
	assert_int_equal(rd(PCI_INTR_LINE, 1), 11);
	ecam(DEVFN, PCI_COMMAND, 2, true, PCI_CMD_MEM);
	assert_int_equal(moves, 1);
	assert_int_equal(moved_addr, 0xfe100000u);
	/* read-only stays read-only */
	ecam(DEVFN, PCI_VENDOR_ID, 4, true, 0);
	assert_int_equal(rd(PCI_VENDOR_ID, 4), 0x10421af4u);

	/* extended space: 0 (no extended capability: Linux's walk stops at
	 * 0x100) on functions that are there, writes ignored */
	uint8_t before[PCI_CFG_SIZE];
	memcpy(before, fn.cfg, sizeof(before));
	for (unsigned reg = PCI_CFG_SIZE; reg < 4096; reg += 4) {
		ecam(DEVFN, reg, 4, true, 0xffffffffu);
		ecam(0, reg, 2, true, 0xffff);
		assert_int_equal(ecam(DEVFN, reg, 4, false, 0), 0);
		assert_int_equal(ecam(0, reg + 1, 1, false, 0), 0);
		assert_int_equal(ecam(PCI_DEVFN(5, 0), reg, 4, false, 0), 0xffffffffu);
	}
	assert_memory_equal(before, fn.cfg, sizeof(before));

	/* an absent function: all-ones everywhere, writes dropped */
	assert_int_equal(ecam(PCI_DEVFN(31, 7), PCI_VENDOR_ID, 4, false, 0), 0xffffffffu);
	assert_int_equal(ecam(PCI_DEVFN(3, 1), PCI_VENDOR_ID, 2, false, 0), 0xffff);
	ecam(PCI_DEVFN(31, 7), PCI_COMMAND, 2, true, 7);
	assert_int_equal(ecam(PCI_DEVFN(31, 7), PCI_COMMAND, 2, false, 0), 0xffff);

	/* misaligned or 8 bytes wide: all-ones, nothing written */
	assert_int_equal(ecam(DEVFN, PCI_VENDOR_ID + 1, 2, false, 0), 0xffff);
	assert_int_equal(ecam(DEVFN, PCI_VENDOR_ID + 2, 4, false, 0), 0xffffffffu);
	assert_int_equal(ecam(DEVFN, PCI_VENDOR_ID, 8, false, 0), ~0ull);
	ecam(DEVFN, PCI_INTR_LINE - 1, 2, true, 0x0505);
	ecam(DEVFN, PCI_BAR0, 8, true, 0);
	assert_int_equal(rd(PCI_INTR_LINE, 1), 11);
	assert_int_equal(pci_func_bar_addr(&fn, 0), 0xfe100000u);
}

/* A bus with no function (a VM without PCI has no ECAM range, but the
 * window itself answers as mechanism #1 does): all-ones. */
static void test_ecam_empty_bus(void **state)
{
	(void)state;
	for (unsigned devfn = 0; devfn < 256; devfn += 7) {
		assert_int_equal(ecam(devfn, 0, 4, false, 0), 0xffffffffu);
		assert_int_equal(ecam(devfn, 0x100, 4, false, 0), 0xffffffffu);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_bus),
		cmocka_unit_test_setup(test_host_bridge_comes_with_the_first_function, setup),
		cmocka_unit_test_setup(test_bus_has_room_for_eight, setup),
		cmocka_unit_test_setup(test_read_only_and_w1c, setup),
		cmocka_unit_test_setup(test_bar_sizing_and_moves, setup),
		cmocka_unit_test_setup(test_bad_bars_refused, setup),
		cmocka_unit_test_setup(test_capability_list, setup),
		cmocka_unit_test_setup(test_guest_writes_everywhere, setup),
		cmocka_unit_test_setup(test_mechanism_1_window, setup),
		cmocka_unit_test_setup(test_ecam_window, setup),
		cmocka_unit_test_setup(test_ecam_empty_bus, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
