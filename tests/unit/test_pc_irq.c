/* dev/pc_irq.c: the devices wired together as the hypervisor wires them:
 * PIT -> IRQ0 -> 8259 (ExtINT) and I/O APIC pin 2 -> local APIC; a level
 * SCI through the I/O APIC with its EOI broadcast. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pc_irq.h"
#include "dev/pit8254.h"
#include "tests/unit/stubs.h"

static struct pic8259 pic;
static struct ioapic io;
static struct lapic apic;
static struct pit8254 pit;

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	stub_tsc_hz = 1000000000ull;
	pic_init(&pic, FAKE_HOST);
	ioapic_init(&io, FAKE_HOST);
	ioapic_set_deliver(&io, pc_ioapic_deliver, &apic);
	lapic_init(&apic, FAKE_HOST, 0, true);
	lapic_set_eoi_hook(&apic, pc_lapic_eoi, &io);
	lapic_firmware_setup(&apic);
	/* the 8259 as Linux programs it */
	uint64_t d;
	static const uint8_t seq[][2] = {
		{ 0x20, 0x11 }, { 0x21, 0x30 }, { 0x21, 0x04 }, { 0x21, 0x01 },
		{ 0xa0, 0x11 }, { 0xa1, 0x38 }, { 0xa1, 0x02 }, { 0xa1, 0x01 },
		{ 0x21, 0x00 }, { 0xa1, 0x00 },
	};
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		d = seq[i][1];
		pic_io(&pic, seq[i][0], &d, 1, true);
	}
	return 0;
}

/* The platform as a VM gets it (platform_create): the three controllers at
 * reset, then pc_irq_firmware_setup, and a guest that programs none of them. */
static int setup_firmware(void **state)
{
	(void)state;
	stubs_reset();
	stub_tsc_hz = 1000000000ull;
	pic_init(&pic, FAKE_HOST);
	ioapic_init(&io, FAKE_HOST);
	ioapic_set_deliver(&io, pc_ioapic_deliver, &apic);
	lapic_init(&apic, FAKE_HOST, 0, true);
	lapic_set_eoi_hook(&apic, pc_lapic_eoi, &io);
	pc_irq_firmware_setup(&pic, &io, &apic);
	return 0;
}

static void test_firmware_handover(void **state)
{
	(void)state;
	bool from_pic;
	/* every line pulsed, then every line left high: nothing is delivered,
	 * so nothing can arrive on an exception vector (0-31) */
	for (unsigned line = 0; line < IOAPIC_PINS; line++) {
		pc_irq_set(&pic, &io, line, true);
		pc_irq_set(&pic, &io, line, false);
		assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), -1);
	}
	for (unsigned line = 0; line < IOAPIC_PINS; line++)
		pc_irq_set(&pic, &io, line, true);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), -1);
	assert_int_equal(io.delivered, 0);
	assert_false(lapic_irr_nonempty(&apic));
	assert_false(apic.nmi_pending);
	/* the 8259 path itself is open (LINT0 ExtINT): a guest that reprograms
	 * the master's base and unmasks IRQ0 gets it, on its own vector */
	assert_true(lapic_pic_intr_allowed(&apic));
	uint64_t d;
	static const uint8_t seq[][2] = {
		{ 0x20, 0x11 }, { 0x21, 0x20 }, { 0x21, 0x04 }, { 0x21, 0x01 }, { 0x21, 0xfe },
	};
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		d = seq[i][1];
		pic_io(&pic, seq[i][0], &d, 1, true);
	}
	pc_irq_set(&pic, &io, 0, false);
	pc_irq_set(&pic, &io, 0, true);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x20);
	assert_true(from_pic);
	/* and an I/O APIC pin it unmasks goes to the local APIC */
	ioapic_write_reg(&io, 0x10 + 2 * 4, 0x44);
	pc_irq_set(&pic, &io, 4, false);
	pc_irq_set(&pic, &io, 4, true);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x44);
	assert_false(from_pic);
}

static void test_legacy_path(void **state)
{
	(void)state;
	bool from_pic;
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), -1);
	/* IRQ0 as the PIT sends it: a pulse */
	pc_irq_set(&pic, &io, 0, true);
	pc_irq_set(&pic, &io, 0, false);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x30);
	assert_true(from_pic);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x30);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), -1);
	/* LINT0 masked: the 8259 no longer reaches the CPU */
	lapic_write(&apic, LAPIC_LVT_LINT0, LAPIC_LVT_MASKED | 0x700);
	pc_irq_set(&pic, &io, 1, true);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), -1);
	/* IRQ2 is the cascade: nobody drives it */
	pc_irq_set(&pic, &io, 2, true);
	assert_int_equal(io.lines & 4, 0);
}

/* pc_intr_take is pc_intr_pending and the acknowledge in one pass: it
 * takes exactly what pending names (the APIC before the 8259, nothing the
 * PPR holds back) and changes nothing when there is none. */
static void test_take_is_pending_then_ack(void **state)
{
	(void)state;
	bool from_pic;
	assert_int_equal(pc_intr_take(&apic, &pic), -1);
	assert_int_equal(apic.isr_words, 0);
	/* an 8259 request and two APIC vectors: the APIC's highest first */
	pc_irq_set(&pic, &io, 1, true);
	lapic_accept(&apic, 0x45, false);
	lapic_accept(&apic, 0x62, false);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x62);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x62);
	assert_true(lapic_vec_test(&apic, LAPIC_ISR, 0x62));
	assert_false(lapic_vec_test(&apic, LAPIC_IRR, 0x62));
	/* 0x45 is below the class in service: pending says none, the 8259's
	 * INTR is not blocked by the PPR and goes next */
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x31);
	assert_true(from_pic);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x31);
	assert_true(lapic_vec_test(&apic, LAPIC_IRR, 0x45));
	assert_false(lapic_vec_test(&apic, LAPIC_ISR, 0x45));
	/* nothing deliverable: nothing moves */
	assert_int_equal(pc_intr_take(&apic, &pic), -1);
	assert_true(lapic_vec_test(&apic, LAPIC_IRR, 0x45));
	assert_int_equal(lapic_eoi(&apic), 0x62);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x45);
	assert_int_equal(pc_intr_take(&apic, &pic), -1);
}

static void test_ioapic_path_with_pit(void **state)
{
	(void)state;
	bool from_pic;
	lapic_write(&apic, LAPIC_LVT_LINT0, LAPIC_LVT_MASKED | 0x700);
	ioapic_write_reg(&io, 0x10 + 2 * 2, 0x40);   /* GSI 2 (IRQ0) -> vector 0x40 */
	ioapic_write_reg(&io, 0x11 + 2 * 2, 0);
	pit_init(&pit, FAKE_HOST);
	uint64_t d = 0x34;                           /* mode 2, 1000 ticks */
	pit_io(&pit, 0x43, &d, 1, true);
	d = 1000 & 0xff;
	pit_io(&pit, 0x40, &d, 1, true);
	d = 1000 >> 8;
	pit_io(&pit, 0x40, &d, 1, true);
	/* the stub irq_line_set only records; route what it saw by hand */
	uint64_t deadline = stubs_next_deadline();
	assert_true(deadline > 0);
	stubs_advance_to(deadline);
	assert_int_equal(stub_irq_raises[0], 1);
	pc_irq_set(&pic, &io, 0, true);
	pc_irq_set(&pic, &io, 0, false);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x40);
	assert_false(from_pic);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x40);
	assert_int_equal(lapic_eoi(&apic), 0x40);
}

static void test_level_sci_eoi_broadcast(void **state)
{
	(void)state;
	bool from_pic;
	ioapic_write_reg(&io, 0x10 + 2 * 9, 0x49 | IOAPIC_RTE_LEVEL);
	pc_irq_set(&pic, &io, 9, true);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x49);
	assert_false(from_pic);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x49);
	assert_true(io.rte[9] & IOAPIC_RTE_REMOTE_IRR);
	/* the line stays high: the EOI re-delivers */
	lapic_write(&apic, LAPIC_EOI, 0);
	assert_int_equal(pc_intr_pending(&apic, &pic, &from_pic), 0x49);
	assert_int_equal(pc_intr_take(&apic, &pic), 0x49);
	pc_irq_set(&pic, &io, 9, false);
	lapic_write(&apic, LAPIC_EOI, 0);
	assert_false(io.rte[9] & IOAPIC_RTE_REMOTE_IRR);
	assert_int_equal(lapic_highest_pending(&apic), -1);
	/* a message for another APIC is not accepted */
	ioapic_write_reg(&io, 0x11 + 2 * 5, 0x07000000);
	ioapic_write_reg(&io, 0x10 + 2 * 5, 0x45);
	pc_irq_set(&pic, &io, 5, true);
	assert_int_equal(lapic_highest_pending(&apic), -1);
	/* NMI delivery mode */
	ioapic_write_reg(&io, 0x11 + 2 * 6, 0);
	ioapic_write_reg(&io, 0x10 + 2 * 6, 0x400);
	pc_irq_set(&pic, &io, 6, true);
	assert_true(apic.nmi_pending);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_firmware_handover, setup_firmware),
		cmocka_unit_test_setup(test_legacy_path, setup),
		cmocka_unit_test_setup(test_take_is_pending_then_ack, setup),
		cmocka_unit_test_setup(test_ioapic_path_with_pit, setup),
		cmocka_unit_test_setup(test_level_sci_eoi_broadcast, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
