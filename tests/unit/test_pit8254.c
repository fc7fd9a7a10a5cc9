/* dev/pit8254.c: modes 0/2/3/4, access modes, latches, read-back, port 0x61,
 * channel 0's IRQ0 schedule. The TSC runs at exactly 10x the PIT clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/pit8254.h"
#include "tests/unit/stubs.h"

#define T0 100000ull   /* the TSC when the test programs the PIT */
static struct pit8254 pit;

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	stub_tsc_hz = PIT_HZ * 10;
	stub_tsc = 0;
	pit_init(&pit, FAKE_HOST);
	stub_tsc = T0;
	return 0;
}

static void out(uint16_t port, uint8_t v)
{
	uint64_t d = v;
	int rc = port == 0x61 ? pit_port61_io(&pit, port, &d, 1, true)
			      : pit_io(&pit, port, &d, 1, true);
	assert_int_equal(rc, IO_OK);
}

static uint8_t in(uint16_t port)
{
	uint64_t d = 0xdead;
	int rc = port == 0x61 ? pit_port61_io(&pit, port, &d, 1, false)
			      : pit_io(&pit, port, &d, 1, false);
	assert_int_equal(rc, IO_OK);
	assert_true(d <= 0xff);
	return (uint8_t)d;
}

static uint16_t latched(unsigned ch)
{
	out(0x43, (uint8_t)(ch << 6));        /* counter latch */
	uint8_t lo = in((uint16_t)(0x40 + ch));
	return (uint16_t)(lo | in((uint16_t)(0x40 + ch)) << 8);
}

static void at(uint64_t ticks) { stub_tsc = T0 + ticks * 10; }

static void test_ranges_and_reset(void **state)
{
	(void)state;
	assert_int_equal(pit8254_desc.nr_ranges, 2);
	assert_false(pit8254_desc.mmio);
	assert_true(stub_desc_range_is(&pit8254_desc, 0, 0x40, 4, pit_io, true));
	assert_true(stub_desc_range_is(&pit8254_desc, 1, 0x61, 1, pit_port61_io, true));
	assert_true(pit8254_desc.init == pit_init);
	assert_int_equal(pit.irq.gsi, 0);   /* IRQ0, the descriptor's */
	/* after reset: mode 3, count 65536 counting, but no IRQ0 scheduled */
	assert_int_equal(pit.ch[0].mode, 3);
	assert_false(pit.timer.armed);
	assert_int_equal(in(0x61) & 0x01, 0);  /* channel 2 gate off */
}

/* Linux's pit_calibrate_tsc(): channel 2, mode 0, then poll port 0x61 bit 5. */
static void test_mode0_channel2_port61(void **state)
{
	(void)state;
	out(0x61, (in(0x61) & ~0x02) | 0x01);
	assert_int_equal(in(0x61) & 0x03, 0x01);
	out(0x43, 0xb0);                       /* ch2, lo/hi, mode 0, binary */
	assert_int_equal(in(0x61) & PORT61_OUT2, 0); /* mode 0: OUT low at once */
	out(0x42, 1000 & 0xff);
	out(0x42, 1000 >> 8);                  /* counting from T0 */
	at(400);
	assert_int_equal(latched(2), 600);
	assert_int_equal(in(0x61) & PORT61_OUT2, 0);
	stub_tsc = T0 + 10 * 1000 - 1;
	assert_int_equal(in(0x61) & PORT61_OUT2, 0);
	at(1000);
	assert_int_equal(in(0x61) & PORT61_OUT2, PORT61_OUT2);
	at(5000);
	assert_int_equal(in(0x61) & PORT61_OUT2, PORT61_OUT2); /* stays high */
	assert_int_equal(latched(2), (uint16_t)(1000 - 5000)); /* wraps on */
	/* channel 2 raises no IRQ */
	assert_int_equal(stub_irq_calls, 0);
}

static void test_gate_pauses_mode0(void **state)
{
	(void)state;
	out(0x61, 0x00);                        /* gate low */
	out(0x43, 0xb0);
	out(0x42, 100);
	out(0x42, 0);
	at(500);
	assert_int_equal(latched(2), 100);      /* not counting */
	out(0x61, 0x01);                        /* counting from tick 500 */
	at(560);
	assert_int_equal(latched(2), 40);
	out(0x61, 0x00);
	at(1000);
	assert_int_equal(latched(2), 40);
	assert_int_equal(in(0x61) & PORT61_OUT2, 0);
	out(0x61, 0x01);
	at(1040);
	assert_int_equal(in(0x61) & PORT61_OUT2, PORT61_OUT2);
}

static void test_mode2_irq0(void **state)
{
	(void)state;
	out(0x43, 0x34);                        /* ch0, lo/hi, mode 2 */
	assert_false(pit.timer.armed);
	out(0x40, 100);
	out(0x40, 0);
	assert_true(pit.timer.armed);
	assert_int_equal(pit.timer.deadline_tsc, T0 + 1000);
	at(37);
	assert_int_equal(latched(0), 63);
	stubs_advance_to(T0 + 999);
	assert_int_equal(stub_irq_raises[0], 0);
	stubs_advance_to(T0 + 1000);
	assert_int_equal(stub_irq_raises[0], 1);
	assert_false(stub_irq_level[0]);        /* a pulse: back low */
	stubs_advance_to(T0 + 5500);
	assert_int_equal(stub_irq_raises[0], 5);
	assert_int_equal(pit.irqs, 5);
	/* a guest that takes no interrupt: the edges are counted, none merges
	 * with the one still waiting */
	stub_irq_edge_state = IRQ_EDGE_WAITING;
	stubs_advance_to(T0 + 10 * 1000);       /* edges at 600 .. 1000 */
	assert_int_equal(stub_irq_raises[0], 5);
	assert_int_equal(pit.irq_late, 5);
	/* each interrupt the CPU takes lets the next edge go at once */
	stub_irq_edge_state = IRQ_EDGE_FREE;
	for (unsigned i = 0; i < 5; i++)
		pit_irq_taken(&pit);
	assert_int_equal(stub_irq_raises[0], 10);
	assert_int_equal(pit.irq_late, 0);
	assert_int_equal(pit.irqs_late, 5);
	pit_irq_taken(&pit);                    /* nothing late: nothing sent */
	assert_int_equal(stub_irq_raises[0], 10);
	/* a late timer (the guest did not run): every edge counts */
	vm_timer_cancel(&pit.timer);
	stub_tsc = T0 + 10 * 1234 + 5;
	pit.timer.fire(&pit.timer, stub_tsc);
	assert_int_equal(stub_irq_raises[0], 11);
	assert_int_equal(pit.irq_late, 1);
	assert_int_equal(pit.timer.deadline_tsc, T0 + 10 * 1300);
	pit_irq_taken(&pit);
	assert_int_equal(stub_irq_raises[0], 12);
	/* no controller passes IRQ0 on: each edge still reaches the pins (a
	 * masked 8259 latches it), none is kept for later */
	stub_irq_edge_state = IRQ_EDGE_MASKED;
	stubs_advance_to(T0 + 10 * 1500);
	assert_int_equal(stub_irq_raises[0], 15);
	assert_int_equal(pit.irq_late, 0);
	vm_timer_cancel(&pit.timer);
	stub_tsc = T0 + 10 * 1800;              /* three at once: one sent */
	pit.timer.fire(&pit.timer, stub_tsc);
	assert_int_equal(stub_irq_raises[0], 16);
	assert_int_equal(pit.irq_late, 0);
	assert_int_equal(pit.irqs_dropped, 2);
	stub_irq_edge_state = IRQ_EDGE_FREE;
	/* a control word stops it until the next count (Linux's shutdown) */
	out(0x43, 0x30);
	assert_false(pit.timer.armed);
	out(0x40, 0);
	out(0x40, 0);                           /* mode 0, 65536: one more IRQ */
	assert_true(pit.timer.armed);
	uint64_t t = stub_tsc;
	stubs_advance_to(t + 10 * 65536 * 3);
	assert_int_equal(stub_irq_raises[0], 17);
	assert_int_equal(pit.irqs, 17);
	assert_false(pit.timer.armed);
}

static void test_mode3_square_wave(void **state)
{
	(void)state;
	out(0x43, 0x36);                        /* ch0, lo/hi, mode 3 */
	out(0x40, 10);
	out(0x40, 0);
	at(2);
	assert_int_equal(latched(0), 6);        /* counts down by two */
	/* read-back status: OUT high in the first half */
	out(0x43, 0xe2);                        /* status only, channel 0 */
	assert_int_equal(in(0x40), 0x80 | 0x30 | 0x06);
	at(5);
	out(0x43, 0xe2);
	assert_int_equal(in(0x40) & 0x80, 0);   /* low in the second half */
	stubs_advance_to(T0 + 10 * 100);
	assert_int_equal(stub_irq_raises[0], 10); /* one rising edge per period */
}

static void test_mode4_and_access_modes(void **state)
{
	(void)state;
	/* mode 4, LSB only: one IRQ, one tick after terminal count */
	out(0x43, 0x18);
	out(0x40, 50);
	assert_int_equal(pit.timer.deadline_tsc, T0 + 510);
	stubs_advance_to(T0 + 10000);
	assert_int_equal(stub_irq_raises[0], 1);
	/* LSB-only reads */
	at(20);
	out(0x43, 0x18);
	out(0x40, 50);
	at(30);
	assert_int_equal(in(0x40), 40);
	/* MSB-only: count 0x0300 */
	out(0x43, 0x28);
	out(0x40, 3);
	assert_int_equal(pit.ch[0].count, 0x300);
	at(30 + 0x100);
	assert_int_equal(in(0x40), 2);
	/* lo/hi reads without a latch alternate */
	out(0x43, 0x30);
	out(0x40, 0x34);
	out(0x40, 0x12);
	assert_int_equal(in(0x40), 0x34);
	assert_int_equal(in(0x40), 0x12);
	/* a latch holds its value until read, even as time passes */
	out(0x43, 0x00);
	at(30 + 0x100 + 0x10);
	assert_int_equal(in(0x40), 0x34);
	out(0x43, 0x00);                        /* a second latch does nothing */
	assert_int_equal(in(0x40), 0x12);
	assert_int_equal(in(0x40), 0x24);       /* live again: 0x1234 - 0x10 */
	/* read-back of count and status together: status first */
	out(0x43, 0xc2);
	assert_int_equal(in(0x40), 0x30);       /* mode 0 before terminal count: OUT low */
	at(30 + 0x100 + 0x20);
	assert_int_equal(in(0x40), 0x24);       /* the count latched with it */
	assert_int_equal(in(0x40), 0x12);
}

static void test_refresh_toggle(void **state)
{
	(void)state;
	/* 15.085 us at 11.93182 MHz: 180 TSC cycles per half period */
	stub_tsc = 0;
	uint8_t a = in(0x61) & PORT61_REFRESH;
	stub_tsc = 180;
	uint8_t b = in(0x61) & PORT61_REFRESH;
	stub_tsc = 360;
	uint8_t c = in(0x61) & PORT61_REFRESH;
	assert_int_not_equal(a, b);
	assert_int_equal(a, c);
	/* writes keep only the low four bits */
	out(0x61, 0xff);
	assert_int_equal(in(0x61) & 0x0f, 0x0f);
	assert_int_equal(pit.port61, 0x0f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ranges_and_reset, setup),
		cmocka_unit_test_setup(test_mode0_channel2_port61, setup),
		cmocka_unit_test_setup(test_gate_pauses_mode0, setup),
		cmocka_unit_test_setup(test_mode2_irq0, setup),
		cmocka_unit_test_setup(test_mode3_square_wave, setup),
		cmocka_unit_test_setup(test_mode4_and_access_modes, setup),
		cmocka_unit_test_setup(test_refresh_toggle, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
