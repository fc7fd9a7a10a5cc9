#include "lib/printf.h"

#include <stdbool.h>
#include <stdint.h>

struct out {
	char *buf;
	size_t size;
	size_t len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct out *o, uint64_t v, unsigned base, bool upper,
		    bool neg, int width, bool zero, bool left)
{
	char tmp[24];
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	int n = 0;
	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	int len = n + (neg ? 1 : 0);
	if (!left && !zero)
		for (; width > len; width--)
			put(o, ' ');
	if (neg)
		put(o, '-');
	if (!left && zero)
		for (; width > len; width--)
			put(o, '0');
	while (n)
		put(o, tmp[--n]);
	if (left)
		for (; width > len; width--)
			put(o, ' ');
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		bool left = false, zero = false;
		for (;; fmt++) {
			if (*fmt == '-')
				left = true;
			else if (*fmt == '0')
				zero = true;
			else
				break;
		}
		int width = 0, precision = -1;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		if (*fmt == '.') {          /* precision: honoured for %s only */
			fmt++;
			precision = 0;
			if (*fmt == '*') {
				precision = va_arg(ap, int);
				fmt++;
			} else {
				while (*fmt >= '0' && *fmt <= '9')
					precision = precision * 10 + (*fmt++ - '0');
			}
		}
		int lng = 0;
		while (*fmt == 'l' || *fmt == 'z') {
			lng++;
			fmt++;
		}
		uint64_t u;
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t s = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			u = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
			put_num(&o, u, 10, false, s < 0, width, zero, left);
			break;
		}
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			u = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			put_num(&o, u, *fmt == 'u' ? 10 : *fmt == 'o' ? 8 : 16,
				*fmt == 'X', false, width, zero, left);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false,
				false, width, zero, left);
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			int len = 0;
			while (s[len] && (precision < 0 || len < precision))
				len++;
			if (!left)
				for (; width > len; width--)
					put(&o, ' ');
			for (int i = 0; i < len; i++)
				put(&o, s[i]);
			if (left)
				for (; width > len; width--)
					put(&o, ' ');
			break;
		}
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
