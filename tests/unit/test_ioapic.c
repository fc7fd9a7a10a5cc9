/* dev/ioapic.c: registers, redirection, masking, edge and level, EOI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/ioapic.h"
#include "tests/unit/stubs.h"

static struct ioapic io;
static struct ioapic_irq sent[32];
static unsigned nsent;
static int ctx_marker;

static void deliver(void *ctx, const struct ioapic_irq *irq)
{
	assert_ptr_equal(ctx, &ctx_marker);
	assert_true(nsent < 32);
	sent[nsent++] = *irq;
}

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	nsent = 0;
	ioapic_init(&io, FAKE_HOST);
	ioapic_set_deliver(&io, deliver, &ctx_marker);
	return 0;
}

static void mmio_write(uint64_t off, uint32_t v)
{
	uint64_t d = v;
	assert_int_equal(ioapic_mmio(&io, IOAPIC_BASE + off, &d, 4, true), IO_OK);
}

static uint32_t mmio_read(uint64_t off)
{
	uint64_t d = 0xdeadbeefdeadbeefull;
	assert_int_equal(ioapic_mmio(&io, IOAPIC_BASE + off, &d, 4, false), IO_OK);
	assert_true(d <= 0xffffffffull);
	return (uint32_t)d;
}

static uint32_t reg_read(uint8_t index)
{
	mmio_write(IOAPIC_REGSEL, index);
	return mmio_read(IOAPIC_IOWIN);
}

static void reg_write(uint8_t index, uint32_t v)
{
	mmio_write(IOAPIC_REGSEL, index);
	mmio_write(IOAPIC_IOWIN, v);
}

static void program(unsigned pin, uint32_t lo, uint8_t dest)
{
	reg_write((uint8_t)(0x11 + 2 * pin), (uint32_t)dest << 24);
	reg_write((uint8_t)(0x10 + 2 * pin), lo);
}

static void test_range_and_id_registers(void **state)
{
	(void)state;
	assert_true(ioapic_desc.mmio);
	assert_false(ioapic_desc.lock_free);   /* its registers are the VM's */
	assert_true(stub_desc_range_is(&ioapic_desc, 0, 0xfec00000ull, 0x1000, ioapic_mmio, true));

	assert_int_equal(reg_read(IOAPIC_REG_VERSION), 0x00170011);
	assert_int_equal(reg_read(IOAPIC_REG_ID), 0);
	reg_write(IOAPIC_REG_ID, 0x0a000000);
	assert_int_equal(reg_read(IOAPIC_REG_ID), 0x0a000000);
	assert_int_equal(reg_read(IOAPIC_REG_ARB), 0x0a000000);
	reg_write(IOAPIC_REG_VERSION, 0);            /* read-only */
	assert_int_equal(reg_read(IOAPIC_REG_VERSION), 0x00170011);
	assert_int_equal(mmio_read(IOAPIC_REGSEL), IOAPIC_REG_VERSION);
	/* all pins start masked */
	for (unsigned pin = 0; pin < 24; pin++)
		assert_int_equal(reg_read((uint8_t)(0x10 + 2 * pin)), 0x00010000);
	assert_int_equal(reg_read(0x10 + 48), 0xffffffffu); /* past the table */
	/* a byte access to IOREGSEL works too */
	uint64_t d = 0x12;
	ioapic_mmio(&io, IOAPIC_BASE, &d, 1, true);
	assert_int_equal(io.regsel, 0x12);
}

/* The reset state, which is also what a BIOS hands over (SeaBIOS does not
 * program the I/O APIC): every pin masked, so no line reaches a CPU. */
static void test_reset_masks_every_pin(void **state)
{
	(void)state;
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		assert_int_equal(reg_read((uint8_t)(0x10 + 2 * pin)), IOAPIC_RTE_MASKED);
		assert_int_equal(reg_read((uint8_t)(0x11 + 2 * pin)), 0);
		ioapic_set_irq(&io, pin, true);          /* an edge... */
		ioapic_set_irq(&io, pin, false);
		ioapic_set_irq(&io, pin, true);          /* ...and a level left high */
	}
	assert_int_equal(nsent, 0);
	assert_int_equal(io.delivered, 0);
	assert_int_equal(io.lines, 0xffffff);
	/* an EOI for any vector delivers nothing either */
	for (unsigned v = 0; v < 256; v++)
		ioapic_eoi(&io, (uint8_t)v);
	assert_int_equal(nsent, 0);
}

static void test_redirection_fields(void **state)
{
	(void)state;
	program(5, 0x0000a935, 0x03); /* vector 0x35, logical, active low, level */
	assert_int_equal(reg_read(0x10 + 10), 0x0000a935);
	assert_int_equal(reg_read(0x11 + 10), 0x03000000);
	/* delivery status and remote IRR cannot be written */
	reg_write(0x10 + 10, 0x00005035 | 0x8000);
	assert_int_equal(reg_read(0x10 + 10) & (IOAPIC_RTE_DELIVS | IOAPIC_RTE_REMOTE_IRR), 0);

	program(7, 0x00000847 | IOAPIC_RTE_LEVEL, 0x0f);
	ioapic_set_irq(&io, 7, true);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].pin, 7);
	assert_int_equal(sent[0].vector, 0x47);
	assert_true(sent[0].logical);
	assert_true(sent[0].level);
	assert_int_equal(sent[0].dest, 0x0f);
	assert_int_equal(sent[0].delivery_mode, IOAPIC_DM_FIXED);
}

static void test_edge_and_mask(void **state)
{
	(void)state;
	/* masked: nothing goes out */
	ioapic_set_irq(&io, 2, true);
	ioapic_set_irq(&io, 2, false);
	assert_int_equal(nsent, 0);
	program(2, 0x30, 0);
	ioapic_set_irq(&io, 2, true);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].vector, 0x30);
	assert_false(sent[0].level);
	ioapic_set_irq(&io, 2, true);     /* no new edge */
	assert_int_equal(nsent, 1);
	ioapic_set_irq(&io, 2, false);
	ioapic_set_irq(&io, 2, true);
	assert_int_equal(nsent, 2);
	/* an edge while masked is lost, unmasking does not replay it */
	ioapic_set_irq(&io, 2, false);
	program(2, 0x30 | IOAPIC_RTE_MASKED, 0);
	ioapic_set_irq(&io, 2, true);
	ioapic_set_irq(&io, 2, false);
	program(2, 0x30, 0);
	assert_int_equal(nsent, 2);
	/* edge pins ignore EOIs */
	ioapic_eoi(&io, 0x30);
	assert_int_equal(nsent, 2);
}

static void test_level_remote_irr(void **state)
{
	(void)state;
	program(9, 0x39 | IOAPIC_RTE_LEVEL, 0);
	ioapic_set_irq(&io, 9, true);
	assert_int_equal(nsent, 1);
	assert_true(reg_read(0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);
	/* still asserted, waiting for the EOI: no more messages */
	ioapic_set_irq(&io, 9, true);
	assert_int_equal(nsent, 1);
	/* EOI with the line still high: delivered again */
	ioapic_eoi(&io, 0x39);
	assert_int_equal(nsent, 2);
	assert_true(reg_read(0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);
	/* another vector's EOI changes nothing */
	ioapic_eoi(&io, 0x38);
	assert_true(reg_read(0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);
	/* line low, then EOI: Remote IRR clears, nothing is sent */
	ioapic_set_irq(&io, 9, false);
	ioapic_eoi(&io, 0x39);
	assert_int_equal(nsent, 2);
	assert_false(reg_read(0x10 + 18) & IOAPIC_RTE_REMOTE_IRR);

	/* unmasking an asserted level pin delivers it */
	program(10, 0x3a | IOAPIC_RTE_LEVEL | IOAPIC_RTE_MASKED, 0);
	ioapic_set_irq(&io, 10, true);
	assert_int_equal(nsent, 2);
	program(10, 0x3a | IOAPIC_RTE_LEVEL, 0);
	assert_int_equal(nsent, 3);
	assert_int_equal(sent[2].vector, 0x3a);
	/* switching the pin to edge drops Remote IRR */
	program(10, 0x3a, 0);
	assert_false(reg_read(0x10 + 20) & IOAPIC_RTE_REMOTE_IRR);
}

/* ioapic_nmi_pin: an unmasked pin in NMI mode, and only that, is an NMI source. */
static void test_nmi_pin(void **state)
{
	(void)state;
	assert_false(ioapic_nmi_pin(&io));
	program(4, (IOAPIC_DM_NMI << 8) | IOAPIC_RTE_MASKED, 0);
	assert_false(ioapic_nmi_pin(&io));
	program(5, 0x35, 0);                      /* fixed, unmasked */
	assert_false(ioapic_nmi_pin(&io));
	program(4, IOAPIC_DM_NMI << 8, 0);
	assert_true(ioapic_nmi_pin(&io));
	program(4, (IOAPIC_DM_NMI << 8) | IOAPIC_RTE_MASKED, 0);
	assert_false(ioapic_nmi_pin(&io));
}

static void test_out_of_range(void **state)
{
	(void)state;
	ioapic_set_irq(&io, 24, true);
	ioapic_set_irq(&io, 1000, true);
	assert_int_equal(nsent, 0);
	assert_int_equal(io.lines, 0);
	/* offsets other than IOREGSEL/IOWIN read 0 */
	assert_int_equal(mmio_read(0x20), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_range_and_id_registers, setup),
		cmocka_unit_test_setup(test_reset_masks_every_pin, setup),
		cmocka_unit_test_setup(test_redirection_fields, setup),
		cmocka_unit_test_setup(test_edge_and_mask, setup),
		cmocka_unit_test_setup(test_level_remote_irr, setup),
		cmocka_unit_test_setup(test_nmi_pin, setup),
		cmocka_unit_test_setup(test_out_of_range, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
