/* Hooks every vendor backend implements once (vmm/svm/, later vmm/vmx/);
 * the choice is made at link time, not through function pointers. */
#ifndef VMM_VENDOR_H
#define VMM_VENDOR_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct vm;
struct lp_options;

/* Checks the CPU and enables virtualization; prints one clear line and
 * returns negative when it cannot. */
int vendor_cpu_init(const struct lp_options *opt);
/* The backend's name for the banner: "AMD SVM" or "Intel VT-x". */
const char *vendor_name(void);
int vendor_vm_init(struct vm *vm);
void vendor_vm_destroy(struct vm *vm);
/* Multiboot start state: 32-bit protected mode, paging off, flat segments. */
void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx);
struct linux_boot_state;
/* Linux 64-bit boot protocol start state (long mode, paging on). */
void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st);
/* Loads what the heavy path took away (VMLOAD state, DRs, PMU MSRs). */
void vendor_state_enter(struct vcpu *v);
/* Runs the guest in the light loop until an exit needs the heavy path. */
void vendor_enter_guest(struct vcpu *v);
/* Saves guest state and restores the host's before heavy handling. */
void vendor_state_leave(struct vcpu *v);
/* Handles the exit that left the light loop (VM end, emulation, faults). */
void vendor_handle_heavy(struct vcpu *v);
/* Takes pending host interrupts (the timer) from the heavy path. */
void vendor_host_interrupt_window(void);
/* Sleeps until a host interrupt has been taken. */
void vendor_host_wait_for_interrupt(void);
/* One short phrase on the vCPU's interrupt state, for debugging dumps. */
const char *vendor_interrupt_state(struct vcpu *v);
/* Describes where the guest is, for reports ("rip 0x..."). */
uint64_t vendor_guest_rip(struct vcpu *v);

#endif

/* Guest MSRs whose home is vendor state (EFER, PAT, the syscall and
 * SYSENTER MSRs): read or write them wherever they currently live. */
int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write);
/* Queues a virtual interrupt; returns negative if one is already queued. */
int vendor_inject_virq(struct vcpu *v, uint8_t vector);
