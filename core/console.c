#include "core/console.h"

#include <stdarg.h>

#include "core/cpu.h"
#include "include/lightpath/abi.h"
#include "lib/printf.h"

#define COM1 0x3f8

void console_init(void)
{
	outb(COM1 + 1, 0x00);  /* no interrupts */
	outb(COM1 + 3, 0x80);  /* DLAB */
	outb(COM1 + 0, 0x01);  /* 115200 */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);  /* 8N1 */
	outb(COM1 + 2, 0xC7);  /* FIFO on */
	outb(COM1 + 4, 0x03);
}

void console_putc(char c)
{
	if (c == '\n')
		console_putc('\r');
	for (int spin = 0; spin < 100000 && !(inb(COM1 + 5) & 0x20); spin++)
		;
	outb(COM1, (uint8_t)c);
}

void console_write(const char *s)
{
	while (*s)
		console_putc(*s++);
}

void kprintf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	console_write(buf);
}

void panic(const char *fmt, ...)
{
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	console_write("lightpath: panic: ");
	console_write(buf);
	console_write("\n");
	power_off(LP_STATUS_HV_ERROR);
}

void power_off(unsigned status)
{
	/* QEMU's isa-debug-exit turns this into exit code (status << 1) | 1. */
	outl(LP_DEBUG_EXIT_PORT, status);
	/* Still running: no isa-debug-exit. Under Bochs (port 0xe9 reads back
	 * 0xe9 there, 0xff elsewhere) its shutdown port ends the emulator; the
	 * status is in the last console line. */
	if (inb(0xe9) == 0xe9) {
		for (int spin = 0; spin < 100000 && !(inb(COM1 + 5) & 0x40); spin++)
			;   /* let the UART shift out the last character */
		for (const char *s = "Shutdown"; *s; s++)
			outb(0x8900, (uint8_t)*s);
	}
	halt_forever();
}
