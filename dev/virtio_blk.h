/* virtio-blk (virtio spec 1.2, section 5.2) over dev/virtio_pci.c, backed by
 * a disk image in host memory (`disk =`, docs/VIRTIO.md).
 *
 * One request queue. Requests: IN (read), OUT (write; IOERR on a read-only
 * image), FLUSH (nothing to do: the image is RAM), GET_ID; any other type is
 * UNSUPP. A request whose sectors do not lie wholly in the image, whose data
 * is not whole sectors, or whose buffers are not what its type needs gets
 * IOERR and is counted, and touches neither the image nor guest memory
 * outside its own buffers. Guest memory is reached only through the queue's
 * accessors (dev/virtqueue.h), which check every range against guest RAM. */
#ifndef DEV_VIRTIO_BLK_H
#define DEV_VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/virtio_pci.h"

#define VIRTIO_BLK_DEVICE_ID   2
#define VIRTIO_BLK_SECTOR      512u
#define VIRTIO_BLK_QUEUE_SIZE  128u
#define VIRTIO_BLK_SEG_MAX     126u   /* data segments per request */

/* Feature bits offered. */
#define VIRTIO_BLK_F_SEG_MAX   2
#define VIRTIO_BLK_F_RO        5
#define VIRTIO_BLK_F_FLUSH     9

/* Request types and status values. */
#define VIRTIO_BLK_T_IN        0u
#define VIRTIO_BLK_T_OUT       1u
#define VIRTIO_BLK_T_FLUSH     4u
#define VIRTIO_BLK_T_GET_ID    8u
#define VIRTIO_BLK_S_OK        0u
#define VIRTIO_BLK_S_IOERR     1u
#define VIRTIO_BLK_S_UNSUPP    2u
#define VIRTIO_BLK_ID_BYTES    20u

struct virtio_blk {
	struct virtio_pci t;            /* first: the transport hands this back */
	uint8_t *image;
	uint64_t size;                  /* bytes, a multiple of 512 */
	bool ro;
	char id[VIRTIO_BLK_ID_BYTES];   /* GET_ID's answer, NUL-padded */
	struct {
		uint64_t reads, writes, flushes, get_ids;
		uint64_t bytes_read, bytes_written;
		uint64_t out_of_range;      /* sectors outside the image */
		uint64_t bad_requests;      /* malformed: buffers, lengths */
		uint64_t ro_writes;         /* OUT on a read-only image */
		uint64_t unsupported;
		uint64_t queue_errors;      /* the driver broke the ring: reset needed */
	} stats;
};

/* A virtio-blk function at `devfn` on `image` (`size` bytes, a non-zero
 * multiple of 512), read-only if `ro`, with the serial `id` (up to 20 bytes;
 * longer is cut). Returns 0, or -1 for an image that is not whole sectors. */
int virtio_blk_init(struct virtio_blk *b, uint8_t devfn, uint8_t *image, uint64_t size, bool ro,
		    const char *id, const struct vq_guest_mem *mem);

#endif
