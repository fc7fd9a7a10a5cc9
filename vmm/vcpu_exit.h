/* The vendor-neutral exit core (docs/EXITS.md), written once for both
 * backends: the light handlers (vmm/exit_light.c), the heavy handlers and
 * the interrupt decisions (vmm/exit_heavy.c). A backend decodes its exit
 * information through the hooks of vmm/vendor.h and lists its exits in
 * one table, whose rows say what each exit means (vmm/exit_table.h). */
#ifndef VMM_VCPU_EXIT_H
#define VMM_VCPU_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/exit_table.h"
#include "vmm/light.h"
#include "vmm/vm.h"

struct vcpu;
struct lp_options;

/* The row of each exit code below the light table's shared last slot (0:
 * not in the table; filled by exit_table_init), and the lookup of the codes
 * past it (vmm/exit_light.c). */
extern const struct exit_row *exit_row_index[VENDOR_EXIT_CODES - 1];
const struct exit_row *exit_row_past_table(uint64_t code);

/* The row for an exit code, or 0 when it is not in the table. */
static inline const struct exit_row *exit_row_of(uint64_t code)
{
	if (code < VENDOR_EXIT_CODES - 1)
		return exit_row_index[code];
	return exit_row_past_table(code);
}

/* The light handler of switch set `sw` for exit-table row r (0: none) as
 * this vCPU's VM takes it (several vCPUs: fewer light kinds); in
 * vmm/exit_setup.c, which chooses each vCPU's handlers, for
 * exit_cost_light too, which looks it up at every exit. */
light_handler_fn *exit_light_handler_real(const struct vcpu *v, unsigned sw,
					   const struct exit_row *r);

/* An instruction lightpath skips for the guest: its plain encoding, for the
 * next-RIP check when the CPU does not report the length (SVM without NRIP),
 * and the opcode the decoder looks for behind prefixes. */
struct insn_pattern {
	uint8_t len;
	uint8_t op[3];
};
#define INSN_PATTERN static const struct insn_pattern __attribute__((unused))
INSN_PATTERN insn_cpuid = { 2, { 0x0f, 0xa2 } };
INSN_PATTERN insn_hlt = { 1, { 0xf4 } };
INSN_PATTERN insn_invd = { 2, { 0x0f, 0x08 } };
INSN_PATTERN insn_xsetbv = { 3, { 0x0f, 0x01, 0xd1 } };
INSN_PATTERN insn_wbinvd = { 2, { 0x0f, 0x09 } };   /* WBNOINVD: f3 0f 09 */
INSN_PATTERN insn_rdpmc = { 2, { 0x0f, 0x33 } };
INSN_PATTERN insn_rdtsc = { 2, { 0x0f, 0x31 } };
INSN_PATTERN insn_rdtscp = { 3, { 0x0f, 0x01, 0xf9 } };
/* (the backend's hypercall instruction is insn_hypercall, in its arch_exit.h) */

/* RDMSR 0f 32, WRMSR 0f 30: a value, so that the light path's choice
 * between them folds into constants. */
static inline struct insn_pattern insn_msr(bool is_write)
{
	return (struct insn_pattern){ 2, { 0x0f, is_write ? 0x30 : 0x32, 0 } };
}

/* The pattern's bytes as the little-endian word at RIP shows them, and the
 * mask of the bytes that count. */
static inline uint32_t insn_pattern_bytes(struct insn_pattern p)
{
	return p.op[0] | (uint32_t)p.op[1] << 8 | (uint32_t)p.op[2] << 16;
}

static inline uint32_t insn_pattern_mask(struct insn_pattern p)
{
	return (1u << (8 * p.len)) - 1;
}

struct npf_info;
/* An access to guest-physical f->gpa that was not RAM (a nested-paging
 * fault, VT-x's APIC-access exit): emulated as MMIO, or the VM stopped. */
void heavy_mmio_fault(struct vcpu *v, const struct npf_info *f);

/* The heavy path after the light loop: handles the exit that left it (if
 * any), then injects what is pending. */
void exit_heavy(struct vcpu *v);
/* Loads what the heavy path took away / saves the guest's and restores the
 * host's, per switch (the "lazy" halves; the "always" halves run per exit). */
void vcpu_state_enter(struct vcpu *v);
void vcpu_state_leave(struct vcpu *v);

/* Interrupt delivery: injects a waiting NMI, and the platform's next vector,
 * when the guest can take them, or asks for an exit when it can (NMI and
 * interrupt windows). An interrupt injected with RIP at a HLT completes the
 * HLT (exit_heavy.c, inject_completes_hlt). Its callers enter the guest
 * next, after vm_timer_lead_wait (a timer fired ahead of its deadline is
 * not seen by the guest before the deadline). */
void exit_inject_interrupts(struct vcpu *v);
/* Queues the test facility's vector (LP_HC_RAISE_IRQ, LP_HC_TIMER); returns
 * negative if one is still queued. */
int exit_raise_test_irq(struct vcpu *v, uint8_t vector);

#endif
