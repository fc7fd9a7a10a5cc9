/* A test-and-test-and-set spin lock for the host's shared state (the
 * console, the physical-memory allocator): held for short stretches only,
 * never on a light exit path. */
#ifndef CORE_SPINLOCK_H
#define CORE_SPINLOCK_H

#include <stdbool.h>

struct spinlock {
	volatile bool held;
};

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->held, true, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->held, __ATOMIC_RELAXED))
			asm volatile("pause" ::: "memory");
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->held, false, __ATOMIC_RELEASE);
}

#endif
