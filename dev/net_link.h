/* Network links between VMs (issue 15 item 4): `net = NAME` in VM
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
 * hook tells the receiver that its inbox is not empty (with the links'
 * lock held, so the port is still attached). An inbox holds
 * NET_INBOX_FRAMES frames; more wait nowhere: they are dropped and counted,
 * as by a NIC whose receive ring is full (the sender is not held back: a
 * receiver whose CPU does not run for a while loses frames, which TCP sends
 * again).
 *
 * One lock for all links (short copies only; frames are at most 1514
 * bytes). Port memory is the caller's; a port must be detached before it is
 * freed. */
#ifndef DEV_NET_LINK_H
#define DEV_NET_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	/* a frame arrived in the inbox (links' lock held): tell the owner */
	void (*wake)(struct net_port *p);
	void *owner;
	/* frames for this port, oldest first (links' lock) */
	struct net_frame inbox[NET_INBOX_FRAMES];
	unsigned head, count;
	/* inbox not empty: read without the lock by the owner's cheap check */
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

/* Takes frames from `p`'s inbox, oldest first, handing each to `take`,
 * which returns true when it is done with it (delivered or dropped) and
 * false to leave it, and every later one, in the inbox (no buffer yet).
 * Called by the owner, on its CPU. Returns the frames taken. */
unsigned net_port_receive(struct net_port *p, bool (*take)(void *ctx, const uint8_t *frame,
							   unsigned len), void *ctx);

static inline bool net_port_pending(const struct net_port *p)
{
	return __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0;
}

/* Is `name` a link name: 1..31 of [A-Za-z0-9._-]. */
bool net_link_name_ok(const char *name);

#endif
