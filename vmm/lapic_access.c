/* The local APICs as the guest reaches them: their MSRs (x2APIC,
 * IA32_APIC_BASE, IA32_TSC_DEADLINE) and their MMIO page, with the I/O
 * APIC's. After an access that can make an interrupt deliverable, the
 * hazard check at the end of the exit is asked for; the most frequent
 * accesses (EOI, self IPI, TSC deadline) skip the model's decode, and in a
 * VM of several vCPUs a fixed IPI or an edge EOI completes on the light
 * path, everything else under the VM lock. */
#include "vmm/lapic_access.h"

#include "dev/ioapic.h"
#include "dev/lapic.h"
#include "vmm/exit.h"
#include "vmm/io_registry.h"
#include "vmm/platform_intr.h"
#include "vmm/vcpu_run.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"

/* After a write that can make an interrupt (or an NMI) deliverable: the
 * hazard check at the end of the exit then injects it. */
static inline void recheck_if_deliverable(struct vcpu *v)
{
	if (lapic_irr_nonempty(&v->lapic) || platform_nmi_pending(v))
		v->pending |= VCPU_PENDING_RECHECK;
}

/* x2APIC MSRs, IA32_APIC_BASE, IA32_TSC_DEADLINE: the local APIC decides. An
 * EOI, a self-IPI (an NMI too) or a TPR change can make an interrupt
 * deliverable: the hazard check at the end of the exit then injects it. */
static int lapic_msr_handler(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (lapic_msr(&v->lapic, msr, val, is_write) == LAPIC_GP)
		return -1;
	if (is_write && msr == MSR_APIC_BASE) {
		exit_cpuid_apic_changed(v);   /* CPUID.1:EDX.APIC follows the enable */
		vendor_apic_mode_changed(v);
		v->pending |= VCPU_PENDING_RECHECK;   /* a disable cleared IRR and TPR */
	}
	if (is_write)
		recheck_if_deliverable(v);
	return 0;
}

/* The x2APIC EOI, a VM's most frequent MSR write (one per interrupt), in
 * a VM of one vCPU: registered on its own, so that it skips the model's
 * decode of the other x2APIC registers. A read, a reserved bit set or xAPIC
 * mode go to the model, which raises the #GP. */
static int lapic_eoi_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write || *val || !lapic_x2apic(&v->lapic))
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_eoi(&v->lapic);
	recheck_if_deliverable(v);
	return 0;
}

/* The x2APIC SELF IPI, the same way: the vector goes to the vCPU's own IRR
 * (Linux sends its IPIs to itself, irq_work among them, this way). A read,
 * a reserved bit set or xAPIC mode go to the model, which raises the #GP;
 * a vector below 16 is the model's ESR error, in lapic_accept. */
static int lapic_self_ipi_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write || (*val & ~0xffull) || !lapic_x2apic(&v->lapic))
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_accept(&v->lapic, (uint8_t)*val, false);
	v->pending |= VCPU_PENDING_RECHECK;   /* deliverable now, unless the PPR says no */
	return 0;
}

/* IA32_TSC_DEADLINE, the same way (Linux writes it at every timer event
 * it programs): a write goes straight to the timer. A deadline already
 * due delivers at once, to IRR. */
static int lapic_tsc_deadline_msr(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (!is_write)
		return lapic_msr_handler(v, msr, val, is_write);
	lapic_tsc_deadline_write(&v->lapic, *val);
	recheck_if_deliverable(v);
	return 0;
}

/* An EOI in a VM of several vCPUs, on the light path: for an edge-triggered
 * vector it changes only the vCPU's own ISR (other CPUs write its IRR and
 * TMR, under the VM lock, never its ISR); a level-triggered one goes on to
 * the I/O APIC, which needs the lock (false). What the EOI uncovers is
 * delivered by the heavy path (the hazard check leaves the light loop in
 * such a VM). */
static bool eoi_light(struct vcpu *v)
{
	if (!lapic_eoi_edge(&v->lapic))
		return false;
	recheck_if_deliverable(v);
	return true;
}

/* A fixed IPI to another vCPU on the sender's light path (docs/SMP.md;
 * KVM's "fastpath" for the x2APIC write; here the xAPIC MOV too): the vector is posted to the
 * target lock-free and the target is kicked; it moves the vector to its
 * IRR on its own heavy path (vcpu_take_notices). False: not that kind of
 * write, the bus must deliver it with the VM lock held. */
static bool ipi_post_light(struct vcpu *v, uint64_t icr)
{
	struct vm *vm = v->vm;
	int64_t dest = lapic_fixed_unicast_dest(&v->lapic, icr);
	if (dest < 0 || dest >= vm->nr_vcpus || dest == v->lapic.id)
		return false;
	struct vcpu *t = vm->vcpus[dest];   /* vCPU i has APIC ID i */
	if (lapic_x2apic(&t->lapic) != lapic_x2apic(&v->lapic))
		return false;   /* mixed modes match IDs differently: the bus decides */
	uint8_t vec = (uint8_t)icr;
	lapic_icr_record(&v->lapic, icr);
	__atomic_or_fetch(&t->posted[vec / 32], 1u << (vec % 32), __ATOMIC_RELEASE);
	v->ipis.sent++;
	v->ipis.sent_light++;
	__atomic_add_fetch(&t->ipis.received, 1, __ATOMIC_RELAXED);
	vcpu_notify(t);
	return true;
}

/* The local APIC's MSRs in a VM of several vCPUs: a fixed IPI to another
 * vCPU completes here on the light path; everything else touches shared
 * state (the bus, the VM's timers, the I/O APIC at EOI) and needs the VM
 * lock, which the heavy path holds. */
static int lapic_msr_shared(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (vm_shared_ok(v->vm))
		return lapic_msr_handler(v, msr, val, is_write);
	if (is_write && msr == LAPIC_X2APIC_MSR(LAPIC_ICR_LO) && ipi_post_light(v, *val))
		return 0;
	if (is_write && msr == LAPIC_X2APIC_MSR(LAPIC_EOI) && !*val && lapic_x2apic(&v->lapic) &&
	    eoi_light(v))
		return 0;
	return MSR_NEEDS_LOCK;
}

/* The I/O APIC's MMIO page, the same way: an unmasked redirection entry
 * can make an interrupt deliverable. (The I/O APIC's page is no vCPU's:
 * the accessing one looks.) */
int ioapic_mmio_checked(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	int ret = ioapic_mmio(dev, addr, data, size, is_write);
	if (is_write)
		recheck_if_deliverable(exit_vcpu());
	return ret;
}

/* The local APIC page in a VM of one vCPU. The EOI, an xAPIC guest's most
 * frequent MMIO access (one per interrupt), goes straight to the model's EOI
 * (lapic_mmio's decode and lapic_write's switch would end there too), as
 * lapic_eoi_msr does for the x2APIC's; every other access goes through
 * lapic_mmio. A write (an EOI, a TPR write, an IPI) can make an interrupt
 * (or an NMI) deliverable, as above. */
int lapic_mmio_checked(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	struct lapic *a = dev;
	if (!is_write)
		return lapic_mmio(a, addr, data, size, is_write);
	if (addr == LAPIC_BASE + LAPIC_EOI && size >= 4 && lapic_hw_enabled(a) && !lapic_x2apic(a))
		lapic_eoi(a);
	else
		lapic_mmio(a, addr, data, size, is_write);   /* (a write is always IO_OK) */
	recheck_if_deliverable(lapic_vcpu(a));   /* (the only vCPU's, which accessed it) */
	return IO_OK;
}

/* The local APIC page in a VM of several vCPUs, on the light path: a
 * fixed IPI to another vCPU by a MOV to ICR_LO completes there (xAPIC
 * mode); every other access needs the VM lock. */
int lapic_mmio_shared(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write)
{
	(void)dev;   /* the boot vCPU's: the page is each vCPU's own */
	struct vcpu *v = exit_vcpu();
	if (vm_shared_ok(v->vm)) {
		int ret = lapic_mmio(&v->lapic, addr, data, size, is_write);
		if (is_write)
			recheck_if_deliverable(v);
		return ret;
	}
	/* (the page is decoded only in xAPIC mode with the APIC enabled) */
	bool xapic = lapic_hw_enabled(&v->lapic) && !lapic_x2apic(&v->lapic);
	if (is_write && size == 4 && addr == LAPIC_BASE + LAPIC_ICR_LO && xapic &&
	    ipi_post_light(v, (uint32_t)*data))
		return IO_OK;
	if (is_write && size == 4 && addr == LAPIC_BASE + LAPIC_EOI && xapic && eoi_light(v))
		return IO_OK;
	return IO_NEEDS_LOCK;
}

void lapic_register_msrs(struct vm *vm)
{
	msr_handler_fn lapic_fn = vm->nr_vcpus > 1 ? lapic_msr_shared : lapic_msr_handler;
	if (vm->nr_vcpus == 1) {   /* first: the first registration of an MSR holds */
		vm_register_msr(vm, LAPIC_X2APIC_MSR(LAPIC_EOI), 1, lapic_eoi_msr);
		vm_register_msr(vm, LAPIC_X2APIC_MSR(LAPIC_SELF_IPI), 1, lapic_self_ipi_msr);
		vm_register_msr(vm, MSR_TSC_DEADLINE, 1, lapic_tsc_deadline_msr);
	}
	vm_register_msr(vm, MSR_APIC_BASE, 1, lapic_fn);
	vm_register_msr(vm, MSR_TSC_DEADLINE, 1, lapic_fn);
	vm_register_msr(vm, MSR_X2APIC_FIRST, MSR_X2APIC_LAST - MSR_X2APIC_FIRST + 1, lapic_fn);
}
