/* stats: lightpath's exit statistics hypercall. Counts grow with the exits
 * made, light + heavy always equals exits, bad arguments are refused, and
 * LP_HC_NULL_HEAVY counts exactly one heavy hypercall exit per call. */
#include "guests/rt/rt.h"

#define N_NULL  50
#define N_HEAVY 10

struct counts {
	sreg_t ret;
	uint64_t exits, light, heavy;
};

static struct counts stats(ureg_t reason)
{
	ureg_t b = 0, c = 0;
	struct counts s;
	s.ret = lp_hypercall(LP_HC_STATS, reason, 0, 0, &b, &c);
	/* A failed call counts as zero so later checks show zeros, not junk. */
	s.exits = s.ret < 0 ? 0 : (ureg_t)s.ret;
	s.light = s.ret < 0 ? 0 : b;
	s.heavy = s.ret < 0 ? 0 : c;
	return s;
}

int guest_main(void)
{
	tap_begin("stats");
	sreg_t cfg = lp_hypercall(LP_HC_CONFIG, 0, 0, 0, NULL, NULL);
	bool light_on = cfg >= 0 && (cfg & LP_CONFIG_LIGHT);

	struct counts before = stats(LP_EXIT_HYPERCALL);
	tap_ok(before.ret >= 0, (uint64_t)before.ret, ">= 0",
	       "LP_HC_STATS(LP_EXIT_HYPERCALL) succeeds");
	unsigned bad = 0;
	for (int i = 0; i < N_NULL; i++)
		if (lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL) != 0)
			bad++;
	struct counts after = stats(LP_EXIT_HYPERCALL);
	tap_eq(bad, 0, "%d LP_HC_NULL calls all return 0", N_NULL);
	tap_ge(after.exits - before.exits, N_NULL,
	       "hypercall exits grew by at least %d", N_NULL);
	tap_eq(after.light + after.heavy, after.exits,
	       "hypercall light + heavy == exits");
	if (light_on)
		tap_ge(after.light - before.light, N_NULL,
		       "with light=on the %d null hypercalls were light exits", N_NULL);

	/* Per-reason counts first, then the total: the total can only be
	 * larger by the time it is read. */
	uint64_t sum = 0, max = 0;
	bool each_ok = true;
	for (ureg_t r = 0; r < LP_EXIT_COUNT; r++) {
		struct counts s = stats(r);
		if (s.ret < 0 || s.light + s.heavy != s.exits)
			each_ok = false;
		sum += s.exits;
		if (s.exits > max)
			max = s.exits;
	}
	struct counts all = stats(LP_STATS_ALL);
	tap_ok(each_ok, 0, "success and light + heavy == exits",
	       "every LP_EXIT_* reason: success and light + heavy == exits");
	tap_ok(all.ret >= 0, (uint64_t)all.ret, ">= 0", "LP_HC_STATS(LP_STATS_ALL) succeeds");
	tap_eq(all.light + all.heavy, all.exits, "LP_STATS_ALL: light + heavy == exits");
	tap_ge(all.exits, max, "LP_STATS_ALL exits >= the largest per-reason count");
	tap_ge(all.exits, sum, "LP_STATS_ALL exits >= the sum of per-reason counts read before");

	tap_eq((uint64_t)stats(999).ret, (uint64_t)(sreg_t)-LP_EINVAL,
	       "LP_HC_STATS with unknown reason 999 returns -LP_EINVAL");
	tap_eq((uint64_t)lp_hypercall(0x777, 0, 0, 0, NULL, NULL), (uint64_t)(sreg_t)-LP_ENOSYS,
	       "unknown hypercall 0x777 returns -LP_ENOSYS");

	/* How much a pair of STATS calls itself adds to the heavy count (0 when
	 * STATS is light, 1 with light=off), so the heavy check is exact in
	 * every configuration. */
	struct counts h0 = stats(LP_EXIT_HYPERCALL);
	struct counts h1 = stats(LP_EXIT_HYPERCALL);
	uint64_t base = h1.heavy - h0.heavy, base_light = h1.light - h0.light;
	sreg_t r1 = lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL);
	struct counts h2 = stats(LP_EXIT_HYPERCALL);
	tap_eq((uint64_t)r1, 0, "LP_HC_NULL_HEAVY returns 0");
	tap_eq(h2.heavy - h1.heavy, 1 + base,
	       "one LP_HC_NULL_HEAVY adds exactly 1 heavy hypercall exit (+%llu for STATS)",
	       (unsigned long long)base);
	bad = 0;
	for (int i = 0; i < N_HEAVY; i++)
		if (lp_hypercall(LP_HC_NULL_HEAVY, 0, 0, 0, NULL, NULL) != 0)
			bad++;
	struct counts h3 = stats(LP_EXIT_HYPERCALL);
	tap_eq(bad, 0, "%d more LP_HC_NULL_HEAVY calls return 0", N_HEAVY);
	tap_eq(h3.heavy - h2.heavy, N_HEAVY + base,
	       "%d LP_HC_NULL_HEAVY add exactly %d heavy hypercall exits (+%llu for STATS)",
	       N_HEAVY, N_HEAVY, (unsigned long long)base);
	if (light_on)
		tap_eq(h3.light - h2.light, base_light,
		       "LP_HC_NULL_HEAVY calls are not counted as light (+%llu for STATS)",
		       (unsigned long long)base_light);
	return tap_end();
}
