/* virtio-blk: requests from the request queue against an in-memory image. */
#include "dev/virtio_blk.h"

#include <stddef.h>

#define HDR_BYTES 16u   /* le32 type, le32 reserved, le64 sector */

/* The device configuration (5.2.4) this device fills: capacity, size_max
 * (unused: 0), seg_max. */
#define CFG_CAPACITY 0u
#define CFG_SEG_MAX  12u
#define CFG_LEN      16u

static struct virtio_blk *blk_of(struct virtio_pci *t)
{
	return (struct virtio_blk *)t;   /* t is its first member */
}

static uint32_t blk_cfg_read(struct virtio_pci *t, unsigned off, unsigned size)
{
	struct virtio_blk *b = blk_of(t);
	uint8_t cfg[CFG_LEN] = { 0 };
	uint64_t sectors = b->size / VIRTIO_BLK_SECTOR;
	pci_put_le(cfg, CFG_CAPACITY, 4, (uint32_t)sectors);
	pci_put_le(cfg, CFG_CAPACITY + 4, 4, (uint32_t)(sectors >> 32));
	pci_put_le(cfg, CFG_SEG_MAX, 4, VIRTIO_BLK_SEG_MAX);
	return pci_get_le(cfg, off, size);
}

/* One request: returns the status to write; *written the data bytes it
 * wrote to the guest's buffers. */
static uint8_t do_request(struct virtio_blk *b, const struct vq_guest_mem *m,
			  const struct vq_seg *segs, const struct vq_chain *c, uint32_t *written)
{
	const struct vq_seg *rd = segs, *wr = segs + c->nr_readable;
	unsigned nrd = c->nr_readable, nwr = c->nr_segs - c->nr_readable;
	uint8_t hdr[HDR_BYTES];
	*written = 0;
	if (c->readable_bytes < HDR_BYTES || vq_copy(m, rd, nrd, 0, hdr, HDR_BYTES, false)) {
		b->stats.bad_requests++;
		return VIRTIO_BLK_S_IOERR;
	}
	uint32_t type = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
			(uint32_t)hdr[3] << 24;
	uint64_t sector = 0;
	for (unsigned i = 0; i < 8; i++)
		sector |= (uint64_t)hdr[8 + i] << (8 * i);
	uint64_t out_len = c->readable_bytes - HDR_BYTES;   /* data the driver sent */
	uint64_t in_len = c->writable_bytes - 1;            /* room before the status */

	switch (type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT: {
		bool in = type == VIRTIO_BLK_T_IN;
		uint64_t len = in ? in_len : out_len;
		if ((in ? out_len : in_len) || len % VIRTIO_BLK_SECTOR || len >= UINT32_MAX) {
			b->stats.bad_requests++;
			return VIRTIO_BLK_S_IOERR;
		}
		if (sector > b->size / VIRTIO_BLK_SECTOR ||
		    len > b->size - sector * VIRTIO_BLK_SECTOR) {
			b->stats.out_of_range++;
			return VIRTIO_BLK_S_IOERR;
		}
		if (!in && b->ro) {
			b->stats.ro_writes++;
			return VIRTIO_BLK_S_IOERR;
		}
		uint8_t *at = b->image + sector * VIRTIO_BLK_SECTOR;
		if (in ? vq_copy(m, wr, nwr, 0, at, len, true)
		       : vq_copy(m, rd, nrd, HDR_BYTES, at, len, false)) {
			b->stats.bad_requests++;
			return VIRTIO_BLK_S_IOERR;
		}
		if (in) {
			b->stats.reads++;
			b->stats.bytes_read += len;
			*written = (uint32_t)len;
		} else {
			b->stats.writes++;
			b->stats.bytes_written += len;
		}
		return VIRTIO_BLK_S_OK;
	}
	case VIRTIO_BLK_T_FLUSH:
		b->stats.flushes++;   /* the image is RAM: nothing to write back */
		return VIRTIO_BLK_S_OK;
	case VIRTIO_BLK_T_GET_ID: {
		uint64_t len = in_len < VIRTIO_BLK_ID_BYTES ? in_len : VIRTIO_BLK_ID_BYTES;
		if (vq_copy(m, wr, nwr, 0, (uint8_t *)b->id, len, true)) {
			b->stats.bad_requests++;
			return VIRTIO_BLK_S_IOERR;
		}
		b->stats.get_ids++;
		*written = (uint32_t)len;
		return VIRTIO_BLK_S_OK;
	}
	default:
		b->stats.unsupported++;
		return VIRTIO_BLK_S_UNSUPP;
	}
}

/* The status byte: the last byte of the last device-writable segment. */
static int put_status(const struct vq_guest_mem *m, const struct vq_seg *segs,
		      const struct vq_chain *c, uint8_t status)
{
	const struct vq_seg *last = &segs[c->nr_segs - 1];
	return m->write(m->ctx, last->gpa + last->len - 1, &status, 1);
}

static uint32_t blk_serve(struct virtio_pci *t, int r, const struct vq_seg *segs,
			  const struct vq_chain *c)
{
	struct virtio_blk *b = blk_of(t);
	const struct vq_guest_mem *m = t->q[0].vq.mem;
	uint32_t written = 0;
	if (r != VQ_CHAIN || !c->nr_segs || c->nr_readable == c->nr_segs) {
		/* a chain the queue refused, or no writable byte for a status:
		 * given back with nothing written */
		b->stats.bad_requests++;
		return 0;
	}
	uint8_t status = do_request(b, m, segs, c, &written);
	if (put_status(m, segs, c, status)) {
		b->stats.bad_requests++;
		return written;
	}
	return written + 1;
}

static void blk_kick(struct virtio_pci *t, unsigned q)
{
	struct vq_seg segs[VIRTIO_BLK_SEG_MAX + 2];
	if (!virtio_pci_serve(t, q, segs, VIRTIO_BLK_SEG_MAX + 2, blk_serve))
		blk_of(t)->stats.queue_errors++;
}

static const struct virtio_pci_ops blk_ops = {
	.device_id = VIRTIO_BLK_DEVICE_ID,
	.class_rev = 0x01000000,   /* mass storage (SCSI subclass, as QEMU's) */
	.features = 1ull << VIRTIO_BLK_F_SEG_MAX | 1ull << VIRTIO_BLK_F_FLUSH |
		    1ull << VIRTIO_F_INDIRECT_DESC | 1ull << VIRTIO_F_EVENT_IDX,
	.num_queues = 1,
	.queue_max = VIRTIO_BLK_QUEUE_SIZE,
	.cfg_len = CFG_LEN,
	.cfg_read = blk_cfg_read,   /* every field read-only: no cfg_write */
	.kick = blk_kick,
};


int virtio_blk_init(struct virtio_blk *b, uint8_t devfn, uint8_t *image, uint64_t size, bool ro,
		    const char *id, const struct vq_guest_mem *mem)
{
	if (!size || size % VIRTIO_BLK_SECTOR)
		return -1;
	*b = (struct virtio_blk){ .image = image, .size = size, .ro = ro };
	for (unsigned i = 0; id && i < VIRTIO_BLK_ID_BYTES && id[i]; i++)
		b->id[i] = id[i];
	if (virtio_pci_init(&b->t, devfn, &blk_ops, mem))
		return -1;
	if (ro)
		b->t.device_features |= 1ull << VIRTIO_BLK_F_RO;
	return 0;
}
