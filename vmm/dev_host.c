/* The services a device reaches (dev/device.h): the console, the VM's end,
 * its clock, RAM and vCPUs, the date, the host TSC's rate, and its
 * interrupt lines, which end at the 8259s and the I/O APIC. */
#include "vmm/dev_host.h"

#include "core/tsc.h"
#include "dev/pc_irq.h"
#include "vmm/host_rtc.h"
#include "vmm/vcpu_run.h"
#include "vmm/vm.h"
#include "vmm/vm_console.h"

void dev_console_putc(struct dev_host *h, char c)
{
	vm_console_putc(h->head.vm, c);
}

void dev_vm_end(struct dev_host *h, unsigned status, const char *why)
{
	vm_end(h->head.vm, status, why);
}

struct guest_clock *dev_clock(struct dev_host *h)
{
	return &h->head.vm->clock;
}

uint64_t dev_ram_size(struct dev_host *h)
{
	return h->head.vm->mem_size;
}

unsigned dev_nr_vcpus(struct dev_host *h)
{
	return h->head.vm->nr_vcpus;
}

void dev_wall_clock(struct dev_host *h, struct rtc_time *t)
{
	(void)h;   /* every VM's is the host's */
	host_wall_clock(t);
}

/* A line is its number on the 8259s and the I/O APIC alike (pc_irq_set
 * applies the ISA override, IRQ0 -> GSI 2). */
struct irq_line dev_irq_line(struct dev_host *h, unsigned gsi)
{
	return (struct irq_line){ .host = h, .gsi = (uint8_t)gsi };
}

/* Every interrupt line of the PC ends here: the 8259s and the I/O APIC
 * latch it, and the hazard check at the end of the exit injects what
 * became deliverable. */
void irq_line_set(const struct irq_line *l, bool level)
{
	struct dev_host *pc = l->host;
	if (l->gsi >= IOAPIC_PINS)
		return;
	pc_irq_set(&pc->pic, &pc->ioapic, l->gsi, level);
	vcpu_notify(pc->head.vm->vcpu);   /* the 8259's output is the boot vCPU's LINT0 */
}

enum irq_edge_state irq_line_edge_state(const struct irq_line *l)
{
	struct dev_host *pc = l->host;
	return pc_irq_edge_state(&pc->pic, &pc->ioapic, &pc->head.vm->vcpu->lapic, l->gsi);
}

uint64_t platform_tsc_hz(void)
{
	return tsc_hz();
}
