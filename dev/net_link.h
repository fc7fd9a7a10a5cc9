/* Network links between VMs (docs/VIRTIO.md): `net = NAME` in VM
 * descriptions puts each of those VMs' network device on the link NAME, a
 * small switch inside lightpath with one port per VM.
 *
 * A frame a VM sends is copied into the inbox of each port it is for: the
 * port whose MAC address is its destination, or every other port of the
 * link for a broadcast, multicast or unknown destination. Nothing else
 * crosses: a VM reaches only the ports of its own link, and nothing it
 * sends reaches its own port. The receiving VM's device takes frames from
 * its inbox on its own CPU, into buffers its driver gave it; the sender
 * never touches another VM's memory or device state. The port's `wake`
 * hook tells the receiver that its inbox is no longer empty (with the
 * link's lock held, so the port is still attached). An inbox holds
 * NET_INBOX_FRAMES frames; more wait nowhere: they are dropped and counted,
 * as by a NIC whose receive ring is full (the sender is not held back: a
 * receiver whose CPU does not run for a while loses frames, which TCP sends
 * again).
 *
 * Locks (docs/VIRTIO.md), in the order they nest: the registry's (attach
 * and detach only), a link's own (its ports: a sender holds it while it
 * copies one frame into each inbox the frame is for, at most
 * NET_LINK_PORTS - 1 copies), a port's (its inbox: one frame in or out).
 * No lock is held while a guest's ring is walked: the receiver copies the
 * oldest frame straight from its inbox into a buffer without the port's
 * lock (net_port_peek) and takes the lock only to let go of the frame.
 * Links share no lock, so nothing a VM does on one link slows another
 * link. Port memory is the
 * caller's; a port must be detached before it is freed. */
#ifndef DEV_NET_LINK_H
#define DEV_NET_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/spinlock.h"

#define NET_FRAME_MIN      14u     /* an Ethernet header */
#define NET_FRAME_MAX      1514u   /* header + 1500 bytes of payload, no FCS or VLAN tag */
#define NET_INBOX_FRAMES   256u    /* 379 KiB: a few ms of a busy sender */
#define NET_LINKS          8u
#define NET_LINK_PORTS     4u
#define NET_LINK_NAME_MAX  32u     /* with the NUL */
#define NET_MAC_BYTES      6u

struct net_frame {
	uint16_t len;
	uint8_t data[NET_FRAME_MAX];
};

struct net_port {
	struct net_link *link;          /* 0 while detached */
	uint8_t mac[NET_MAC_BYTES];
	/* a frame arrived in the empty inbox (link's lock held): tell the owner */
	void (*wake)(struct net_port *p);
	void *owner;
	struct spinlock lock;           /* the inbox, pending and stats */
	/* frames for this port, oldest first */
	struct net_frame inbox[NET_INBOX_FRAMES];
	unsigned head, count;           /* count: read without the lock by peek */
	/* inbox not empty: set (before the wake) by the put that found it
	 * empty, cleared by the take that empties it, both under the lock;
	 * read without it by the owner's cheap check. A put either finds it
	 * set (the owner has not emptied the inbox yet and will see the
	 * frame) or sets it and wakes: no frame is left unseen. */
	unsigned pending;
	struct {   /* (what a port sends, its device counts) */
		uint64_t delivered, delivered_bytes;   /* frames taken from the inbox */
		uint64_t inbox_full;            /* frames for it dropped: inbox full */
	} stats;
};

/* Attaches `p` (with its mac and wake set) to the link `name` (made when
 * the first port attaches, gone when the last one leaves). Returns 0, or -1
 * with one line in err: a bad name, the link full, a MAC address another
 * port of the link has, no link left. */
int net_link_attach(struct net_port *p, const char *name, char *err, size_t errlen);
void net_link_detach(struct net_port *p);

/* Sends one frame from `from` (attached): copied into each inbox it is for
 * (above). Returns how many ports it reached. A frame shorter than
 * NET_FRAME_MIN or longer than NET_FRAME_MAX reaches none (the device
 * refuses those first; this only keeps the inbox's bound). */
unsigned net_link_send(struct net_port *from, const uint8_t *frame, unsigned len);

/* The oldest frame in `p`'s inbox, or 0 when it is empty. Only the owner
 * takes frames (on its CPU), and a put writes only past the frames
 * counted, so the frame stays as it is, read without the port's lock,
 * until the owner's net_port_drop. */
const struct net_frame *net_port_peek(const struct net_port *p);
/* The peeked frame is done with (delivered or dropped): out of the inbox. */
void net_port_drop(struct net_port *p);

static inline bool net_port_pending(const struct net_port *p)
{
	return __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0;
}

/* Is `name` a link name: 1..31 of [A-Za-z0-9._-]. */
bool net_link_name_ok(const char *name);

#endif
