/* dev/pic8259.c: initialisation, masking, EOI, cascade, edge/level. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pic8259.h"
#include "tests/unit/stubs.h"

static struct pic8259 pic;

static void out(uint16_t port, uint8_t v)
{
	uint64_t d = v;
	int rc = port >= PIC_ELCR_BASE ? pic_elcr_io(&pic, port, &d, 1, true)
				       : pic_io(&pic, port, &d, 1, true);
	assert_int_equal(rc, IO_OK);
}

static uint8_t in(uint16_t port)
{
	uint64_t d = 0xdead;
	int rc = port >= PIC_ELCR_BASE ? pic_elcr_io(&pic, port, &d, 1, false)
				       : pic_io(&pic, port, &d, 1, false);
	assert_int_equal(rc, IO_OK);
	assert_true(d <= 0xff);
	return (uint8_t)d;
}

/* What Linux's init_8259A() does: vectors 0x20 and 0x28, cascade on IRQ2. */
static void linux_init(void)
{
	out(0x21, 0xff);
	out(0xa1, 0xff);
	out(0x20, 0x11); out(0x21, 0x20); out(0x21, 0x04); out(0x21, 0x01);
	out(0xa0, 0x11); out(0xa1, 0x28); out(0xa1, 0x02); out(0xa1, 0x01);
	out(0x21, 0xfb); /* all masked but the cascade */
	out(0xa1, 0xff);
}

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	pic_init(&pic, FAKE_HOST);
	linux_init();
	return 0;
}

static uint8_t read_irr(uint16_t cmd) { out(cmd, 0x0a); return in(cmd); }
static uint8_t read_isr(uint16_t cmd) { out(cmd, 0x0b); return in(cmd); }

/* The state every VM starts in: as the BIOS leaves the chips. */
static int setup_firmware(void **state)
{
	(void)state;
	stubs_reset();
	pic_init(&pic, FAKE_HOST);
	pic_firmware_setup(&pic);
	return 0;
}

static void test_ranges(void **state)
{
	(void)state;
	assert_int_equal(pic8259_desc.nr_ranges, 3);
	assert_true(stub_desc_range_is(&pic8259_desc, 0, 0x20, 2, pic_io, true));
	assert_true(stub_desc_range_is(&pic8259_desc, 1, 0xa0, 2, pic_io, true));
	assert_true(stub_desc_range_is(&pic8259_desc, 2, 0x4d0, 2, pic_elcr_io, true));
}

static void test_init_and_masks(void **state)
{
	(void)state;
	assert_int_equal(in(0x21), 0xfb);
	assert_int_equal(in(0xa1), 0xff);
	assert_int_equal(pic.chip[0].irq_base, 0x20);
	assert_int_equal(pic.chip[1].irq_base, 0x28);
	assert_int_equal(pic_pending_vector(&pic), -1);

	/* A masked request is latched in IRR but not presented. */
	pic_set_irq(&pic, 1, true);
	assert_int_equal(read_irr(0x20), 0x02);
	assert_int_equal(pic_pending_vector(&pic), -1);
	out(0x21, 0xf9); /* unmask IRQ1 */
	assert_int_equal(pic_pending_vector(&pic), 0x21);

	/* ICW1 clears the mask and the requests. */
	out(0x20, 0x11);
	assert_int_equal(pic.chip[0].init_state, 1);
	out(0x21, 0x30); out(0x21, 0x04); out(0x21, 0x01);
	assert_int_equal(in(0x21), 0x00);
	assert_int_equal(read_irr(0x20), 0x00);
	assert_int_equal(pic.chip[0].irq_base, 0x30);
}

static void test_firmware_state(void **state)
{
	(void)state;
	/* initialised (the data ports take OCW1, not an ICW), all masked but
	 * the cascade, IRR selected for reads, nothing requested or in service */
	for (int i = 0; i < 2; i++)
		assert_int_equal(pic.chip[i].init_state, 0);
	assert_int_equal(in(0x21), 0xfb);
	assert_int_equal(in(0xa1), 0xff);
	assert_int_equal(in(0x20), 0x00);
	assert_int_equal(in(0xa0), 0x00);
	assert_int_equal(read_isr(0x20), 0x00);
	assert_int_equal(read_isr(0xa0), 0x00);
	assert_int_equal(pic_pending_vector(&pic), -1);

	/* every ISA line pulsed: latched in IRR, never presented */
	for (unsigned irq = 0; irq < 16; irq++) {
		pic_set_irq(&pic, irq, true);
		pic_set_irq(&pic, irq, false);
		assert_int_equal(pic_pending_vector(&pic), -1);
	}
	assert_int_equal(read_irr(0x20), 0xfb);    /* IRQ2 is the slave's output: quiet */
	assert_int_equal(read_irr(0xa0), 0xff);
	assert_int_equal(read_isr(0x20), 0x00);

	/* the BIOS's vector bases: a guest that only unmasks gets 0x08 + irq
	 * and 0x70 + irq - 8 (which is why the masks must stay) */
	out(0x21, 0xfa);                           /* unmask IRQ0 */
	assert_int_equal(pic_pending_vector(&pic), PIC_FIRMWARE_MASTER_BASE);
	assert_int_equal(pic_ack(&pic), 0x08);
	assert_int_equal(read_isr(0x20), 0x01);    /* normal EOI mode: no auto-EOI */
	out(0x20, 0x20);
	assert_int_equal(read_isr(0x20), 0x00);
	out(0x21, 0xfb);
	out(0xa1, 0xfe);                           /* unmask IRQ8 */
	assert_int_equal(pic_pending_vector(&pic), PIC_FIRMWARE_SLAVE_BASE);
	assert_int_equal(pic_ack(&pic), 0x70);
	assert_int_equal(read_isr(0xa0), 0x01);
	assert_int_equal(read_isr(0x20), 0x04);    /* cascade in service on the master */
}

static void test_power_up_vs_firmware(void **state)
{
	(void)state;
	/* Power-up (pic_init only) would present IRQ0 on vector 0, #DE: what a
	 * VM got before it started from the firmware state. */
	pic_init(&pic, FAKE_HOST);
	pic_set_irq(&pic, 0, true);
	assert_int_equal(pic_pending_vector(&pic), 0);
	pic_firmware_setup(&pic);                  /* ICW1 forgets the request */
	assert_int_equal(pic_pending_vector(&pic), -1);
	assert_int_equal(read_irr(0x20), 0x00);
	/* a new pulse is latched, and stays masked */
	pic_set_irq(&pic, 0, false);
	pic_set_irq(&pic, 0, true);
	pic_set_irq(&pic, 0, false);
	assert_int_equal(read_irr(0x20), 0x01);
	assert_int_equal(pic_pending_vector(&pic), -1);
}

static void test_ack_eoi_nesting(void **state)
{
	(void)state;
	out(0x21, 0xf0); /* IRQ0-3 unmasked */
	pic_set_irq(&pic, 1, true);
	assert_int_equal(pic_ack(&pic), 0x21);
	assert_int_equal(read_isr(0x20), 0x02);
	assert_int_equal(read_irr(0x20), 0x00);
	/* IRQ1 in service blocks IRQ3 but not IRQ0. */
	pic_set_irq(&pic, 3, true);
	assert_int_equal(pic_pending_vector(&pic), -1);
	pic_set_irq(&pic, 0, true);
	assert_int_equal(pic_pending_vector(&pic), 0x20);
	assert_int_equal(pic_ack(&pic), 0x20);
	assert_int_equal(read_isr(0x20), 0x03);
	/* Non-specific EOI ends the highest priority in service: IRQ0. */
	out(0x20, 0x20);
	assert_int_equal(read_isr(0x20), 0x02);
	assert_int_equal(pic_pending_vector(&pic), -1); /* IRQ1 still in service */
	/* Specific EOI for IRQ1 lets IRQ3 through. */
	out(0x20, 0x61);
	assert_int_equal(read_isr(0x20), 0x00);
	assert_int_equal(pic_pending_vector(&pic), 0x23);
}

static void test_edge_latching(void **state)
{
	(void)state;
	out(0x21, 0xf8);
	pic_set_irq(&pic, 1, true);
	assert_int_equal(pic_ack(&pic), 0x21);
	out(0x20, 0x20);
	/* Still high: no new edge, nothing pending. */
	pic_set_irq(&pic, 1, true);
	assert_int_equal(pic_pending_vector(&pic), -1);
	/* A pulse (high then low) is latched. */
	pic_set_irq(&pic, 1, false);
	pic_set_irq(&pic, 1, true);
	pic_set_irq(&pic, 1, false);
	assert_int_equal(pic_pending_vector(&pic), 0x21);
}

static void test_cascade(void **state)
{
	(void)state;
	out(0xa1, 0xef); /* IRQ12 unmasked on the slave */
	pic_set_irq(&pic, 12, true);
	assert_int_equal(read_irr(0x20) & 0x04, 0x04);   /* master sees IRQ2 */
	assert_int_equal(pic_pending_vector(&pic), 0x2c);
	assert_int_equal(pic_ack(&pic), 0x2c);
	assert_int_equal(read_isr(0x20), 0x04);
	assert_int_equal(read_isr(0xa0), 0x10);
	pic_set_irq(&pic, 12, false);
	/* Linux EOIs the slave, then the master. */
	out(0xa0, 0x20);
	out(0x20, 0x20);
	assert_int_equal(read_isr(0x20), 0);
	assert_int_equal(read_isr(0xa0), 0);
	assert_int_equal(pic_pending_vector(&pic), -1);

	/* A masked cascade hides the slave. */
	pic_set_irq(&pic, 12, true);
	out(0x21, 0xff);
	assert_int_equal(pic_pending_vector(&pic), -1);
	out(0x21, 0xfb);
	assert_int_equal(pic_pending_vector(&pic), 0x2c);
}

static void test_level_elcr(void **state)
{
	(void)state;
	/* Writable bits only: IRQ0-2 and 8, 13 are always edge. */
	out(0x4d0, 0xff);
	out(0x4d1, 0xff);
	assert_int_equal(in(0x4d0), 0xf8);
	assert_int_equal(in(0x4d1), 0xde);
	out(0x4d0, 0x00);
	out(0x4d1, 0x02);           /* IRQ9 level, as for the SCI */
	out(0xa1, 0xfd);
	pic_set_irq(&pic, 9, true);
	assert_int_equal(pic_ack(&pic), 0x29);
	/* Level: IRR stays while the line is high... */
	assert_int_equal(read_irr(0xa0) & 0x02, 0x02);
	out(0xa0, 0x20);
	out(0x20, 0x20);
	/* ...so after the EOI it is presented again. */
	assert_int_equal(pic_pending_vector(&pic), 0x29);
	pic_set_irq(&pic, 9, false);
	assert_int_equal(read_irr(0xa0) & 0x02, 0);
	assert_int_equal(pic_pending_vector(&pic), -1);
}

static void test_spurious_poll_rotate_aeoi(void **state)
{
	(void)state;
	/* Nothing pending: the INTA cycle returns IRQ7's vector. */
	assert_int_equal(pic_ack(&pic), 0x27);

	/* Poll: 0x80 | irq, and the request is acknowledged. */
	out(0x21, 0xf8);
	pic_set_irq(&pic, 2 - 1, true);
	out(0x20, 0x0c);
	assert_int_equal(in(0x20), 0x81);
	assert_int_equal(read_isr(0x20), 0x02);
	out(0x20, 0x20);
	out(0x20, 0x0c);
	assert_int_equal(in(0x21), 0x00); /* nothing: 0 */

	/* Set priority: IRQ0 lowest -> IRQ1 highest. */
	out(0x21, 0x00);
	pic_set_irq(&pic, 0, true);
	pic_set_irq(&pic, 5, true);
	assert_int_equal(pic_pending_vector(&pic), 0x20);
	out(0x20, 0xc4);  /* IRQ4 lowest: IRQ5 is now the highest */
	assert_int_equal(pic_pending_vector(&pic), 0x25);

	/* Auto-EOI: the ack leaves ISR empty. */
	pic_init(&pic, FAKE_HOST);
	out(0x20, 0x11); out(0x21, 0x20); out(0x21, 0x04); out(0x21, 0x03);
	out(0x21, 0x00);
	pic_set_irq(&pic, 4, true);
	assert_int_equal(pic_ack(&pic), 0x24);
	assert_int_equal(read_isr(0x20), 0);
}

static void test_wide_access(void **state)
{
	(void)state;
	/* A 16-bit read of 0x20 reads IRR then IMR. */
	uint64_t d = 0;
	pic_set_irq(&pic, 2 + 1, true);
	out(0x20, 0x0a);
	assert_int_equal(pic_io(&pic, 0x20, &d, 2, false), IO_OK);
	assert_int_equal(d, 0xfb08);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ranges, setup),
		cmocka_unit_test_setup(test_init_and_masks, setup),
		cmocka_unit_test_setup(test_firmware_state, setup_firmware),
		cmocka_unit_test_setup(test_power_up_vs_firmware, setup_firmware),
		cmocka_unit_test_setup(test_ack_eoi_nesting, setup),
		cmocka_unit_test_setup(test_edge_latching, setup),
		cmocka_unit_test_setup(test_cascade, setup),
		cmocka_unit_test_setup(test_level_elcr, setup),
		cmocka_unit_test_setup(test_spurious_poll_rotate_aeoi, setup),
		cmocka_unit_test_setup(test_wide_access, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
