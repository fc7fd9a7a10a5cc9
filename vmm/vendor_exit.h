/* Vendor hooks, exit-information decode: what the CPU reports about the
 * exit that left the guest (its code, the instruction's length, the port,
 * the MSR access, the faulting address). What an exit means is in
 * vmm/exit_table.h; the other hook headers and the umbrella are in
 * vmm/vendor.h. */
#ifndef VMM_VENDOR_EXIT_H
#define VMM_VENDOR_EXIT_H

#include <stdbool.h>
#include <stdint.h>

struct vcpu;
struct insn_pattern;   /* vmm/vcpu_exit.h */

/* What a nested page fault / EPT violation reports. */
struct npf_info {
	uint64_t gpa;
	bool final_access;       /* the access itself, not the guest's page walk */
	bool fetch;              /* an instruction fetch */
	bool in_event_delivery;  /* while the CPU was delivering an event */
};

/* The next RIP after the instruction `p` at RIP, prefixes included, or 0
 * (the VM is stopped) when the bytes there are not that instruction. Out of
 * line (vmm/svm/exits.c, vmm/vmx/exits.c), on the heavy path. */
uint64_t vendor_next_rip_slow(struct vcpu *v, struct insn_pattern p);

/* ---- inline, in the backend's arch_exit.h (through vmm/vendor.h) ----
 *
 *   uint64_t vendor_exit_code(v)    what the exit table is indexed by (SVM:
 *                                   EXITCODE, low 32 bits; VT-x: the basic
 *                                   exit reason)
 *   bool vendor_heavy_begin(v)      first thing on the heavy path for an exit
 *                                   left unhandled: re-injects an event whose
 *                                   delivery the exit interrupted; false (the
 *                                   VM stopped with one line) for a failed
 *                                   VM entry
 *   bool vendor_next_rip(v, struct insn_pattern p, sw, uint64_t *next)
 *       next RIP on the light path; false when it cannot tell cheaply
 *   void vendor_skip_insn(v, uint64_t next)
 *       RIP past that instruction, at the end of the handler (VT-x reads
 *       the length from the VMCS only here)
 *   void vendor_exit_io(v, struct io_intercept *io)     all but next_rip
 *   uint64_t vendor_exit_io_next_rip(v)
 *   bool vendor_exit_msr_write(v)
 *   void vendor_exit_npf(v, struct npf_info *f)
 *   uint64_t vendor_exit_npf_gpa(v)                 f->gpa alone
 *   bool vendor_exit_in_event_delivery(v)
 * Constants:
 *   VENDOR_HYPERCALL_INSN       the hypercall instruction's struct insn_pattern
 *   VENDOR_TRIPLE_FAULT_EXIT    how the backend names that exit
 */

#endif
