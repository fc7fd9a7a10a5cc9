/* Device model: a device registers a range of ports (or, later, MMIO) with
 * one callback shape. A callback returns IO_OK to resume the guest, IO_VM_END
 * when it ended the VM, or a negative error. `light` says the callback may run
 * on the light exit path: it needs no state the heavy path restores, and what
 * it does to interrupts reaches the vCPU through vm_irq_line (or the
 * platform's wrappers), which the end of every exit checks. The light path
 * hands accesses to other devices to the heavy path. */
#ifndef DEV_DEVICE_H
#define DEV_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct vm;

enum io_result {
	IO_OK = 0,
	IO_VM_END = 1,
	IO_NOT_LIGHT = 2,   /* never from a device: the light path must hand the
			       access to the heavy path (io_range.light is false) */
};

/* data: for a write, the value written (low `size` bytes); for a read, the
 * callback stores the value read. size is 1, 2 or 4 for ports. */
typedef int (*io_handler_fn)(struct vcpu *vcpu, uint64_t addr, uint64_t *data,
			     unsigned size, bool is_write, void *opaque);

struct io_range {
	uint64_t base;
	uint64_t len;
	io_handler_fn fn;
	void *opaque;
	bool light;
	const char *name;
};

/* Services a device may call; the hypervisor implements them in vmm/, the host
 * unit tests provide their own. */
void vm_console_putc(struct vm *vm, char c);          /* guest serial output */
void vm_end(struct vm *vm, unsigned status, const char *why); /* stop this VM */
#if __STDC_HOSTED__
uint64_t platform_tsc(void);                            /* host TSC now */
#else
/* In the hypervisor it is one instruction: keep it inline on the light path. */
static inline uint64_t platform_tsc(void)
{
	uint32_t lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#endif
uint64_t platform_tsc_hz(void);                         /* host TSC frequency */

/* Interrupt lines: a device raises or lowers GSI `gsi` (0-23, as on the I/O
 * APIC; the interrupt model applies the ISA overrides). */
void vm_irq_line(struct vm *vm, unsigned gsi, bool level);

/* Timers: the hypervisor calls fire() at or after deadline_tsc (from its
 * exit path, never from interrupt context). Ending a VM cancels its timers,
 * and arming one for a VM that has ended does nothing. */
struct vm_timer {
	uint64_t deadline_tsc;
	void (*fire)(struct vm_timer *t, uint64_t now_tsc);
	void *opaque;
	bool armed;
};
void vm_timer_arm(struct vm *vm, struct vm_timer *t, uint64_t deadline_tsc);
void vm_timer_cancel(struct vm *vm, struct vm_timer *t);

#endif
