/* Speculative-execution hygiene on the exit path (spec=on|off), each piece
 * only where CPUID says the CPU needs or supports it (docs/SECURITY.md, 14):
 * - the return stack buffer is overwritten right after every VM exit, before
 *   the hypervisor's first RET, unless the CPU clears it itself (AMD's
 *   Automatic IBRS) or only needs the one-CALL sequence (Intel's enhanced
 *   IBRS on a CPU with the post-barrier RSB bug);
 * - IBPB between VMs, where the CPU has it;
 * - the guest's IA32_SPEC_CTRL lives in the vCPU and is in the CPU only
 *   while the guest runs, where the CPU has the MSR.
 * The exit stubs come in variants (vmm/entry_macros.h); spec_entry_variant
 * picks the one a VM uses, so spec=off (and a CPU that needs nothing) pays
 * nothing per exit. */
#ifndef VMM_SPEC_CTRL_H
#define VMM_SPEC_CTRL_H

#include <stdbool.h>
#include <stdint.h>

struct lp_options;
struct vm;

#define MSR_IA32_SPEC_CTRL   0x48u
#define MSR_IA32_PRED_CMD    0x49u
#define MSR_IA32_ARCH_CAPABILITIES 0x10au

/* What an exit needs done to the return stack buffer. */
enum spec_rsb { SPEC_RSB_NONE = 0, SPEC_RSB_LITE = 1, SPEC_RSB_FULL = 2 };

/* The exit stub variants: (rsb * 2 + switch SPEC_CTRL). */
#define SPEC_ENTRY_VARIANTS 6

struct spec_caps {
	enum spec_rsb rsb;        /* what spec=on does after every exit */
	bool ibpb;                /* IA32_PRED_CMD.IBPB */
	bool spec_ctrl;           /* IA32_SPEC_CTRL */
	uint64_t spec_ctrl_valid; /* its bits this CPU has (IBRS, STIBP, SSBD) */
};

/* IA32_SPEC_CTRL bits */
#define SPEC_CTRL_IBRS  (1ull << 0)
#define SPEC_CTRL_STIBP (1ull << 1)
#define SPEC_CTRL_SSBD  (1ull << 2)

/* The CPUID bits that say what the CPU has */
#define SPEC_LEAF7_IBRS_IBPB (1u << 26)   /* Intel CPUID.7.0:EDX: SPEC_CTRL and PRED_CMD */
#define SPEC_LEAF7_STIBP     (1u << 27)
#define SPEC_LEAF7_ARCH_CAP  (1u << 29)   /* IA32_ARCH_CAPABILITIES */
#define SPEC_LEAF7_SSBD      (1u << 31)
#define SPEC_EXT8_IBPB       (1u << 12)   /* AMD CPUID 0x80000008 EBX */
#define SPEC_EXT8_IBRS       (1u << 14)
#define SPEC_EXT8_STIBP      (1u << 15)
#define SPEC_EXT8_SSBD       (1u << 24)
#define SPEC_EXT21_AUTO_IBRS (1u << 8)    /* AMD CPUID 0x80000021 EAX */
#define SPEC_EFER_AIBRSE     (1ull << 21) /* EFER: Automatic IBRS enable */

/* What the CPU reports, and what spec=on then does. */
struct spec_cpu {
	bool intel;
	uint32_t leaf7_edx;          /* Intel */
	uint64_t arch_capabilities;  /* Intel, when CPUID says the MSR exists */
	uint32_t ext8_ebx, ext21_eax; /* AMD and others */
};

struct spec_plan {
	struct spec_caps caps;
	uint64_t host_spec_ctrl;     /* IA32_SPEC_CTRL while the hypervisor runs */
	bool enable_auto_ibrs;       /* set EFER.AIBRSE */
	const char *rsb_why;         /* for the boot line */
};

/* A pure function of the CPU's answers (vmm/spec_policy.c). */
struct spec_plan spec_plan(const struct spec_cpu *c, bool spec);

extern struct spec_caps spec_caps;
/* IA32_SPEC_CTRL while the hypervisor runs (read by the exit stubs). */
extern uint64_t host_spec_ctrl;

/* Reads the CPU's speculation controls and, with spec=on, turns on what the
 * host itself uses (AMD Automatic IBRS, Intel enhanced IBRS); prints one line
 * saying what the exit path does. Call after the vendor's CPU setup. */
void spec_init(const struct lp_options *o);
/* The exit stub variant for VMs run with these options. */
/* An AP's share of spec_init (core/smp.c): the host's IA32_SPEC_CTRL.
 * (EFER's automatic IBRS comes with the boot CPU's EFER.) */
void spec_init_ap(const struct lp_options *o);
unsigned spec_entry_variant(const struct lp_options *o);
/* Between two VMs: a barrier so that one cannot steer the next one's
 * indirect branches (spec=on, where the CPU has IBPB). */
void spec_vm_switch(const struct lp_options *o);
/* IA32_SPEC_CTRL and IA32_PRED_CMD for the guest, where the CPU has them. */
void spec_register_msrs(struct vm *vm);

#endif
