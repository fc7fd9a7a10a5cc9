/* A virtio 1.x split virtqueue as the device sees it: the descriptor table,
 * the available ring (driver -> device) and the used ring (device -> driver),
 * all in guest RAM. Any device type (blk, net) uses it the same way:
 *
 *   vq_setup()                  when the driver enables the queue
 *   vq_pop()                    take the next available chain as segments
 *   ... read the readable segments, write the writable ones (vq->mem) ...
 *   vq_push()                   give the chain back with the bytes written
 *   vq_should_interrupt()       after a batch of pushes: raise the interrupt?
 *   vq_enable_notify() / vq_disable_notify()   ask for (or stop) kicks
 *
 * Every byte of the rings is written by a guest that may be hostile and may
 * change them from another vCPU while the device reads them. So the queue
 * reads guest memory only through vq_guest_mem, checks every range against
 * guest RAM before it reads or hands it out, reads each ring field once into
 * a local copy and decides on that copy only. Nothing a guest writes can make
 * it fault, loop or touch memory outside the guest's RAM.
 *
 * Not thread-safe: the device serialises the calls on one queue (its lock).
 * Fields are little-endian in guest memory, as is the host (x86). */
#ifndef DEV_VIRTQUEUE_H
#define DEV_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VQ_MAX_SIZE 32768u      /* the spec's largest queue size (a power of 2) */

/* Feature bits (virtio 1.x) that change how the rings are used. */
#define VIRTIO_F_INDIRECT_DESC 28
#define VIRTIO_F_EVENT_IDX     29

/* Descriptor flags. */
#define VIRTQ_DESC_F_NEXT     1u
#define VIRTQ_DESC_F_WRITE    2u
#define VIRTQ_DESC_F_INDIRECT 4u
/* avail.flags without EVENT_IDX: the driver wants no interrupts */
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1u
/* used.flags without EVENT_IDX: the device wants no notifications (kicks) */
#define VIRTQ_USED_F_NO_NOTIFY     1u

/* Ring layout (bytes): the spec's alignment and size of each part. The
 * sizes include the event fields, which exist whether or not EVENT_IDX is
 * negotiated. */
#define VQ_DESC_ALIGN  16u
#define VQ_AVAIL_ALIGN 2u
#define VQ_USED_ALIGN  4u
#define VQ_DESC_BYTES(size)  (16ull * (size))
#define VQ_AVAIL_BYTES(size) (6ull + 2ull * (size))
#define VQ_USED_BYTES(size)  (6ull + 8ull * (size))

/* The largest indirect table accepted, in descriptors. A device's own limit
 * (the spec lets a device bound chains): a bigger table fails the request. */
#define VQ_INDIRECT_MAX 1024u

/* Descriptors a device walks per doorbell (every one read counts: chain
 * links, empty ones, the one that points to an indirect table, the table's
 * entries). Every chain a driver may make on lightpath's queues fits one
 * (at most 256 entries and one 1024-entry table), and a full ring of
 * Linux's virtio-net chains too (256 of at most 3 without offloads); a
 * hostile ring of 256 chains of 255 empty descriptors and a 1024-entry
 * table (256 x 1279) does not. Past it vq_pop answers VQ_MORE and the
 * device resumes at its next turn (docs/VIRTIO.md). */
#define VQ_DOORBELL_BUDGET 2048u

/* How the queue reaches guest-physical memory. The hypervisor gives its
 * guest RAM accessors, the unit tests a fake RAM. Function pointers rather
 * than link-time hooks so that one binary can test it against several
 * memories and so that dev/ does not depend on vmm/.
 *   in_ram: [gpa, gpa + len) lies wholly in guest RAM (len > 0; the queue
 *           has already rejected ranges that wrap around 2^64).
 *   read/write: copy len bytes; 0, or negative with nothing copied when any
 *           of the range is outside guest RAM. The queue only calls them on
 *           ranges in_ram accepted. */
struct vq_guest_mem {
	void *ctx;
	bool (*in_ram)(void *ctx, uint64_t gpa, uint64_t len);
	int (*read)(void *ctx, uint64_t gpa, void *dst, size_t len);
	int (*write)(void *ctx, uint64_t gpa, const void *src, size_t len);
	/* optional: where guest-physical 0 is in the host's memory, when all
	 * of guest RAM (what in_ram accepts) is one mapping that lasts as long
	 * as the queue. Then the queue reads and writes its rings, which it
	 * has checked against in_ram, through it: a ring field is a load or a
	 * store, not a call. */
	uint8_t *(*ram)(void *ctx);
};

/* Results. vq_pop returns VQ_CHAIN, VQ_EMPTY or VQ_MORE; everything else
 * is negative.
 *
 * Request errors (-1 .. -15): the chain is bad but the ring around it is
 * sound. vq_pop has taken the chain (chain->head is valid) and counted it in
 * failed_requests; the device gives it back with vq_push(head, 0) (or writes
 * an error status if its protocol lets it) and carries on with the next.
 *
 * Queue errors (-32 and below, vq_err_needs_reset): the driver broke the
 * ring protocol, or the rings do not fit guest RAM. The queue stops (every
 * later pop/push returns VQ_ERR_BROKEN and touches nothing) until vq_reset
 * or vq_setup; the device sets DEVICE_NEEDS_RESET in its status and sends a
 * configuration change interrupt, as the spec asks of a device in an error
 * state. The first such error is kept in `broken`. */
enum vq_result {
	VQ_EMPTY = 0,   /* no chain available (or the queue is not set up) */
	VQ_CHAIN = 1,   /* a chain was taken */
	VQ_MORE = 2,    /* chains wait but this doorbell's budget is spent:
			   nothing taken; resume after vq_budget_refill */

	/* request errors */
	VQ_ERR_BUF_RANGE = -1,          /* a buffer outside RAM or wrapping 2^64 */
	VQ_ERR_INDIRECT_RANGE = -2,     /* an indirect table outside RAM or wrapping */
	VQ_ERR_INDIRECT_TOO_LARGE = -3, /* an indirect table over VQ_INDIRECT_MAX */
	VQ_ERR_TOO_MANY_SEGS = -4,      /* more segments than the caller's array */
	VQ_ERR_CHAIN_BUDGET = -5,       /* one chain longer than a whole doorbell's
					   budget: it could never be walked */
	VQ_ERR_PUSH = -8,               /* vq_push with a bad id or nothing in flight:
					   the device's bug, nothing written, the
					   queue goes on */

	/* queue errors: the device needs a reset */
	VQ_ERR_BROKEN = -32,            /* the queue already stopped on an error */
	VQ_ERR_SIZE = -33,              /* setup: size 0, not a power of 2 or > 32768 */
	VQ_ERR_RING_ALIGN = -34,        /* setup: a ring misaligned */
	VQ_ERR_RING_RANGE = -35,        /* setup: a ring outside RAM or wrapping */
	VQ_ERR_AVAIL_IDX = -36,         /* avail.idx more than size ahead of the device */
	VQ_ERR_HEAD_INDEX = -37,        /* an avail ring entry >= size */
	VQ_ERR_NEXT_INDEX = -38,        /* a next >= size (or >= the indirect table's length) */
	VQ_ERR_CHAIN_LOOP = -39,        /* a chain longer than size (or its table): a loop */
	VQ_ERR_INDIRECT_NESTED = -40,   /* INDIRECT inside an indirect table */
	VQ_ERR_INDIRECT_FLAGS = -41,    /* INDIRECT not negotiated, or with NEXT */
	VQ_ERR_INDIRECT_LEN = -42,      /* an indirect table of 0 bytes or not 16*n */
	VQ_ERR_WRITE_ORDER = -43,       /* a device-readable descriptor after a writable one */
	VQ_ERR_GUEST_MEM = -44,         /* an accessor failed on a range in_ram accepted */
};

static inline bool vq_err_needs_reset(int r)
{
	return r <= VQ_ERR_BROKEN;
}

/* One guest buffer of a chain. */
struct vq_seg {
	uint64_t gpa;
	uint32_t len;
	bool writable;          /* device-writable (else device-readable) */
};

/* What vq_pop took. The segments are in chain order: the first nr_readable
 * device-readable, the rest device-writable (the spec's order, enforced).
 * Zero-length descriptors carry nothing and give no segment. */
struct vq_chain {
	uint16_t head;          /* the id to give vq_push */
	unsigned nr_segs;
	unsigned nr_readable;
	uint64_t readable_bytes;
	uint64_t writable_bytes;
};

/* Where the driver put the rings, and the features both sides agreed. */
struct vq_layout {
	unsigned size;          /* entries: a power of 2, 1 .. VQ_MAX_SIZE */
	uint64_t desc_gpa;
	uint64_t avail_gpa;
	uint64_t used_gpa;
	uint64_t features;      /* the negotiated feature bits */
};

struct virtqueue {
	const struct vq_guest_mem *mem;
	uint8_t *ram;           /* mem->ram's answer at setup, or 0 */
	uint64_t desc_gpa, avail_gpa, used_gpa;
	uint16_t size;          /* 1 .. 32768 (only while ready) */
	uint16_t last_avail;    /* avail ring position of the next chain to take */
	uint16_t avail_idx;     /* avail.idx as last read, at most size ahead of
				   last_avail: re-read only when it is used up */
	uint16_t used_idx;      /* used.idx as the device last wrote it */
	uint16_t signalled_used;/* used_idx when vq_should_interrupt last answered */
	bool ready;
	bool notify_asked;      /* the last vq_enable_notify's request stands (at
				   asked_at with EVENT_IDX): asking again is a no-op */
	uint16_t asked_at;
	bool event_idx;         /* VIRTIO_F_EVENT_IDX negotiated */
	bool indirect;          /* VIRTIO_F_INDIRECT_DESC negotiated */
	int broken;             /* 0, or the queue error that stopped the queue */
	uint64_t chains;        /* chains vq_pop returned whole */
	uint64_t failed_requests; /* chains vq_pop took and failed (request errors) */
	uint64_t pushed;        /* used elements written */
	unsigned budget;        /* descriptors this doorbell may still walk */
	unsigned budget_full;   /* what vq_budget_refill gives */
	uint64_t budget_stops;  /* pops that answered VQ_MORE */
};

/* A queue that is not set up: pops find nothing. */
void vq_init(struct virtqueue *vq, const struct vq_guest_mem *mem);

/* The driver enabled the queue: checks the size, the alignment and that
 * the three rings lie in guest RAM, then starts at index 0. Returns 0, or a
 * queue error (VQ_ERR_SIZE/RING_ALIGN/RING_RANGE) with the queue stopped. */
int vq_setup(struct virtqueue *vq, const struct vq_layout *l);

/* Device reset: back to vq_init's state (counters kept). */
void vq_reset(struct virtqueue *vq);

/* The walk allowance: vq_init gives VQ_DOORBELL_BUDGET; a device refills
 * it at each doorbell (and each resumption); vq_set_budget changes the full
 * amount (tests, devices with other needs; at least 1). */
static inline void vq_budget_refill(struct virtqueue *vq)
{
	vq->budget = vq->budget_full;
}

static inline void vq_set_budget(struct virtqueue *vq, unsigned descriptors)
{
	vq->budget_full = vq->budget = descriptors ? descriptors : 1;
}

/* Takes the next available chain, walking NEXT links and at most one
 * indirect table (last in the chain), into segs[0 .. max_segs). Reads the
 * avail idx only when what it read last is used up, then one ring entry and
 * one descriptor per link: never the whole ring. Each descriptor read is
 * taken from vq->budget; a chain the budget left does not cover is not
 * taken (VQ_MORE: the next pop after vq_budget_refill walks it again from
 * its head), and one that a full budget does not cover is refused
 * (VQ_ERR_CHAIN_BUDGET). Returns VQ_CHAIN, VQ_EMPTY, VQ_MORE, a request
 * error (chain->head valid: push it back) or a queue error. */
int vq_pop(struct virtqueue *vq, struct vq_seg *segs, unsigned max_segs,
	   struct vq_chain *chain);

/* Gives a chain back: used ring element {head, written}, then used.idx.
 * Returns 0, VQ_ERR_PUSH (head >= size or no chain in flight) or
 * VQ_ERR_BROKEN / VQ_ERR_GUEST_MEM. */
int vq_push(struct virtqueue *vq, uint16_t head, uint32_t written);

/* After pushes: does the driver want an interrupt for them? Without
 * EVENT_IDX, unless avail.flags has NO_INTERRUPT; with it, when used.idx
 * went past used_event since the last answer. False when nothing was pushed
 * since the last answer, or the queue is not running. */
bool vq_should_interrupt(struct virtqueue *vq);

/* Ask the driver for a kick on its next new buffer: avail_event = the next
 * position the device will take (EVENT_IDX), else clears used.flags
 * NO_NOTIFY. Then looks again at avail.idx, since the driver may have added
 * buffers before it saw the request: returns 1 when chains are waiting (pop
 * them, no kick will come for them), 0 when none, or a queue error. When
 * the same request already stands (nothing taken since, no disable), it
 * writes and reads nothing: every buffer added after the pop that found
 * the ring empty is followed by a kick. */
int vq_enable_notify(struct virtqueue *vq);

/* Tell the driver kicks are not needed (while the device is popping anyway):
 * sets used.flags NO_NOTIFY without EVENT_IDX; with it, avail_event is left
 * behind, which has the same effect. Returns 0 or a queue error. */
int vq_disable_notify(struct virtqueue *vq);

/* A doorbell with nothing to do, told without a call: the rings mapped
 * (mem->ram), no chain since the last one taken, and the request for the
 * next kick standing (vq_enable_notify would change nothing). The pop and
 * the request this saves would find exactly that. */
static inline bool vq_idle(const struct virtqueue *vq)
{
	return vq->ram && vq->ready && vq->avail_idx == vq->last_avail && vq->notify_asked &&
	       (!vq->event_idx || vq->asked_at == vq->last_avail) &&
	       *(const volatile uint16_t *)(vq->ram + vq->avail_gpa + 2) == vq->last_avail;
}

/* Copies `len` bytes between host memory and a run of a chain's segments
 * (segs[0 .. n)), starting `skip` bytes into them; to the guest if
 * to_guest. Copies no further than the segments reach. Returns 0, or -1 if
 * an accessor failed (part may have been copied). */
int vq_copy(const struct vq_guest_mem *m, const struct vq_seg *segs, unsigned n, uint64_t skip,
	    uint8_t *host, uint64_t len, bool to_guest);

#endif
