/* vmm/exit_table.h: the boot check that a backend's exit table has a row
 * for every exit its intercepts can produce, on made-up tables and on both
 * backends' real ones (vmm/svm/exit_table.c, vmm/vmx/exit_table.c, built
 * here under their own names: each defines the same vendor_* symbols). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/exit_table.h"

#define vendor_exit_table svm_exit_table
#define vendor_exit_table_rows svm_exit_table_rows
#define vendor_intercept_spans svm_intercept_spans
#include "vmm/svm/exit_table.c"
#undef vendor_exit_table
#undef vendor_exit_table_rows
#undef vendor_intercept_spans

#define vendor_exit_table vmx_exit_table
#define vendor_exit_table_rows vmx_exit_table_rows
#define vendor_intercept_spans vmx_intercept_spans
#include "vmm/vmx/exit_table.c"
#undef vendor_exit_table
#undef vendor_exit_table_rows
#undef vendor_intercept_spans

struct vmx_caps vmx_caps;

/* The handlers the rows name: never called here. */
#define STUB(name) \
	void name(struct vcpu *v) { (void)v; }
STUB(heavy_hypercall) STUB(heavy_cpuid) STUB(heavy_msr) STUB(heavy_io) STUB(heavy_hlt)
STUB(heavy_host_intr) STUB(heavy_host_nmi) STUB(heavy_intr_window) STUB(heavy_nmi_window)
STUB(heavy_npf) STUB(heavy_invd) STUB(heavy_xsetbv) STUB(heavy_wbinvd) STUB(heavy_rdpmc)
STUB(heavy_rdtsc) STUB(heavy_rdtscp) STUB(heavy_dr_first_use) STUB(heavy_undefined_opcode)
STUB(heavy_triple_fault) STUB(vendor_unexpected_exit)
STUB(svm_heavy_cr8) STUB(svm_heavy_cr0_write) STUB(svm_heavy_db) STUB(svm_heavy_reflect_exception)
STUB(svm_heavy_iret) STUB(svm_heavy_wbinvd) STUB(svm_heavy_invalid_state) STUB(svm_heavy_dr_write)
STUB(vmx_heavy_exception) STUB(vmx_heavy_task_switch) STUB(vmx_heavy_cr_access)
STUB(vmx_heavy_tpr_below) STUB(vmx_heavy_apic_access) STUB(vmx_heavy_eoi_induced)
STUB(vmx_heavy_apic_write) STUB(vmx_heavy_ept_misconfig)

/* A copy of `table` without the row that covers `code`; how many rows. */
static unsigned without_row(const struct exit_row *table, unsigned rows, uint32_t code,
			    struct exit_row *out)
{
	unsigned n = 0;
	for (unsigned i = 0; i < rows; i++)
		if (!(code >= table[i].first && code <= table[i].last))
			out[n++] = table[i];
	assert_int_equal(n, rows - 1);
	return n;
}

/* Every control a VMX CPU can have: nothing forced, everything allowed. */
static void vmx_caps_allow_all(void)
{
	memset(&vmx_caps, 0, sizeof(vmx_caps));
	vmx_caps.pin.may = vmx_caps.proc.may = vmx_caps.proc2.may = ~0u;
}

static void test_missing_row_refused(void **state)
{
	(void)state;
	const struct exit_row table[] = {
		EXIT_ROW(0x10, 0x12, LP_EXIT_OTHER, LIGHT_NONE, heavy_invd),
		EXIT_CPUID(0x14),
	};
	const struct exit_span spans[] = { { 0x10, 0x11, "first" }, { 0x12, 0x14, "second" } };
	uint32_t code = 0;
	const struct exit_span *s = exit_table_missing(table, 2, spans, 2, &code);
	assert_non_null(s);
	assert_ptr_equal(s, &spans[1]);
	assert_int_equal(code, 0x13);
}

static void test_covered_spans_pass(void **state)
{
	(void)state;
	const struct exit_row table[] = {
		EXIT_ROW(0x10, 0x14, LP_EXIT_OTHER, LIGHT_NONE, heavy_invd),
		EXIT_ROW(0xffffffffu, 0xffffffffu, LP_EXIT_OTHER, LIGHT_NONE, heavy_invd),
	};
	/* a span that ends at the last code must end the loop, not wrap */
	const struct exit_span spans[] = { { 0x11, 0x14, "a" }, { 0xffffffffu, 0xffffffffu, "b" } };
	uint32_t code = 0;
	assert_null(exit_table_missing(table, 2, spans, 2, &code));
	assert_null(exit_table_missing(table, 2, spans, 0, &code));
}

static void test_svm_real_table_passes(void **state)
{
	(void)state;
	struct exit_span spans[EXIT_SPANS_MAX];
	unsigned n = svm_intercept_spans(spans, EXIT_SPANS_MAX);
	assert_in_range(n, 10, EXIT_SPANS_MAX);
	uint32_t code = 0;
	const struct exit_span *s = exit_table_missing(svm_exit_table, svm_exit_table_rows, spans, n,
						       &code);
	if (s)
		fail_msg("exit 0x%x (%s) has no row", code, s->intercept);
}

static void test_svm_table_without_a_row_refused(void **state)
{
	(void)state;
	struct exit_span spans[EXIT_SPANS_MAX];
	unsigned n = svm_intercept_spans(spans, EXIT_SPANS_MAX);
	struct exit_row table[64];
	assert_true(svm_exit_table_rows <= 64);
	unsigned rows = without_row(svm_exit_table, svm_exit_table_rows, SVM_EXIT_CPUID, table);
	uint32_t code = 0;
	const struct exit_span *s = exit_table_missing(table, rows, spans, n, &code);
	assert_non_null(s);
	assert_int_equal(code, SVM_EXIT_CPUID);
	assert_string_equal(s->intercept, "intercept_misc1");
	/* an exit only the run loop's intercepts produce (the IRET of an NMI
	 * handler) is found too */
	rows = without_row(svm_exit_table, svm_exit_table_rows, SVM_EXIT_IRET, table);
	s = exit_table_missing(table, rows, spans, n, &code);
	assert_non_null(s);
	assert_int_equal(code, SVM_EXIT_IRET);
}

static void test_vmx_real_table_passes(void **state)
{
	(void)state;
	vmx_caps_allow_all();
	struct exit_span spans[EXIT_SPANS_MAX];
	unsigned n = vmx_intercept_spans(spans, EXIT_SPANS_MAX);
	assert_in_range(n, 10, EXIT_SPANS_MAX);
	uint32_t code = 0;
	const struct exit_span *s = exit_table_missing(vmx_exit_table, vmx_exit_table_rows, spans, n,
						       &code);
	if (s)
		fail_msg("exit %u (%s) has no row", code, s->intercept);
	/* a CPU that forces CR3 exiting on (no true controls) is still covered */
	vmx_caps.proc.must = PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING;
	n = vmx_intercept_spans(spans, EXIT_SPANS_MAX);
	assert_null(exit_table_missing(vmx_exit_table, vmx_exit_table_rows, spans, n, &code));
}

static void test_vmx_table_without_a_row_refused(void **state)
{
	(void)state;
	vmx_caps_allow_all();
	struct exit_span spans[EXIT_SPANS_MAX];
	unsigned n = vmx_intercept_spans(spans, EXIT_SPANS_MAX);
	struct exit_row table[64];
	assert_true(vmx_exit_table_rows <= 64);
	unsigned rows = without_row(vmx_exit_table, vmx_exit_table_rows, VMX_EXIT_EOI_INDUCED, table);
	uint32_t code = 0;
	const struct exit_span *s = exit_table_missing(table, rows, spans, n, &code);
	assert_non_null(s);
	assert_int_equal(code, VMX_EXIT_EOI_INDUCED);
	assert_string_equal(s->intercept, "virtual-interrupt delivery");
	/* a CPU without virtual-interrupt delivery never makes that exit */
	vmx_caps.proc2.may &= ~PROC2_VIRTUAL_INTR_DELIVERY;
	n = vmx_intercept_spans(spans, EXIT_SPANS_MAX);
	assert_null(exit_table_missing(table, rows, spans, n, &code));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_row_refused),
		cmocka_unit_test(test_covered_spans_pass),
		cmocka_unit_test(test_svm_real_table_passes),
		cmocka_unit_test(test_svm_table_without_a_row_refused),
		cmocka_unit_test(test_vmx_real_table_passes),
		cmocka_unit_test(test_vmx_table_without_a_row_refused),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
