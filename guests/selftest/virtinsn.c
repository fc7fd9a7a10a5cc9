/* virtinsn: the virtualization instructions are not offered to guests (no
 * nested virtualization): each must raise #UD in the guest, and the guest
 * goes on. The SVM ones everywhere (an Intel CPU raises #UD itself); on
 * Intel also the VMX ones, which exit to lightpath from VMX non-root
 * operation and must come back as #UD. Memory operands point at 0 (EAX). */
#include "guests/rt/rt.h"

#define VEC_UD 6u

/* Runs one instruction (as .byte text) with EAX/ECX safe operands and
 * returns the vector it raised, or ~0u if it did not fault. */
#define RUN_UD(bytes)                                                    \
	({                                                               \
		ureg_t a_ = 0, c_ = 0;                                   \
		rt_trap_clear();                                         \
		asm volatile(RT_ARM_RESUME bytes "\n1:"                  \
			     : "+a"(a_), "+c"(c_) : : "memory");         \
		rt_resume = 0;                                           \
		rt_trap.count ? rt_trap.vector : ~0u;                    \
	})

int guest_main(void)
{
	tap_begin("virtinsn");
	unsigned v;

	v = RUN_UD(".byte 0x0f, 0x01, 0xd8");
	tap_eq(v, VEC_UD, "VMRUN (0f 01 d8) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xda");
	tap_eq(v, VEC_UD, "VMLOAD (0f 01 da) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xdb");
	tap_eq(v, VEC_UD, "VMSAVE (0f 01 db) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xdc");
	tap_eq(v, VEC_UD, "STGI (0f 01 dc) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xdd");
	tap_eq(v, VEC_UD, "CLGI (0f 01 dd) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xde");
	tap_eq(v, VEC_UD, "SKINIT (0f 01 de) raises #UD");
	v = RUN_UD(".byte 0x0f, 0x01, 0xdf");
	tap_eq(v, VEC_UD, "INVLPGA (0f 01 df) raises #UD");

	if (rt_intel) {
		v = RUN_UD(".byte 0xf3, 0x0f, 0xc7, 0x30");
		tap_eq(v, VEC_UD, "VMXON (f3 0f c7 /6) raises #UD");
		v = RUN_UD(".byte 0x66, 0x0f, 0xc7, 0x30");
		tap_eq(v, VEC_UD, "VMCLEAR (66 0f c7 /6) raises #UD");
		v = RUN_UD(".byte 0x0f, 0xc7, 0x30");
		tap_eq(v, VEC_UD, "VMPTRLD (0f c7 /6) raises #UD");
		v = RUN_UD(".byte 0x0f, 0xc7, 0x38");
		tap_eq(v, VEC_UD, "VMPTRST (0f c7 /7) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x78, 0xc8");
		tap_eq(v, VEC_UD, "VMREAD (0f 78) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x79, 0xc1");
		tap_eq(v, VEC_UD, "VMWRITE (0f 79) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x01, 0xc2");
		tap_eq(v, VEC_UD, "VMLAUNCH (0f 01 c2) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x01, 0xc3");
		tap_eq(v, VEC_UD, "VMRESUME (0f 01 c3) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x01, 0xc4");
		tap_eq(v, VEC_UD, "VMXOFF (0f 01 c4) raises #UD");
		v = RUN_UD(".byte 0x66, 0x0f, 0x38, 0x80, 0x08");
		tap_eq(v, VEC_UD, "INVEPT (66 0f 38 80) raises #UD");
		v = RUN_UD(".byte 0x66, 0x0f, 0x38, 0x81, 0x08");
		tap_eq(v, VEC_UD, "INVVPID (66 0f 38 81) raises #UD");
		v = RUN_UD(".byte 0x0f, 0x01, 0xd4");
		tap_eq(v, VEC_UD, "VMFUNC (0f 01 d4) raises #UD");
	}

	/* The guest is still sane afterwards: a hypercall works. */
	tap_eq((uint64_t)lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL), 0,
	       "LP_HC_NULL still returns 0 afterwards");
	return tap_end();
}
