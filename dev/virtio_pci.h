/* The virtio 1.x PCI transport (virtio spec 1.2, section 4.1), as any device
 * type uses it (virtio-blk and virtio-net; docs/VIRTIO.md).
 *
 * A modern-only (non-transitional) function: vendor 0x1af4, device 0x1040 +
 * the virtio device ID, revision 1. One 64-bit memory BAR (BAR 4, 16 KiB)
 * holds the four structures the vendor-specific capabilities point to:
 *
 *   0x0000 common configuration (features, status, queues)
 *   0x1000 ISR status (read to clear)
 *   0x2000 the device type's own configuration
 *   0x3000 notifications: queue q's doorbell at 0x3000 + 4 * q
 *
 * and a PCI_CFG capability lets a driver reach the BAR through configuration
 * space. An MSI-X capability puts its table and pending bits in BAR 1 (4
 * KiB). The guest reaches the BAR through virtio_pci_read/virtio_pci_write
 * (BAR-relative offsets); an access the spec does not define (another width
 * than the field's, outside every structure) reads 0 and writes nothing, and
 * is counted. Queues are dev/virtqueue.c's: enabling one checks its rings
 * (vq_setup); a ring the driver broke sets DEVICE_NEEDS_RESET and raises a
 * configuration change, and only a reset (status 0) clears it. */
#ifndef DEV_VIRTIO_PCI_H
#define DEV_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/pci_bus.h"
#include "dev/virtqueue.h"

#define VIRTIO_PCI_VENDOR       0x1af4u
#define VIRTIO_PCI_DEVICE_BASE  0x1040u
#define VIRTIO_PCI_BAR          4u
#define VIRTIO_PCI_BAR_SIZE     0x4000u
#define VIRTIO_PCI_COMMON       0x0000u
#define VIRTIO_PCI_COMMON_LEN   0x38u
#define VIRTIO_PCI_ISR          0x1000u
#define VIRTIO_PCI_DEVCFG       0x2000u
#define VIRTIO_PCI_DEVCFG_MAX   0x1000u
#define VIRTIO_PCI_NOTIFY       0x3000u
#define VIRTIO_PCI_NOTIFY_MULT  4u
#define VIRTIO_PCI_MAX_QUEUES   8u
#define VIRTIO_NO_VECTOR        0xffffu
/* MSI-X: the table and the pending bits in BAR 1 (4 KiB), one vector per
 * queue and one for configuration changes. */
#define VIRTIO_PCI_MSIX_BAR     1u
#define VIRTIO_PCI_MSIX_BAR_SIZE 0x1000u
#define VIRTIO_PCI_MSIX_PBA     0x800u
#define VIRTIO_PCI_MSIX_VECTORS (VIRTIO_PCI_MAX_QUEUES + 1)
#define PCI_MSIX_ENABLE         (1u << 15)
#define PCI_MSIX_MASKALL        (1u << 14)

/* device_status bits */
#define VIRTIO_STATUS_ACKNOWLEDGE  1u
#define VIRTIO_STATUS_DRIVER       2u
#define VIRTIO_STATUS_DRIVER_OK    4u
#define VIRTIO_STATUS_FEATURES_OK  8u
#define VIRTIO_STATUS_NEEDS_RESET  64u
#define VIRTIO_STATUS_FAILED       128u

#define VIRTIO_F_VERSION_1      32
#define VIRTIO_ISR_QUEUE        1u
#define VIRTIO_ISR_CONFIG       2u

/* Common configuration offsets (4.1.4.3). */
#define VIRTIO_COMMON_DFSELECT   0x00
#define VIRTIO_COMMON_DF         0x04
#define VIRTIO_COMMON_GFSELECT   0x08
#define VIRTIO_COMMON_GF         0x0c
#define VIRTIO_COMMON_MSIX       0x10
#define VIRTIO_COMMON_NUMQ       0x12
#define VIRTIO_COMMON_STATUS     0x14
#define VIRTIO_COMMON_CFGGEN     0x15
#define VIRTIO_COMMON_Q_SELECT   0x16
#define VIRTIO_COMMON_Q_SIZE     0x18
#define VIRTIO_COMMON_Q_MSIX     0x1a
#define VIRTIO_COMMON_Q_ENABLE   0x1c
#define VIRTIO_COMMON_Q_NOFF     0x1e
#define VIRTIO_COMMON_Q_DESC     0x20
#define VIRTIO_COMMON_Q_DRIVER   0x28
#define VIRTIO_COMMON_Q_DEVICE   0x30

/* Capability types (4.1.4). */
#define VIRTIO_PCI_CAP_COMMON_CFG 1
#define VIRTIO_PCI_CAP_NOTIFY_CFG 2
#define VIRTIO_PCI_CAP_ISR_CFG    3
#define VIRTIO_PCI_CAP_DEVICE_CFG 4
#define VIRTIO_PCI_CAP_PCI_CFG    5

struct virtio_pci;

/* What a device type gives the transport. */
struct virtio_pci_ops {
	uint16_t device_id;     /* virtio device ID: 1 network, 2 block */
	uint32_t class_rev;     /* PCI class code << 8 (revision 1 is or'ed in) */
	uint64_t features;      /* offered; VERSION_1 is added */
	unsigned num_queues;    /* 1 .. VIRTIO_PCI_MAX_QUEUES */
	uint16_t queue_max;     /* the largest queue size offered (power of 2) */
	unsigned cfg_len;       /* bytes of device configuration */
	/* device configuration access, off + size <= cfg_len; no cfg_write: all
	 * read-only (a write is counted in bad_accesses) */
	uint32_t (*cfg_read)(struct virtio_pci *t, unsigned off, unsigned size);
	void (*cfg_write)(struct virtio_pci *t, unsigned off, unsigned size, uint32_t val);
	/* the driver rang queue q's doorbell (q enabled, DRIVER_OK set) */
	void (*kick)(struct virtio_pci *t, unsigned q);
	/* device reset: the transport has reset its own state and the queues */
	void (*reset)(struct virtio_pci *t);
};

struct virtio_pci_queue {
	uint16_t size;
	uint16_t msix_vector;
	bool enabled;
	uint64_t desc, driver, device;
	struct virtqueue vq;
};

struct virtio_pci {
	struct pci_func pci;
	const struct virtio_pci_ops *ops;
	void *host;                     /* the VM's wiring of this function (its hooks find it here) */
	uint64_t device_features;
	uint64_t driver_features;
	uint32_t dfselect, gfselect;
	uint16_t msix_config;
	uint16_t queue_select;
	uint8_t status;
	uint8_t config_generation;
	uint8_t isr;
	uint8_t pci_cfg_cap;            /* offset of the PCI_CFG capability */
	uint8_t msix_cap;               /* offset of the MSI-X capability */
	uint16_t msix_vectors;          /* its table's entries: queues + 1 */
	uint32_t msix_table[VIRTIO_PCI_MSIX_VECTORS][4];   /* address lo, hi, data, control */
	uint64_t msix_pending;          /* the pending bit array */
	struct virtio_pci_queue q[VIRTIO_PCI_MAX_QUEUES];
	uint64_t bad_accesses;          /* accesses the spec does not define */
	uint64_t resets;
	/* The VM's wiring (none yet: then the ISR bits are all a driver sees):
	 * an MSI-X message for the APIC bus, and the INTx line's level (raised
	 * with an ISR bit, lowered when the driver reads the ISR). */
	void (*msi)(struct virtio_pci *t, uint64_t addr, uint32_t data);
	void (*intx)(struct virtio_pci *t, bool level);
	/* Queues whose work stopped at a doorbell's budget (bit q): the VM's
	 * wiring calls virtio_pci_resume at the vCPU's next exit, which
	 * `resume_later` (when set) arranges. */
	uint32_t more;
	void (*resume_later)(struct virtio_pci *t);
	uint64_t budget_stops;          /* doorbells that stopped at a budget */
	/* the longest turn that stopped at its budget: descriptors walked,
	 * bytes of chains served */
	uint64_t longest_turn_descs, longest_turn_bytes;
};

/* What one doorbell may do besides the descriptors it walks
 * (VQ_DOORBELL_BUDGET): bytes of the chains it serves. The chain that
 * crosses it is finished (one chain is bounded by guest RAM and the
 * device: a frame, a disk request), then the queue waits for its next
 * turn. Linux's largest disk request (1280 KiB by default) is one chain. */
#define VIRTIO_DOORBELL_BYTES (1u << 20)

/* A function at `devfn` for the device type `ops` (which must describe a
 * valid device: 0 on success, -1 if not), its queues reaching guest RAM
 * through `mem`. */
int virtio_pci_init(struct virtio_pci *t, uint8_t devfn, const struct virtio_pci_ops *ops,
		    const struct vq_guest_mem *mem);
/* The guest's access to the BAR, at a BAR-relative offset; size 1, 2, 4 or 8. */
uint64_t virtio_pci_read(struct virtio_pci *t, uint64_t off, unsigned size);
void virtio_pci_write(struct virtio_pci *t, uint64_t off, unsigned size, uint64_t val);
/* The same for the MSI-X BAR: table entries (dword or qword accesses),
 * then the pending bits (read-only). */
uint64_t virtio_pci_msix_read(struct virtio_pci *t, uint64_t off, unsigned size);
void virtio_pci_msix_write(struct virtio_pci *t, uint64_t off, unsigned size, uint64_t val);
/* A queue operation returned a queue error (vq_err_needs_reset): the device
 * needs a reset; the driver is told by a configuration change. */
void virtio_pci_queue_broken(struct virtio_pci *t);
/* The device changed its configuration: config_generation moves on and the
 * driver is told. */
void virtio_pci_config_changed(struct virtio_pci *t);
/* One chain of a queue being served: r is VQ_CHAIN, or the request error
 * vq_pop returned for it (count it; c->head is valid). Returns the bytes
 * written into the chain's buffers, the length it is given back with. */
typedef uint32_t virtio_serve_fn(struct virtio_pci *t, int r, const struct vq_seg *segs,
				 const struct vq_chain *c);
/* A device's kick: every available chain of queue q to `serve` and back to
 * the driver, then a request for the next kick (and a last look), then the
 * interrupt if the driver wants one. At most one doorbell's budget of
 * descriptors (VQ_DOORBELL_BUDGET) and of bytes (VIRTIO_DOORBELL_BYTES):
 * past either the chains served so far are given back and the rest waits
 * for virtio_pci_resume (virtio_pci_more). False if the driver broke the
 * ring: the device then needs a reset (virtio_pci_queue_broken was
 * called). */
bool virtio_pci_serve(struct virtio_pci *t, unsigned q, struct vq_seg *segs, unsigned max_segs,
		      virtio_serve_fn *serve);
/* Queue q's turn stopped at its budget, having served `bytes` of chains,
 * with chains left: it is marked in t->more and resume_later is asked for a
 * turn; the longest such turn is kept (its descriptors from the queue's
 * budget) for the statistics. */
void virtio_pci_more(struct virtio_pci *t, unsigned q, uint64_t bytes);
/* The turn resume_later arranged: each queue marked in t->more (live ones)
 * gets the device's kick again, with a fresh budget. */
void virtio_pci_resume(struct virtio_pci *t);
/* Queue q is enabled and the device running (DRIVER_OK, no NEEDS_RESET):
 * its doorbell counts, and the device may use its buffers. */
bool virtio_pci_queue_live(const struct virtio_pci *t, unsigned q);
/* The device put used buffers on queue q: unless the driver asked for no
 * interrupt (vq_should_interrupt), the ISR's queue bit is set and the
 * interrupt raised. */
void virtio_pci_used(struct virtio_pci *t, unsigned q);

#endif
