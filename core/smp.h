/* Host SMP bring-up (docs/SMP.md): the CPUs the firmware's ACPI MADT
 * lists are started with INIT-SIPI-SIPI and each is given its own stack
 * with its struct percpu at the bottom (found from RSP, never GS.base:
 * core/percpu.h), the shared IDT, its own local APIC timer, and
 * virtualization turned on with its own pages (SVM: EFER.SVME, its own host
 * save area and VMSAVE area; VT-x: its own GDT and TSS, VMXON with its own
 * VMXON region). docs/SMP.md describes it.
 *
 * What an application processor (AP) does once started: it waits in
 * smp_idle(), interrupts on, halted until an interrupt comes, for one work
 * item in its mailbox (struct percpu's work/work_arg), runs it on its own
 * stack and waits again. smp_run_on() posts the item and wakes the CPU with
 * a fixed IPI (IDT_VECTOR_WAKE). The boot CPU posts one check that each AP
 * answers, then VMs: "run this VM" is one work item that returns when the
 * VM has ended (vmm/guests.c, docs/SMP.md "Static partitioning"). */
#ifndef CORE_SMP_H
#define CORE_SMP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/limits.h"
#include "core/percpu.h"

#define SMP_MAX_CPUS LP_MAX_CPUS

struct boot_info;
struct lp_options;

/* Every CPU running lightpath, by cpu_id: [0] is the boot CPU; only CPUs
 * that started and turned virtualization on are here. */
extern struct percpu *smp_cpus[SMP_MAX_CPUS];
extern unsigned smp_nr_cpus;

/* Finds the CPUs, starts the APs (at most opt->cpus CPUs in all, the boot
 * CPU included, when opt->cpus is not 0) and prints
 * "lightpath: N CPUs found (ACPI MADT), M started", one line for each CPU
 * that did not start, or one line saying why there is no MADT. Called once,
 * on the boot CPU, after hv_boot_cpu_init() and timer_init(). */
void smp_init(const struct boot_info *bi, const struct lp_options *opt);

/* Posts fn(arg) to an idle AP's mailbox and wakes it; false if the CPU is
 * not online or its mailbox is still full. */
typedef void smp_work_fn(void *arg);
bool smp_run_on(unsigned cpu, smp_work_fn *fn, void *arg);
/* Makes a CPU look at its vCPU now: the wake IPI, which makes a CPU in a
 * guest exit and one halted in lightpath wake up (the vCPU's kicked flag
 * says why: vmm/vcpu_run.h, vcpu_notify). */
void smp_kick(const struct percpu *pc);
/* Waits until the AP has taken and finished its work item, at most
 * timeout_us; false on timeout. */
bool smp_wait_done(unsigned cpu, uint64_t timeout_us);
/* Is this CPU running lightpath with nothing in its mailbox? (CPU 0, the
 * caller, always is.) */
bool smp_cpu_idle(unsigned cpu);
/* Did this CPU panic (and halt for good)? */
bool smp_cpu_parked(unsigned cpu);
/* An AP's panic, after its line (core/console.c panic): the CPU is marked
 * parked, lets the console lock go if it held it, stops the VM it ran
 * (hv_ap_panicked: one line, its other vCPUs end, the boot CPU goes on
 * with the next VMs) and halts for good. Its work item never ends, so no
 * VM is given this CPU again. */
void smp_ap_panicked(void) __attribute__((noreturn));

#endif
