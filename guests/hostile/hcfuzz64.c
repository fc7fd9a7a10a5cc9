/* hcfuzz64: a hostile guest of lightpath's hypercall interface
 * (include/lightpath/abi.h; docs/SECURITY.md, case 25).
 *
 * 1. 20000 hypercalls with random numbers (LP_HC_EXIT left out: it ends
 *    the VM) and random 64-bit arguments, interrupts on, a handler on every
 *    vector from 32 up: each returns 0, a count, or -EINVAL/-ENOSYS.
 *    Then the test timer re-armed for 1 us, its interrupt awaited.
 * 2. 600 LP_HC_RAISE_IRQs, each delivered once; the statistics hypercall
 *    still adds up.
 * 3. LP_HC_TIMER on a grid of vectors (0, 1, 2, 8, 14, 31, 32, 255, 256,
 *    257, 0x1ff, 2^32-1, 2^64-1) and delays (0, 1, 2, 9999999, 10^7,
 *    10^7+1, 2^31-1, 2^32-1, 2^64-1 us): exactly the vectors 32..255 with
 *    delays 1..10^7 are taken, each re-arming the one test timer. The last
 *    one taken (255, 10 s) is still armed when the VM ends.
 * Then it ends with status 0 while its 10 s test timer is armed: the VM
 * must end and be reported, and the next VM (resetcheck64) must run. Before
 * the test timer was re-armed in place, the grid left it in the VM's timer
 * list several times and lightpath hung at this VM's end. */
#include "guests/rt/rt.h"

static volatile unsigned irqs[256];
static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static void on_irq(struct rt_frame *f)
{
	irqs[f->vector & 0xff]++;
}

static unsigned irq_total(void)
{
	unsigned n = 0;
	for (unsigned v = 32; v < 256; v++)
		n += irqs[v];
	return n;
}

static bool is_err(sreg_t r)
{
	return r == -(sreg_t)LP_EINVAL || r == -(sreg_t)LP_ENOSYS;
}

static void timer_grid(void)
{
	static const uint64_t vecs[] = { 0, 1, 2, 8, 14, 31, 32, 255, 256, 257, 0x1ff,
					 0xffffffffull, ~0ull };
	static const uint64_t delays[] = { 0, 1, 2, 9999999, 10000000, 10000001, 0x7fffffff,
					   0xffffffffull, ~0ull };
	unsigned taken = 0, wrong = 0;
	for (unsigned i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		for (unsigned j = 0; j < sizeof(delays) / sizeof(delays[0]); j++) {
			uint64_t vec = vecs[i], us = delays[j];
			bool valid = vec >= 32 && vec <= 255 && us >= 1 && us <= 10000000;
			sreg_t r = lp_hypercall(LP_HC_TIMER, us, vec, 0, NULL, NULL);
			taken += r == 0;
			wrong += valid ? r != 0 : r != -(sreg_t)LP_EINVAL;
		}
	tap_eq(taken, 8, "LP_HC_TIMER grid: the 8 valid (vector, delay) pairs are taken");
	tap_eq(wrong, 0, "LP_HC_TIMER grid: every other pair returns -LP_EINVAL");
}

static void random_calls(void)
{
	unsigned odd = 0, calls = 0;
	sti();
	for (unsigned i = 0; i < 20000; i++) {
		uint64_t nr = next_rand();
		switch (next_rand() & 3) {   /* mostly small numbers, where the calls are */
		case 0: nr &= 7; break;
		case 1: nr &= 0xff; break;
		case 2: nr &= 0xffffffffull; break;
		default: break;
		}
		if (nr == LP_HC_EXIT)
			nr = LP_HC_NULL;
		uint64_t a = next_rand(), b = next_rand(), c = next_rand();
		if (next_rand() & 1) {   /* sometimes arguments a call would take */
			a &= 0x3ff;
			b &= 0xff;
		}
		sreg_t r = lp_hypercall(nr, a, b, c, NULL, NULL);
		calls++;
		/* 0, -EINVAL, -ENOSYS; STATS and CONFIG return counts and bits */
		if (r != 0 && !is_err(r) && nr != LP_HC_STATS && nr != LP_HC_CONFIG)
			odd++;
	}
	cli();   /* a raise the last calls queued may still wait for IF=1 */
	tap_eq(calls, 20000, "20000 random hypercalls (interrupts on) all return");
	tap_eq(odd, 0, "each returns 0, -LP_EINVAL or -LP_ENOSYS (a count for STATS/CONFIG)");
}

/* A random call may have left the one test timer armed for up to 10 s:
 * re-arm it for 1 us and wait for that interrupt, so none comes later.
 * A RAISE_IRQ still queued holds the vCPU's one slot when the timer
 * expires: before lightpath's timer waited for the slot, its interrupt was
 * dropped and this HLT never woke (9 runs in 14). */
static void drain_test_timer(void)
{
	unsigned before = irqs[254];
	tap_eq((uint64_t)lp_hypercall(LP_HC_TIMER, 1, 254, 0, NULL, NULL), 0,
	       "LP_HC_TIMER(1 us, 254) re-arms the test timer");
	while (irqs[254] == before)   /* a raise still queued may come first */
		asm volatile("sti; hlt; cli" ::: "memory");
	tap_eq(irqs[254] - before, 1, "its interrupt comes once");
}

static void raise_irqs(void)
{
	unsigned before = irq_total(), refused = 0;
	for (unsigned i = 0; i < 600; i++) {
		unsigned vec = 32 + i % 224;
		if (lp_hypercall(LP_HC_RAISE_IRQ, vec, 0, 0, NULL, NULL))
			refused++;
		sti();
		asm volatile("nop");   /* the STI shadow, then the interrupt */
		cli();
	}
	tap_eq(refused, 0, "600 LP_HC_RAISE_IRQs on vectors 32..255 are taken");
	tap_eq(irq_total() - before, 600, "and each is delivered once");
	ureg_t light = 0, heavy = 0;
	sreg_t n = lp_hypercall(LP_HC_STATS, LP_STATS_ALL, 0, 0, &light, &heavy);
	tap_ok(n > 0 && (uint64_t)n == light + heavy, (uint64_t)n, "light + heavy",
	       "LP_HC_STATS: exits = light + heavy after the storm");
}

int guest_main(void)
{
	tap_begin("hcfuzz64");
	for (unsigned v = 32; v < 256; v++)
		rt_set_handler(v, on_irq);
	random_calls();
	drain_test_timer();
	raise_irqs();
	timer_grid();   /* last: its (255, 10 s) is armed when the VM ends */
	rt_printf("hcfuzz64: ending with a 10 s test timer armed\n");
	return tap_end();
}
