#include "core/pmem.h"

#include "core/spinlock.h"
#include "lib/string.h"

#define MAX_FREE 64
#define IDENTITY_LIMIT (4ull << 30)

static struct boot_range free_ranges[MAX_FREE];
static unsigned nr_free;
/* VMs are created and destroyed on their own CPUs, at the same time */
static struct spinlock pmem_lock;

static void insert_range(uint64_t start, uint64_t end)
{
	if (start >= end)
		return;
	/* keep sorted, merging neighbours */
	unsigned i = 0;
	while (i < nr_free && free_ranges[i].start < start)
		i++;
	if (i > 0 && free_ranges[i - 1].end == start) {
		free_ranges[i - 1].end = end;
		if (i < nr_free && free_ranges[i].start == end) {
			free_ranges[i - 1].end = free_ranges[i].end;
			memmove(&free_ranges[i], &free_ranges[i + 1], (nr_free - i - 1) * sizeof(free_ranges[0]));
			nr_free--;
		}
		return;
	}
	if (i < nr_free && free_ranges[i].start == end) {
		free_ranges[i].start = start;
		return;
	}
	if (nr_free == MAX_FREE)
		return; /* fragment lost; never happens with our allocation pattern */
	memmove(&free_ranges[i + 1], &free_ranges[i], (nr_free - i) * sizeof(free_ranges[0]));
	free_ranges[i].start = start;
	free_ranges[i].end = end;
	nr_free++;
}

void pmem_init(const struct boot_info *bi, uint64_t reserved_end)
{
	for (unsigned i = 0; i < bi->nr_ram; i++) {
		uint64_t s = bi->ram[i].start, e = bi->ram[i].end;
		if (s < reserved_end)
			s = reserved_end;
		if (e > IDENTITY_LIMIT)
			e = IDENTITY_LIMIT;
		s = (s + 0xfff) & ~0xfffull;
		e &= ~0xfffull;
		if (s < e)
			insert_range(s, e);
	}
}

uint64_t pmem_alloc(uint64_t size, uint64_t align)
{
	size = (size + 0xfff) & ~0xfffull;
	spin_lock(&pmem_lock);
	for (unsigned i = 0; i < nr_free; i++) {
		uint64_t s = (free_ranges[i].start + align - 1) & ~(align - 1);
		if (s + size > free_ranges[i].end)
			continue;
		uint64_t rs = free_ranges[i].start, re = free_ranges[i].end;
		memmove(&free_ranges[i], &free_ranges[i + 1], (nr_free - i - 1) * sizeof(free_ranges[0]));
		nr_free--;
		insert_range(rs, s);
		insert_range(s + size, re);
		spin_unlock(&pmem_lock);
		memset((void *)(uintptr_t)s, 0, size);   /* outside the lock: it is ours now */
		return s;
	}
	spin_unlock(&pmem_lock);
	return 0;
}

void pmem_free(uint64_t addr, uint64_t size)
{
	spin_lock(&pmem_lock);
	insert_range(addr, addr + ((size + 0xfff) & ~0xfffull));
	spin_unlock(&pmem_lock);
}

uint64_t pmem_free_bytes(void)
{
	uint64_t n = 0;
	spin_lock(&pmem_lock);
	for (unsigned i = 0; i < nr_free; i++)
		n += free_ranges[i].end - free_ranges[i].start;
	spin_unlock(&pmem_lock);
	return n;
}
