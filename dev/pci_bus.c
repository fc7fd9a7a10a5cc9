/* PCI bus 0: configuration space with the write semantics of the PCI Local
 * Bus Specification 3.0, section 6 (read-only, read-write and write-1-to-
 * clear bits; BAR sizing). */
#include "dev/pci_bus.h"

#include <stddef.h>

/* Intel 440FX host bridge IDs (class 0x060000, revision 2). */
#define HOST_BRIDGE_VENDOR 0x8086u
#define HOST_BRIDGE_DEVICE 0x1237u
#define HOST_BRIDGE_CLASS  0x06000002u

#define CAP_FIRST 0x40u   /* capabilities follow the 64-byte header */

void pci_func_init(struct pci_func *f, uint8_t devfn, uint16_t vendor, uint16_t device,
		   uint32_t class_rev, uint16_t subsys_vendor, uint16_t subsys, uint8_t intx_pin)
{
	*f = (struct pci_func){ .devfn = devfn, .cap_end = CAP_FIRST };
	pci_put_le(f->cfg, PCI_VENDOR_ID, 2, vendor);
	pci_put_le(f->cfg, PCI_DEVICE_ID, 2, device);
	pci_put_le(f->cfg, PCI_CLASS_REVISION, 4, class_rev);
	pci_put_le(f->cfg, PCI_SUBSYS_VENDOR, 2, subsys_vendor);
	pci_put_le(f->cfg, PCI_SUBSYS_ID, 2, subsys);
	f->cfg[PCI_INTR_PIN] = intx_pin <= 4 ? intx_pin : 0;
	if (f->cfg[PCI_INTR_PIN])
		f->wmask[PCI_INTR_LINE] = 0xff;
	/* command: I/O and memory decode, bus master, parity and SERR#
	 * response, INTx disable (only with a pin) */
	uint16_t cmd = PCI_CMD_IO | PCI_CMD_MEM | PCI_CMD_MASTER | (1u << 6) | (1u << 8) |
		       (f->cfg[PCI_INTR_PIN] ? PCI_CMD_INTX_OFF : 0);
	pci_put_le(f->wmask, PCI_COMMAND, 2, cmd);
	/* status: the error bits (master data parity error, signalled target
	 * abort, received aborts, SERR#, detected parity error) */
	pci_put_le(f->w1c, PCI_STATUS, 2, (1u << 8) | 0xf800u);
	f->wmask[PCI_CACHE_LINE] = 0xff;
}

int pci_func_add_bar(struct pci_func *f, unsigned bar, uint64_t size, unsigned kind)
{
	bool io = kind & PCI_BAR_IO, wide = kind & PCI_BAR_MEM64;
	if (bar >= PCI_BARS || (wide && (io || bar + 1 >= PCI_BARS)) || !size ||
	    (size & (size - 1)) || size < (io ? 4u : 16u) || (!wide && size > (1ull << 31)) ||
	    (io && (kind & PCI_BAR_PREFETCH)) || f->bar_size[bar] || (f->bar_upper >> bar & 1) ||
	    (wide && (f->bar_size[bar + 1] || (f->bar_upper >> (bar + 1) & 1))))
		return -1;
	unsigned off = PCI_BAR0 + 4 * bar;
	uint64_t mask = ~(size - 1) & ~(uint64_t)(io ? 0x3 : 0xf);
	f->bar_size[bar] = size;
	pci_put_le(f->cfg, off, 4, io ? PCI_BAR_IO : (kind & (PCI_BAR_MEM64 | PCI_BAR_PREFETCH)));
	pci_put_le(f->wmask, off, 4, (uint32_t)mask);
	if (wide) {
		pci_put_le(f->wmask, off + 4, 4, (uint32_t)(mask >> 32));
		f->bar_upper |= (uint8_t)(1u << (bar + 1));
	}
	return 0;
}

int pci_func_add_cap(struct pci_func *f, uint8_t id, unsigned len)
{
	unsigned off = f->cap_end;
	if (len < 2 || off + len > PCI_CFG_SIZE)
		return -1;
	f->cfg[off] = id;
	f->cfg[off + 1] = 0;
	if (f->cap_last)
		f->cfg[f->cap_last + 1] = (uint8_t)off;
	else
		f->cfg[PCI_CAP_PTR] = (uint8_t)off;
	f->cfg[PCI_STATUS] |= PCI_STATUS_CAPS;
	f->cap_last = (uint8_t)off;
	f->cap_end = (uint16_t)((off + len + 3) & ~3u);
	return (int)off;
}

uint64_t pci_func_bar_addr(const struct pci_func *f, unsigned bar)
{
	if (bar >= PCI_BARS || !f->bar_size[bar])
		return 0;
	unsigned off = PCI_BAR0 + 4 * bar;
	uint32_t lo = pci_get_le(f->cfg, off, 4);
	if (lo & PCI_BAR_IO)
		return lo & ~0x3u;
	uint64_t a = lo & ~0xfu;
	if (lo & PCI_BAR_MEM64)
		a |= (uint64_t)pci_get_le(f->cfg, off + 4, 4) << 32;
	return a;
}

static bool bar_decoded(const struct pci_func *f, unsigned bar)
{
	uint16_t cmd = (uint16_t)pci_get_le(f->cfg, PCI_COMMAND, 2);
	return cmd & (f->cfg[PCI_BAR0 + 4 * bar] & PCI_BAR_IO ? PCI_CMD_IO : PCI_CMD_MEM);
}

void pci_bus_init(struct pci_bus *b)
{
	*b = (struct pci_bus){ 0 };
	pci_func_init(&b->host_bridge, PCI_DEVFN(0, 0), HOST_BRIDGE_VENDOR, HOST_BRIDGE_DEVICE,
		      HOST_BRIDGE_CLASS, 0, 0, 0);
	/* hardwired: a host bridge always decodes and masters */
	pci_put_le(b->host_bridge.cfg, PCI_COMMAND, 2, PCI_CMD_MEM | PCI_CMD_MASTER);
	pci_put_le(b->host_bridge.wmask, PCI_COMMAND, 2, 0);
}

static struct pci_func *find(const struct pci_bus *b, uint8_t bus, uint8_t devfn)
{
	if (bus != 0 || !b->nr)
		return NULL;
	for (unsigned i = 0; i < b->nr; i++)
		if (b->funcs[i]->devfn == devfn)
			return b->funcs[i];
	return NULL;
}

int pci_bus_add(struct pci_bus *b, struct pci_func *f)
{
	if (!b->nr) {
		b->funcs[0] = &b->host_bridge;
		b->nr = 1;
	}
	if (b->nr == PCI_BUS_MAX_FUNCS || find(b, 0, f->devfn))
		return -1;
	b->funcs[b->nr++] = f;
	return 0;
}

uint32_t pci_bus_read(const struct pci_bus *b, uint8_t bus, uint8_t devfn, unsigned off,
		      unsigned size)
{
	struct pci_func *f = find(b, bus, devfn);
	uint32_t ones = size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
	if (!f || size - 1 > 3 || off + size > PCI_CFG_SIZE)
		return ones;
	if (f->cfg_access)
		f->cfg_access(f, off, size, false);
	return pci_get_le(f->cfg, off, size);
}

void pci_bus_write(struct pci_bus *b, uint8_t bus, uint8_t devfn, unsigned off, unsigned size,
		   uint32_t val)
{
	struct pci_func *f = find(b, bus, devfn);
	if (!f || size - 1 > 3 || off + size > PCI_CFG_SIZE)
		return;
	uint64_t addr[PCI_BARS];
	bool on[PCI_BARS];
	for (unsigned i = 0; i < PCI_BARS; i++) {
		addr[i] = pci_func_bar_addr(f, i);
		on[i] = f->bar_size[i] && bar_decoded(f, i);
	}
	for (unsigned i = 0; i < size; i++) {
		unsigned o = off + i;
		uint8_t v = (uint8_t)(val >> (8 * i));
		uint8_t c = (uint8_t)((f->cfg[o] & ~f->wmask[o]) | (v & f->wmask[o]));
		f->cfg[o] = (uint8_t)(c & ~(v & f->w1c[o]));
	}
	if (f->cfg_access)
		f->cfg_access(f, off, size, true);
	if (!f->bar_moved)
		return;
	for (unsigned i = 0; i < PCI_BARS; i++) {
		if (!f->bar_size[i])
			continue;
		uint64_t a = pci_func_bar_addr(f, i);
		bool e = bar_decoded(f, i);
		if (e != on[i] || (e && a != addr[i]))   /* what the guest sees decoded changed */
			f->bar_moved(f, i, a, e);
	}
}
