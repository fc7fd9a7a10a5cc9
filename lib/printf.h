/* Freestanding formatted output: %d %i %u %x %X %o %c %s %p %%, with flags
 * '-' and '0', a width, a precision for %s (".N" or ".*"), and the length
 * modifiers l, ll, z. */
#ifndef LIB_PRINTF_H
#define LIB_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
