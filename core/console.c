#include "core/console.h"

#include <stdarg.h>

#include "core/cpu.h"
#include "core/percpu.h"
#include "core/smp.h"
#include "core/spinlock.h"
#include "include/lightpath/abi.h"
#include "lib/printf.h"
#include "lib/string.h"

#define COM1 0x3f8
#define BOCHS_E9_PORT 0xe9

static bool line_open;   /* bytes sent since the last '\n' */
static unsigned line_owner;   /* who left it open: 0 lightpath, n + 1 VM n */

/* One CPU prints at a time, whole lines. Recursive: kprintf inside a
 * console_lock() stretch (the statistics table), or a panic while printing. */
static struct spinlock lock;
static volatile unsigned lock_cpu = ~0u, lock_depth;

void console_lock(void)
{
	unsigned me = this_cpu()->cpu_id;
	if (__atomic_load_n(&lock_cpu, __ATOMIC_RELAXED) == me) {
		lock_depth++;
		return;
	}
	spin_lock(&lock);
	lock_cpu = me;
	lock_depth = 1;
}

void console_unlock(void)
{
	if (--lock_depth)
		return;
	lock_cpu = ~0u;
	spin_unlock(&lock);
}

void console_release_mine(void)
{
	if (__atomic_load_n(&lock_cpu, __ATOMIC_RELAXED) != this_cpu()->cpu_id)
		return;
	lock_depth = 1;
	console_unlock();
}

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

static void uart_out(uint8_t b)
{
	for (int spin = 0; spin < 100000 && !(inb(COM1 + 5) & 0x20); spin++)
		;
	outb(COM1, b);
}

void console_putc(char c)
{
	if (c == '\n')
		uart_out('\r');
	uart_out((uint8_t)c);
	line_open = c != '\n';
	line_owner = 0;
}

void console_putc_as(unsigned owner, char c)
{
	console_putc(c);
	line_owner = owner;
}

bool console_line_open_by_other(unsigned owner)
{
	return line_open && line_owner != owner;
}

void console_write(const char *s)
{
	console_lock();
	while (*s)
		console_putc(*s++);
	console_unlock();
}

bool console_at_line_start(void)
{
	return !line_open;
}

/* buf holds len bytes of formatted text (len may exceed size when cut):
 * make it whole lines, with the cut visible. */
static void finish_lines(char *buf, size_t size, size_t len)
{
	static const char mark[] = KPRINTF_CUT_MARK "\n";
	if (len >= size) {
		memcpy(buf + size - sizeof(mark), mark, sizeof(mark));
		return;
	}
	if (len == 0 || buf[len - 1] != '\n') {
		if (len + 1 < size) {
			buf[len] = '\n';
			buf[len + 1] = '\0';
		} else {
			memcpy(buf + size - sizeof(mark), mark, sizeof(mark));
		}
	}
}

void kprintf(const char *fmt, ...)
{
	char buf[KPRINTF_LINE_MAX + 1];   /* + the newline */
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	finish_lines(buf, sizeof(buf), n < 0 ? 0 : (size_t)n);
	console_lock();
	if (line_open)              /* a guest's unfinished line: end it first */
		console_putc('\n');
	for (const char *s = buf; *s; s++) {
		unsigned char c = (unsigned char)*s;
		/* a '\r' or an escape from a string we quote must not move the
		 * terminal's cursor over what was printed */
		console_putc(c < 0x20 && c != '\n' && c != '\t' ? '?' : (char)c);
	}
	console_unlock();
}

void panic(const char *fmt, ...)
{
	char buf[KPRINTF_LINE_MAX];   /* a longer message is cut by kprintf */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("lightpath: panic: %s\n", buf);
	if (this_cpu()->cpu_id != 0)
		smp_ap_panicked();   /* its VM stops; the machine goes on without it */
	power_off(LP_STATUS_HV_ERROR);
}

unsigned power_off_status(unsigned status)
{
	return status > POWER_OFF_STATUS_MAX ? POWER_OFF_STATUS_MAX : status;
}

void power_off(unsigned status)
{
	unsigned v = power_off_status(status);
	/* QEMU's isa-debug-exit turns this into exit code (v << 1) | 1. */
	outl(LP_DEBUG_EXIT_PORT, v);
	/* Still running: no isa-debug-exit. Under Bochs (port 0xe9 reads back
	 * 0xe9 there, 0xff elsewhere) the status goes to port 0xe9, which Bochs
	 * prints on its own output and no guest can reach (guests' port I/O is
	 * intercepted), then its shutdown port ends the emulator. */
	if (inb(BOCHS_E9_PORT) == BOCHS_E9_PORT) {
		char line[48];
		snprintf(line, sizeof(line), "\nlightpath-power-off-status: %u\n", v);
		for (const char *s = line; *s; s++)
			outb(BOCHS_E9_PORT, (uint8_t)*s);
		for (int spin = 0; spin < 100000 && !(inb(COM1 + 5) & 0x40); spin++)
			;   /* let the UART shift out the last character */
		for (const char *s = "Shutdown"; *s; s++)
			outb(0x8900, (uint8_t)*s);
	}
	halt_forever();
}
