/* virtio-net (virtio spec 1.2, section 5.1) over dev/virtio_pci.c, on a
 * link between VMs (dev/net_link.h).
 *
 * Two queues: receiveq (0) and transmitq (1); no control queue, no
 * offloads (no checksum, no segmentation, no mergeable buffers), so every
 * frame is one Ethernet frame of 14..1514 bytes behind the 12-byte
 * virtio_net_hdr, which the device writes as zeros (num_buffers 1) and
 * ignores on transmit. Offered: MAC (the address in the configuration),
 * STATUS (link up), INDIRECT_DESC, EVENT_IDX.
 *
 * Transmit (the driver's kick): each chain's readable bytes are the header
 * and one frame, copied out and handed to the link. A chain with writable
 * buffers, or a frame shorter or longer than Ethernet's, is given back and
 * counted, and nothing is sent. Receive: frames waiting on the port go into
 * the receive buffers the driver posted, one frame per chain; a chain too
 * small for the header and the frame is given back with length 0 and the
 * frame is dropped (both counted). Guest memory is reached only through the
 * queues' checked accessors. */
#ifndef DEV_VIRTIO_NET_H
#define DEV_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/net_link.h"
#include "dev/virtio_pci.h"

#define VIRTIO_NET_DEVICE_ID   1
#define VIRTIO_NET_QUEUE_SIZE  256u
#define VIRTIO_NET_RX          0u
#define VIRTIO_NET_TX          1u
#define VIRTIO_NET_HDR_BYTES   12u     /* virtio_net_hdr with num_buffers (VERSION_1) */
#define VIRTIO_NET_SEGS_MAX    64u     /* buffers per chain taken */

#define VIRTIO_NET_F_MAC       5
#define VIRTIO_NET_F_STATUS    16
#define VIRTIO_NET_S_LINK_UP   1u

struct virtio_net {
	struct virtio_pci t;            /* first: the transport hands this back */
	struct net_port *port;          /* its port on the link (attached by the caller) */
	uint8_t frame[VIRTIO_NET_HDR_BYTES + NET_FRAME_MAX];   /* the frame being sent */
	struct {
		uint64_t tx_frames, tx_bytes;
		uint64_t tx_bad;            /* not a frame: too short, too long, writable buffers */
		uint64_t rx_frames, rx_bytes;
		uint64_t rx_short;          /* a receive chain too small: frame dropped */
		uint64_t rx_bad;            /* a receive chain with readable buffers */
		uint64_t queue_errors;      /* the driver broke a ring: reset needed */
	} stats;
};

/* A virtio-net function at `devfn`, its MAC address the port's. */
int virtio_net_init(struct virtio_net *n, uint8_t devfn, struct net_port *port,
		    const struct vq_guest_mem *mem);

/* Frames waiting on the port into the receive queue, as far as the
 * driver's buffers and one doorbell's budget reach (on the owner's CPU:
 * after the port's wake, when the driver posts receive buffers, and at
 * virtio_pci_resume when the budget stopped it). */
void virtio_net_receive(struct virtio_net *n);

/* Frames wait for this device in its port's inbox. */
static inline bool virtio_net_rx_waiting(const struct virtio_net *n)
{
	return net_port_pending(n->port);
}

#endif
