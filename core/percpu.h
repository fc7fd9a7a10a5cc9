/* Per-CPU data, found from the stack pointer: each CPU's stack is
 * PERCPU_STACK_SIZE bytes, aligned to its size, with struct percpu at its
 * bottom. Nothing here depends on GS.base or anything else VMLOAD/VMSAVE
 * switch (seed 003): on a light exit the CPU still holds the guest's GS. */
#ifndef CORE_PERCPU_H
#define CORE_PERCPU_H

#include <stdint.h>

#define PERCPU_STACK_SIZE 16384   /* keep in step with boot/entry.S */

struct vcpu;

struct percpu {
	unsigned cpu_id;
	struct vcpu *current;     /* the vCPU this CPU is running, if any */
	unsigned guest_debug_events_dropped;   /* #DBs in lightpath from a guest's breakpoint
						  or single step (core/idt.c) */
};

static inline struct percpu *this_cpu(void)
{
	uint64_t rsp;
	asm("mov %%rsp, %0" : "=r"(rsp));
	return (struct percpu *)(uintptr_t)(rsp & ~(uint64_t)(PERCPU_STACK_SIZE - 1));
}

#endif
