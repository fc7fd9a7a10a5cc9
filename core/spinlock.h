/* A ticket spin lock for the host's shared state (the console, the
 * physical-memory allocator, a VM of several vCPUs, the network links):
 * held for short stretches only, and on a light exit path only in a VM of
 * one vCPU (the console's for its UART, a link's and a port's for its
 * virtio-net doorbell; docs/SMP.md, "Locks"). Fair: CPUs get the lock in
 * the order they asked for it, so a CPU that takes it again and again (a
 * VM printing line after line) cannot keep another waiting for more than
 * one stretch of each CPU ahead of it. All zero is unlocked. */
#ifndef CORE_SPINLOCK_H
#define CORE_SPINLOCK_H

#include <stdint.h>

struct spinlock {
	uint32_t next;      /* the ticket the next caller takes */
	uint32_t serving;   /* the ticket that holds the lock */
};

static inline void spin_lock(struct spinlock *l)
{
	uint32_t mine = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&l->serving, __ATOMIC_ACQUIRE) != mine)
		asm volatile("pause" ::: "memory");   /* core/smp.c says why PAUSE */
}

static inline void spin_unlock(struct spinlock *l)
{
	/* only the holder writes `serving` */
	__atomic_store_n(&l->serving, __atomic_load_n(&l->serving, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
}

#endif
