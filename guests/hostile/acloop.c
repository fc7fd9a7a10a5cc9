/* acloop: a hostile guest whose #AC delivery raises #AC again, forever
 * (the class of bug behind CVE-2015-5307). Alignment checks apply at CPL 3
 * only, to every data access there, the pushes of an exception delivery
 * included. So the #AC gate leads to a user-mode (DPL 3) code segment,
 * which keeps the delivery at CPL 3 on the current stack, and user code
 * runs with CR0.AM and RFLAGS.AC set on a misaligned stack: its first push
 * raises #AC, whose delivery pushes misaligned again, and so on. A CPU that
 * delivers #AC itself never gets out (no VM exit on hardware). Under
 * lightpath each #AC is a VM exit, so the VM's time limit ends it.
 *
 * User mode runs with IF=0, as a kernel could leave it: under Bochs 2.7 a
 * guest with IF=0 gets no external-interrupt exit (docs/VMX.md), so there
 * nothing but lightpath's #AC exits lets the host's timer in. It prints one
 * line, then never ends by itself; on a CPU without alignment checks (QEMU
 * 7.2) it says so and ends with status 2. */
#include "guests/hostile/ring3.h"

void acloop_user(void);
void acloop_handler(void);
asm(".text\n"
    ".globl acloop_user\n"
    "acloop_user:\n\t"
    "push %eax\n\t"           /* misaligned: #AC */
    "int $0x81\n"
    ".globl acloop_handler\n"
    "acloop_handler:\n\t"     /* never reached: the delivery faults first */
    "int $0x81\n");

static uint8_t user_stack[256] __attribute__((aligned(16)));

int guest_main(void)
{
	r3_init();
	/* #AC delivered at CPL 3: the gate's code segment is the user's */
	r3_set_gate(17, R3_CODE_SEL, acloop_handler, R3_GATE_INTR);
	r3_set_cr0_am(true);
	rt_printf("acloop: #AC at CPL 3 on a misaligned stack, delivered on it; never ends\n");
	r3_enter((uint32_t)(uintptr_t)acloop_user,
		 (uint32_t)(uintptr_t)(user_stack + sizeof(user_stack) - 2), 0x2 | R3_FLAGS_AC, 0);
	rt_printf("acloop: this CPU raised no #AC (it checks no alignment)\n");
	return 2;
}
