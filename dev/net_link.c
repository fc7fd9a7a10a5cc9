/* Network links between VMs: ports, inboxes and forwarding. */
#include "dev/net_link.h"

#include "core/spinlock.h"
#include "lib/printf.h"
#include "lib/string.h"

struct net_link {
	char name[NET_LINK_NAME_MAX];   /* "" = free (registry lock) */
	struct spinlock lock;           /* ports, nr_ports: the data path's */
	struct net_port *ports[NET_LINK_PORTS];
	unsigned nr_ports;
};

static struct net_link links[NET_LINKS];
/* The registry: which link has which name, attach and detach. Never taken
 * by a frame's path. */
static struct spinlock registry_lock;

bool net_link_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (!n || n >= NET_LINK_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static struct net_link *find_link(const char *name)
{
	for (unsigned i = 0; i < NET_LINKS; i++)
		if (links[i].name[0] && !strcmp(links[i].name, name))
			return &links[i];
	return 0;
}

int net_link_attach(struct net_port *p, const char *name, char *err, size_t errlen)
{
	if (!net_link_name_ok(name)) {
		snprintf(err, errlen, "'%s' is not a link name (1..%u of A-Z a-z 0-9 . _ -)", name,
			 NET_LINK_NAME_MAX - 1);
		return -1;
	}
	int r = -1;
	spin_lock(&registry_lock);
	struct net_link *l = find_link(name);
	for (unsigned i = 0; !l && i < NET_LINKS; i++)
		if (!links[i].name[0]) {   /* free: no port, nobody holds its lock */
			l = &links[i];
			memset(l, 0, sizeof(*l));
			memcpy(l->name, name, strlen(name) + 1);
		}
	if (!l) {
		snprintf(err, errlen, "link %s: no link left (at most %u at a time)", name, NET_LINKS);
		goto out;
	}
	if (l->nr_ports == NET_LINK_PORTS) {
		snprintf(err, errlen, "link %s: full (at most %u VMs on a link)", name, NET_LINK_PORTS);
		goto out;
	}
	for (unsigned i = 0; i < l->nr_ports; i++)
		if (!memcmp(l->ports[i]->mac, p->mac, NET_MAC_BYTES)) {
			snprintf(err, errlen, "link %s: another VM on it has the MAC address "
				 "%02x:%02x:%02x:%02x:%02x:%02x", name, p->mac[0], p->mac[1], p->mac[2],
				 p->mac[3], p->mac[4], p->mac[5]);
			goto out;
		}
	p->lock = (struct spinlock){ 0 };
	p->head = p->count = 0;
	__atomic_store_n(&p->pending, 0, __ATOMIC_RELEASE);
	p->link = l;
	spin_lock(&l->lock);   /* senders on the link see the port whole */
	l->ports[l->nr_ports++] = p;
	spin_unlock(&l->lock);
	r = 0;
out:
	if (l && !l->nr_ports)
		l->name[0] = '\0';   /* made for this port, which could not join */
	spin_unlock(&registry_lock);
	return r;
}

void net_link_detach(struct net_port *p)
{
	spin_lock(&registry_lock);
	struct net_link *l = p->link;
	if (l) {
		/* after this no sender reaches p: its memory may go */
		spin_lock(&l->lock);
		for (unsigned i = 0; i < l->nr_ports; i++)
			if (l->ports[i] == p) {
				l->ports[i] = l->ports[--l->nr_ports];
				break;
			}
		spin_unlock(&l->lock);
		if (!l->nr_ports)
			l->name[0] = '\0';
		p->link = 0;
	}
	spin_unlock(&registry_lock);
}

/* Into p's inbox (its link's lock held, so p is attached); false when it
 * is full. One copy under p's lock; the wake after it, for the put that
 * found the inbox empty. */
static bool inbox_put(struct net_port *p, const uint8_t *frame, unsigned len)
{
	spin_lock(&p->lock);
	if (p->count == NET_INBOX_FRAMES) {
		p->stats.inbox_full++;
		spin_unlock(&p->lock);
		return false;
	}
	struct net_frame *f = &p->inbox[(p->head + p->count) % NET_INBOX_FRAMES];
	f->len = (uint16_t)len;
	memcpy(f->data, frame, len);
	/* the frame before the count: the owner peeks without the lock */
	__atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELEASE);
	/* set before the wake, under the lock the owner clears it with */
	bool tell = !p->pending;
	if (tell)
		__atomic_store_n(&p->pending, 1, __ATOMIC_RELEASE);
	spin_unlock(&p->lock);
	if (tell)
		p->wake(p);
	return true;
}

unsigned net_link_send(struct net_port *from, const uint8_t *frame, unsigned len)
{
	if (len < NET_FRAME_MIN || len > NET_FRAME_MAX)
		return 0;
	struct net_link *l = from->link;   /* from's own VM sends: attached till it ends */
	if (!l)
		return 0;
	unsigned reached = 0;
	spin_lock(&l->lock);
	struct net_port *to = 0;
	if (!(frame[0] & 1))   /* unicast: the port with that address, if any */
		for (unsigned i = 0; i < l->nr_ports && !to; i++)
			if (l->ports[i] != from && !memcmp(l->ports[i]->mac, frame, NET_MAC_BYTES))
				to = l->ports[i];
	if (to)
		reached += inbox_put(to, frame, len);
	else   /* broadcast, multicast, an address nobody has: every other port */
		for (unsigned i = 0; i < l->nr_ports; i++)
			if (l->ports[i] != from)
				reached += inbox_put(l->ports[i], frame, len);
	spin_unlock(&l->lock);
	return reached;
}

const struct net_frame *net_port_peek(const struct net_port *p)
{
	if (!__atomic_load_n(&p->count, __ATOMIC_ACQUIRE))
		return 0;
	return &p->inbox[p->head];
}

void net_port_drop(struct net_port *p)
{
	spin_lock(&p->lock);
	p->stats.delivered++;
	p->stats.delivered_bytes += p->inbox[p->head].len;
	p->head = (p->head + 1) % NET_INBOX_FRAMES;
	p->count--;
	if (!p->count)   /* the next put sets it again, and wakes */
		__atomic_store_n(&p->pending, 0, __ATOMIC_RELEASE);
	spin_unlock(&p->lock);
}
