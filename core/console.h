/* The host console: COM1, 115200 8N1. All hypervisor output goes here, and
 * so does guest output (vm_console_putc), each guest line behind "[vmN] ".
 *
 * lightpath's own output is whole lines: kprintf() starts on a fresh line
 * (ending a guest's unfinished one) and always ends with a newline, so a
 * log split at '\n' has every hypervisor line at a line start and every
 * guest byte on a line that starts "[vmN] ". */
#ifndef CORE_CONSOLE_H
#define CORE_CONSOLE_H

#include <stdbool.h>

/* Longest line kprintf() prints; longer ones are cut and end in
 * KPRINTF_CUT_MARK (then the newline). */
#define KPRINTF_LINE_MAX  256
#define KPRINTF_CUT_MARK  "...[cut]"

/* The largest status the power-off port passes on: QEMU's isa-debug-exit
 * exits with (v << 1) | 1 truncated to 8 bits, so a larger v would wrap
 * (0x80 would read as 0); larger statuses are clamped to this. */
#define POWER_OFF_STATUS_MAX 0x7fu

void console_init(void);
/* Several CPUs print: console_lock() makes what follows until
 * console_unlock() one CPU's alone (recursive on that CPU; kprintf and
 * console_write take it themselves). console_putc needs it held. */
void console_lock(void);
void console_unlock(void);
/* Lets the console lock go if this CPU holds it, however deep: a CPU that
 * panicked while printing and halts for good (core/smp.c). */
void console_release_mine(void);
/* One raw byte ('\n' goes out as "\r\n"). */
void console_putc(char c);
/* The same for VM n's output (owner n + 1), which may leave a line open;
 * and whether the open line, if any, is someone else's than `owner`'s. */
void console_putc_as(unsigned owner, char c);
bool console_line_open_by_other(unsigned owner);
void console_write(const char *s);
/* Is the console at the start of a line (nothing sent since the last '\n')? */
bool console_at_line_start(void);
/* Lines of lightpath's own output, printf-style (lib/printf.h formats): see
 * above. Control characters other than '\n' and '\t' are printed as '?'. */
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints one "lightpath: panic: ..." line and powers off (or halts). */
void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The status power_off() passes on for `status`: at most POWER_OFF_STATUS_MAX. */
unsigned power_off_status(unsigned status);
/* Ends the machine: QEMU's isa-debug-exit with power_off_status(status);
 * under Bochs the same value goes to port 0xe9 (a line
 * "lightpath-power-off-status: N") before its shutdown port; halts otherwise. */
void power_off(unsigned status) __attribute__((noreturn));

#endif
