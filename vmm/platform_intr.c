/* Which interrupt a vCPU takes next, from its local APIC, the 8259s or the
 * test facility (LP_HC_RAISE_IRQ, LP_HC_TIMER), and its NMI and CR8: the
 * PC's interrupt controllers as the exit paths ask them. */
#include "vmm/platform_intr.h"

#include "dev/pc_irq.h"
#include "vmm/dev_host.h"
#include "vmm/vm.h"

bool platform_intr_requested(const struct vcpu *v)
{
	const struct pic8259 *pic = &v->vm->pc->pic;
	/* (with virtual-interrupt delivery the CPU takes the APIC's own) */
	return v->test_irq || (!lapic_cpu_delivers(&v->lapic) && lapic_irr_nonempty(&v->lapic)) ||
	       (pic->chip[0].irr & ~pic->chip[0].imr) || (pic->chip[1].irr & ~pic->chip[1].imr);
}

int platform_intr_pending(struct vcpu *v, bool *from_pic, bool *test)
{
	*test = false;
	*from_pic = false;
	if (v->test_irq) {
		*test = true;
		return v->test_irq;
	}
	/* the common case on every heavy exit: nothing requested anywhere */
	if (!platform_intr_requested(v))
		return -1;
	return pc_intr_pending(&v->lapic, &v->vm->pc->pic, from_pic);
}

int platform_intr_take(struct vcpu *v)
{
	int vec = v->test_irq;
	if (vec) {
		v->test_irq = 0;
		return vec;
	}
	vec = pc_intr_take(&v->lapic, &v->vm->pc->pic);
	if (vec >= 0)
		platform_irq_retry(v);
	return vec;
}

void platform_irq_retry(struct vcpu *v)
{
	pit_irq_taken(&v->vm->pc->pit);    /* a late IRQ0 edge can go now */
	hpet_irq_taken(&v->vm->pc->hpet);  /* and a late HPET edge */
}

bool platform_nmi_source(struct vcpu *v)
{
	return ioapic_nmi_pin(&v->vm->pc->ioapic);
}

int platform_cr8_write(struct vcpu *v, uint64_t val)
{
	if (val >> 4)
		return -1;
	lapic_write(&v->lapic, LAPIC_TPR, (uint32_t)val << 4);   /* TPR[3:0] becomes 0 */
	v->pending |= VCPU_PENDING_RECHECK;   /* a lower TPR can make an interrupt deliverable */
	return 0;
}

uint64_t platform_cr8_read(struct vcpu *v)
{
	return lapic_read(&v->lapic, LAPIC_TPR) >> 4;
}
