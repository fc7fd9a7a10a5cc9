/* The VM's APIC bus (vmm/apic_bus.c): interrupt messages between the local
 * APICs of one VM's vCPUs, the I/O APIC and MSI-capable devices. */
#ifndef VMM_APIC_BUS_H
#define VMM_APIC_BUS_H

#include "dev/ioapic.h"
#include "dev/lapic.h"

/* Sends message m from local APIC `from` (0: the I/O APIC or a device) to
 * the local APICs it names; ctx is the VM's struct dev_host. The local
 * APICs' send hook. */
void apic_bus_send(void *ctx, struct lapic *from, const struct apic_msg *m);
/* The I/O APIC's output: its redirection as a message on the bus. */
void ioapic_to_bus(void *ctx, const struct ioapic_irq *irq);

#endif
