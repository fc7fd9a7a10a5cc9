/* Per-CPU data, found from the stack pointer: each CPU's stack is
 * PERCPU_STACK_SIZE bytes, aligned to its size, with struct percpu at its
 * bottom. Nothing here depends on GS.base or anything else VMLOAD/VMSAVE
 * switch (svm.vmload=lazy skips them on light exits): there the CPU still
 * holds the guest's GS. */
#ifndef CORE_PERCPU_H
#define CORE_PERCPU_H

#include <stdint.h>

#define PERCPU_STACK_SIZE 16384   /* keep in step with boot/entry.S */
#define PERCPU_HAZARD_HOST_NMI (1u << 4)   /* = VCPU_PENDING_HOST_NMI (vmm/vm.h) */

struct vcpu;

struct percpu {
	unsigned cpu_id;
	struct vcpu *current;     /* the vCPU this CPU is running, if any */
	struct vcpu *vcpu_owned;  /* the vCPU this CPU is given to, from its VM's set-up
				     (vm_run) or its start (an AP vCPU) to its end */
	unsigned guest_debug_events_dropped;   /* #DBs in lightpath from a guest's breakpoint
						  or single step (core/idt.c) */
	/* physical NMIs this CPU's NMI handler took (core/idt.c), and how many
	 * of them host_nmis_report has said */
	unsigned host_nmis, host_nmis_reported;
	/* host timer interrupts this CPU took (core/timer.c): a wait that let
	 * interrupts in sees whether the VM's timers' one came (vmm/vm_lock.c) */
	unsigned timer_interrupts;
	/* the hazard bits of the vCPU this CPU runs (its v->pending), where an
	 * NMI taken in host mode sets PERCPU_HAZARD_HOST_NMI so that the exit
	 * it came in says it before the guest runs on (vmm/vcpu_run.c) */
	uint32_t *hazard;
	/* set up by core/smp.c (the boot CPU's in smp_init) */
	uint32_t apic_id;
	uint32_t state;           /* enum percpu_state; read and written atomically */
	const char *fail_why;     /* why an AP could not enable virtualization */
	/* The backend's own pages for this CPU, allocated by the boot CPU:
	 * SVM: [0] host save area (VM_HSAVE_PA), [1] the host's VMSAVE area;
	 * VT-x: [0] VMXON region, [1] a page holding this CPU's GDT and TSS. */
	uint64_t virt_pa[2];
	/* The mailbox of an idle AP (core/smp.h): non-NULL work is pending;
	 * the AP clears it when done. */
	void (*work)(void *arg);
	void *work_arg;
};

enum percpu_state {
	PERCPU_OFF,        /* not started (or left out) */
	PERCPU_STARTING,   /* INIT-SIPI-SIPI sent */
	PERCPU_ALIVE,      /* in long mode, on its own stack, setting itself up */
	PERCPU_ONLINE,     /* virtualization on; idle, waiting for work */
	PERCPU_FAILED,     /* started, but could not enable virtualization (fail_why) */
	PERCPU_PARKED,     /* panicked: halted for good, out of use (smp_ap_panicked) */
};

static inline struct percpu *this_cpu(void)
{
	uint64_t rsp;
	asm("mov %%rsp, %0" : "=r"(rsp));
	return (struct percpu *)(uintptr_t)(rsp & ~(uint64_t)(PERCPU_STACK_SIZE - 1));
}

#endif
