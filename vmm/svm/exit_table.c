/* AMD SVM: every exit lightpath intercepts, in one table (what each exit
 * means is in vmm/exit_table.h), and the exits the VMCB's intercepts can
 * produce, which the table is checked against at boot. Needs no vCPU
 * state: the unit tests build it too. */
#include "vmm/exit_table.h"
#include "vmm/svm/debug.h"
#include "vmm/svm/exits.h"
#include "vmm/svm/vmcb.h"

/* Every exit the VMCB's intercepts enable, in exit-code order. */
const struct exit_row vendor_exit_table[] = {
	EXIT_ROW(SVM_EXIT_READ_CR8, SVM_EXIT_READ_CR8, LP_EXIT_OTHER, LIGHT_NONE, svm_heavy_cr8),
	EXIT_ROW(SVM_EXIT_WRITE_CR8, SVM_EXIT_WRITE_CR8, LP_EXIT_OTHER, LIGHT_NONE, svm_heavy_cr8),
	EXIT_DR_ACCESS(SVM_EXIT_READ_DR0, SVM_EXIT_WRITE_DR0 - 1),
	EXIT_ROW(SVM_EXIT_WRITE_DR0, SVM_EXIT_WRITE_DR0 + 7, LP_EXIT_DR_ACCESS, LIGHT_NONE,
		 svm_heavy_dr_write),   /* DR7 (DR5), and DR0-3 while armed: vmm/svm/debug.c */
	EXIT_DR_ACCESS(SVM_EXIT_WRITE_DR0 + 8, SVM_EXIT_WRITE_DR15),
	EXIT_ROW(SVM_EXIT_EXCP_BASE, SVM_EXIT_EXCP_DB - 1, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_ROW(SVM_EXIT_EXCP_DB, SVM_EXIT_EXCP_DB, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 svm_heavy_db),
	EXIT_ROW(SVM_EXIT_EXCP_DB + 1, SVM_EXIT_EXCP_AC - 1, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_ROW(SVM_EXIT_EXCP_AC, SVM_EXIT_EXCP_AC, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 svm_heavy_reflect_exception),
	EXIT_ROW(SVM_EXIT_EXCP_AC + 1, SVM_EXIT_EXCP_BASE + 31, LP_EXIT_EXCEPTION, LIGHT_NONE,
		 vendor_unexpected_exit),
	EXIT_HOST_INTR(SVM_EXIT_INTR),
	EXIT_HOST_NMI(SVM_EXIT_NMI),
	EXIT_INTR_WINDOW(SVM_EXIT_VINTR),
	EXIT_ROW(SVM_EXIT_CR0_SEL_WRITE, SVM_EXIT_CR0_SEL_WRITE, LP_EXIT_OTHER, LIGHT_NONE,
		 svm_heavy_cr0_write),
	EXIT_RDTSC(SVM_EXIT_RDTSC),
	EXIT_RDPMC(SVM_EXIT_RDPMC),
	EXIT_CPUID(SVM_EXIT_CPUID),
	EXIT_ROW(SVM_EXIT_IRET, SVM_EXIT_IRET, LP_EXIT_VINTR, LIGHT_NONE, svm_heavy_iret),
	EXIT_INVD(SVM_EXIT_INVD),
	EXIT_HLT(SVM_EXIT_HLT),
	EXIT_VIRT_INSN(SVM_EXIT_INVLPGA, SVM_EXIT_INVLPGA),
	EXIT_IO(SVM_EXIT_IOIO),
	EXIT_MSR(SVM_EXIT_MSR),
	EXIT_TRIPLE_FAULT(SVM_EXIT_SHUTDOWN),
	EXIT_VIRT_INSN(SVM_EXIT_VMRUN, SVM_EXIT_VMRUN),
	EXIT_HYPERCALL(SVM_EXIT_VMMCALL),
	EXIT_VIRT_INSN(SVM_EXIT_VMLOAD, SVM_EXIT_SKINIT),   /* VMLOAD VMSAVE STGI CLGI SKINIT */
	EXIT_RDTSCP(SVM_EXIT_RDTSCP),
	EXIT_XSETBV(SVM_EXIT_XSETBV),
	EXIT_ROW(SVM_EXIT_WBINVD, SVM_EXIT_WBINVD, LP_EXIT_OTHER, LIGHT_NONE, svm_heavy_wbinvd),
	EXIT_NOT_OFFERED(SVM_EXIT_MONITOR, SVM_EXIT_MWAIT_COND),   /* MONITOR(X), MWAIT(X) */
	EXIT_NOT_OFFERED(SVM_EXIT_RDPRU, SVM_EXIT_RDPRU),
	EXIT_NESTED_FAULT(SVM_EXIT_NPF),
	EXIT_ROW(SVM_EXIT_INVALID, SVM_EXIT_INVALID, LP_EXIT_OTHER, LIGHT_NONE,
		 svm_heavy_invalid_state),
};
const unsigned vendor_exit_table_rows = sizeof(vendor_exit_table) / sizeof(vendor_exit_table[0]);

/* One span per intercept bit: a vector's bit n is exit code base + n. */
static const struct {
	uint32_t bits, base;
	const char *name;
} intercept_words[] = {
	{ SVM_CR_INTERCEPTS, SVM_EXIT_READ_CR0, "intercept_cr" },
	{ SVM_DR_INTERCEPTS, SVM_EXIT_READ_DR0, "intercept_dr" },
	{ SVM_EXC_INTERCEPTS, SVM_EXIT_EXCP_BASE, "intercept_exc" },
	{ SVM_MISC1_INTERCEPTS | SVM_MISC1_RUNTIME, SVM_EXIT_INTR, "intercept_misc1" },
	{ SVM_MISC2_INTERCEPTS | SVM_MISC2_RUNTIME, SVM_EXIT_VMRUN, "intercept_misc2" },
};

unsigned vendor_intercept_spans(struct exit_span *out, unsigned max)
{
	unsigned n = 0;
	for (unsigned w = 0; w < sizeof(intercept_words) / sizeof(intercept_words[0]); w++) {
		for (unsigned bit = 0; bit < 32; bit++) {
			uint32_t code = intercept_words[w].base + bit;
			if (intercept_words[w].bits & (1u << bit))
				exit_span_add(out, max, &n, code, code, intercept_words[w].name);
		}
	}
	exit_span_add(out, max, &n, SVM_EXIT_NPF, SVM_EXIT_NPF, "nested paging (np_enable)");
	exit_span_add(out, max, &n, SVM_EXIT_INVALID, SVM_EXIT_INVALID,
		      "VMRUN's consistency checks");
	return n;
}
