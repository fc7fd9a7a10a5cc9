/* libFuzzer target: emul/x86_decode.c + the emulator (emul/x86_emulate.c,
 * emul/emul_*.c) against a fake guest (small RAM with page tables in the
 * chosen paging mode, one MMIO page, ports). Built by `make fuzz` with clang
 * -fsanitize=fuzzer,address,undefined.
 *
 * Input: [cfg][entry][16 x (selector, lo, hi) registers][15 code bytes]
 *        [rest: PTE flag flips, then MMIO/port read data]
 *
 * Besides the sanitizers, it checks the emulator's contract:
 *  - callbacks: gpa_ptr never asked for a range that crosses a page, MMIO
 *    only for GPAs that are not RAM, sizes 1/2/4/8 (ports 1/2/4);
 *  - the decoder: an accepted instruction decodes again from exactly its
 *    length and is TRUNCATED from any shorter prefix, in every mode;
 *  - results: UNSUPPORTED and RETRY change no register, RIP or RFLAGS; an
 *    exception on a non-string instruction changes nothing either; DONE on a
 *    non-string instruction advances RIP by the length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emul/x86_emulate.h"

#define RAM_SIZE  0x40000u          /* 256 KiB */
#define CODE_GPA  0x1000u
#define MMIO_GPA  0xfee00000ull
#define MMIO_LIN  0x40000000ull
#define TABLES    0x30000u

#define CHECK(c)                                                              \
	do {                                                                  \
		if (!(c)) {                                                   \
			fprintf(stderr, "fuzz_emulate: check failed: %s (%s:%d)\n", #c, \
				__FILE__, __LINE__);                          \
			abort();                                              \
		}                                                             \
	} while (0)

static uint8_t ram[RAM_SIZE] __attribute__((aligned(4096)));
static const uint8_t *feed;
static size_t feed_len, feed_pos;
static uint64_t next_table;
static int pmode; /* 0 off, 1 32-bit, 2 PAE, 3 long */
static uint32_t cr3;

/* FUZZ_EMULATE_STATS=1: count the results (e.g. with -runs=0 over the
 * corpus) and print them at exit. */
static unsigned long status_count[EMUL_IO_ERROR + 1];
static unsigned long class_done[X86_CLASS_OUTS + 1];
static int stats_on = -1;

static void print_stats(void)
{
	static const char *const sn[] = { "done", "exception", "unsupported", "retry",
					  "vm_end", "io_error" };
	fprintf(stderr, "fuzz_emulate results:");
	for (unsigned k = 0; k <= EMUL_IO_ERROR; k++)
		fprintf(stderr, " %s=%lu", sn[k], status_count[k]);
	fprintf(stderr, "\nfuzz_emulate done per class:");
	for (unsigned k = 1; k <= X86_CLASS_OUTS; k++)
		fprintf(stderr, " %u=%lu", k, class_done[k]);
	fprintf(stderr, "\n");
}

static uint8_t next_byte(void)
{
	return feed_pos < feed_len ? feed[feed_pos++] : 0;
}

static void *cb_gpa_ptr(struct emul_ctx *c, uint64_t gpa, size_t len)
{
	(void)c;
	CHECK(len >= 1 && len <= 4096);
	CHECK((gpa & 0xfff) + len <= 4096);
	if (gpa >= RAM_SIZE || gpa + len > RAM_SIZE)
		return NULL;
	return ram + gpa;
}

static int cb_mmio(struct emul_ctx *c, uint64_t gpa, uint64_t *data, unsigned size, bool write)
{
	CHECK(size == 1 || size == 2 || size == 4 || size == 8);
	CHECK(cb_gpa_ptr(c, gpa, 1) == NULL);
	if (!write) {
		uint64_t v = 0;
		for (unsigned k = 0; k < size; k++)
			v |= (uint64_t)next_byte() << (8 * k);
		*data = v;
	}
	uint8_t b = next_byte();
	return b == 0xee ? 1 : b == 0xef ? -5 : 0;
}

static int cb_pio(struct emul_ctx *c, uint16_t port, uint64_t *data, unsigned size, bool write)
{
	(void)c;
	(void)port;
	CHECK(size == 1 || size == 2 || size == 4);
	if (!write) {
		uint64_t v = 0;
		for (unsigned k = 0; k < size; k++)
			v |= (uint64_t)next_byte() << (8 * k);
		*data = v;
	}
	return 0;
}

static uint64_t alloc_table(void)
{
	uint64_t p = next_table;
	next_table += 4096;
	if (next_table > RAM_SIZE)
		abort();
	memset(ram + p, 0, 4096);
	return p;
}

static void map4k(uint64_t lin, uint64_t gpa, uint64_t flags)
{
	if (pmode == 1) {
		uint32_t *pde = (uint32_t *)(ram + cr3) + ((lin >> 22) & 0x3ff);
		if (!(*pde & 1))
			*pde = (uint32_t)(alloc_table() | 7);
		((uint32_t *)(ram + (*pde & ~0xfffu)))[(lin >> 12) & 0x3ff] = (uint32_t)(gpa | flags);
		return;
	}
	uint64_t table;
	int level;
	if (pmode == 2) {
		uint64_t *pdpte = (uint64_t *)(ram + cr3) + ((lin >> 30) & 3);
		if (!(*pdpte & 1))
			*pdpte = alloc_table() | 1;
		table = *pdpte & ~0xfffull;
		level = 2;
	} else {
		table = cr3;
		level = 4;
	}
	for (; level > 1; level--) {
		uint64_t *e = (uint64_t *)(ram + table) + ((lin >> (12 + 9 * (level - 1))) & 0x1ff);
		if (!(*e & 1))
			*e = alloc_table() | 7;
		table = *e & 0x000ffffffffff000ull;
	}
	((uint64_t *)(ram + table))[(lin >> 12) & 0x1ff] = gpa | flags;
}

static void check_decoder(const uint8_t *code)
{
	static const enum x86_mode modes[] = { X86_MODE_16, X86_MODE_32, X86_MODE_64 };
	for (unsigned m = 0; m < 3; m++) {
		struct x86_insn d, e;
		int rc = x86_decode(code, X86_MAX_INSN_LEN, modes[m], &d);
		CHECK(rc == X86_DECODE_OK || rc == X86_DECODE_UNSUPPORTED);
		if (rc != X86_DECODE_OK)
			continue;
		CHECK(d.len >= 1 && d.len <= X86_MAX_INSN_LEN);
		CHECK(d.opsize == 1 || d.opsize == 2 || d.opsize == 4 || d.opsize == 8);
		CHECK(d.addr_size == 2 || d.addr_size == 4 || d.addr_size == 8);
		CHECK(x86_decode(code, d.len, modes[m], &e) == X86_DECODE_OK && e.len == d.len);
		CHECK(memcmp(&d, &e, sizeof(d)) == 0);
		for (unsigned k = 0; k < d.len; k++)
			CHECK(x86_decode(code, k, modes[m], &e) == X86_DECODE_TRUNCATED);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2 + 48 + 15)
		return 0;
	uint8_t cfg = data[0], entry = data[1];
	const uint8_t *regs = data + 2;
	const uint8_t *code = data + 50;
	feed = data + 65;
	feed_len = size - 65;
	feed_pos = 0;

	check_decoder(code);

	struct emul_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	memset(ram, 0, TABLES);
	ctx.gpa_ptr = cb_gpa_ptr;
	ctx.mmio = cb_mmio;
	ctx.pio = cb_pio;
	ctx.rep_max = (entry >> 4) + 1;          /* 1..16 iterations per call */
	ctx.maxphyaddr = (cfg & 0x80) ? 36 : 0;
	ctx.rflags = 2 | ((cfg & 0x10) ? EMUL_RFLAGS_DF : 0) | ((cfg & 0x40) ? EMUL_RFLAGS_AC : 0);
	ctx.cpl = (cfg & 0x08) ? 3 : 0;

	pmode = cfg & 3;
	bool alt = cfg & 4;
	next_table = TABLES;
	ctx.pg.cr0 = EMUL_CR0_PE | ((cfg & 0x20) ? EMUL_CR0_WP : 0);
	if (pmode == 0 && alt)
		ctx.pg.cr0 = 0; /* real mode */
	ctx.pg.cs_32 = !alt;
	if (pmode) {
		ctx.pg.cr0 |= EMUL_CR0_PG;
		cr3 = (uint32_t)alloc_table();
		ctx.pg.cr3 = cr3 | ((cfg & 0x40) ? 0x18 : 0);
		ctx.pg.cr4 = (pmode >= 2 ? EMUL_CR4_PAE : 0) | ((cfg & 0x20) ? EMUL_CR4_PSE : 0) |
			     ((cfg & 0x80) ? EMUL_CR4_SMEP | EMUL_CR4_SMAP : 0);
		if (pmode == 3) {
			ctx.pg.efer = EMUL_EFER_LMA | ((cfg & 0x40) ? EMUL_EFER_NXE : 0);
			ctx.pg.cs_long = !alt;
			if (!alt)
				ctx.pg.cs_32 = false;
		}
		for (uint64_t a = 0; a < TABLES; a += 4096)
			map4k(a, a, 7);
		map4k(MMIO_LIN, MMIO_GPA, 7);
		map4k(MMIO_LIN + 0x1000, MMIO_GPA + 0x1000, 7);
		/* Flip flags in up to 4 leaf/table entries chosen by the input. */
		unsigned flips = next_byte() & 3;
		for (unsigned k = 0; k < flips; k++) {
			uint64_t pick = next_byte() | (uint64_t)next_byte() << 8;
			uint64_t off = TABLES + ((pick << 3) % (next_table - TABLES));
			off &= ~7ull;
			uint8_t what = next_byte();
			uint64_t bit = 1ull << (what & 63);
			if (pmode == 1)
				*(uint32_t *)(ram + (off & ~3ull)) ^= (uint32_t)bit;
			else
				*(uint64_t *)(ram + off) ^= bit;
		}
	}

	/* Registers: a base chosen by the selector plus a 16-bit offset. */
	uint64_t mmio_lin = pmode ? MMIO_LIN : MMIO_GPA;
	const uint64_t bases[8] = { 0, mmio_lin, 0x2000, mmio_lin + 0xff0, 0xffffffffull,
				    0x00007ffffffff000ull, 0xffff800000000000ull, ~0ull };
	for (unsigned r = 0; r < 16; r++) {
		uint8_t sel = regs[3 * r];
		uint64_t off = regs[3 * r + 1] | (uint64_t)regs[3 * r + 2] << 8;
		ctx.gpr[r] = bases[sel & 7] + ((sel & 8) ? -off : off);
	}
	for (unsigned s = 0; s < 6; s++)
		ctx.seg_base[s] = (entry & 8) ? (uint64_t)s * 0x100 : 0;

	/* Code at CODE_GPA (or at the end of a page to cross it). */
	ctx.rip = (entry & 4) ? CODE_GPA + 0x1000 - (code[0] & 7) - 1 : CODE_GPA;
	memcpy(ram + ctx.rip + ctx.seg_base[SEG_CS] * (emul_cpu_mode(&ctx) != X86_MODE_64),
	       code, X86_MAX_INSN_LEN);

	struct emul_ctx before = ctx;
	struct emul_result res;
	enum emul_status st;
	if (entry & 1) {
		struct io_intercept io = { .port = (uint16_t)ctx.gpr[X86_RDX],
					   .size = (uint8_t)(1u << ((entry >> 1) & 1)),
					   .in = entry & 2, .string = true };
		/* entry bit 5: the io=emulate entry, which also takes IN/OUT */
		if (entry & 0x20)
			st = emul_port_io(&ctx, (entry & 2) ? &io : NULL, &res);
		else
			st = emul_string_io(&ctx, (entry & 2) ? &io : NULL, &res);
	} else {
		uint64_t gpa = MMIO_GPA + ((uint64_t)(entry & 0x02) << 11);
		st = emul_mmio(&ctx, gpa, &res);
	}

	CHECK(st <= EMUL_IO_ERROR);
	if (stats_on < 0) {
		stats_on = getenv("FUZZ_EMULATE_STATS") != NULL;
		if (stats_on)
			atexit(print_stats);
	}
	if (stats_on) {
		status_count[st]++;
		if (st == EMUL_DONE)
			class_done[res.insn.cls]++;
	}
	CHECK(res.nbytes <= X86_MAX_INSN_LEN);
	bool string = res.nbytes && x86_is_string(&res.insn) && res.insn.len;
	if (st == EMUL_UNSUPPORTED || st == EMUL_RETRY || (st == EMUL_EXCEPTION && !string)) {
		CHECK(memcmp(ctx.gpr, before.gpr, sizeof(ctx.gpr)) == 0);
		CHECK(ctx.rip == before.rip && ctx.rflags == before.rflags);
	}
	if (st == EMUL_EXCEPTION)
		CHECK(res.vector == EMUL_VEC_PF || res.vector == EMUL_VEC_GP ||
		      res.vector == EMUL_VEC_SS);
	if (st == EMUL_DONE && !string) {
		uint64_t want = before.rip + res.insn.len;
		if (res.insn.mode == X86_MODE_32)
			want &= 0xffffffffu;
		else if (res.insn.mode == X86_MODE_16)
			want &= 0xffffu;
		CHECK(ctx.rip == want);
	}
	return 0;
}
