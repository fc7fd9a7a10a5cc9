/* hello: the smallest guest, for boot, isolation and multi-VM tests.
 * Prints a greeting and its arguments; exits with status=N (default 0). */
#include "guests/rt/rt.h"

int guest_main(void)
{
	rt_printf("hello from lightpath guest\n");
	rt_printf("hello: args \"%s\"\n", rt_args());
	unsigned status = (unsigned)rt_arg_u64("status", 0);
	rt_printf("hello: exiting with status %u\n", status);
	return (int)status;
}
