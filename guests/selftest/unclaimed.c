/* unclaimed: guest-physical addresses that neither RAM nor a device claims
 * behave as on a PC (unclaimed=pc): reads return all-ones, writes are
 * dropped, for every access size, read-modify-write and string instruction.
 * Built flat 32-bit (unclaimed32.elf) and 64-bit paged (unclaimed64.elf).
 *
 * The addresses sit next to the MMIO test device (LP_MMIO_TEST_BASE, one
 * 4 KiB page), inside the 2 MiB that rt_map_mmio_test() maps in 64-bit
 * mode, so that an off-by-one in the device lookup shows too. At the end the
 * guest prints how many reads and writes it made there; the test compares
 * them with lightpath's "unclaimed MMIO: N reads, M writes" statistics line.
 * With unclaimed=stop the first access stops the VM. */
#include "guests/rt/rt.h"

#ifdef __x86_64__
#define NAME "unclaimed64"
#else
#define NAME "unclaimed32"
#endif

#define DEV_END   ((uintptr_t)LP_MMIO_TEST_BASE + 0x1000u)   /* first byte after the device */
#define WIN_LOW   ((uintptr_t)LP_MMIO_TEST_BASE - 0x100000u) /* 0xfea00000 */
#define WIN_HIGH  ((uintptr_t)LP_MMIO_TEST_BASE + 0xff000u)  /* last page before the IOAPIC */
#define STRING_LEN 8u

static unsigned reads, writes;   /* accesses made to unclaimed addresses */

static inline uint8_t rd8(uintptr_t a)
{
	uint8_t v;
	asm volatile("movb (%1), %0" : "=q"(v) : "r"(a) : "memory");
	reads++;
	return v;
}

static inline uint16_t rd16(uintptr_t a)
{
	uint16_t v;
	asm volatile("movw (%1), %0" : "=r"(v) : "r"(a) : "memory");
	reads++;
	return v;
}

static inline uint32_t rd32(uintptr_t a)
{
	uint32_t v;
	asm volatile("movl (%1), %0" : "=r"(v) : "r"(a) : "memory");
	reads++;
	return v;
}

static inline void wr32(uintptr_t a, uint32_t v)
{
	asm volatile("movl %0, (%1)" : : "r"(v), "r"(a) : "memory");
	writes++;
}

static void check_address(uintptr_t a)
{
	tap_eq(rd8(a), 0xff, "byte read of 0x%lx reads 0xff", (unsigned long)a);
	tap_eq(rd16(a + 2), 0xffff, "word read of 0x%lx reads 0xffff", (unsigned long)a + 2);
	tap_eq(rd32(a + 4), 0xffffffffu, "dword read of 0x%lx reads all-ones", (unsigned long)a + 4);
#ifdef __x86_64__
	uint64_t q;
	asm volatile("movq (%1), %0" : "=r"(q) : "r"(a + 8) : "memory");
	reads++;
	tap_eq(q, ~0ull, "qword read of 0x%lx reads all-ones", (unsigned long)a + 8);
#endif
	wr32(a + 4, 0x12345678u);
	tap_eq(rd32(a + 4), 0xffffffffu, "a write to 0x%lx is dropped", (unsigned long)a + 4);
}

int guest_main(void)
{
	tap_begin(NAME);
	rt_map_mmio_test();

	check_address(DEV_END);
	check_address(WIN_LOW);
	check_address(WIN_HIGH);

	/* Read-modify-write: reads all-ones, the write is dropped. */
	uint8_t carry, zero;
	asm volatile("addl $1, (%2)\n\tsetc %0\n\tsetz %1"
		     : "=q"(carry), "=q"(zero) : "r"(DEV_END) : "memory", "cc");
	tap_eq(carry << 1 | zero, 3, "add [unclaimed], 1 computes from all-ones (CF=1 ZF=1)");
	reads++, writes++;
	tap_eq(rd32(DEV_END), 0xffffffffu, "add [unclaimed], 1 leaves it reading all-ones");

	/* String instructions through the emulator's REP path. */
	uint8_t buf[STRING_LEN];
	memset(buf, 0x5a, sizeof(buf));
	void *dst = buf;
	const void *src = (const void *)WIN_HIGH;
	size_t n = STRING_LEN;
	asm volatile("cld\n\trep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
	reads += STRING_LEN;
	bool all_ones = true;
	for (unsigned i = 0; i < STRING_LEN; i++)
		all_ones &= buf[i] == 0xff;
	tap_ok(all_ones, buf[0], "0xff", "rep movsb from unclaimed memory copies all-ones");
	dst = (void *)WIN_HIGH;
	n = STRING_LEN;
	asm volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(0) : "memory");
	writes += STRING_LEN;
	tap_eq(rd32(WIN_HIGH), 0xffffffffu, "rep stosb to unclaimed memory is dropped");

	rt_printf("%s: made %u reads, %u writes to unclaimed addresses\n", NAME, reads, writes);
	return tap_end();
}
