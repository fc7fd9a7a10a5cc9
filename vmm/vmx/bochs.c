/* Bochs 2.7's virtual-interrupt defect, and lightpath's workaround where
 * (and only where) the defect exists (docs/VMX.md, "A Bochs 2.7 bug, worked
 * around on Bochs only"; vmx.bochs_quirk=auto|on|off, default auto).
 *
 * The defect: with virtual-interrupt delivery, Bochs delivers a pending
 * virtual interrupt into guest code with RFLAGS.IF=0 when a host interrupt
 * arrives (cpu/event.cc, InterruptAcknowledge: with external-interrupt
 * exiting the host interrupt is unmasked at IF=0, and the virtual one is
 * taken if it is pending at all, instead of the exit). A guest makes one
 * pending with IF=0 without any exit (a virtualized self-IPI, an EOI or TPR
 * write that uncovers one), so nothing done at VM entry can keep it out.
 *
 * The workaround: while a guest runs, the host's CR8 holds the host timer's
 * priority class off, so the timer's interrupt never reaches the CPU there;
 * the VMX-preemption timer brings the exit at the timer's deadline instead.
 * Both are done by the Bochs twins of the light loop and exit stub
 * (vmm/vmx/entry.S), picked once per vCPU at VMCS set-up (HOST_RIP): a CPU
 * without the defect runs the plain loop and stub, and pays nothing. Kicks
 * (IDT_VECTOR_WAKE, class 15) still exit the guest, so a VM of several
 * vCPUs can still meet the defect on a kick.
 *
 * Which machines: Bochs's own BIOS (rombios32, the one tools/lp-bochs boots)
 * names itself in SMBIOS as BIOS vendor "The Bochs Project"; no CPU vendor's
 * firmware does, and QEMU's SeaBIOS says "SeaBIOS" (QEMU's ACPI OEM ID
 * "BOCHS " is no sign: it is QEMU's too). A hypervisor that passes VT-x on
 * to its guest (KVM, QEMU, VMware, Hyper-V, Xen) sets CPUID.1:ECX[31]
 * (hypervisor present); Bochs's CPU models do not. Both must hold, and
 * auto also wants virtual-interrupt delivery in use (the defect needs it).
 * A wrong "yes" costs only speed (the workaround is correct on any CPU); a
 * wrong "no" leaves the defect, which only Bochs has.
 *
 * A guest cannot turn it off or use it against the host timer: it is
 * decided at boot from the host's firmware, CPUID and options; CR8 gets a
 * constant; the guest's CR8 is its TPR shadow (or exits); the preemption
 * timer is set before every entry from the host's own local APIC timer. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/options.h"
#include "core/smbios.h"
#include "core/timer.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

#define IDENTITY_LIMIT (4ull << 30)   /* boot/entry.S maps the first 4 GiB */
#define BOCHS_BIOS_VENDOR "The Bochs Project"
#define CPUID1_ECX_HYPERVISOR (1u << 31)

/* The host's task-priority class while a guest runs: the timer's, so that
 * it and every vector below it wait; kicks (class 15) still come. */
#define HOST_TPR_IN_GUEST (IDT_VECTOR_TIMER >> 4)

bool vmx_bochs_quirk;

static const void *phys_identity(uint64_t pa, uint64_t len, void *ctx)
{
	(void)ctx;
	if (pa == 0 || len > IDENTITY_LIMIT || pa > IDENTITY_LIMIT - len)
		return 0;
	return (const void *)(uintptr_t)pa;
}

void vmx_bochs_quirk_init(const struct lp_options *o, bool apicv)
{
	struct smbios_ids ids;
	uint32_t r[4];
	cpuid(1, 0, r);
	bool hv_bit = r[2] & CPUID1_ECX_HYPERVISOR;
	bool smbios = smbios_read_ids(phys_identity, 0, &ids) == 0;
	bool bochs = smbios && strcmp(ids.bios_vendor, BOCHS_BIOS_VENDOR) == 0 && !hv_bit;
	char why[160];
	if (!smbios)
		snprintf(why, sizeof(why), "no SMBIOS entry point at 0xF0000-0xFFFFF");
	else
		snprintf(why, sizeof(why), "SMBIOS BIOS vendor '%s', version '%s'; CPUID %s",
			 ids.bios_vendor, ids.bios_version,
			 hv_bit ? "says a hypervisor runs it" : "has no hypervisor bit");
	const char *whose = bochs ? "Bochs detected" : "no Bochs detected";
	const char *mode = opt_auto_word(o->vmx_bochs_quirk);
	bool want = o->vmx_bochs_quirk == OPT_ON || (o->vmx_bochs_quirk == OPT_AUTO && bochs && apicv);
	vmx_bochs_quirk = want && vmx_caps.watchdog_ticks;
	if (vmx_bochs_quirk)
		kprintf("lightpath: VMX: %s (%s): host timer held out of guests, emulator defect "
			"workaround (vmx.bochs_quirk=%s)\n", whose, why, mode);
	else if (want)
		kprintf("lightpath: VMX: %s (%s): no workaround, this CPU's VMX has no preemption "
			"timer (vmx.bochs_quirk=%s)\n", whose, why, mode);
	else if (bochs)
		kprintf("lightpath: VMX: %s (%s): no workaround (%s)\n", whose, why,
			o->vmx_bochs_quirk == OPT_OFF
				? "vmx.bochs_quirk=off: a virtual interrupt can reach guest code "
				  "with IF=0"
				: "vmx.bochs_quirk=auto, and no virtual-interrupt delivery, which "
				  "the defect needs");
}

/* Before each entry (Bochs twins only, interrupts off): the host timer's
 * class held off, and the VMX-preemption timer at the host timer's
 * deadline if that comes before the watchdog's (it counts guest time only,
 * so the deadline is taken afresh at every entry). */
void vmx_bochs_guest_entry(void)
{
	asm volatile("mov %0, %%cr8" ::"r"((uint64_t)HOST_TPR_IN_GUEST) : "memory");
	uint64_t left = timer_ticks_left();
	if (left == UINT64_MAX)
		return;
	uint64_t ticks = left >> (vmx_caps.misc & 0x1f);
	if (left)
		ticks++;   /* not before the deadline */
	if (ticks < vmread(VMCS_PREEMPTION_TIMER))
		vmwrite(VMCS_PREEMPTION_TIMER, ticks);
}
