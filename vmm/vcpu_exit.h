/* The vendor-neutral exit core (docs/EXITS.md): what every exit means,
 * written once for both backends. A backend decodes its exit information
 * through the hooks of vmm/vendor.h and lists its exits in one table; the
 * light handlers (vmm/exit_light.c), the heavy handlers and the interrupt
 * decisions (vmm/exit_heavy.c) are shared. */
#ifndef VMM_VCPU_EXIT_H
#define VMM_VCPU_EXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/light.h"
#include "vmm/vm.h"

struct vcpu;
struct lp_options;

/* One row of a backend's exit table: every exit it intercepts, with the
 * statistics class, the light handler and the heavy handler. Adding an exit
 * is adding a row. */
struct exit_row {
	uint32_t first, last;          /* exit codes (SVM) / basic reasons (VMX) */
	uint8_t stat;                  /* LP_EXIT_* statistics class */
	uint8_t light;                 /* enum light_kind */
	void (*heavy)(struct vcpu *v); /* on the heavy path */
};

/* Rows for the exits both backends have: what such an exit means (its
 * statistics class, light and heavy handlers) is said once, here, and a
 * backend's table names only its codes. */
#define EXIT_ROW(first, last, stat, light, heavy) { first, last, stat, light, heavy }
#define EXIT_HYPERCALL(code) EXIT_ROW(code, code, LP_EXIT_HYPERCALL, LIGHT_HYPERCALL, heavy_hypercall)
#define EXIT_CPUID(code) EXIT_ROW(code, code, LP_EXIT_CPUID, LIGHT_CPUID, heavy_cpuid)
#define EXIT_IO(code) EXIT_ROW(code, code, LP_EXIT_IO, LIGHT_IO, heavy_io)
/* RDMSR and WRMSR in one exit (the light handler counts them apart) */
#define EXIT_MSR(code) EXIT_ROW(code, code, LP_EXIT_MSR_READ, LIGHT_MSR, heavy_msr)
#define EXIT_RDMSR(code) EXIT_ROW(code, code, LP_EXIT_MSR_READ, LIGHT_RDMSR, heavy_msr)
#define EXIT_WRMSR(code) EXIT_ROW(code, code, LP_EXIT_MSR_WRITE, LIGHT_WRMSR, heavy_msr)
#define EXIT_HLT(code) EXIT_ROW(code, code, LP_EXIT_HLT, LIGHT_HLT, heavy_hlt)
#define EXIT_HOST_INTR(code) EXIT_ROW(code, code, LP_EXIT_INTR, LIGHT_HOST_INTR, heavy_host_intr)
/* A physical NMI while the guest ran (SVM's NMI intercept): the host's */
#define EXIT_HOST_NMI(code) EXIT_ROW(code, code, LP_EXIT_INTR, LIGHT_NONE, heavy_host_nmi)
#define EXIT_INTR_WINDOW(code) \
	EXIT_ROW(code, code, LP_EXIT_VINTR, LIGHT_INTR_WINDOW, heavy_intr_window)
#define EXIT_NMI_WINDOW(code) EXIT_ROW(code, code, LP_EXIT_VINTR, LIGHT_NONE, heavy_nmi_window)
#define EXIT_NESTED_FAULT(code) EXIT_ROW(code, code, LP_EXIT_NPF, LIGHT_NPF, heavy_npf)
#define EXIT_INVD(code) EXIT_ROW(code, code, LP_EXIT_OTHER, LIGHT_NONE, heavy_invd)
#define EXIT_TRIPLE_FAULT(code) EXIT_ROW(code, code, LP_EXIT_SHUTDOWN, LIGHT_NONE, heavy_triple_fault)
/* XSETBV: checked like the CPU checks it, then loaded (rare: heavy) */
#define EXIT_XSETBV(code) EXIT_ROW(code, code, LP_EXIT_OTHER, LIGHT_NONE, heavy_xsetbv)
#define EXIT_DR_ACCESS(first, last) \
	EXIT_ROW(first, last, LP_EXIT_DR_ACCESS, LIGHT_NONE, heavy_dr_first_use)
/* SVM/VMX instructions: no nested virtualization */
#define EXIT_VIRT_INSN(first, last) \
	EXIT_ROW(first, last, LP_EXIT_VIRT_INSN, LIGHT_NONE, heavy_undefined_opcode)
/* Instructions that reach the physical CPU unless intercepted
 * (docs/SECURITY.md, "What a guest can execute"): those CPUID does not
 * offer the guest (MONITOR/MWAIT, RDPRU) are #UD, WBINVD is a no-op, RDPMC
 * reads the VM's counters, which never count (vmm/exit_msr.c). */
#define EXIT_NOT_OFFERED(first, last) \
	EXIT_ROW(first, last, LP_EXIT_OTHER, LIGHT_NONE, heavy_undefined_opcode)
#define EXIT_WBINVD(code) EXIT_ROW(code, code, LP_EXIT_OTHER, LIGHT_NONE, heavy_wbinvd)
#define EXIT_RDPMC(code) EXIT_ROW(code, code, LP_EXIT_OTHER, LIGHT_NONE, heavy_rdpmc)
/* RDTSC/RDTSCP exit only while the guest polls its clocks (vmm/guest_clock.h) */
#define EXIT_RDTSC(code) EXIT_ROW(code, code, LP_EXIT_RDTSC, LIGHT_RDTSC, heavy_rdtsc)
#define EXIT_RDTSCP(code) EXIT_ROW(code, code, LP_EXIT_RDTSC, LIGHT_RDTSCP, heavy_rdtscp)

/* The backend's table (vmm/svm/exits.c, vmm/vmx/exits.c). */
extern const struct exit_row vendor_exit_table[];
extern const unsigned vendor_exit_table_rows;

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
 * vmm/exit_light.c, with the handlers' table, for exit_cost_light, which
 * looks it up at every exit. */
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

/* The heavy handlers rows name (vmm/exit_heavy.c). Each handles its exit
 * from scratch, on the heavy path. */
void heavy_hypercall(struct vcpu *v);
void heavy_cpuid(struct vcpu *v);
void heavy_msr(struct vcpu *v);
void heavy_io(struct vcpu *v);
void heavy_hlt(struct vcpu *v);
void heavy_host_intr(struct vcpu *v);
void heavy_host_nmi(struct vcpu *v);
void heavy_intr_window(struct vcpu *v);
void heavy_nmi_window(struct vcpu *v);
void heavy_npf(struct vcpu *v);
struct npf_info;
/* An access to guest-physical f->gpa that was not RAM (a nested-paging
 * fault, VT-x's APIC-access exit): emulated as MMIO, or the VM stopped. */
void heavy_mmio_fault(struct vcpu *v, const struct npf_info *f);
void heavy_invd(struct vcpu *v);
void heavy_xsetbv(struct vcpu *v);
void heavy_wbinvd(struct vcpu *v);
void heavy_rdpmc(struct vcpu *v);
void heavy_rdtsc(struct vcpu *v);    /* vmm/guest_clock.c */
void heavy_rdtscp(struct vcpu *v);
void heavy_dr_first_use(struct vcpu *v);
void heavy_undefined_opcode(struct vcpu *v);
void heavy_triple_fault(struct vcpu *v);

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
