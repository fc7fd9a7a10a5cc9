/* dev/virtio_blk.c driven the way a virtio driver drives it: rings in a fake
 * guest RAM, requests, the doorbell, the used ring; and requests a hostile
 * driver makes (outside the image, outside RAM, malformed, a looping ring). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/virtio_blk.h"
#include "tests/unit/stubs.h"


#define SECTORS 64u
#define QSIZE   16u
#define DESC    0x1000u
#define AVAIL   0x2000u
#define USED    0x3000u
#define HDR     0x4000u   /* request headers */
#define DATA    0x5000u   /* data buffers */
#define STATUS  0x8000u

static uint8_t image[SECTORS * VIRTIO_BLK_SECTOR];
static struct virtio_blk blk;
static unsigned interrupts;
static uint16_t next_desc, avail_idx;

static void on_intx(struct virtio_pci *t, bool level)
{
	(void)t;
	interrupts += level;
}

static void put16(uint64_t gpa, uint16_t v) { memcpy(stub_ram + gpa, &v, 2); }
static void put32(uint64_t gpa, uint32_t v) { memcpy(stub_ram + gpa, &v, 4); }
static void put64(uint64_t gpa, uint64_t v) { memcpy(stub_ram + gpa, &v, 8); }
static uint16_t get16(uint64_t gpa) { uint16_t v; memcpy(&v, stub_ram + gpa, 2); return v; }
static uint32_t get32(uint64_t gpa) { uint32_t v; memcpy(&v, stub_ram + gpa, 4); return v; }

static void bring_up(uint32_t features);

static void start(bool ro)
{
	memset(stub_ram, 0, sizeof(stub_ram));
	for (unsigned i = 0; i < sizeof(image); i++)
		image[i] = (uint8_t)(i * 7 + i / 512);
	assert_int_equal(virtio_blk_init(&blk, PCI_DEVFN(5, 0), image, sizeof(image), ro,
					 "lightpath-disk-serial-too-long", &stub_ram_mem), 0);
	blk.t.intx = on_intx;
	interrupts = 0;
	bring_up(0);   /* VERSION_1 only */
}

/* A driver's bring-up: ACKNOWLEDGE, DRIVER, `features` (word 0) and
 * VERSION_1, FEATURES_OK, queue 0 on the rings at DESC/AVAIL/USED, DRIVER_OK. */
static void bring_up(uint32_t features)
{
	next_desc = avail_idx = 0;
	struct virtio_pci *t = &blk.t;
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	virtio_pci_write(t, VIRTIO_COMMON_GFSELECT, 4, 0);
	virtio_pci_write(t, VIRTIO_COMMON_GF, 4, features);
	virtio_pci_write(t, VIRTIO_COMMON_GFSELECT, 4, 1);
	virtio_pci_write(t, VIRTIO_COMMON_GF, 4, 1);
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, 0x0b);
	virtio_pci_write(t, VIRTIO_COMMON_Q_SELECT, 2, 0);
	virtio_pci_write(t, VIRTIO_COMMON_Q_SIZE, 2, QSIZE);
	virtio_pci_write(t, VIRTIO_COMMON_Q_DESC, 8, DESC);
	virtio_pci_write(t, VIRTIO_COMMON_Q_DRIVER, 8, AVAIL);
	virtio_pci_write(t, VIRTIO_COMMON_Q_DEVICE, 8, USED);
	virtio_pci_write(t, VIRTIO_COMMON_Q_ENABLE, 2, 1);
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, 0x0f);
	assert_int_equal(virtio_pci_read(t, VIRTIO_COMMON_STATUS, 1), 0x0f);
}

static int setup_rw(void **state) { (void)state; start(false); return 0; }
static int setup_ro(void **state) { (void)state; start(true); return 0; }

struct buf { uint64_t gpa; uint32_t len; bool writable; };

/* Puts a chain on the ring and rings the doorbell; returns its head. */
static uint16_t submit(const struct buf *b, unsigned n)
{
	uint16_t head = next_desc;
	for (unsigned i = 0; i < n; i++) {
		uint16_t d = (uint16_t)((next_desc + i) % QSIZE);
		uint64_t at = DESC + 16ull * d;
		put64(at, b[i].gpa);
		put32(at + 8, b[i].len);
		put16(at + 12, (uint16_t)((b[i].writable ? 2 : 0) | (i + 1 < n ? 1 : 0)));
		put16(at + 14, (uint16_t)((d + 1) % QSIZE));
	}
	next_desc = (uint16_t)((next_desc + n) % QSIZE);
	put16(AVAIL + 4 + 2 * (avail_idx % QSIZE), head);
	put16(AVAIL + 2, ++avail_idx);
	virtio_pci_write(&blk.t, VIRTIO_PCI_NOTIFY, 2, 0);
	return head;
}

static void header(uint64_t gpa, uint32_t type, uint64_t sector)
{
	put32(gpa, type);
	put32(gpa + 4, 0);
	put64(gpa + 8, sector);
}

/* The used element for the n-th request (0-based). */
static uint32_t used_len(unsigned n) { return get32(USED + 4 + 8 * (n % QSIZE) + 4); }
static uint16_t used_idx(void) { return get16(USED + 2); }

static void test_config(void **state)
{
	(void)state;
	struct virtio_pci *t = &blk.t;
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG, 4), SECTORS);
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG + 4, 4), 0);
	assert_int_equal(virtio_pci_read(t, VIRTIO_PCI_DEVCFG + 12, 4), VIRTIO_BLK_SEG_MAX);
	assert_int_equal(pci_bus_read(&(struct pci_bus){ .nr = 1, .funcs = { &t->pci } }, 0,
				      PCI_DEVFN(5, 0), PCI_DEVICE_ID, 2), 0x1042);
	assert_false(t->device_features & 1ull << VIRTIO_BLK_F_RO);
	assert_true(t->device_features & 1ull << VIRTIO_BLK_F_FLUSH);
}

static void test_read_write_flush_id(void **state)
{
	(void)state;
	/* read sectors 2-3 into two 512-byte buffers, header split 8 + 8 */
	header(HDR, VIRTIO_BLK_T_IN, 2);
	stub_ram[STATUS] = 0xee;
	struct buf rd[] = { { HDR, 8, false }, { HDR + 8, 8, false }, { DATA, 512, true },
			    { DATA + 0x800, 512, true }, { STATUS, 1, true } };
	submit(rd, 5);
	assert_int_equal(used_idx(), 1);
	assert_int_equal(used_len(0), 1025);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_OK);
	assert_memory_equal(stub_ram + DATA, image + 1024, 512);
	assert_memory_equal(stub_ram + DATA + 0x800, image + 1536, 512);
	assert_int_equal(interrupts, 1);
	assert_int_equal(virtio_pci_read(&blk.t, VIRTIO_PCI_ISR, 1), VIRTIO_ISR_QUEUE);
	/* write sector 5 */
	header(HDR, VIRTIO_BLK_T_OUT, 5);
	memset(stub_ram + DATA, 0x5a, 512);
	struct buf wrq[] = { { HDR, 16, false }, { DATA, 512, false }, { STATUS, 1, true } };
	submit(wrq, 3);
	assert_int_equal(used_len(1), 1);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_OK);
	for (unsigned i = 0; i < 512; i++)
		assert_int_equal(image[5 * 512 + i], 0x5a);
	assert_int_equal(image[6 * 512], (uint8_t)(6 * 512 * 7 + 6));
	/* flush, GET_ID (the serial cut to 20 bytes), an unknown type */
	header(HDR, VIRTIO_BLK_T_FLUSH, 0);
	struct buf fl[] = { { HDR, 16, false }, { STATUS, 1, true } };
	submit(fl, 2);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_OK);
	header(HDR, VIRTIO_BLK_T_GET_ID, 0);
	struct buf id[] = { { HDR, 16, false }, { DATA, 20, true }, { STATUS, 1, true } };
	submit(id, 3);
	assert_int_equal(used_len(3), 21);
	assert_memory_equal(stub_ram + DATA, "lightpath-disk-seria", 20);
	header(HDR, 42, 0);
	submit(fl, 2);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_UNSUPP);
	assert_int_equal(used_idx(), 5);
	assert_int_equal(blk.stats.reads, 1);
	assert_int_equal(blk.stats.writes, 1);
	assert_int_equal(blk.stats.flushes, 1);
	assert_int_equal(blk.stats.unsupported, 1);
}

static void test_read_only_image(void **state)
{
	(void)state;
	assert_true(blk.t.device_features & 1ull << VIRTIO_BLK_F_RO);
	uint8_t before[sizeof(image)];
	memcpy(before, image, sizeof(image));
	header(HDR, VIRTIO_BLK_T_OUT, 0);
	struct buf wrq[] = { { HDR, 16, false }, { DATA, 512, false }, { STATUS, 1, true } };
	submit(wrq, 3);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
	assert_memory_equal(image, before, sizeof(image));
	assert_int_equal(blk.stats.ro_writes, 1);
	/* reads still work */
	header(HDR, VIRTIO_BLK_T_IN, 0);
	struct buf rd[] = { { HDR, 16, false }, { DATA, 512, true }, { STATUS, 1, true } };
	submit(rd, 3);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_OK);
}

/* Outside the image, not whole sectors, the wrong direction: IOERR, and
 * neither the image nor the guest's data buffer changes. */
static void test_bad_requests(void **state)
{
	(void)state;
	uint8_t before[sizeof(image)];
	memcpy(before, image, sizeof(image));
	memset(stub_ram + DATA, 0xcc, 0x1000);
	static const uint64_t sectors[] = { SECTORS - 1, SECTORS, 1ull << 55, ~0ull };
	for (unsigned i = 0; i < 4; i++) {
		header(HDR, VIRTIO_BLK_T_IN, sectors[i]);
		struct buf rd[] = { { HDR, 16, false }, { DATA, 1024, true }, { STATUS, 1, true } };
		submit(rd, 3);
		assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
		header(HDR, VIRTIO_BLK_T_OUT, sectors[i]);
		struct buf wrq[] = { { HDR, 16, false }, { DATA, 1024, false }, { STATUS, 1, true } };
		submit(wrq, 3);
		assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
	}
	assert_int_equal(blk.stats.out_of_range, 8);
	header(HDR, VIRTIO_BLK_T_IN, 0);
	struct buf odd[] = { { HDR, 16, false }, { DATA, 100, true }, { STATUS, 1, true } };
	submit(odd, 3);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
	struct buf wrongdir[] = { { HDR, 16, false }, { DATA, 512, false }, { STATUS, 1, true } };
	submit(wrongdir, 3);   /* IN with readable data */
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
	struct buf shorthdr[] = { { HDR, 8, false }, { STATUS, 1, true } };
	submit(shorthdr, 2);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_IOERR);
	assert_int_equal(blk.stats.bad_requests, 3);
	for (unsigned i = 0; i < 0x1000; i++)
		assert_int_equal(stub_ram[DATA + i], 0xcc);
	assert_memory_equal(image, before, sizeof(image));
	assert_int_equal(blk.stats.reads + blk.stats.writes, 0);
}

/* Buffers outside RAM, no status byte, a ring that loops: the device never
 * reads or writes outside RAM, gives the bad chains back empty, and needs a
 * reset after the loop; the other requests are served. */
static void test_hostile_rings(void **state)
{
	(void)state;
	header(HDR, VIRTIO_BLK_T_IN, 0);
	struct buf outside[] = { { HDR, 16, false }, { STUB_RAM_SIZE - 256, 512, true }, { STATUS, 1, true } };
	stub_ram[STATUS] = 0xee;
	submit(outside, 3);
	assert_int_equal(used_idx(), 1);
	assert_int_equal(used_len(0), 0);
	assert_int_equal(stub_ram[STATUS], 0xee);   /* nothing written */
	struct buf nostatus[] = { { HDR, 16, false }, { DATA, 512, false } };
	submit(nostatus, 2);
	assert_int_equal(used_len(1), 0);
	assert_int_equal(blk.stats.bad_requests, 2);
	/* a healthy request still goes through */
	struct buf rd[] = { { HDR, 16, false }, { DATA, 512, true }, { STATUS, 1, true } };
	submit(rd, 3);
	assert_int_equal(stub_ram[STATUS], VIRTIO_BLK_S_OK);
	/* a descriptor that links to itself */
	uint16_t head = next_desc;
	uint64_t at = DESC + 16ull * head;
	put64(at, HDR);
	put32(at + 8, 16);
	put16(at + 12, 1);
	put16(at + 14, head);
	put16(AVAIL + 4 + 2 * (avail_idx % QSIZE), head);
	put16(AVAIL + 2, ++avail_idx);
	virtio_pci_write(&blk.t, VIRTIO_PCI_NOTIFY, 2, 0);
	assert_int_equal(blk.stats.queue_errors, 1);
	assert_true(virtio_pci_read(&blk.t, VIRTIO_COMMON_STATUS, 1) & VIRTIO_STATUS_NEEDS_RESET);
	/* no doorbell counts until the driver resets the device */
	submit(rd, 3);
	assert_int_equal(used_idx(), 3);
	virtio_pci_write(&blk.t, VIRTIO_COMMON_STATUS, 1, 0);
	assert_int_equal(virtio_pci_read(&blk.t, VIRTIO_COMMON_STATUS, 1), 0);
}

/* With EVENT_IDX the driver kicks only when the device asked for it in
 * avail_event: after each batch the device asks for the next request's
 * kick (Linux's virtio-blk stops kicking otherwise). */
static void test_event_idx_asks_for_the_next_kick(void **state)
{
	(void)state;
	virtio_pci_write(&blk.t, VIRTIO_COMMON_STATUS, 1, 0);
	memset(stub_ram, 0, USED + 0x100);
	bring_up(1u << VIRTIO_F_EVENT_IDX);
	header(HDR, VIRTIO_BLK_T_IN, 0);
	struct buf rd[] = { { HDR, 16, false }, { DATA, 512, true }, { STATUS, 1, true } };
	for (unsigned i = 1; i <= 3; i++) {
		submit(rd, 3);
		assert_int_equal(used_idx(), i);
		assert_int_equal(get16(USED + 4 + 8 * QSIZE), i);   /* avail_event: kick me at the next */
	}
}

static unsigned resumes_asked;
static void on_resume_later(struct virtio_pci *t)
{
	(void)t;
	resumes_asked++;
}

/* A doorbell serves at most a budget of descriptors; the rest waits for
 * the turn resume_later asks for (virtio_pci_resume), not for another
 * doorbell, and a sibling vCPU adding chains all the while does not make
 * one doorbell longer. */
static void test_doorbell_budget_resumes(void **state)
{
	(void)state;
	struct virtio_pci *t = &blk.t;
	t->resume_later = on_resume_later;
	resumes_asked = 0;
	vq_set_budget(&t->q[0].vq, 7);   /* two 3-descriptor requests per turn */
	/* five flushes on the ring, one doorbell */
	for (unsigned i = 0; i < 5; i++) {
		uint16_t head = next_desc;
		struct buf fl[] = { { HDR, 8, false }, { HDR + 8, 8, false }, { STATUS + i, 1, true } };
		for (unsigned k = 0; k < 3; k++) {
			uint16_t d = (uint16_t)((next_desc + k) % QSIZE);
			put64(DESC + 16ull * d, fl[k].gpa);
			put32(DESC + 16ull * d + 8, fl[k].len);
			put16(DESC + 16ull * d + 12, (uint16_t)((fl[k].writable ? 2 : 0) | (k < 2 ? 1 : 0)));
			put16(DESC + 16ull * d + 14, (uint16_t)((d + 1) % QSIZE));
		}
		next_desc = (uint16_t)((next_desc + 3) % QSIZE);
		put16(AVAIL + 4 + 2 * (avail_idx % QSIZE), head);
		put16(AVAIL + 2, ++avail_idx);
	}
	header(HDR, VIRTIO_BLK_T_FLUSH, 0);
	virtio_pci_write(t, VIRTIO_PCI_NOTIFY, 2, 0);
	assert_int_equal(used_idx(), 2);
	assert_int_equal(t->more, 1u);
	assert_int_equal(resumes_asked, 1);
	assert_int_equal(interrupts, 1);         /* what was done is told at once */
	assert_int_equal(t->budget_stops, 1);
	/* the driver's next doorbell for the same chains finds them waiting too */
	virtio_pci_resume(t);
	assert_int_equal(used_idx(), 4);
	assert_int_equal(resumes_asked, 2);
	virtio_pci_resume(t);
	assert_int_equal(used_idx(), 5);
	assert_int_equal(t->more, 0u);           /* done: nothing asked for */
	assert_int_equal(resumes_asked, 2);
	assert_int_equal(blk.stats.flushes, 5);
	virtio_pci_resume(t);                    /* a turn with nothing marked: nothing */
	assert_int_equal(used_idx(), 5);
	/* a reset forgets the queue's marked work */
	t->more = 1;
	virtio_pci_write(t, VIRTIO_COMMON_STATUS, 1, 0);
	assert_int_equal(t->more, 0u);
}

static void test_refused_images(void **state)
{
	(void)state;
	struct virtio_blk b;
	assert_int_equal(virtio_blk_init(&b, PCI_DEVFN(5, 0), image, 0, false, "x", &stub_ram_mem), -1);
	assert_int_equal(virtio_blk_init(&b, PCI_DEVFN(5, 0), image, 1000, false, "x", &stub_ram_mem), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_config, setup_rw),
		cmocka_unit_test_setup(test_read_write_flush_id, setup_rw),
		cmocka_unit_test_setup(test_read_only_image, setup_ro),
		cmocka_unit_test_setup(test_bad_requests, setup_rw),
		cmocka_unit_test_setup(test_hostile_rings, setup_rw),
		cmocka_unit_test_setup(test_event_idx_asks_for_the_next_kick, setup_rw),
		cmocka_unit_test_setup(test_doorbell_budget_resumes, setup_rw),
		cmocka_unit_test(test_refused_images),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
