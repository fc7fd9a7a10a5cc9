/* PCI bus 0 as a guest sees it through configuration space (docs/VIRTIO.md:
 * configuration space only, no ECAM; a VM without a virtio device keeps an
 * empty bus, as before).
 *
 * Each function is a 256-byte type-0 header with its capabilities, and per
 * byte the bits a guest may write (wmask) and the ones a write of 1 clears
 * (w1c, the status register's error bits). Everything else is read-only:
 * a guest write can change nothing but what the PCI Local Bus Specification
 * lets it change. BARs take the standard sizing dance: their writable bits
 * are the address bits above the BAR's size, so writing all-ones reads back
 * the size mask with the read-only type bits.
 *
 * A bus with a function on it also has a host bridge at 00.0 (Intel 440FX's
 * IDs, class 0x0600: what Linux's type-1 sanity check looks for); an empty
 * bus has none, so Linux finds no PCI and scans nothing (dev/pci_host.h). */
#ifndef DEV_PCI_BUS_H
#define DEV_PCI_BUS_H

#include <stdbool.h>
#include <stdint.h>

#define PCI_CFG_SIZE       256u
#define PCI_BARS           6u
#define PCI_BUS_MAX_FUNCS  8u      /* the host bridge included */

/* Header offsets (type 0). */
#define PCI_VENDOR_ID      0x00
#define PCI_DEVICE_ID      0x02
#define PCI_COMMAND        0x04
#define PCI_STATUS         0x06
#define PCI_CLASS_REVISION 0x08
#define PCI_CACHE_LINE     0x0c
#define PCI_HEADER_TYPE    0x0e
#define PCI_BAR0           0x10
#define PCI_SUBSYS_VENDOR  0x2c
#define PCI_SUBSYS_ID      0x2e
#define PCI_CAP_PTR        0x34
#define PCI_INTR_LINE      0x3c
#define PCI_INTR_PIN       0x3d

#define PCI_CMD_IO          (1u << 0)
#define PCI_CMD_MEM         (1u << 1)
#define PCI_CMD_MASTER      (1u << 2)
#define PCI_CMD_INTX_OFF    (1u << 10)
#define PCI_STATUS_INTX     (1u << 3)
#define PCI_STATUS_CAPS     (1u << 4)

/* BAR kinds (the low bits a BAR reads back). */
#define PCI_BAR_IO          0x1u
#define PCI_BAR_MEM64       0x4u
#define PCI_BAR_PREFETCH    0x8u

#define PCI_DEVFN(dev, fn)  ((uint8_t)(((dev) << 3) | (fn)))

/* Little-endian fields of configuration space (and of the structures a
 * device keeps there): `size` bytes at p + off. */
static inline void pci_put_le(uint8_t *p, unsigned off, unsigned size, uint32_t v)
{
	for (unsigned i = 0; i < size; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t pci_get_le(const uint8_t *p, unsigned off, unsigned size)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < size; i++)
		v |= (uint32_t)p[off + i] << (8 * i);
	return v;
}

struct pci_func;

/* What a BAR decodes changed: its decode enable (command IO/MEM) or, while
 * enabled, its address. The device moves (or unmaps, enabled false) what it
 * decodes there. Moves while decode is off (the sizing dance) are not told. */
typedef void (*pci_bar_moved_fn)(struct pci_func *f, unsigned bar, uint64_t addr, bool enabled);

struct pci_func {
	uint8_t devfn;
	uint8_t cfg[PCI_CFG_SIZE];
	uint8_t wmask[PCI_CFG_SIZE];   /* bits a guest write may change */
	uint8_t w1c[PCI_CFG_SIZE];     /* bits a guest write of 1 clears */
	uint64_t bar_size[PCI_BARS];   /* 0: none (a 64-bit BAR's upper slot too) */
	uint8_t bar_upper;             /* bit i: slot i is a 64-bit BAR's upper half */
	uint16_t cap_end;              /* where the next capability goes */
	uint8_t cap_last;              /* the last capability's offset, 0: none */
	pci_bar_moved_fn bar_moved;
	/* A function whose configuration bytes have side effects (virtio's
	 * PCI_CFG window): called before a read and after a write of them. */
	void (*cfg_access)(struct pci_func *f, unsigned off, unsigned size, bool is_write);
	void *opaque;
};

struct pci_bus {
	unsigned nr;
	struct pci_func *funcs[PCI_BUS_MAX_FUNCS];
	struct pci_func host_bridge;
};

/* A function with its IDs, class code (class << 8 | revision in one dword,
 * as at offset 8) and subsystem IDs; no BAR, no capability, interrupt pin
 * `intx_pin` (0 none, 1-4 INTA#-INTD#). */
void pci_func_init(struct pci_func *f, uint8_t devfn, uint16_t vendor, uint16_t device,
		   uint32_t class_rev, uint16_t subsys_vendor, uint16_t subsys, uint8_t intx_pin);
/* BAR `bar` of `size` bytes (a power of two: at least 16 for memory, 4 for
 * I/O) and kind PCI_BAR_IO, 0 (32-bit memory) or PCI_BAR_MEM64 (which also
 * takes slot bar + 1), PCI_BAR_PREFETCH or'ed to memory ones. -1 for a size
 * or slot that cannot be. */
int pci_func_add_bar(struct pci_func *f, unsigned bar, uint64_t size, unsigned kind);
/* A capability of `len` bytes (ID and next pointer included) linked at the
 * end of the list; its bytes after the header are read-only zeros until the
 * device sets them and their wmask. Returns its offset, or -1 when it does
 * not fit in the 256 bytes. */
int pci_func_add_cap(struct pci_func *f, uint8_t id, unsigned len);
/* The address a BAR holds now (64-bit ones with their upper half), without
 * the type bits. */
uint64_t pci_func_bar_addr(const struct pci_func *f, unsigned bar);

/* An empty bus. */
void pci_bus_init(struct pci_bus *b);
/* Puts a function on bus 0 (its devfn free, not 00.0, which the host bridge
 * takes). Returns 0, or -1 when it cannot be. */
int pci_bus_add(struct pci_bus *b, struct pci_func *f);
/* Configuration cycles. `off` + `size` (1, 2 or 4) stay within one dword.
 * A read of a function that is not there is all-ones. */
uint32_t pci_bus_read(const struct pci_bus *b, uint8_t bus, uint8_t devfn, unsigned off,
		      unsigned size);
void pci_bus_write(struct pci_bus *b, uint8_t bus, uint8_t devfn, unsigned off, unsigned size,
		   uint32_t val);

#endif
