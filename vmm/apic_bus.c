/* The VM's APIC bus: an interrupt message (an IPI, an I/O APIC
 * redirection, an MSI) reaches the local APICs of this VM's vCPUs that it
 * names, and no other: nothing a guest sends leaves its VM. Lowest priority
 * goes to one of them, the lowest TPR (the first on a tie). */
#include "vmm/apic_bus.h"

#include "dev/pc_irq.h"
#include "vmm/dev_host.h"
#include "vmm/vcpu_run.h"
#include "vmm/vm.h"

static struct vcpu *vcpu_of(struct lapic *a)
{
	return (struct vcpu *)(void *)((char *)a - __builtin_offsetof(struct vcpu, lapic));
}

static void apic_deliver(struct vcpu *t, const struct lapic *from, const struct apic_msg *m)
{
	if (from)   /* an IPI (the I/O APIC sends from 0) */
		__atomic_add_fetch(&t->ipis.received, 1, __ATOMIC_RELAXED);
	lapic_msg_receive(&t->lapic, m);
	vcpu_notify(t);   /* the hazard check (or a kick) injects it */
}

void apic_bus_send(void *ctx, struct lapic *from, const struct apic_msg *m)
{
	struct vm *vm = ((struct dev_host *)ctx)->head.vm;
	struct vcpu *lowest = 0;
	if (from)
		vcpu_of(from)->ipis.sent++;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *t = vm->vcpus[i];
		if (!lapic_msg_targets(&t->lapic, from, m))
			continue;
		if (m->delivery_mode != LAPIC_DM_LOWEST)
			apic_deliver(t, from, m);
		else if (!lowest || (lapic_tpr(&t->lapic) & 0xf0) < (lapic_tpr(&lowest->lapic) & 0xf0))
			lowest = t;
	}
	if (lowest)
		apic_deliver(lowest, from, m);
}

void ioapic_to_bus(void *ctx, const struct ioapic_irq *irq)
{
	struct apic_msg m = pc_ioapic_msg(irq);
	apic_bus_send(ctx, 0, &m);
}
