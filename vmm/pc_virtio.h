/* disk = and net = (vmm/pc_virtio.c): the VM's virtio functions on its PCI
 * bus. */
#ifndef VMM_PC_VIRTIO_H
#define VMM_PC_VIRTIO_H

#include <stdbool.h>

#include "vmm/vm.h"

/* Creates the VM's disk and network device (those it has) on its PCI bus,
 * with their BARs registered as MMIO ranges. */
void pc_virtio_create(struct vm *vm);
/* At the VM's start: its network device joins its link. */
void pc_virtio_start(struct vm *vm);
/* The disk's and network device's lines of the VM's exit statistics. */
void pc_virtio_print_stats(struct vm *vm);
/* Another CPU kicked this VM's vCPU, or a device stopped at its doorbell's
 * budget kicked its own (vcpu_take_notices): frames another VM left on its
 * network link go into its receive queue, and the devices' queues marked
 * for more work get their next budget. */
void pc_virtio_take_kicks(struct vm *vm);
/* Can another VM give this one work (an interrupt) while it halts: a
 * network link. */
bool pc_virtio_kick_source(const struct vm *vm);

#endif
