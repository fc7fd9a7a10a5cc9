/* ports: port I/O as lightpath decodes it from the exit information.
 * Unhandled ports read as all-ones and drop writes; narrow INs merge into
 * EAX; the ACPI PM timer counts up; the statistics count the exits. */
#include "guests/rt/rt.h"

#define PM_MASK 0xffffffu

/* IN of 1/2 bytes with a chosen EAX beforehand: the result must keep the
 * untouched upper bits. */
static uint32_t in_merge(uint16_t port, uint32_t eax, int size)
{
	if (size == 1)
		asm volatile("inb %%dx, %%al" : "+a"(eax) : "d"(port));
	else
		asm volatile("inw %%dx, %%ax" : "+a"(eax) : "d"(port));
	return eax;
}

/* OUT of each size with a fault resume armed; returns the vector or 0. */
static unsigned out_safe(uint16_t port, uint32_t v, int size)
{
	rt_trap_clear();
	if (size == 1)
		asm volatile(RT_ARM_RESUME "outb %%al, %%dx\n1:" : : "a"(v), "d"(port) : "memory");
	else if (size == 2)
		asm volatile(RT_ARM_RESUME "outw %%ax, %%dx\n1:" : : "a"(v), "d"(port) : "memory");
	else
		asm volatile(RT_ARM_RESUME "outl %%eax, %%dx\n1:" : : "a"(v), "d"(port) : "memory");
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

/* PM timer read with only DX meaning the port: the upper half of EDX is
 * garbage on purpose (IN uses DX alone). */
static uint32_t pm_read_dx_garbage(void)
{
	uint32_t v, d = 0xdead0000u | LP_PMTIMER_PORT;
	asm volatile(".byte 0xed	/* inl (%%dx), %%eax */" : "=a"(v), "+d"(d));
	return v;
}

static uint64_t io_exits(void)
{
	sreg_t r = lp_hypercall(LP_HC_STATS, LP_EXIT_IO, 0, 0, NULL, NULL);
	return r < 0 ? 0 : (uint64_t)(ureg_t)r;
}

int guest_main(void)
{
	tap_begin("ports");
	unsigned port_exits = 0;
	uint64_t io_before = io_exits();

	static const uint16_t unhandled[] = { 0x1234, 0x2f8 };
	for (unsigned i = 0; i < 2; i++) {
		uint16_t p = unhandled[i];
		tap_eq(inb(p), 0xff, "inb from unhandled port 0x%x reads 0xff", p);
		tap_eq(inw(p), 0xffff, "inw from unhandled port 0x%x reads 0xffff", p);
		tap_eq(inl(p), 0xffffffffu, "inl from unhandled port 0x%x reads 0xffffffff", p);
		port_exits += 3;
	}
	tap_eq(in_merge(0x1234, 0x12345600u, 1), 0x123456ffu,
	       "8-bit IN leaves EAX[31:8] unchanged");
	tap_eq(in_merge(0x1234, 0x12340000u, 2), 0x1234ffffu,
	       "16-bit IN leaves EAX[31:16] unchanged");
	port_exits += 2;

	for (unsigned i = 0; i < 2; i++) {
		uint16_t p = unhandled[i];
		for (int size = 1; size <= 4; size *= 2)
			tap_eq(out_safe(p, 0x5a5a5a5au, size), 0,
			       "%d-byte OUT to unhandled port 0x%x is dropped without a fault",
			       size, p);
		port_exits += 3;
		tap_eq(inb(p), 0xff, "unhandled port 0x%x still reads 0xff after writes", p);
		port_exits++;
	}

	tap_eq(out_safe(LP_BENCH_PORT_OUT, 0x42, 1), 0, "outb to port 0x80 works");
	port_exits++;

	/* PM timer: 24 bits, counting up (mod 2^24), in both encodings. */
	uint32_t first = inl(LP_PMTIMER_PORT), prev = first, bad_hi = 0, backwards = 0;
	for (unsigned i = 0; i < 200; i++) {
		uint32_t v = (i & 1) ? pm_read_dx_garbage() : inl(LP_PMTIMER_PORT);
		if (v & ~PM_MASK)
			bad_hi = v;
		/* A step of more than half the range means it went back. */
		if (((v - prev) & PM_MASK) > PM_MASK / 2)
			backwards++;
		prev = v;
	}
	port_exits += 201;
	tap_eq(bad_hi, 0, "PM timer upper 8 bits are zero (inl (%%dx) and DX-only forms)");
	tap_eq(backwards, 0, "PM timer never goes backwards over 200 reads (mod 2^24)");
	tap_ok(((prev - first) & PM_MASK) != 0, prev, "a different value",
	       "PM timer advances (first 0x%x)", first);

	uint64_t io_after = io_exits();
	tap_ge(io_after - io_before, port_exits,
	       "LP_HC_STATS(LP_EXIT_IO) grew by at least the %u port exits made", port_exits);

	return tap_end();
}
