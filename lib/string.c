#include "lib/string.h"

/* Word at a time: the emulator and the loaders copy structures on exit
 * paths, the virtio devices whole frames and sectors between buffers of
 * any alignment. x86 loads and stores a word at any address, so the source
 * and destination need not share an alignment (aligned(1) tells the
 * compiler so). Long copies use REP MOVS (DF is clear: the ABI's, and
 * what a #VMEXIT leaves on both backends). */
typedef unsigned long __attribute__((may_alias, aligned(1))) word_t;

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n >= 128) {   /* a sector or a frame: the CPU's string move, a word a step */
		size_t words = n / sizeof(word_t);
#ifdef __x86_64__
		asm volatile("rep movsq" : "+D"(d), "+S"(s), "+c"(words) : : "memory");
#else
		asm volatile("rep movsl" : "+D"(d), "+S"(s), "+c"(words) : : "memory");
#endif
		n %= sizeof(word_t);
	}
	for (; n >= sizeof(word_t); n -= sizeof(word_t)) {
		*(word_t *)d = *(const word_t *)s;
		d += sizeof(word_t);
		s += sizeof(word_t);
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d < s) {
		while (n--)
			*d++ = *s++;
	} else {
		while (n--)
			d[n] = s[n];
	}
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	while (n && ((unsigned long)d & (sizeof(word_t) - 1))) {
		*d++ = (unsigned char)c;
		n--;
	}
	word_t w = (unsigned char)c;
	w |= w << 8;
	w |= w << 16;
	if (sizeof(word_t) > 4)
		w |= w << 16 << 16;
	for (; n >= sizeof(word_t); n -= sizeof(word_t)) {
		*(word_t *)d = w;
		d += sizeof(word_t);
	}
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			return 0;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return 0;
	}
}
