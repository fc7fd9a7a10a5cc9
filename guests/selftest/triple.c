/* triple: triple-faults on purpose. With an empty IDT, INT3 cannot be
 * delivered (#GP), nor can the #GP or the #DF that follow: shutdown.
 * lightpath must stop this VM only and report it. Never returns. */
#include "guests/rt/rt.h"

int guest_main(void)
{
	rt_printf("triple: about to triple fault\n");
	struct {
		uint16_t limit;
		ureg_t base;
	} __attribute__((packed)) empty = { 0, 0 };
	asm volatile("lidt %0\n\tint3" : : "m"(empty) : "memory");
	rt_printf("triple: still running after the triple fault\n");
	return 1;
}
