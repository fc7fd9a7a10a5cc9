/* What an exit means, for both backends: a backend's exit table has one row
 * per exit it intercepts, naming the statistics class, the light kind and
 * the heavy handler (docs/EXITS.md). Also the boot check that the table
 * has a row for every exit the backend's intercepts can produce. Needs no
 * vendor header: the unit tests build the real tables against it. */
#ifndef VMM_EXIT_TABLE_H
#define VMM_EXIT_TABLE_H

#include <stdint.h>

#include "include/lightpath/abi.h"   /* LP_EXIT_* */
#include "vmm/light.h"               /* LIGHT_* */

struct vcpu;

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

/* The backend's table (vmm/svm/exit_table.c, vmm/vmx/exit_table.c). */
extern const struct exit_row vendor_exit_table[];
extern const unsigned vendor_exit_table_rows;

/* An exit the table does not know: stop the VM with one line naming it
 * (the backend's; a row may name it for codes it never expects). */
void vendor_unexpected_exit(struct vcpu *v);

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
void heavy_invd(struct vcpu *v);
void heavy_xsetbv(struct vcpu *v);
void heavy_wbinvd(struct vcpu *v);
void heavy_rdpmc(struct vcpu *v);
void heavy_rdtsc(struct vcpu *v);    /* vmm/guest_clock.c */
void heavy_rdtscp(struct vcpu *v);
void heavy_dr_first_use(struct vcpu *v);
void heavy_undefined_opcode(struct vcpu *v);
void heavy_triple_fault(struct vcpu *v);

/* Exits a backend's intercepts can produce: codes first..last, from the
 * intercept `intercept` names (for the error line). */
struct exit_span {
	uint32_t first, last;
	const char *intercept;
};

/* The most spans a backend reports (vendor_intercept_spans). */
#define EXIT_SPANS_MAX 192

/* Adds one span to out[max], counting it in *n even when out is full. */
static inline void exit_span_add(struct exit_span *out, unsigned max, unsigned *n, uint32_t first,
				 uint32_t last, const char *intercept)
{
	if (*n < max)
		out[*n] = (struct exit_span){ first, last, intercept };
	(*n)++;
}

/* The backend's spans, as its vCPUs' set-up and run loop set the
 * intercepts (after vendor_cpu_init): up to `max` of them into `out`;
 * returns how many there are (more than `max`: some were left out). */
unsigned vendor_intercept_spans(struct exit_span *out, unsigned max);

/* The first exit code of `spans` that no row of `table` covers, into
 * *code; returns its span, or 0 when every code has a row. At boot, once:
 * a backend whose intercepts can produce an exit without a row is refused
 * (vmm/hv.c). */
const struct exit_span *exit_table_missing(const struct exit_row *table, unsigned rows,
					   const struct exit_span *spans, unsigned n,
					   uint32_t *code);

#endif
