/* dev/uart16550.c register logic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/uart16550.h"
#include "tests/unit/stubs.h"

#define COM1 0x3f8u

static struct uart16550 uart;

static int setup(void **state)
{
	(void)state;
	stubs_reset();
	uart16550_init(&uart, FAKE_HOST);
	return 0;
}

static void out(unsigned reg, uint64_t v, unsigned size)
{
	assert_int_equal(uart16550_io(&uart, COM1 + reg, &v, size, true), IO_OK);
}

static uint64_t in(unsigned reg, unsigned size)
{
	uint64_t v = 0xdeadbeefcafef00dull;
	assert_int_equal(uart16550_io(&uart, COM1 + reg, &v, size, false), IO_OK);
	return v;
}

static void outb(unsigned reg, uint8_t v) { out(reg, v, 1); }
static uint8_t inb(unsigned reg) { return (uint8_t)in(reg, 1); }

static void test_range(void **state)
{
	(void)state;
	assert_int_equal(uart16550_desc.nr_ranges, 1);
	assert_true(stub_desc_range_is(&uart16550_desc, 0, 0x3f8, 8, uart16550_io, true));
	assert_int_equal(uart.base, 0x3f8);
	assert_false(uart16550_desc.lock_free);   /* heavy with several vCPUs */
	assert_string_equal(uart16550_desc.name, "uart16550");
	assert_ptr_equal(uart.host, FAKE_HOST);
	assert_true(uart16550_desc.init == uart16550_init);
	assert_int_equal(uart16550_desc.irq, 4);
	assert_int_equal(uart.irq.gsi, 4);   /* the descriptor's, through dev_irq_line */
}

static void test_reset_values(void **state)
{
	(void)state;
	assert_int_equal(inb(UART_IER), 0);
	assert_int_equal(inb(UART_IIR), UART_IIR_NO_INT);
	assert_int_equal(inb(UART_LCR), 0);
	assert_int_equal(inb(UART_MCR), UART_MCR_OUT2);
	assert_int_equal(inb(UART_LSR), 0x60);
	assert_int_equal(inb(UART_MSR), 0xb0);
	assert_int_equal(inb(UART_SCR), 0);
	/* Nothing received: RBR reads 0 and LSR.DR stays clear. */
	assert_int_equal(inb(UART_RBR), 0);
	assert_int_equal(inb(UART_LSR), 0x60);
}

static void test_thr_output(void **state)
{
	(void)state;
	const char *msg = "hello, lightpath\n";
	for (const char *p = msg; *p; p++)
		outb(UART_THR, (uint8_t)*p);
	assert_string_equal(stub_console, msg);
	assert_ptr_equal(stub_console_host, FAKE_HOST);
	/* High bytes pass through unchanged. */
	outb(UART_THR, 0xe9);
	assert_int_equal((uint8_t)stub_console[stub_console_len - 1], 0xe9);
	assert_int_equal(inb(UART_LSR), UART_LSR_THRE | UART_LSR_TEMT);
}

static void test_dlab(void **state)
{
	(void)state;
	outb(UART_IER, UART_IER_RDI);
	outb(UART_LCR, UART_LCR_DLAB | 0x03);
	assert_int_equal(inb(UART_DLL), 12); /* reset divisor: 9600 baud */
	assert_int_equal(inb(UART_DLM), 0);
	outb(UART_DLL, 0x01);
	outb(UART_DLM, 0x02);
	assert_int_equal(inb(UART_DLL), 0x01);
	assert_int_equal(inb(UART_DLM), 0x02);
	/* With DLAB set, writes to offset 0 do not transmit. */
	assert_int_equal(stub_console_len, 0);
	assert_int_equal(inb(UART_LCR), 0x83);

	outb(UART_LCR, 0x03);
	assert_int_equal(uart.dll, 0x01);
	assert_int_equal(uart.dlm, 0x02);
	assert_int_equal(inb(UART_IER), UART_IER_RDI); /* IER untouched by DLM */
	outb(UART_THR, 'A');
	assert_int_equal(stub_console_len, 1);
	assert_int_equal(stub_console[0], 'A');
	assert_int_equal(uart.dll, 0x01);
}

static void test_ier_mask_and_lcr_mcr(void **state)
{
	(void)state;
	outb(UART_IER, 0xff);
	assert_int_equal(inb(UART_IER), 0x0f);
	outb(UART_LCR, 0x1b);
	assert_int_equal(inb(UART_LCR), 0x1b);
	outb(UART_MCR, 0xff);
	assert_int_equal(inb(UART_MCR), 0x1f);
}

static void test_scratch(void **state)
{
	(void)state;
	static const uint8_t pattern[] = { 0x00, 0x55, 0xaa, 0xff, 0x42 };
	for (size_t i = 0; i < sizeof(pattern); i++) {
		outb(UART_SCR, pattern[i]);
		assert_int_equal(inb(UART_SCR), pattern[i]);
	}
}

static void test_lsr_is_read_only(void **state)
{
	(void)state;
	outb(UART_LSR, 0x00);
	outb(UART_MSR, 0x00);
	assert_int_equal(inb(UART_LSR), 0x60);
	assert_int_equal(inb(UART_MSR), 0xb0);
}

static void test_rx_fifo(void **state)
{
	(void)state;
	assert_true(uart16550_receive(&uart, 'x'));
	assert_true(uart16550_receive(&uart, 'y'));
	assert_int_equal(inb(UART_LSR), 0x61);
	assert_int_equal(inb(UART_RBR), 'x');
	assert_int_equal(inb(UART_LSR), 0x61);
	assert_int_equal(inb(UART_RBR), 'y');
	assert_int_equal(inb(UART_LSR), 0x60);
	assert_int_equal(inb(UART_RBR), 0);

	/* Fill to capacity across the ring's wrap point, then overflow. */
	for (unsigned i = 0; i < UART16550_RX_FIFO; i++)
		assert_true(uart16550_receive(&uart, (uint8_t)(0x30 + i)));
	assert_false(uart16550_receive(&uart, 0x99));
	assert_int_equal(inb(UART_LSR), 0x60 | UART_LSR_OE | UART_LSR_DR);
	assert_int_equal(inb(UART_LSR), 0x61); /* OE is cleared by the read */
	for (unsigned i = 0; i < UART16550_RX_FIFO; i++)
		assert_int_equal(inb(UART_RBR), 0x30 + i);
	assert_int_equal(inb(UART_LSR), 0x60);

	/* With DLAB set, offset 0 is DLL: the FIFO is not popped. */
	uart16550_receive(&uart, 'z');
	outb(UART_LCR, UART_LCR_DLAB);
	assert_int_equal(inb(UART_RBR), 12);
	outb(UART_LCR, 0);
	assert_int_equal(inb(UART_RBR), 'z');
}

static void test_fcr(void **state)
{
	(void)state;
	assert_int_equal(inb(UART_IIR) & 0xc0, 0);
	outb(UART_FCR, UART_FCR_ENABLE);
	assert_int_equal(inb(UART_IIR), 0xc1); /* 16550A: FIFOs enabled, no irq */
	uart16550_receive(&uart, 'a');
	uart16550_receive(&uart, 'b');
	outb(UART_FCR, UART_FCR_ENABLE | UART_FCR_CLEAR_RX);
	assert_int_equal(inb(UART_LSR), 0x60);
	assert_int_equal(inb(UART_RBR), 0);
	outb(UART_FCR, 0);
	assert_int_equal(inb(UART_IIR), 0x01);
}

static void test_iir(void **state)
{
	(void)state;
	/* Enabling THRI with an empty transmitter raises it; reading IIR
	 * reports it once. */
	outb(UART_IER, UART_IER_THRI);
	assert_int_equal(inb(UART_IIR), UART_IIR_THRI);
	assert_int_equal(inb(UART_IIR), UART_IIR_NO_INT);
	outb(UART_THR, '.');
	assert_int_equal(inb(UART_IIR), UART_IIR_THRI);
	assert_int_equal(inb(UART_IIR), UART_IIR_NO_INT);
	/* Received data has priority and lasts until the FIFO is drained. */
	outb(UART_IER, UART_IER_THRI | UART_IER_RDI);
	uart16550_receive(&uart, 'q');
	outb(UART_THR, '.');
	assert_int_equal(inb(UART_IIR), UART_IIR_RDI);
	assert_int_equal(inb(UART_IIR), UART_IIR_RDI);
	assert_int_equal(inb(UART_RBR), 'q');
	assert_int_equal(inb(UART_IIR), UART_IIR_THRI);
	assert_int_equal(inb(UART_IIR), UART_IIR_NO_INT);
	/* Data without RDI enabled raises nothing. */
	outb(UART_IER, 0);
	uart16550_receive(&uart, 'r');
	assert_int_equal(inb(UART_IIR), UART_IIR_NO_INT);
}

static void test_loopback(void **state)
{
	(void)state;
	/* Linux 8250 probe: MCR = LOOP|OUT2|RTS must read MSR = DCD|CTS. */
	outb(UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2 | UART_MCR_RTS);
	assert_int_equal(inb(UART_MSR) & 0xf0, 0x90);
	outb(UART_MCR, UART_MCR_LOOP | UART_MCR_DTR | UART_MCR_OUT1);
	assert_int_equal(inb(UART_MSR), UART_MSR_DSR | UART_MSR_RI);
	/* Transmitted bytes come back instead of reaching the console. */
	outb(UART_THR, 'L');
	assert_int_equal(stub_console_len, 0);
	assert_int_equal(inb(UART_LSR), 0x61);
	assert_int_equal(inb(UART_RBR), 'L');
	outb(UART_MCR, UART_MCR_OUT2);
	assert_int_equal(inb(UART_MSR), 0xb0);
	outb(UART_THR, 'M');
	assert_string_equal(stub_console, "M");
}

static void test_wide_access(void **state)
{
	(void)state;
	/* A 16-bit write at base: THR gets the low byte, IER the high byte. */
	out(UART_THR, 0x0241, 2);
	assert_string_equal(stub_console, "A");
	assert_int_equal(inb(UART_IER), 0x02);
	/* A 32-bit read at LCR covers LCR, MCR, LSR, MSR. */
	outb(UART_LCR, 0x03);
	assert_int_equal(in(UART_LCR, 4), 0xb0600803u);
	/* Bytes past the eighth port read as 0xff and are dropped on write. */
	outb(UART_SCR, 0x5a);
	assert_int_equal(in(UART_SCR, 2), 0xff5a);
	out(UART_SCR, 0x77a5, 2);
	assert_int_equal(inb(UART_SCR), 0xa5);
	/* A 1-byte read stores the whole 64-bit value, zero-extended. */
	assert_int_equal(in(UART_SCR, 1), 0xa5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_range, setup),
		cmocka_unit_test_setup(test_reset_values, setup),
		cmocka_unit_test_setup(test_thr_output, setup),
		cmocka_unit_test_setup(test_dlab, setup),
		cmocka_unit_test_setup(test_ier_mask_and_lcr_mcr, setup),
		cmocka_unit_test_setup(test_scratch, setup),
		cmocka_unit_test_setup(test_lsr_is_read_only, setup),
		cmocka_unit_test_setup(test_rx_fifo, setup),
		cmocka_unit_test_setup(test_fcr, setup),
		cmocka_unit_test_setup(test_iir, setup),
		cmocka_unit_test_setup(test_loopback, setup),
		cmocka_unit_test_setup(test_wide_access, setup),
	};
	return cmocka_run_group_tests_name("uart16550", tests, NULL, NULL);
}
