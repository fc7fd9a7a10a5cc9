/* The host console: COM1, 115200 8N1. All hypervisor output goes here. */
#ifndef CORE_CONSOLE_H
#define CORE_CONSOLE_H

void console_init(void);
void console_putc(char c);
void console_write(const char *s);
/* printf-style output to the console (lib/printf.h formats). */
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints one "lightpath: panic: ..." line and powers off (or halts). */
void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Ends the machine: isa-debug-exit with status under QEMU, halt otherwise. */
void power_off(unsigned status) __attribute__((noreturn));

#endif
