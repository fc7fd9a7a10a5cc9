/* dev/virtqueue.c against a fake guest RAM with guard bytes on both sides:
 * healthy rings, then every hostile ring the header lists. After each test
 * the teardown checks that the guards are intact, that the accessors were
 * never asked about a range outside RAM (or a wrapping one), and that the
 * device wrote nothing but its used ring. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/virtqueue.h"

/* Guest RAM: [RAM_BASE, RAM_END), not at 0, so that low addresses are
 * outside it too. */
#define RAM_BASE  0x100000ull
#define RAM_SIZE  0x100000ull
#define RAM_END   (RAM_BASE + RAM_SIZE)
#define GUARD     4096u
#define GUARD_BYTE 0xa5

static uint8_t backing[GUARD + RAM_SIZE + GUARD];
#define RAM (backing + GUARD)

/* The usual layout: a queue of QSIZE, buffers and indirect tables apart. */
#define QSIZE  8u
#define DESC   (RAM_BASE + 0x0000)
#define AVAIL  (RAM_BASE + 0x1000)
#define USED   (RAM_BASE + 0x2000)
#define INDIR  (RAM_BASE + 0x8000)
#define BUF    (RAM_BASE + 0x10000)

#define F_INDIRECT (1ull << VIRTIO_F_INDIRECT_DESC)
#define F_EVENT    (1ull << VIRTIO_F_EVENT_IDX)

/* What the accessors saw. */
static unsigned nr_reads, nr_writes, nr_in_ram;
static unsigned bad_calls;          /* a range outside RAM, wrapping or empty */
static unsigned writes_not_used;    /* device writes outside its used ring */
static uint64_t used_lo, used_hi;   /* the used ring of the current setup */
/* Another vCPU of the guest, acting right after a device read. */
static void (*after_read)(uint64_t gpa, size_t len);

static bool inside(uint64_t gpa, uint64_t len)
{
	return len && gpa + len > gpa && gpa >= RAM_BASE && gpa + len <= RAM_END;
}

static bool fake_in_ram(void *ctx, uint64_t gpa, uint64_t len)
{
	(void)ctx;
	nr_in_ram++;
	if (!len || gpa + len < gpa)
		bad_calls++;    /* the queue promised neither */
	return inside(gpa, len);
}

static int fake_read(void *ctx, uint64_t gpa, void *dst, size_t len)
{
	(void)ctx;
	if (!inside(gpa, len)) {
		bad_calls++;
		return -1;
	}
	nr_reads++;
	memcpy(dst, RAM + (gpa - RAM_BASE), len);
	if (after_read)
		after_read(gpa, len);
	return 0;
}

static int fake_write(void *ctx, uint64_t gpa, const void *src, size_t len)
{
	(void)ctx;
	if (!inside(gpa, len)) {
		bad_calls++;
		return -1;
	}
	nr_writes++;
	if (gpa < used_lo || gpa + len > used_hi)
		writes_not_used++;
	memcpy(RAM + (gpa - RAM_BASE), src, len);
	return 0;
}

static const struct vq_guest_mem fake_mem = {
	.ctx = NULL, .in_ram = fake_in_ram, .read = fake_read, .write = fake_write,
};

static struct virtqueue vq;
static struct vq_seg segs[16];
static struct vq_chain chain;
static uint16_t drv_avail;          /* the driver's avail.idx */

/* ---- the driver's side: plain stores into the fake RAM ---- */

static uint8_t *at(uint64_t gpa)
{
	assert_true(gpa >= RAM_BASE && gpa < RAM_END);
	return RAM + (gpa - RAM_BASE);
}

static void wr16(uint64_t gpa, uint16_t v) { memcpy(at(gpa), &v, 2); }
static void wr32(uint64_t gpa, uint32_t v) { memcpy(at(gpa), &v, 4); }
static void wr64(uint64_t gpa, uint64_t v) { memcpy(at(gpa), &v, 8); }
static uint16_t rd16(uint64_t gpa) { uint16_t v; memcpy(&v, at(gpa), 2); return v; }
static uint32_t rd32(uint64_t gpa) { uint32_t v; memcpy(&v, at(gpa), 4); return v; }

static void put_desc(uint64_t table, unsigned i, uint64_t addr, uint32_t len,
		     uint16_t flags, uint16_t next)
{
	uint64_t d = table + 16ull * i;
	wr64(d, addr);
	wr32(d + 8, len);
	wr16(d + 12, flags);
	wr16(d + 14, next);
}

static void desc(unsigned i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	put_desc(DESC, i, addr, len, flags, next);
}

/* Puts `head` in the next avail slot and publishes it. */
static void offer(uint16_t head)
{
	wr16(AVAIL + 4 + 2 * (drv_avail % vq.size), head);
	drv_avail++;
	wr16(AVAIL + 2, drv_avail);
}

static uint16_t used_idx(void) { return rd16(USED + 2); }
static uint32_t used_id(unsigned slot) { return rd32(USED + 4 + 8 * slot); }
static uint32_t used_len(unsigned slot) { return rd32(USED + 8 + 8 * slot); }
static void set_used_event(uint16_t v) { wr16(AVAIL + 4 + 2 * vq.size, v); }
static uint16_t avail_event(void) { return rd16(USED + 4 + 8 * vq.size); }

static int check_clean(void **state);
static bool ram_ready;

/* Between the parts of a test: what the last part did is checked first. */
static void reset_ram(void)
{
	if (ram_ready)
		check_clean(NULL);
	ram_ready = true;
	memset(backing, GUARD_BYTE, sizeof(backing));
	memset(RAM, 0, RAM_SIZE);
	nr_reads = nr_writes = nr_in_ram = bad_calls = writes_not_used = 0;
	after_read = NULL;
	drv_avail = 0;
	used_lo = used_hi = 0;
}

static int setup_at(unsigned size, uint64_t d, uint64_t a, uint64_t u, uint64_t features)
{
	used_lo = u;
	used_hi = u + VQ_USED_BYTES(size);
	struct vq_layout l = { .size = size, .desc_gpa = d, .avail_gpa = a,
			       .used_gpa = u, .features = features };
	return vq_setup(&vq, &l);
}

static void start(unsigned size, uint64_t features)
{
	reset_ram();
	vq_init(&vq, &fake_mem);
	assert_int_equal(setup_at(size, DESC, AVAIL, USED, features), 0);
}

static int pop(void)
{
	memset(segs, 0x5a, sizeof(segs));
	return vq_pop(&vq, segs, 16, &chain);
}

static void assert_seg(unsigned i, uint64_t gpa, uint32_t len, bool writable)
{
	assert_int_equal(segs[i].gpa, gpa);
	assert_int_equal(segs[i].len, len);
	assert_int_equal(segs[i].writable, writable);
}

/* The next pop takes a whole chain from `head`. */
static void expect_chain(uint16_t head, unsigned nr_segs, unsigned nr_readable)
{
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(chain.head, head);
	assert_int_equal(chain.nr_segs, nr_segs);
	assert_int_equal(chain.nr_readable, nr_readable);
}

/* The queue stopped on `err`: later calls touch nothing. */
static void assert_broken(int err)
{
	assert_int_equal(vq.broken, err);
	assert_true(vq_err_needs_reset(err));
	uint16_t used = used_idx();
	unsigned r = nr_reads, w = nr_writes;
	assert_int_equal(pop(), VQ_ERR_BROKEN);
	assert_int_equal(vq_push(&vq, 0, 0), VQ_ERR_BROKEN);
	assert_false(vq_should_interrupt(&vq));
	assert_int_equal(vq_enable_notify(&vq), VQ_ERR_BROKEN);
	assert_int_equal(vq_disable_notify(&vq), VQ_ERR_BROKEN);
	assert_int_equal(nr_reads, r);
	assert_int_equal(nr_writes, w);
	assert_int_equal(used_idx(), used);
}

/* The next pop stops the queue on `err`. */
static void expect_queue_error(int err)
{
	assert_int_equal(pop(), err);
	assert_broken(err);
}

static bool guards_intact(void)
{
	for (unsigned i = 0; i < GUARD; i++)
		if (backing[i] != GUARD_BYTE || backing[GUARD + RAM_SIZE + i] != GUARD_BYTE)
			return false;
	return true;
}

/* Restores the guards and counters before asserting, so that one failing
 * test does not fail the next ones too. */
static int check_clean(void **state)
{
	(void)state;
	bool guards_ok = guards_intact();
	unsigned bad = bad_calls, stray = writes_not_used;
	memset(backing, GUARD_BYTE, GUARD);
	memset(backing + GUARD + RAM_SIZE, GUARD_BYTE, GUARD);
	bad_calls = writes_not_used = 0;
	assert_true(guards_ok);
	assert_int_equal(bad, 0);
	assert_int_equal(stray, 0);
	return 0;
}

/* ================= healthy rings ================= */

static void test_empty_and_not_ready(void **state)
{
	(void)state;
	reset_ram();
	vq_init(&vq, &fake_mem);
	/* not set up: nothing to take, nothing read */
	assert_int_equal(pop(), VQ_EMPTY);
	assert_false(vq_should_interrupt(&vq));
	assert_int_equal(nr_reads + nr_writes + nr_in_ram, 0);

	start(QSIZE, 0);
	assert_int_equal(pop(), VQ_EMPTY);
	assert_int_equal(nr_reads, 1);                  /* avail.idx only */
	assert_int_equal(chain.nr_segs, 0);
	/* nothing in flight: a push is the device's bug, refused */
	assert_int_equal(vq_push(&vq, 0, 0), VQ_ERR_PUSH);
	assert_int_equal(nr_writes, 0);
	assert_false(vq_should_interrupt(&vq));
	assert_int_equal(vq.broken, 0);
}

static void test_single_descriptor(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(0, BUF, 100, 0, 0);
	offer(0);
	expect_chain(0, 1, 1);
	assert_int_equal(chain.readable_bytes, 100);
	assert_int_equal(chain.writable_bytes, 0);
	assert_seg(0, BUF, 100, false);
	assert_int_equal(nr_reads, 3);      /* avail.idx, ring entry, descriptor */
	assert_int_equal(vq.chains, 1);

	assert_int_equal(vq_push(&vq, 0, 0), 0);
	assert_int_equal(used_idx(), 1);
	assert_int_equal(used_id(0), 0);
	assert_int_equal(used_len(0), 0);
	assert_int_equal(vq.pushed, 1);
	assert_int_equal(pop(), VQ_EMPTY);
}

static void test_chain_readable_then_writable(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(5, BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	desc(2, BUF + 0x100, 512, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 7);
	desc(7, BUF + 0x400, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(5);
	expect_chain(5, 3, 1);
	assert_int_equal(chain.readable_bytes, 16);
	assert_int_equal(chain.writable_bytes, 513);
	assert_seg(0, BUF, 16, false);
	assert_seg(1, BUF + 0x100, 512, true);
	assert_seg(2, BUF + 0x400, 1, true);
	assert_int_equal(vq_push(&vq, 5, 1), 0);
	assert_int_equal(used_id(0), 5);
	assert_int_equal(used_len(0), 1);
}

/* A batch costs one read of avail.idx, then a ring entry and a descriptor
 * per chain: nothing scans the ring. */
static void test_batch_reads_only_what_it_needs(void **state)
{
	(void)state;
	start(QSIZE, 0);
	for (unsigned i = 0; i < 3; i++) {
		desc(i, BUF + 0x100 * i, 8, 0, 0);
		offer((uint16_t)i);
	}
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(nr_reads, 3);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(nr_reads, 5);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(nr_reads, 7);
	assert_int_equal(chain.head, 2);
	assert_int_equal(pop(), VQ_EMPTY);
	assert_int_equal(nr_reads, 8);
}

static void test_out_of_order_push(void **state)
{
	(void)state;
	start(QSIZE, 0);
	for (unsigned i = 0; i < 3; i++) {
		desc(i, BUF + 0x100 * i, 64, VIRTQ_DESC_F_WRITE, 0);
		offer((uint16_t)i);
		assert_int_equal(pop(), VQ_CHAIN);
	}
	assert_int_equal(vq_push(&vq, 2, 20), 0);
	assert_int_equal(vq_push(&vq, 0, 0), 0);
	assert_int_equal(vq_push(&vq, 1, 64), 0);
	assert_int_equal(used_idx(), 3);
	assert_int_equal(used_id(0), 2);
	assert_int_equal(used_len(0), 20);
	assert_int_equal(used_id(1), 0);
	assert_int_equal(used_len(1), 0);
	assert_int_equal(used_id(2), 1);
	assert_int_equal(used_len(2), 64);
	/* all three given back: a fourth push has nothing in flight */
	assert_int_equal(vq_push(&vq, 1, 0), VQ_ERR_PUSH);
	assert_int_equal(vq_push(&vq, QSIZE, 0), VQ_ERR_PUSH);
	assert_int_equal(used_idx(), 3);
	assert_int_equal(vq.broken, 0);
}

static void test_zero_length_descriptor_skipped(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(0, BUF, 10, VIRTQ_DESC_F_NEXT, 1);
	desc(1, 0, 0, VIRTQ_DESC_F_NEXT, 2);     /* empty: its address is never used */
	desc(2, BUF + 0x100, 20, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(chain.nr_segs, 2);
	assert_int_equal(chain.nr_readable, 1);
	assert_seg(0, BUF, 10, false);
	assert_seg(1, BUF + 0x100, 20, true);
}

/* A chain may be exactly size descriptors long; an array exactly as long
 * as the chain is enough. */
static void test_longest_chain(void **state)
{
	(void)state;
	start(QSIZE, 0);
	for (unsigned i = 0; i < QSIZE; i++)
		desc(i, BUF + 0x10 * i, 0x10, i + 1 < QSIZE ? VIRTQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	offer(0);
	assert_int_equal(vq_pop(&vq, segs, QSIZE, &chain), VQ_CHAIN);
	assert_int_equal(chain.nr_segs, QSIZE);
	assert_int_equal(chain.readable_bytes, 0x10 * QSIZE);
	assert_seg(QSIZE - 1, BUF + 0x10 * (QSIZE - 1), 0x10, false);
}

static void test_indirect(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	/* entries 0 -> 2 -> 1 of a 4-entry table; entry 3 unused. The WRITE
	 * flag on the descriptor naming the table means nothing. */
	put_desc(INDIR, 0, BUF, 16, VIRTQ_DESC_F_NEXT, 2);
	put_desc(INDIR, 2, BUF + 0x100, 100, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 1);
	put_desc(INDIR, 1, BUF + 0x200, 1, VIRTQ_DESC_F_WRITE, 0);
	desc(3, INDIR, 4 * 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_WRITE, 0);
	offer(3);
	expect_chain(3, 3, 1);
	assert_seg(0, BUF, 16, false);
	assert_seg(1, BUF + 0x100, 100, true);
	assert_seg(2, BUF + 0x200, 1, true);
	assert_int_equal(nr_reads, 6);      /* idx, entry, descriptor, 3 table entries */

	/* direct descriptors, then an indirect table last (the spec allows it) */
	desc(0, BUF + 0x300, 8, VIRTQ_DESC_F_NEXT, 1);
	desc(1, INDIR + 0x100, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc(INDIR + 0x100, 0, BUF + 0x400, 32, VIRTQ_DESC_F_NEXT, 1);
	put_desc(INDIR + 0x100, 1, BUF + 0x500, 4, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	expect_chain(0, 3, 2);
	assert_seg(0, BUF + 0x300, 8, false);
	assert_seg(1, BUF + 0x400, 32, false);
	assert_seg(2, BUF + 0x500, 4, true);
	assert_int_equal(vq.chains, 2);
}

/* avail.idx and used.idx are free-running 16-bit counters: run a queue of 4
 * past 65535, with a batch straddling the wrap, and EVENT_IDX on. */
static void test_index_wrap(void **state)
{
	(void)state;
	start(4, F_EVENT);
	for (unsigned i = 0; i < 4; i++)
		desc(i, BUF + 0x100 * i, 0x100, VIRTQ_DESC_F_WRITE, 0);
	for (unsigned n = 0; n < 65534; n++) {
		uint16_t h = (uint16_t)(n & 3);
		offer(h);
		vq_budget_refill(&vq);          /* a doorbell per chain */
		assert_int_equal(pop(), VQ_CHAIN);
		assert_int_equal(chain.head, h);
		assert_int_equal(vq_push(&vq, h, n & 0xff), 0);
	}
	assert_int_equal(used_idx(), 65534);
	(void)vq_should_interrupt(&vq);         /* the last answer at 65534 */

	/* four at once: avail slots 2, 3, 0, 1, idx 65534 -> 2 */
	for (uint16_t h = 0; h < 4; h++)
		offer(h);
	assert_int_equal(rd16(AVAIL + 2), 2);
	for (uint16_t h = 0; h < 4; h++) {
		assert_int_equal(pop(), VQ_CHAIN);
		assert_int_equal(chain.head, h);
	}
	assert_int_equal(pop(), VQ_EMPTY);
	for (uint16_t h = 0; h < 4; h++)
		assert_int_equal(vq_push(&vq, h, 0x10u + h), 0);
	assert_int_equal(used_idx(), 2);
	/* used slots: 65534 % 4 = 2, 3, then 0, 1 */
	assert_int_equal(used_id(2), 0);
	assert_int_equal(used_len(2), 0x10);
	assert_int_equal(used_id(3), 1);
	assert_int_equal(used_id(0), 2);
	assert_int_equal(used_id(1), 3);
	assert_int_equal(used_len(1), 0x13);
	/* the driver asked for an interrupt at entry 65535: crossed in 65534 -> 2 */
	set_used_event(65535);
	assert_true(vq_should_interrupt(&vq));
	assert_int_equal(vq.chains, 65538);
	assert_int_equal(vq.broken, 0);
}

static void push_one(uint16_t head)
{
	desc(head, BUF, 8, 0, 0);
	offer(head);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(vq_push(&vq, head, 0), 0);
}

static void test_event_idx_interrupts(void **state)
{
	(void)state;
	start(QSIZE, F_EVENT);
	set_used_event(0);                  /* interrupt when entry 0 is used */
	push_one(0);                        /* used.idx 0 -> 1 */
	assert_true(vq_should_interrupt(&vq));
	assert_false(vq_should_interrupt(&vq));        /* nothing new */
	push_one(1);                        /* 1 -> 2: past 0 already */
	assert_false(vq_should_interrupt(&vq));

	set_used_event(3);                  /* wants it when idx reaches 4 */
	push_one(2);                        /* 2 -> 3 */
	assert_false(vq_should_interrupt(&vq));
	push_one(3);                        /* 3 -> 4 */
	assert_true(vq_should_interrupt(&vq));

	/* a batch of three stepping over the event: one interrupt */
	set_used_event(5);
	push_one(4);
	push_one(5);
	push_one(6);                        /* 4 -> 7 */
	assert_true(vq_should_interrupt(&vq));

	/* an event far ahead, and NO_INTERRUPT ignored with EVENT_IDX */
	set_used_event(100);
	push_one(7);
	assert_false(vq_should_interrupt(&vq));
	wr16(AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	set_used_event(8);
	push_one(0);                        /* 8 -> 9 */
	assert_true(vq_should_interrupt(&vq));
}

static void test_no_interrupt_flag(void **state)
{
	(void)state;
	start(QSIZE, 0);
	set_used_event(100);                /* ignored without EVENT_IDX */
	push_one(0);
	assert_true(vq_should_interrupt(&vq));
	assert_false(vq_should_interrupt(&vq));        /* nothing new */
	wr16(AVAIL, VIRTQ_AVAIL_F_NO_INTERRUPT);
	push_one(1);
	assert_false(vq_should_interrupt(&vq));
	wr16(AVAIL, 0);
	assert_false(vq_should_interrupt(&vq));        /* already answered for it */
	push_one(2);
	assert_true(vq_should_interrupt(&vq));
}

static void test_notify_suppression(void **state)
{
	(void)state;
	/* without EVENT_IDX: used.flags NO_NOTIFY */
	start(QSIZE, 0);
	assert_int_equal(vq_disable_notify(&vq), 0);
	assert_int_equal(rd16(USED), VIRTQ_USED_F_NO_NOTIFY);
	assert_int_equal(vq_enable_notify(&vq), 0);     /* nothing waiting */
	assert_int_equal(rd16(USED), 0);
	desc(0, BUF, 8, 0, 0);
	offer(0);
	unsigned before = nr_writes;
	/* the request stands: the driver saw it and kicks for that chain, so
	 * asking again writes and reads nothing */
	assert_int_equal(vq_enable_notify(&vq), 0);
	assert_int_equal(nr_writes, before);
	assert_int_equal(pop(), VQ_CHAIN);
	/* after a disable, enabling writes the request again and looks: one
	 * came in meanwhile (offered while the driver saw NO_NOTIFY) */
	assert_int_equal(vq_disable_notify(&vq), 0);
	desc(1, BUF, 8, 0, 0);
	offer(1);
	assert_int_equal(vq_enable_notify(&vq), 1);
	assert_int_equal(rd16(USED), 0);
	assert_int_equal(pop(), VQ_CHAIN);

	/* with EVENT_IDX: avail_event = the next position to take */
	start(QSIZE, F_EVENT);
	desc(0, BUF, 8, 0, 0);
	offer(0);
	offer(0);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(vq_enable_notify(&vq), 1);     /* the second is waiting */
	assert_int_equal(avail_event(), 1);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(vq_enable_notify(&vq), 0);
	assert_int_equal(avail_event(), 2);
	unsigned w = nr_writes;
	assert_int_equal(vq_disable_notify(&vq), 0);    /* leaves avail_event behind */
	assert_int_equal(nr_writes, w);
	assert_int_equal(rd16(USED), 0);
}

static void test_largest_queue(void **state)
{
	(void)state;
	reset_ram();
	vq_init(&vq, &fake_mem);
	/* 512 KiB + 64 KiB + 256 KiB: fits the 1 MiB RAM */
	assert_int_equal(setup_at(VQ_MAX_SIZE, RAM_BASE, RAM_BASE + 0x80000,
				  RAM_BASE + 0xa0000, 0), 0);
	desc(VQ_MAX_SIZE - 1, RAM_BASE + 0xf0000, 8, 0, 0);
	wr16(RAM_BASE + 0x80000 + 4, VQ_MAX_SIZE - 1);
	wr16(RAM_BASE + 0x80000 + 2, 1);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(chain.head, VQ_MAX_SIZE - 1);
}

/* ================= hostile rings ================= */

static void expect_setup_error(unsigned size, uint64_t d, uint64_t a, uint64_t u, int err)
{
	reset_ram();
	vq_init(&vq, &fake_mem);
	assert_int_equal(setup_at(size, d, a, u, 0), err);
	assert_int_equal(nr_reads + nr_writes, 0);   /* checked, never touched */
	assert_broken(err);
}

static void test_setup_rejects_bad_rings(void **state)
{
	(void)state;
	expect_setup_error(0, DESC, AVAIL, USED, VQ_ERR_SIZE);
	expect_setup_error(3, DESC, AVAIL, USED, VQ_ERR_SIZE);
	expect_setup_error(VQ_MAX_SIZE * 2, DESC, AVAIL, USED, VQ_ERR_SIZE);
	expect_setup_error(100000, DESC, AVAIL, USED, VQ_ERR_SIZE);
	/* alignment: 16, 2 and 4 */
	expect_setup_error(QSIZE, DESC + 8, AVAIL, USED, VQ_ERR_RING_ALIGN);
	expect_setup_error(QSIZE, DESC, AVAIL + 1, USED, VQ_ERR_RING_ALIGN);
	expect_setup_error(QSIZE, DESC, AVAIL, USED + 2, VQ_ERR_RING_ALIGN);
	/* below RAM, ending 2 bytes past it, wrapping around 2^64 */
	expect_setup_error(QSIZE, 0, AVAIL, USED, VQ_ERR_RING_RANGE);
	expect_setup_error(QSIZE, DESC, AVAIL, RAM_END - 4 - 8 * QSIZE, VQ_ERR_RING_RANGE);
	expect_setup_error(QSIZE, DESC, 0xfffffffffffffffeull, USED, VQ_ERR_RING_RANGE);
	expect_setup_error(QSIZE, 0xfffffffffffffff0ull, AVAIL, USED, VQ_ERR_RING_RANGE);
	/* the avail ring's used_event counts: without it this ring would fit */
	expect_setup_error(QSIZE, DESC, RAM_END - 4 - 2 * QSIZE, USED, VQ_ERR_RING_RANGE);

	/* a reset and a good setup bring the queue back */
	vq_reset(&vq);
	assert_int_equal(vq.broken, 0);
	assert_int_equal(setup_at(QSIZE, DESC, AVAIL, USED, 0), 0);
	push_one(0);
	assert_int_equal(used_idx(), 1);
}

static void test_head_index_out_of_range(void **state)
{
	(void)state;
	start(QSIZE, 0);
	offer(QSIZE);
	assert_int_equal(pop(), VQ_ERR_HEAD_INDEX);
	assert_int_equal(nr_reads, 2);      /* idx and the entry; no descriptor */
	assert_broken(VQ_ERR_HEAD_INDEX);

	start(QSIZE, 0);
	offer(0xffff);
	expect_queue_error(VQ_ERR_HEAD_INDEX);
	assert_int_equal(vq.chains + vq.failed_requests, 0);
	/* a device reset and the driver's new setup */
	vq_reset(&vq);
	assert_int_equal(setup_at(QSIZE, DESC, AVAIL, USED, 0), 0);
	memset(at(AVAIL), 0, 0x2000);
	drv_avail = 0;
	push_one(1);
	assert_int_equal(used_id(0), 1);
}

static void test_next_index_out_of_range(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(0, BUF, 8, VIRTQ_DESC_F_NEXT, QSIZE);
	offer(0);
	expect_queue_error(VQ_ERR_NEXT_INDEX);
}

static void test_chain_loops(void **state)
{
	(void)state;
	/* A -> B -> A: stops after size descriptors */
	start(QSIZE, 0);
	desc(1, BUF, 8, VIRTQ_DESC_F_NEXT, 4);
	desc(4, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	offer(1);
	assert_int_equal(vq_pop(&vq, segs, 16, &chain), VQ_ERR_CHAIN_LOOP);
	assert_int_equal(nr_reads, 2 + QSIZE);
	assert_broken(VQ_ERR_CHAIN_LOOP);

	/* a descriptor pointing at itself, zero-length so that no array limit
	 * stops it first */
	start(QSIZE, 0);
	desc(6, 0, 0, VIRTQ_DESC_F_NEXT, 6);
	offer(6);
	assert_int_equal(pop(), VQ_ERR_CHAIN_LOOP);
	assert_int_equal(nr_reads, 2 + QSIZE);
	assert_broken(VQ_ERR_CHAIN_LOOP);
}

static void test_avail_idx_jump(void **state)
{
	(void)state;
	/* size + 1 chains "available": impossible */
	start(QSIZE, 0);
	wr16(AVAIL + 2, QSIZE + 1);
	assert_int_equal(pop(), VQ_ERR_AVAIL_IDX);
	assert_int_equal(nr_reads, 1);
	assert_broken(VQ_ERR_AVAIL_IDX);

	start(QSIZE, 0);
	wr16(AVAIL + 2, 0x8000);
	expect_queue_error(VQ_ERR_AVAIL_IDX);

	/* exactly size is a full ring */
	start(QSIZE, 0);
	for (unsigned i = 0; i < QSIZE; i++) {
		desc(i, BUF, 8, 0, 0);
		offer((uint16_t)i);
	}
	for (unsigned i = 0; i < QSIZE; i++)
		assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(pop(), VQ_EMPTY);
	/* later, a jump past what the device has taken + size */
	wr16(AVAIL + 2, (uint16_t)(QSIZE + QSIZE + 1));
	expect_queue_error(VQ_ERR_AVAIL_IDX);
}

/* A request error: the chain was taken, counted, and can be given back;
 * the queue carries on with the next chain. */
static void expect_request_error(int err, uint16_t head)
{
	uint64_t failed = vq.failed_requests;
	assert_int_equal(pop(), err);
	assert_false(vq_err_needs_reset(err));
	assert_int_equal(chain.head, head);
	assert_int_equal(vq.failed_requests, failed + 1);
	assert_int_equal(vq.broken, 0);
	uint16_t used = used_idx();
	assert_int_equal(vq_push(&vq, head, 0), 0);
	assert_int_equal(used_idx(), (uint16_t)(used + 1));
	assert_int_equal(used_id((uint16_t)(used % vq.size)), head);
	assert_int_equal(used_len((uint16_t)(used % vq.size)), 0);
}

static void test_buffer_outside_ram(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(0, RAM_BASE - 8, 16, 0, 0);             /* starts below RAM */
	desc(1, RAM_END - 8, 9, VIRTQ_DESC_F_WRITE, 0);  /* one byte past the end */
	desc(2, 0xfffffffffffffff0ull, 0x20, 0, 0);  /* wraps around 2^64 */
	desc(3, BUF, 8, VIRTQ_DESC_F_NEXT, 4);       /* a good one, then a bad one */
	desc(4, 0x10, 8, VIRTQ_DESC_F_WRITE, 0);
	desc(5, RAM_END - 8, 8, VIRTQ_DESC_F_WRITE, 0);  /* the last bytes: fine */
	for (uint16_t h = 0; h < 6; h++)
		offer(h);
	for (uint16_t h = 0; h < 5; h++)
		expect_request_error(VQ_ERR_BUF_RANGE, h);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_seg(0, RAM_END - 8, 8, true);
	assert_int_equal(vq.failed_requests, 5);
	assert_int_equal(vq.chains, 1);
}

static void test_too_many_segments(void **state)
{
	(void)state;
	start(QSIZE, 0);
	for (unsigned i = 0; i < 4; i++)
		desc(i, BUF + 0x10 * i, 0x10, i < 3 ? VIRTQ_DESC_F_NEXT : 0, (uint16_t)(i + 1));
	offer(0);
	offer(0);
	memset(segs, 0x5a, sizeof(segs));
	assert_int_equal(vq_pop(&vq, segs, 3, &chain), VQ_ERR_TOO_MANY_SEGS);
	assert_int_equal(segs[3].gpa, 0x5a5a5a5a5a5a5a5aull);   /* nothing past the array */
	assert_int_equal(chain.head, 0);
	assert_int_equal(vq.failed_requests, 1);
	assert_int_equal(vq_push(&vq, 0, 0), 0);
	/* the same chain with room for it */
	assert_int_equal(vq_pop(&vq, segs, 4, &chain), VQ_CHAIN);
	assert_int_equal(chain.nr_segs, 4);
	/* no array at all: a chain with data cannot be taken */
	offer(0);
	assert_int_equal(vq_pop(&vq, NULL, 0, &chain), VQ_ERR_TOO_MANY_SEGS);
}

static void test_indirect_bad_length(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	desc(0, INDIR, 24, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop(), VQ_ERR_INDIRECT_LEN);
	assert_int_equal(nr_reads, 3);              /* the table was not read */
	assert_broken(VQ_ERR_INDIRECT_LEN);

	start(QSIZE, F_INDIRECT);
	desc(0, INDIR, 0, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	expect_queue_error(VQ_ERR_INDIRECT_LEN);
}

static void test_indirect_too_large_or_outside(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	desc(0, INDIR, (VQ_INDIRECT_MAX + 1) * 16, VIRTQ_DESC_F_INDIRECT, 0);
	desc(1, RAM_END - 32, 64, VIRTQ_DESC_F_INDIRECT, 0);          /* half outside */
	desc(2, 0xfffffffffffffff0ull, 32, VIRTQ_DESC_F_INDIRECT, 0); /* wraps */
	desc(3, 0x1000, 16, VIRTQ_DESC_F_INDIRECT, 0);                 /* below RAM */
	/* the largest allowed table, one entry used */
	desc(4, INDIR, VQ_INDIRECT_MAX * 16, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc(INDIR, 0, BUF, 8, 0, 0);
	for (uint16_t h = 0; h < 5; h++)
		offer(h);
	unsigned r = nr_reads;
	expect_request_error(VQ_ERR_INDIRECT_TOO_LARGE, 0);
	assert_int_equal(nr_reads, r + 3);          /* the table was not read */
	expect_request_error(VQ_ERR_INDIRECT_RANGE, 1);
	expect_request_error(VQ_ERR_INDIRECT_RANGE, 2);
	expect_request_error(VQ_ERR_INDIRECT_RANGE, 3);
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(chain.head, 4);
	assert_seg(0, BUF, 8, false);
}

static void test_indirect_nested(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	put_desc(INDIR, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	put_desc(INDIR, 1, INDIR + 0x100, 32, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc(INDIR + 0x100, 0, BUF, 8, 0, 0);
	desc(0, INDIR, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	expect_queue_error(VQ_ERR_INDIRECT_NESTED);
}

static void test_indirect_bad_flags(void **state)
{
	(void)state;
	/* not negotiated */
	start(QSIZE, 0);
	put_desc(INDIR, 0, BUF, 8, 0, 0);
	desc(0, INDIR, 16, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	expect_queue_error(VQ_ERR_INDIRECT_FLAGS);

	/* INDIRECT together with NEXT */
	start(QSIZE, F_INDIRECT);
	put_desc(INDIR, 0, BUF, 8, 0, 0);
	desc(0, INDIR, 16, VIRTQ_DESC_F_INDIRECT | VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF, 8, 0, 0);
	offer(0);
	expect_queue_error(VQ_ERR_INDIRECT_FLAGS);
}

static void test_indirect_loops_and_next(void **state)
{
	(void)state;
	/* 0 -> 1 -> 0 inside a 2-entry table: stops after 2 entries */
	start(QSIZE, F_INDIRECT);
	put_desc(INDIR, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 1);
	put_desc(INDIR, 1, BUF, 8, VIRTQ_DESC_F_NEXT, 0);
	desc(0, INDIR, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	assert_int_equal(pop(), VQ_ERR_CHAIN_LOOP);
	assert_int_equal(nr_reads, 3 + 2);
	assert_broken(VQ_ERR_CHAIN_LOOP);

	/* next beyond the table (but within the queue size) */
	start(QSIZE, F_INDIRECT);
	put_desc(INDIR, 0, BUF, 8, VIRTQ_DESC_F_NEXT, 2);
	put_desc(INDIR, 2, BUF, 8, 0, 0);       /* there, but not in the table */
	desc(0, INDIR, 2 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	offer(0);
	expect_queue_error(VQ_ERR_NEXT_INDEX);
}

static void test_writable_before_readable(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	desc(0, BUF, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 0x100, 8, 0, 0);
	offer(0);
	expect_queue_error(VQ_ERR_WRITE_ORDER);

	/* a writable direct descriptor, then a readable one in the table */
	start(QSIZE, F_INDIRECT);
	desc(0, BUF, 8, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	desc(1, INDIR, 16, VIRTQ_DESC_F_INDIRECT, 0);
	put_desc(INDIR, 0, BUF + 0x100, 8, 0, 0);
	offer(0);
	expect_queue_error(VQ_ERR_WRITE_ORDER);
}

/* Another vCPU rewrites each descriptor just after the device read it, to a
 * self-loop outside RAM: the device goes on with what it read. */
static void corrupt_descriptor_after_read(uint64_t gpa, size_t len)
{
	if (len == 16 && gpa >= DESC && gpa < DESC + 16 * QSIZE) {
		unsigned i = (unsigned)((gpa - DESC) / 16);
		desc(i, 0x10, 0xffffffff, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_INDIRECT, (uint16_t)i);
	}
}

/* ... and moves avail.idx far ahead just after the device read it. */
static void jump_avail_after_read(uint64_t gpa, size_t len)
{
	if (gpa == AVAIL + 2 && len == 2)
		wr16(AVAIL + 2, 0x7777);
}

static void test_guest_rewrites_while_device_reads(void **state)
{
	(void)state;
	start(QSIZE, 0);
	desc(0, BUF, 16, VIRTQ_DESC_F_NEXT, 1);
	desc(1, BUF + 0x100, 32, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 2);
	desc(2, BUF + 0x200, 1, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	after_read = corrupt_descriptor_after_read;
	assert_int_equal(pop(), VQ_CHAIN);
	assert_int_equal(chain.nr_segs, 3);
	assert_seg(0, BUF, 16, false);
	assert_seg(1, BUF + 0x100, 32, true);
	assert_seg(2, BUF + 0x200, 1, true);
	assert_int_equal(nr_reads, 5);      /* each descriptor read once */

	start(QSIZE, 0);
	desc(0, BUF, 8, 0, 0);
	offer(0);
	after_read = jump_avail_after_read;
	assert_int_equal(pop(), VQ_CHAIN);  /* decided on the idx it read: 1 */
	after_read = NULL;
	assert_int_equal(vq_push(&vq, 0, 0), 0);
	assert_int_equal(pop(), VQ_ERR_AVAIL_IDX);  /* the next read sees the jump */
	assert_broken(VQ_ERR_AVAIL_IDX);
}

/* ================= the doorbell's budget ================= */

/* Each chain: an empty descriptor, then a readable and a writable one (3
 * descriptors read, 2 segments). */
static void three_desc_chain(uint16_t head, unsigned k)
{
	desc(head, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(head + 1));
	desc(head + 1u, BUF + 0x100 * k, 16, VIRTQ_DESC_F_NEXT, (uint16_t)(head + 2));
	desc(head + 2u, BUF + 0x100 * k + 0x80, 16, VIRTQ_DESC_F_WRITE, 0);
}

static void test_budget_stops_walk_and_resumes(void **state)
{
	(void)state;
	start(16, 0);
	assert_int_equal(vq.budget, VQ_DOORBELL_BUDGET);   /* the default */
	vq_set_budget(&vq, 8);
	three_desc_chain(0, 0);
	three_desc_chain(3, 1);
	three_desc_chain(6, 2);
	offer(0);
	offer(3);
	offer(6);
	expect_chain(0, 2, 1);
	assert_int_equal(vq.budget, 5);    /* the empty descriptor counted too */
	expect_chain(3, 2, 1);
	assert_int_equal(vq.budget, 2);
	/* the third needs 3: not taken, nothing written, the walk stopped */
	unsigned r = nr_reads, w = nr_writes;
	assert_int_equal(pop(), VQ_MORE);
	assert_int_equal(nr_reads, r + 1 + 2);   /* its ring entry, the 2 descriptors left */
	assert_int_equal(nr_writes, w);
	assert_int_equal(vq.budget, 0);
	assert_int_equal(vq.chains, 2);
	assert_int_equal(vq.failed_requests, 0);
	assert_int_equal(vq.budget_stops, 1);
	/* budget spent: the next pop reads nothing more of the ring */
	r = nr_reads;
	assert_int_equal(pop(), VQ_MORE);
	assert_int_equal(nr_reads, r);
	/* what was taken can be given back meanwhile */
	assert_int_equal(vq_push(&vq, 0, 16), 0);
	assert_int_equal(vq_push(&vq, 3, 16), 0);
	/* the next doorbell: the same chain again, whole, from its head */
	vq_budget_refill(&vq);
	expect_chain(6, 2, 1);
	assert_seg(0, BUF + 0x200, 16, false);
	assert_int_equal(vq.budget, 5);
	assert_int_equal(pop(), VQ_EMPTY);
	assert_int_equal(vq_push(&vq, 6, 16), 0);
	assert_int_equal(used_idx(), 3);
	assert_int_equal(vq.broken, 0);
}

static void test_budget_counts_empty_and_indirect(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	vq_set_budget(&vq, 16);
	/* chain 0: 4 empty descriptors, then a table of 4 (3 empty, 1 buffer):
	 * 4 + 1 + 4 = 9 descriptors for one segment */
	for (uint16_t i = 0; i < 4; i++)
		desc(i, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(4, INDIR, 4 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	for (unsigned i = 0; i < 3; i++)
		put_desc(INDIR, i, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	put_desc(INDIR, 3, BUF + 0x40, 32, VIRTQ_DESC_F_WRITE, 0);
	offer(0);
	expect_chain(0, 1, 0);
	assert_seg(0, BUF + 0x40, 32, true);
	assert_int_equal(vq.budget, 16 - 9);
	assert_int_equal(vq_push(&vq, 0, 0), 0);

	/* chain 5: empty, then a table of 16 empty entries and a buffer: 1 + 1 +
	 * 17 = 19, over a whole budget of 16: refused (a request error), and
	 * the rest of the budget is gone */
	desc(5, BUF, 0, VIRTQ_DESC_F_NEXT, 6);
	desc(6, INDIR + 0x400, 17 * 16, VIRTQ_DESC_F_INDIRECT, 0);
	for (unsigned i = 0; i < 16; i++)
		put_desc(INDIR + 0x400, i, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	put_desc(INDIR + 0x400, 16, BUF + 0x80, 8, 0, 0);
	offer(5);
	offer(7);
	desc(7, BUF + 0x100, 8, 0, 0);
	assert_int_equal(pop(), VQ_MORE);        /* 7 left: it does not fit them */
	assert_int_equal(vq.chains, 1);
	vq_budget_refill(&vq);
	unsigned r = nr_reads;
	expect_request_error(VQ_ERR_CHAIN_BUDGET, 5);
	assert_int_equal(nr_reads, r + 1 + 16);   /* its ring entry and 16 descriptors, no more */
	assert_int_equal(vq.budget, 0);
	assert_int_equal(pop(), VQ_MORE);
	vq_budget_refill(&vq);
	expect_chain(7, 1, 1);                    /* the ring goes on */
	assert_int_equal(vq.budget, 15);
	assert_int_equal(vq.broken, 0);
}

/* A hostile ring as the attack had it: every entry a chain of size - 1
 * empty descriptors and a table of VQ_INDIRECT_MAX entries. One budget
 * reads at most VQ_DOORBELL_BUDGET descriptors, however many chains wait. */
static void test_budget_bounds_a_hostile_ring(void **state)
{
	(void)state;
	start(QSIZE, F_INDIRECT);
	for (unsigned i = 0; i + 1 < QSIZE; i++)
		desc(i, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	desc(QSIZE - 1, INDIR, VQ_INDIRECT_MAX * 16, VIRTQ_DESC_F_INDIRECT, 0);
	for (unsigned i = 0; i + 1 < VQ_INDIRECT_MAX; i++)
		put_desc(INDIR, i, BUF, 0, VIRTQ_DESC_F_NEXT, (uint16_t)(i + 1));
	put_desc(INDIR, VQ_INDIRECT_MAX - 1, BUF, 0, VIRTQ_DESC_F_WRITE, 0);
	for (unsigned k = 0; k < QSIZE; k++)
		offer(0);
	unsigned per_chain = QSIZE + VQ_INDIRECT_MAX;
	for (unsigned doorbell = 0; doorbell < 3; doorbell++) {
		vq_budget_refill(&vq);
		unsigned r = nr_reads, chains = 0;
		int res;
		while ((res = pop()) == VQ_CHAIN) {
			chains++;
			assert_int_equal(vq_push(&vq, 0, 0), 0);
		}
		assert_int_equal(res, VQ_MORE);
		assert_int_equal(chains, VQ_DOORBELL_BUDGET / per_chain);
		assert_true(chains >= 1);
		/* ring entries (one per chain tried) and at most a budget of descriptors */
		assert_true(nr_reads - r <= VQ_DOORBELL_BUDGET + chains + 2);
	}
	assert_int_equal(vq.broken, 0);
}

#define T(f) cmocka_unit_test_teardown(f, check_clean)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_empty_and_not_ready),
		T(test_single_descriptor),
		T(test_chain_readable_then_writable),
		T(test_batch_reads_only_what_it_needs),
		T(test_out_of_order_push),
		T(test_zero_length_descriptor_skipped),
		T(test_longest_chain),
		T(test_indirect),
		T(test_index_wrap),
		T(test_event_idx_interrupts),
		T(test_no_interrupt_flag),
		T(test_notify_suppression),
		T(test_largest_queue),
		T(test_setup_rejects_bad_rings),
		T(test_head_index_out_of_range),
		T(test_next_index_out_of_range),
		T(test_chain_loops),
		T(test_avail_idx_jump),
		T(test_buffer_outside_ram),
		T(test_too_many_segments),
		T(test_indirect_bad_length),
		T(test_indirect_too_large_or_outside),
		T(test_indirect_nested),
		T(test_indirect_bad_flags),
		T(test_indirect_loops_and_next),
		T(test_writable_before_readable),
		T(test_guest_rewrites_while_device_reads),
		T(test_budget_stops_walk_and_resumes),
		T(test_budget_counts_empty_and_indirect),
		T(test_budget_bounds_a_hostile_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
