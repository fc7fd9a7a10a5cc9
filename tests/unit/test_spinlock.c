/* core/spinlock.h's ticket lock on host threads: mutual exclusion, and
 * fairness: waiters get the lock in the order they asked for it, so a
 * holder that unlocks and locks again (a VM printing line after line)
 * goes behind every CPU already waiting. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/spinlock.h"

#define THREADS 4
#define ROUNDS  20000

static struct spinlock lock;
static volatile unsigned long counter;

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		spin_lock(&lock);
		unsigned long c = counter;   /* a lost update shows a second holder */
		counter = c + 1;
		spin_unlock(&lock);
	}
	return NULL;
}

static void test_mutual_exclusion(void **state)
{
	(void)state;
	pthread_t t[THREADS];
	lock = (struct spinlock){ 0, 0 };
	counter = 0;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(counter, (unsigned long)THREADS * ROUNDS);
	assert_int_equal(lock.next, lock.serving);   /* unlocked, every ticket served */
}

/* Who held the lock, in order. */
static char order[8];
static volatile unsigned nr_order;

static void *waiter(void *arg)
{
	spin_lock(&lock);
	order[nr_order++] = *(const char *)arg;
	spin_unlock(&lock);
	return NULL;
}

/* Waits until `tickets` tickets have been taken: the thread just started
 * is queued (an event, not a delay). */
static void wait_tickets(uint32_t tickets)
{
	while (__atomic_load_n(&lock.next, __ATOMIC_ACQUIRE) != tickets)
		sched_yield();
}

static void test_fifo(void **state)
{
	(void)state;
	static const char b = 'B', c = 'C';
	pthread_t tb, tc;
	lock = (struct spinlock){ 0, 0 };
	nr_order = 0;
	spin_lock(&lock);               /* "A", the chatty holder */
	order[nr_order++] = 'A';
	assert_int_equal(pthread_create(&tb, NULL, waiter, (void *)&b), 0);
	wait_tickets(2);
	assert_int_equal(pthread_create(&tc, NULL, waiter, (void *)&c), 0);
	wait_tickets(3);
	spin_unlock(&lock);
	spin_lock(&lock);               /* at once again: behind B and C */
	order[nr_order++] = 'A';
	spin_unlock(&lock);
	pthread_join(tb, NULL);
	pthread_join(tc, NULL);
	assert_int_equal(nr_order, 4);
	assert_memory_equal(order, "ABCA", 4);
}

/* The tickets wrap around 2^32 without a hitch. */
static void test_wrap(void **state)
{
	(void)state;
	lock = (struct spinlock){ UINT32_MAX - 2, UINT32_MAX - 2 };
	for (int i = 0; i < 6; i++) {
		spin_lock(&lock);
		assert_int_equal(lock.next, lock.serving + 1);
		spin_unlock(&lock);
	}
	assert_int_equal(lock.serving, 3);
	assert_int_equal(lock.next, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutual_exclusion),
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_wrap),
	};
	return cmocka_run_group_tests_name("spinlock", tests, NULL, NULL);
}
