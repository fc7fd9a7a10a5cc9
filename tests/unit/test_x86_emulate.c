/* The emulator (emul/x86_emulate.c, emul/emul_*.c) against a fake guest
 * (RAM array, page tables built per paging mode, an MMIO page, ports), and
 * emul_alu's flags against the host CPU running the same instruction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "emul/x86_emulate.h"

/* ---- fake guest ---- */

#define RAM_SIZE   (4u << 20)
#define MMIO_GPA   0xfee00000ull    /* one 4 KiB MMIO page */
#define MMIO_LIN   0x40000000ull    /* where paged guests map it */
#define CODE_GPA   0x10000ull       /* code, identity mapped */
#define DATA_GPA   0x20000ull       /* RAM data, identity mapped */

static uint8_t *ram;
static uint8_t mmio_regs[4096];
static unsigned mmio_calls;
static struct { uint64_t gpa; unsigned size; bool write; uint64_t data; } mmio_log[1024];
static int mmio_rc;                 /* what the MMIO callback returns */
static uint8_t port_out[4096];
static unsigned port_out_len;
static unsigned port_in_count;
static uint16_t last_port;
static unsigned pio_calls;
static int pio_rc;                  /* what the port callback returns */
static unsigned pio_rc_from;        /* ... from the call after this many */
static unsigned pio_rep_runs;       /* calls of cb_pio_rep */

enum pmode { PM_OFF, PM_32, PM_PAE, PM_LONG };
static enum pmode pmode;
static uint64_t next_table;
static struct emul_ctx ctx;

static void *cb_gpa_ptr(struct emul_ctx *c, uint64_t gpa, size_t len)
{
	(void)c;
	assert_true(len >= 1 && len <= 4096);
	assert_true((gpa & 0xfff) + len <= 4096); /* never crosses a page */
	if (gpa + len > RAM_SIZE)
		return NULL;
	return ram + gpa;
}

static int cb_mmio(struct emul_ctx *c, uint64_t gpa, uint64_t *data, unsigned size, bool write)
{
	(void)c;
	assert_true(size == 1 || size == 2 || size == 4 || size == 8);
	assert_true(gpa >= MMIO_GPA && gpa + size <= MMIO_GPA + 4096);
	if (mmio_rc)
		return mmio_rc;
	unsigned off = (unsigned)(gpa - MMIO_GPA);
	if (write) {
		memcpy(mmio_regs + off, data, size);
	} else {
		uint64_t v = 0;
		memcpy(&v, mmio_regs + off, size);
		*data = v;
	}
	if (mmio_calls < 1024) {
		mmio_log[mmio_calls].gpa = gpa;
		mmio_log[mmio_calls].size = size;
		mmio_log[mmio_calls].write = write;
		mmio_log[mmio_calls].data = *data;
	}
	mmio_calls++;
	return 0;
}

static int cb_pio(struct emul_ctx *c, uint16_t port, uint64_t *data, unsigned size, bool write)
{
	(void)c;
	assert_true(size == 1 || size == 2 || size == 4);
	last_port = port;
	pio_calls++;
	if (pio_rc && pio_calls > pio_rc_from)
		return pio_rc;
	if (write) {
		memcpy(port_out + port_out_len, data, size);
		port_out_len += size;
	} else {
		/* bytes 0x10, 0x11, ... */
		uint64_t v = 0;
		for (unsigned k = 0; k < size; k++)
			v |= (uint64_t)(0x10 + port_in_count++) << (8 * k);
		*data = v;
	}
	return 0;
}

/* ctx.pio_rep as the hypervisor does it: cb_pio per element of the run. */
static int cb_pio_rep(struct emul_ctx *c, uint16_t port, uint8_t *host, int64_t step,
		      unsigned size, uint64_t n, bool write, uint64_t *done)
{
	assert_true(host >= ram && host + size <= ram + RAM_SIZE);
	assert_true(step == (int64_t)size || step == -(int64_t)size);
	pio_rep_runs++;
	uint64_t k = 0;
	int rc = 0;
	for (; k < n; k++, host += step) {
		uint64_t d = write ? emul_load_le(host, size) : 0;
		rc = cb_pio(c, port, &d, size, write);
		if (rc)
			break;
		if (!write)
			emul_store_le(host, d, size);
	}
	*done = k;
	return rc;
}

static uint64_t alloc_table(void)
{
	uint64_t p = next_table;
	next_table += 4096;
	memset(ram + p, 0, 4096);
	return p;
}

#define F_P  1ull
#define F_RW 2ull
#define F_US 4ull
#define F_NX (1ull << 63)
#define F_ALL (F_P | F_RW | F_US)

static void map4k(uint64_t lin, uint64_t gpa, uint64_t flags)
{
	uint64_t cr3 = ctx.pg.cr3;
	if (pmode == PM_32) {
		uint32_t *pd = (uint32_t *)(ram + (cr3 & ~0xfffull));
		uint32_t *pde = &pd[(lin >> 22) & 0x3ff];
		if (!(*pde & F_P))
			*pde = (uint32_t)(alloc_table() | F_ALL);
		uint32_t *pt = (uint32_t *)(ram + (*pde & ~0xfffu));
		pt[(lin >> 12) & 0x3ff] = (uint32_t)(gpa | flags);
		return;
	}
	uint64_t table;
	int level;
	if (pmode == PM_PAE) {
		uint64_t *pdpte = (uint64_t *)(ram + (cr3 & ~0x1full)) + ((lin >> 30) & 3);
		if (!(*pdpte & F_P))
			*pdpte = alloc_table() | F_P;
		table = *pdpte & ~0xfffull;
		level = 2;
	} else {
		table = cr3 & ~0xfffull;
		level = 4;
	}
	for (; level > 1; level--) {
		uint64_t *e = (uint64_t *)(ram + table) + ((lin >> (12 + 9 * (level - 1))) & 0x1ff);
		if (!(*e & F_P))
			*e = alloc_table() | F_ALL;
		table = *e & 0x000ffffffffff000ull;
	}
	((uint64_t *)(ram + table))[(lin >> 12) & 0x1ff] = gpa | flags;
}

static uint64_t *pte_of(uint64_t lin)
{
	/* 4-level only */
	uint64_t table = ctx.pg.cr3 & ~0xfffull;
	for (int level = 4; level > 1; level--) {
		uint64_t e = ((uint64_t *)(ram + table))[(lin >> (12 + 9 * (level - 1))) & 0x1ff];
		table = e & 0x000ffffffffff000ull;
	}
	return (uint64_t *)(ram + table) + ((lin >> 12) & 0x1ff);
}

static uint64_t mmio_base_lin(void)
{
	return pmode == PM_OFF ? MMIO_GPA : MMIO_LIN;
}

/* A guest in the given paging mode; code at CODE_GPA (identity), 2 MiB of
 * RAM identity mapped, MMIO_LIN -> MMIO_GPA. */
static void setup(enum pmode pm, bool cs64)
{
	memset(ram, 0, RAM_SIZE);
	memset(mmio_regs, 0, sizeof(mmio_regs));
	memset(&ctx, 0, sizeof(ctx));
	mmio_calls = 0;
	mmio_rc = 0;
	port_out_len = 0;
	port_in_count = 0;
	pio_calls = 0;
	pio_rc = 0;
	pio_rc_from = 0;
	pio_rep_runs = 0;
	last_port = 0;
	pmode = pm;
	next_table = 0x100000;
	ctx.gpa_ptr = cb_gpa_ptr;
	ctx.mmio = cb_mmio;
	ctx.pio = cb_pio;
	ctx.rflags = 2;
	ctx.rip = CODE_GPA;
	ctx.maxphyaddr = 40;
	ctx.pg.cr0 = EMUL_CR0_PE;
	ctx.pg.cs_32 = !cs64;
	if (pm == PM_OFF)
		return;
	ctx.pg.cr0 |= EMUL_CR0_PG | EMUL_CR0_WP;
	ctx.pg.cr3 = alloc_table();
	if (pm == PM_PAE || pm == PM_LONG)
		ctx.pg.cr4 |= EMUL_CR4_PAE;
	if (pm == PM_LONG) {
		ctx.pg.efer = EMUL_EFER_LMA | EMUL_EFER_NXE;
		ctx.pg.cs_long = cs64;
		ctx.pg.cs_32 = false;
	}
	for (uint64_t a = 0; a < 0x100000; a += 4096)
		map4k(a, a, F_ALL);
	map4k(MMIO_LIN, MMIO_GPA, F_P | F_RW);
}

static void put_code(const uint8_t *b, size_t n)
{
	memcpy(ram + CODE_GPA, b, n);
}

#define CODE(...)                                                   \
	do {                                                        \
		static const uint8_t c_[] = { __VA_ARGS__ };        \
		put_code(c_, sizeof(c_));                           \
	} while (0)

static struct emul_result res;

static enum emul_status mmio_at(uint64_t off)
{
	return emul_mmio(&ctx, MMIO_GPA + off, &res);
}

static uint64_t mmio_reg(unsigned off, unsigned size)
{
	uint64_t v = 0;
	memcpy(&v, mmio_regs + off, size);
	return v;
}

static void set_mmio_reg(unsigned off, uint64_t v, unsigned size)
{
	memcpy(mmio_regs + off, &v, size);
}

/* ---- tests: MOV family ---- */

static void test_mov_store_load(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* mov [rax], ecx */
	CODE(0x89, 0x08);
	ctx.gpr[X86_RAX] = MMIO_LIN + 0x300;
	ctx.gpr[X86_RCX] = 0x1122334455667788ull;
	assert_int_equal(mmio_at(0x300), EMUL_DONE);
	assert_int_equal(mmio_calls, 1);
	assert_true(mmio_log[0].write);
	assert_int_equal(mmio_log[0].size, 4);
	assert_int_equal(mmio_reg(0x300, 8), 0x55667788);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	/* mov rdx, [rax+8] */
	CODE(0x48, 0x8b, 0x50, 0x08);
	ctx.rip = CODE_GPA;
	set_mmio_reg(0x308, 0xfedcba9876543210ull, 8);
	assert_int_equal(mmio_at(0x308), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RDX], 0xfedcba9876543210ull);
	assert_int_equal(ctx.rip, CODE_GPA + 4);
	/* mov edx, [rax+8]: 32-bit load zero-extends */
	CODE(0x8b, 0x50, 0x08);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RDX] = ~0ull;
	assert_int_equal(mmio_at(0x308), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RDX], 0x76543210);
	/* mov dx, [rax+8]: 16-bit load merges */
	CODE(0x66, 0x8b, 0x50, 0x08);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RDX] = 0xaaaaaaaaaaaaaaaaull;
	assert_int_equal(mmio_at(0x308), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RDX], 0xaaaaaaaaaaaa3210ull);
	/* mov ah, [rax+9]: high byte register */
	CODE(0x8a, 0x60, 0x09);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = MMIO_LIN + 0x300;
	assert_int_equal(mmio_at(0x309), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], MMIO_LIN | 0x3200); /* AH: 0x03 -> 0x32 */
	assert_int_equal(ctx.rip, CODE_GPA + 3);
}

static void test_mov_moffs_imm_riprel(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* mov rax, [MMIO_LIN + 0x20] (moffs64) */
	CODE(0x48, 0xa1, 0x20, 0x00, 0x00, 0x40, 0, 0, 0, 0);
	set_mmio_reg(0x20, 0x0102030405060708ull, 8);
	assert_int_equal(mmio_at(0x20), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0x0102030405060708ull);
	assert_int_equal(ctx.rip, CODE_GPA + 10);
	/* mov qword [rbx], -1 (imm32 sign-extended, 8-byte access) */
	CODE(0x48, 0xc7, 0x03, 0xff, 0xff, 0xff, 0xff);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RBX] = MMIO_LIN + 0x40;
	assert_int_equal(mmio_at(0x40), EMUL_DONE);
	assert_int_equal(mmio_log[mmio_calls - 1].size, 8);
	assert_int_equal(mmio_reg(0x40, 8), ~0ull);
	/* mov byte [rip+disp32], 0x5a: RIP-relative, the base is the next RIP */
	ctx.rip = CODE_GPA;
	uint32_t disp = (uint32_t)(MMIO_LIN + 0x77 - (CODE_GPA + 7));
	uint8_t c[] = { 0xc6, 0x05, (uint8_t)disp, (uint8_t)(disp >> 8), (uint8_t)(disp >> 16),
			(uint8_t)(disp >> 24), 0x5a };
	put_code(c, sizeof(c));
	assert_int_equal(mmio_at(0x77), EMUL_DONE);
	assert_int_equal(mmio_regs[0x77], 0x5a);
	assert_int_equal(ctx.rip, CODE_GPA + 7);
}

static void test_movzx_movsx(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	set_mmio_reg(0x10, 0x80f1, 2);
	ctx.gpr[X86_RSI] = MMIO_LIN + 0x10;
	CODE(0x48, 0x0f, 0xbe, 0x06); /* movsx rax, byte [rsi] */
	assert_int_equal(mmio_at(0x10), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0xfffffffffffffff1ull);
	CODE(0x0f, 0xb7, 0x0e);       /* movzx ecx, word [rsi] */
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RCX] = ~0ull;
	assert_int_equal(mmio_at(0x10), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RCX], 0x80f1);
	CODE(0x66, 0x0f, 0xbf, 0x0e); /* movsx cx, word [rsi] */
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RCX] = 0x1111111111111111ull;
	assert_int_equal(mmio_at(0x10), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RCX], 0x11111111111180f1ull);
}

/* ---- ALU, TEST, XCHG, BT ---- */

static void test_alu_rmw(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	ctx.gpr[X86_RDI] = MMIO_LIN + 0x80;
	set_mmio_reg(0x80, 0x000000ff, 4);
	CODE(0x83, 0x27, 0xf0); /* and dword [rdi], -16 */
	assert_int_equal(mmio_at(0x80), EMUL_DONE);
	assert_int_equal(mmio_reg(0x80, 4), 0xf0);
	assert_int_equal(mmio_calls, 2); /* read, then write */
	assert_false(mmio_log[0].write);
	assert_true(mmio_log[1].write);
	assert_int_equal(ctx.rflags & EMUL_RFLAGS_STATUS, EMUL_RFLAGS_PF); /* 0xf0: 4 bits set */
	CODE(0xf0, 0x81, 0x0f, 0x00, 0x00, 0x00, 0x80); /* lock or dword [rdi], 0x80000000 */
	ctx.rip = CODE_GPA;
	assert_int_equal(mmio_at(0x80), EMUL_DONE);
	assert_int_equal(mmio_reg(0x80, 4), 0x800000f0);
	assert_true(ctx.rflags & EMUL_RFLAGS_SF);
	CODE(0x80, 0x3f, 0xf0); /* cmp byte [rdi], 0xf0: no write */
	ctx.rip = CODE_GPA;
	mmio_calls = 0;
	assert_int_equal(mmio_at(0x80), EMUL_DONE);
	assert_int_equal(mmio_calls, 1);
	assert_true(ctx.rflags & EMUL_RFLAGS_ZF);
	assert_false(ctx.rflags & EMUL_RFLAGS_CF);
	CODE(0x2b, 0x07); /* sub eax, [rdi] */
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = 0x100000000ull;
	assert_int_equal(mmio_at(0x80), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], (uint32_t)(0 - 0x800000f0u));
	assert_true(ctx.rflags & EMUL_RFLAGS_CF);
	CODE(0xf6, 0x47, 0x03, 0x80); /* test byte [rdi+3], 0x80 */
	ctx.rip = CODE_GPA;
	assert_int_equal(mmio_at(0x83), EMUL_DONE);
	assert_false(ctx.rflags & EMUL_RFLAGS_ZF);
	assert_true(ctx.rflags & EMUL_RFLAGS_SF);
	assert_int_equal(ctx.rip, CODE_GPA + 4);
	/* adc with CF in */
	CODE(0x48, 0x11, 0x0f); /* adc [rdi], rcx */
	ctx.rip = CODE_GPA;
	ctx.rflags |= EMUL_RFLAGS_CF;
	ctx.gpr[X86_RCX] = 1;
	set_mmio_reg(0x80, ~0ull, 8);
	assert_int_equal(mmio_at(0x80), EMUL_DONE);
	assert_int_equal(mmio_reg(0x80, 8), 1);
	assert_true(ctx.rflags & EMUL_RFLAGS_CF);
}

static void test_xchg_bt(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	ctx.gpr[X86_RBX] = MMIO_LIN + 0x100;
	ctx.gpr[X86_RDX] = 0xabcd;
	set_mmio_reg(0x100, 0x1234, 2);
	CODE(0x66, 0x87, 0x13); /* xchg [rbx], dx */
	assert_int_equal(mmio_at(0x100), EMUL_DONE);
	assert_int_equal(mmio_reg(0x100, 2), 0xabcd);
	assert_int_equal(ctx.gpr[X86_RDX], 0x1234);
	/* bts dword [rbx], 35: imm offset mod 32 -> bit 3 */
	CODE(0x0f, 0xba, 0x2b, 35);
	ctx.rip = CODE_GPA;
	set_mmio_reg(0x100, 0, 4);
	assert_int_equal(mmio_at(0x100), EMUL_DONE);
	assert_int_equal(mmio_reg(0x100, 4), 8);
	assert_false(ctx.rflags & EMUL_RFLAGS_CF);
	/* bt dword [rbx], ecx with ecx = -29: dword at rbx-4, bit 3 */
	CODE(0x0f, 0xa3, 0x0b);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RCX] = (uint32_t)-29;
	set_mmio_reg(0xfc, 8, 4);
	mmio_calls = 0;
	assert_int_equal(mmio_at(0xfc), EMUL_DONE);
	assert_int_equal(mmio_log[0].gpa, MMIO_GPA + 0xfc);
	assert_true(ctx.rflags & EMUL_RFLAGS_CF);
	/* btr qword [rbx], rcx with rcx = 64+3: qword at rbx+8 */
	CODE(0x48, 0x0f, 0xb3, 0x0b);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RCX] = 67;
	set_mmio_reg(0x108, 0xf, 8);
	assert_int_equal(mmio_at(0x108), EMUL_DONE);
	assert_int_equal(mmio_reg(0x108, 8), 0x7);
	assert_true(ctx.rflags & EMUL_RFLAGS_CF);
}

/* ---- string instructions ---- */

static void test_rep_stos_bounded(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* rep stosd to MMIO, 300 dwords would overrun: use 300 bytes */
	CODE(0xf3, 0xaa); /* rep stosb */
	ctx.gpr[X86_RDI] = MMIO_LIN + 0x100;
	ctx.gpr[X86_RCX] = 300;
	ctx.gpr[X86_RAX] = 0x5a;
	assert_int_equal(mmio_at(0x100), EMUL_DONE);
	assert_int_equal(res.iterations, EMUL_REP_MAX);
	assert_int_equal(ctx.rip, CODE_GPA);  /* not finished: RIP stays */
	assert_int_equal(ctx.gpr[X86_RCX], 300 - 256);
	assert_int_equal(ctx.gpr[X86_RDI], MMIO_LIN + 0x100 + 256);
	assert_int_equal(mmio_at(0x200), EMUL_DONE);  /* resumed */
	assert_int_equal(res.iterations, 44);
	assert_int_equal(ctx.gpr[X86_RCX], 0);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	for (unsigned k = 0x100; k < 0x100 + 300; k++)
		assert_int_equal(mmio_regs[k], 0x5a);
	assert_int_equal(mmio_regs[0x100 + 300], 0);
	/* rep with rCX = 0: nothing, RIP advances */
	ctx.rip = CODE_GPA;
	mmio_calls = 0;
	assert_int_equal(mmio_at(0x200), EMUL_DONE);
	assert_int_equal(mmio_calls, 0);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
}

static void test_rep_movs_df(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* std; rep movsd from RAM to MMIO, backwards */
	CODE(0xf3, 0xa5);
	for (unsigned k = 0; k < 4; k++)
		((uint32_t *)(ram + DATA_GPA))[k] = 0xa0 + k;
	ctx.rflags |= EMUL_RFLAGS_DF;
	ctx.gpr[X86_RSI] = DATA_GPA + 12;
	ctx.gpr[X86_RDI] = MMIO_LIN + 0x40c;
	ctx.gpr[X86_RCX] = 4;
	assert_int_equal(mmio_at(0x40c), EMUL_DONE);
	for (unsigned k = 0; k < 4; k++)
		assert_int_equal(mmio_reg(0x400 + 4 * k, 4), 0xa0 + k);
	assert_int_equal(ctx.gpr[X86_RSI], DATA_GPA - 4);
	assert_int_equal(ctx.gpr[X86_RDI], MMIO_LIN + 0x3fc);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	/* movsq from MMIO to RAM, forwards, no REP */
	CODE(0x48, 0xa5);
	ctx.rip = CODE_GPA;
	ctx.rflags &= ~EMUL_RFLAGS_DF;
	set_mmio_reg(0x500, 0x1122334455667788ull, 8);
	ctx.gpr[X86_RSI] = MMIO_LIN + 0x500;
	ctx.gpr[X86_RDI] = DATA_GPA + 0x40;
	ctx.gpr[X86_RCX] = 99;
	assert_int_equal(mmio_at(0x500), EMUL_DONE);
	assert_int_equal(*(uint64_t *)(ram + DATA_GPA + 0x40), 0x1122334455667788ull);
	assert_int_equal(ctx.gpr[X86_RCX], 99);
	assert_int_equal(ctx.gpr[X86_RSI], MMIO_LIN + 0x508);
	/* lodsw from MMIO */
	CODE(0x66, 0xad);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = 0xffffffffffffffffull;
	assert_int_equal(mmio_at(0x508), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0xffffffffffff0000ull | mmio_reg(0x508, 2));
}

static void test_string_io(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* rep outsb: 5 bytes from RAM to port 0x3f8 */
	CODE(0xf3, 0x6e);
	memcpy(ram + DATA_GPA, "hello", 5);
	ctx.gpr[X86_RSI] = DATA_GPA;
	ctx.gpr[X86_RCX] = 5;
	ctx.gpr[X86_RDX] = 0x3f8;
	struct io_intercept io = { .port = 0x3f8, .size = 1, .in = false, .string = true,
				   .rep = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(port_out_len, 5);
	assert_memory_equal(port_out, "hello", 5);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	assert_int_equal(ctx.gpr[X86_RCX], 0);
	/* rep insw: 3 words from port 0x60 into RAM */
	CODE(0xf3, 0x66, 0x6d);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RDI] = DATA_GPA + 0x100;
	ctx.gpr[X86_RCX] = 3;
	ctx.gpr[X86_RDX] = 0x60;
	io = (struct io_intercept){ .port = 0x60, .size = 2, .in = true, .string = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_DONE);
	static const uint8_t want[] = { 0x10, 0x11, 0x12, 0x13, 0x14, 0x15 };
	assert_memory_equal(ram + DATA_GPA + 0x100, want, 6);
	assert_int_equal(ctx.rip, CODE_GPA + 3);
	/* A mismatch with the intercept: retry, nothing changed */
	ctx.rip = CODE_GPA;
	io.port = 0x61;
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_RETRY);
	assert_int_equal(ctx.rip, CODE_GPA);
	/* Not INS/OUTS at RIP */
	CODE(0x89, 0x08);
	assert_int_equal(emul_string_io(&ctx, NULL, &res), EMUL_RETRY);
}

/* REP INS/OUTS with ctx.pio_rep: the elements after the first go to it in
 * runs, with the same results as element by element, downwards with DF set,
 * and a device that stops the VM mid-run keeps the elements before it. */
static void test_string_io_runs(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	ctx.pio_rep = cb_pio_rep;
	/* rep outsb: 6 bytes */
	CODE(0xf3, 0x6e);
	memcpy(ram + DATA_GPA, "abcdef", 6);
	ctx.gpr[X86_RSI] = DATA_GPA;
	ctx.gpr[X86_RCX] = 6;
	ctx.gpr[X86_RDX] = 0x80;
	struct io_intercept io = { .port = 0x80, .size = 1, .in = false, .string = true,
				   .rep = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(port_out_len, 6);
	assert_memory_equal(port_out, "abcdef", 6);
	assert_int_equal(pio_calls, 6);
	assert_int_equal(pio_rep_runs, 1);
	assert_int_equal(ctx.gpr[X86_RCX], 0);
	assert_int_equal(ctx.gpr[X86_RSI], DATA_GPA + 6);
	assert_int_equal(ctx.rip, CODE_GPA + 2);

	/* rep insw with DF set: 3 words stored downwards from DATA + 0x204 */
	CODE(0xf3, 0x66, 0x6d);
	ctx.rip = CODE_GPA;
	ctx.rflags |= EMUL_RFLAGS_DF;
	ctx.gpr[X86_RDI] = DATA_GPA + 0x204;
	ctx.gpr[X86_RCX] = 3;
	ctx.gpr[X86_RDX] = 0x60;
	io = (struct io_intercept){ .port = 0x60, .size = 2, .in = true, .string = true,
				    .rep = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_DONE);
	static const uint8_t down[] = { 0x14, 0x15, 0x12, 0x13, 0x10, 0x11 };
	assert_memory_equal(ram + DATA_GPA + 0x200, down, 6);
	assert_int_equal(ctx.gpr[X86_RDI], DATA_GPA + 0x1fe);
	assert_int_equal(ctx.gpr[X86_RCX], 0);
	ctx.rflags &= ~EMUL_RFLAGS_DF;

	/* rep outsb of 8 bytes; the device ends the VM at the 4th: three done */
	CODE(0xf3, 0x6e);
	ctx.rip = CODE_GPA;
	memcpy(ram + DATA_GPA, "ABCDEFGH", 8);
	ctx.gpr[X86_RSI] = DATA_GPA;
	ctx.gpr[X86_RCX] = 8;
	ctx.gpr[X86_RDX] = 0x80;
	port_out_len = 0;
	pio_calls = 0;
	pio_rc = 1;
	pio_rc_from = 3;
	io = (struct io_intercept){ .port = 0x80, .size = 1, .in = false, .string = true,
				    .rep = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_VM_END);
	assert_int_equal(port_out_len, 3);
	assert_memory_equal(port_out, "ABC", 3);
	assert_int_equal(ctx.gpr[X86_RSI], DATA_GPA + 3);
	assert_int_equal(ctx.gpr[X86_RCX], 5);
	assert_int_equal(ctx.rip, CODE_GPA);
}

/* IN/OUT through emul_port_io (io=emulate): register semantics, RIP, the
 * cross-check with the intercept. */
static void test_port_io(void **state)
{
	(void)state;
	const uint64_t rax0 = 0x1122334455667788ull;
	setup(PM_LONG, true);

	/* in al, 0x60: AL merges */
	CODE(0xe4, 0x60);
	ctx.gpr[X86_RAX] = rax0;
	struct io_intercept io = { .port = 0x60, .size = 1, .in = true };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(last_port, 0x60);
	assert_int_equal(ctx.gpr[X86_RAX], 0x1122334455667710ull);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	assert_int_equal(res.insn.cls, X86_CLASS_IN);

	/* in ax, dx: AX merges */
	CODE(0x66, 0xed);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = rax0;
	ctx.gpr[X86_RDX] = 0xffffffff00001234ull; /* only DX counts */
	port_in_count = 0;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_DONE);
	assert_int_equal(last_port, 0x1234);
	assert_int_equal(ctx.gpr[X86_RAX], 0x1122334455661110ull);
	assert_int_equal(ctx.rip, CODE_GPA + 2);

	/* in eax, dx (REX.W ignored): EAX zero-extends into RAX */
	CODE(0x48, 0xed);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = rax0;
	port_in_count = 0;
	io = (struct io_intercept){ .port = 0x1234, .size = 4, .in = true };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0x13121110ull);
	assert_int_equal(ctx.rip, CODE_GPA + 2);

	/* in al, dx leaves AH alone */
	CODE(0xec);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = 0xff00;
	port_in_count = 0;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0xff10);
	assert_int_equal(ctx.rip, CODE_GPA + 1);

	/* out 0x80, al: one byte, RAX unchanged */
	CODE(0xe6, 0x80);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = 0xdeadbeef12345678ull;
	port_out_len = 0;
	io = (struct io_intercept){ .port = 0x80, .size = 1, .in = false };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(last_port, 0x80);
	assert_int_equal(port_out_len, 1);
	assert_int_equal(port_out[0], 0x78);
	assert_int_equal(ctx.gpr[X86_RAX], 0xdeadbeef12345678ull);
	assert_int_equal(ctx.rip, CODE_GPA + 2);

	/* out dx, eax and out dx, ax (F3 ignored) */
	static const uint8_t want4[] = { 0x78, 0x56, 0x34, 0x12, 0x78, 0x56 };
	CODE(0xef, 0xf3, 0x66, 0xef);
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RDX] = 0xcf8;
	port_out_len = 0;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_DONE);
	assert_int_equal(ctx.rip, CODE_GPA + 1);
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_DONE);
	assert_int_equal(ctx.rip, CODE_GPA + 4);
	assert_int_equal(port_out_len, 6);
	assert_memory_equal(port_out, want4, 6);
	assert_int_equal(last_port, 0xcf8);

	/* A mismatch with the intercept: RETRY, no port access, nothing changed */
	CODE(0xe5, 0x71);
	static const struct io_intercept bad[] = {
		{ .port = 0x70, .size = 4, .in = true },                  /* port */
		{ .port = 0x71, .size = 2, .in = true },                  /* size */
		{ .port = 0x71, .size = 4, .in = false },                 /* direction */
		{ .port = 0x71, .size = 4, .in = true, .string = true },  /* INS exit */
	};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ctx.rip = CODE_GPA;
		ctx.gpr[X86_RAX] = rax0;
		pio_calls = 0;
		assert_int_equal(emul_port_io(&ctx, &bad[k], &res), EMUL_RETRY);
		assert_non_null(res.reason);
		assert_int_equal(pio_calls, 0);
		assert_int_equal(ctx.rip, CODE_GPA);
		assert_int_equal(ctx.gpr[X86_RAX], rax0);
	}
	/* ... and a plain IN/OUT at RIP for a string exit through the string path */
	io = (struct io_intercept){ .port = 0x71, .size = 4, .in = true, .string = true };
	assert_int_equal(emul_string_io(&ctx, &io, &res), EMUL_RETRY);

	/* Not port I/O at RIP: RETRY; not decodable: UNSUPPORTED; LOCK IN: UNSUPPORTED */
	CODE(0x89, 0x08);
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_RETRY);
	CODE(0x0f, 0x0b);
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_UNSUPPORTED);
	CODE(0xf0, 0xec);
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_UNSUPPORTED);
	assert_int_equal(ctx.rip, CODE_GPA);
	/* IN/OUT has no memory operand: never an MMIO access */
	CODE(0xe4, 0x60);
	assert_int_equal(mmio_at(0), EMUL_UNSUPPORTED);

	/* The device ends the VM / fails: RIP and RAX stay */
	CODE(0xed);
	ctx.gpr[X86_RAX] = rax0;
	pio_rc = 1;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_VM_END);
	pio_rc = -7;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_IO_ERROR);
	assert_int_equal(res.io_error, -7);
	assert_int_equal(ctx.rip, CODE_GPA);
	assert_int_equal(ctx.gpr[X86_RAX], rax0);
	pio_rc = 0;

	/* String forms go through the string path: rep outsb with the intercept */
	CODE(0xf3, 0x6e);
	memcpy(ram + DATA_GPA, "abc", 3);
	ctx.gpr[X86_RSI] = DATA_GPA;
	ctx.gpr[X86_RCX] = 3;
	ctx.gpr[X86_RDX] = 0x3f8;
	port_out_len = 0;
	io = (struct io_intercept){ .port = 0x3f8, .size = 1, .in = false, .string = true,
				    .rep = true };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(port_out_len, 3);
	assert_memory_equal(port_out, "abc", 3);
	assert_int_equal(ctx.gpr[X86_RCX], 0);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
	/* ... and a string exit whose instruction is OUTS but the exit said OUT */
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RCX] = 3;
	io.string = false;
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_RETRY);

	/* 16-bit real mode: IP wraps at 64 KiB; 66 selects EAX */
	setup(PM_OFF, false);
	ctx.pg.cr0 = 0;
	ctx.seg_base[SEG_CS] = CODE_GPA - 0xfffe;
	ctx.rip = 0xfffe;
	CODE(0xe5, 0x40); /* in ax, 0x40 */
	ctx.gpr[X86_RAX] = rax0;
	assert_int_equal(emul_port_io(&ctx, NULL, &res), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0x1122334455661110ull);
	assert_int_equal(ctx.rip, 0);
	ctx.rip = 0xfffe;
	CODE(0x66, 0xed); /* in eax, dx */
	ctx.gpr[X86_RDX] = 0x1f0;
	port_in_count = 0;
	io = (struct io_intercept){ .port = 0x1f0, .size = 4, .in = true };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RAX], 0x13121110ull);
	assert_int_equal(ctx.rip, 0);

	/* 32-bit paged guest: out dx, ax */
	setup(PM_32, false);
	CODE(0x66, 0xef);
	ctx.gpr[X86_RAX] = 0xbeef;
	ctx.gpr[X86_RDX] = 0x402;
	io = (struct io_intercept){ .port = 0x402, .size = 2, .in = false };
	assert_int_equal(emul_port_io(&ctx, &io, &res), EMUL_DONE);
	assert_int_equal(port_out_len, 2);
	assert_int_equal(port_out[0] | port_out[1] << 8, 0xbeef);
	assert_int_equal(ctx.rip, CODE_GPA + 2);
}

static void test_real_mode(void **state)
{
	(void)state;
	setup(PM_OFF, false);
	ctx.pg.cr0 = 0; /* real mode */
	/* CS base 0x10000 - 0x100, IP 0x100; DS base 0xfee00000 - 0x1000 (as if
	 * through a big-real-mode descriptor cache) */
	ctx.seg_base[SEG_CS] = CODE_GPA - 0x100;
	ctx.rip = 0x100;
	ctx.seg_base[SEG_DS] = MMIO_GPA - 0x1000;
	ctx.seg_base[SEG_SS] = 0;
	CODE(0x88, 0x40, 0x02); /* mov [bx+si+2], al */
	ctx.gpr[X86_RBX] = 0x1000;
	ctx.gpr[X86_RSI] = 0x10;
	ctx.gpr[X86_RAX] = 0x99;
	assert_int_equal(emul_mmio(&ctx, MMIO_GPA + 0x12, &res), EMUL_DONE);
	assert_int_equal(mmio_regs[0x12], 0x99);
	assert_int_equal(ctx.rip, 0x103);
	/* 16-bit wrap of the effective address: [bx+si] with bx=0xffff, si=0x1001 */
	ctx.rip = 0x100;
	ctx.gpr[X86_RBX] = 0xffff;
	ctx.gpr[X86_RSI] = 0x1001 - 2; /* +2 disp: 0xffff + 0xfff + 2 = 0x11000 -> 0x1000 */
	assert_int_equal(emul_mmio(&ctx, MMIO_GPA, &res), EMUL_DONE);
	assert_int_equal(mmio_regs[0], 0x99);
	/* rep stosw with 16-bit CX/DI in real mode: ES base MMIO */
	CODE(0xf3, 0xab);
	ctx.rip = 0x100;
	ctx.seg_base[SEG_ES] = MMIO_GPA;
	ctx.gpr[X86_RDI] = 0xffff0020;   /* only DI counts */
	ctx.gpr[X86_RCX] = 0xabcd0003;   /* only CX counts */
	ctx.gpr[X86_RAX] = 0x4142;
	assert_int_equal(emul_mmio(&ctx, MMIO_GPA + 0x20, &res), EMUL_DONE);
	assert_int_equal(mmio_reg(0x20, 2), 0x4142);
	assert_int_equal(mmio_reg(0x24, 2), 0x4142);
	assert_int_equal(ctx.gpr[X86_RCX], 0xabcd0000);
	assert_int_equal(ctx.gpr[X86_RDI], 0xffff0026);
}

/* ---- paging, faults, results ---- */

static void test_paging_modes(void **state)
{
	(void)state;
	static const enum pmode modes[] = { PM_OFF, PM_32, PM_PAE, PM_LONG };
	for (unsigned m = 0; m < 4; m++) {
		setup(modes[m], modes[m] == PM_LONG);
		if (modes[m] == PM_32)
			ctx.pg.cr4 |= EMUL_CR4_PSE;
		CODE(0x89, 0x18); /* mov [eax/rax], ebx */
		ctx.gpr[X86_RAX] = mmio_base_lin() + 0x10;
		ctx.gpr[X86_RBX] = 0xc0ffee00 + m;
		assert_int_equal(mmio_at(0x10), EMUL_DONE);
		assert_int_equal(mmio_reg(0x10, 4), 0xc0ffee00 + m);
		/* The wrong GPA: retry, nothing done */
		ctx.rip = CODE_GPA;
		mmio_calls = 0;
		assert_int_equal(emul_mmio(&ctx, MMIO_GPA + 0x1000, &res), EMUL_RETRY);
		assert_int_equal(mmio_calls, 0);
		assert_int_equal(ctx.rip, CODE_GPA);
	}
}

static void test_fetch_across_pages(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	/* mov [rax], ecx split 1 + 1 over two pages */
	ctx.rip = 0x30fff;
	ram[0x30fff] = 0x89;
	ram[0x31000] = 0x08;
	ctx.gpr[X86_RAX] = MMIO_LIN;
	assert_int_equal(mmio_at(0), EMUL_DONE);
	assert_int_equal(ctx.rip, 0x31001);
	/* second page not present: #PF on it, fetch (I/D since NXE) */
	ctx.rip = 0x30fff;
	*pte_of(0x31000) = 0;
	assert_int_equal(mmio_at(0), EMUL_EXCEPTION);
	assert_int_equal(res.vector, EMUL_VEC_PF);
	assert_int_equal(res.cr2, 0x31000);
	assert_int_equal(res.error_code, EMUL_PFEC_I);
	assert_int_equal(ctx.rip, 0x30fff);
	/* a one-byte-in-the-first-page instruction does not need the second page */
	ram[0x30fff] = 0xa4; /* movsb */
	ctx.gpr[X86_RSI] = DATA_GPA;
	ctx.gpr[X86_RDI] = MMIO_LIN;
	assert_int_equal(mmio_at(0), EMUL_DONE);
	/* NX code page: #PF P|I */
	ctx.rip = CODE_GPA;
	CODE(0x89, 0x08);
	*pte_of(CODE_GPA) |= F_NX;
	assert_int_equal(mmio_at(0), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_I);
	/* code in MMIO: unsupported */
	*pte_of(CODE_GPA) = MMIO_GPA | F_ALL;
	assert_int_equal(mmio_at(0), EMUL_UNSUPPORTED);
}

static void test_data_faults(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	CODE(0x89, 0x08); /* mov [rax], ecx */
	/* user mode writing a supervisor page: #PF P|W|U */
	ctx.cpl = 3;
	*pte_of(CODE_GPA) |= F_US;
	ctx.gpr[X86_RAX] = MMIO_LIN + 8;
	assert_int_equal(mmio_at(8), EMUL_EXCEPTION);
	assert_int_equal(res.vector, EMUL_VEC_PF);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_W | EMUL_PFEC_U);
	assert_int_equal(res.cr2, MMIO_LIN + 8);
	/* read-only page, supervisor, CR0.WP: #PF P|W */
	ctx.cpl = 0;
	*pte_of(MMIO_LIN) &= ~F_RW;
	assert_int_equal(mmio_at(8), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_W);
	/* without WP the supervisor write goes through */
	ctx.pg.cr0 &= ~EMUL_CR0_WP;
	assert_int_equal(mmio_at(8), EMUL_DONE);
	/* a reserved bit (above MAXPHYADDR 40) */
	ctx.rip = CODE_GPA;
	*pte_of(MMIO_LIN) |= 1ull << 45;
	assert_int_equal(mmio_at(8), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_W | EMUL_PFEC_RSVD);
	/* non-canonical address: #GP(0) */
	*pte_of(MMIO_LIN) &= ~(1ull << 45);
	ctx.gpr[X86_RAX] = 0x0000800000000000ull;
	assert_int_equal(mmio_at(8), EMUL_EXCEPTION);
	assert_int_equal(res.vector, EMUL_VEC_GP);
	assert_true(res.has_error_code);
	assert_int_equal(res.error_code, 0);
	/* accessed and dirty bits set by a write */
	ctx.gpr[X86_RAX] = MMIO_LIN + 8;
	assert_int_equal(mmio_at(8), EMUL_DONE);
	assert_true(*pte_of(MMIO_LIN) & (1ull << 5));
	assert_true(*pte_of(MMIO_LIN) & (1ull << 6));
	/* a #PF in the middle of a REP keeps the completed iterations */
	CODE(0xf3, 0xa4); /* rep movsb RAM -> MMIO, source runs into an unmapped page */
	ctx.rip = CODE_GPA;
	*pte_of(0x22000) = 0;
	ctx.gpr[X86_RSI] = 0x21ffe;
	ctx.gpr[X86_RDI] = MMIO_LIN;
	ctx.gpr[X86_RCX] = 4;
	assert_int_equal(mmio_at(0), EMUL_EXCEPTION);
	assert_int_equal(res.cr2, 0x22000);
	assert_int_equal(res.error_code, 0);
	assert_int_equal(ctx.gpr[X86_RCX], 2);
	assert_int_equal(ctx.gpr[X86_RSI], 0x22000);
	assert_int_equal(ctx.rip, CODE_GPA);
}

static void test_pae_32bit_faults(void **state)
{
	(void)state;
	setup(PM_PAE, false);
	ctx.pg.efer = EMUL_EFER_NXE;
	CODE(0x8b, 0x08); /* mov ecx, [eax] */
	ctx.gpr[X86_RAX] = 0x00500000; /* not mapped */
	assert_int_equal(emul_mmio(&ctx, MMIO_GPA, &res), EMUL_EXCEPTION);
	assert_int_equal(res.vector, EMUL_VEC_PF);
	assert_int_equal(res.error_code, 0);
	assert_int_equal(res.cr2, 0x00500000);
	setup(PM_32, false);
	ctx.cpl = 3;
	CODE(0x8b, 0x08);
	ctx.gpr[X86_RAX] = MMIO_LIN;
	/* code page is user, MMIO page supervisor: #PF P|U on the read */
	assert_int_equal(mmio_at(0), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_U);
	/* 32-bit mode: linear addresses wrap at 4 GiB */
	ctx.cpl = 0;
	ctx.gpr[X86_RAX] = 0xffffffffu;
	CODE(0x8b, 0x48, 0x01); /* mov ecx, [eax+1] -> linear 0 */
	mmio_calls = 0;
	assert_int_equal(emul_mmio(&ctx, 0, &res), EMUL_DONE);
	assert_int_equal(mmio_calls, 0); /* RAM at 0 */
}

static void test_large_pages(void **state)
{
	(void)state;
	/* 4-level: a 2 MiB page at 0x40200000 -> GPA 0x200000 (RAM), a 1 GiB
	 * page at 0x80000000 -> GPA 0xc0000000 (MMIO at 0xfee00000). */
	setup(PM_LONG, true);
	uint64_t *pml4 = (uint64_t *)(ram + ctx.pg.cr3);
	uint64_t *pdpt = (uint64_t *)(ram + (pml4[0] & ~0xfffull));
	uint64_t *pd1 = (uint64_t *)(ram + (pdpt[1] & ~0xfffull));
	pd1[1] = 0x200000 | F_ALL | (1ull << 7);
	pdpt[2] = 0xc0000000ull | F_ALL | (1ull << 7);
	CODE(0x89, 0x08); /* mov [rax], ecx */
	ctx.gpr[X86_RCX] = 0x12345678;
	ctx.gpr[X86_RAX] = 0x40200000 + 0x1234;
	assert_int_equal(emul_mmio(&ctx, 0x201234, &res), EMUL_DONE);
	assert_int_equal(*(uint32_t *)(ram + 0x201234), 0x12345678);
	assert_true(pd1[1] & (1ull << 6)); /* dirty */
	ctx.rip = CODE_GPA;
	ctx.gpr[X86_RAX] = 0x80000000ull + (MMIO_GPA - 0xc0000000ull) + 0x44;
	assert_int_equal(mmio_at(0x44), EMUL_DONE);
	assert_int_equal(mmio_reg(0x44, 4), 0x12345678);
	/* reserved bits 20:13 in a 2 MiB PDE */
	ctx.rip = CODE_GPA;
	pd1[1] |= 1ull << 13;
	ctx.gpr[X86_RAX] = 0x40200000;
	assert_int_equal(emul_mmio(&ctx, 0x200000, &res), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_W | EMUL_PFEC_RSVD);
	/* and bits 29:13 in a 1 GiB PDPTE */
	pdpt[2] |= 1ull << 20;
	ctx.gpr[X86_RAX] = 0x80000000ull + (MMIO_GPA - 0xc0000000ull);
	assert_int_equal(mmio_at(0), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_W | EMUL_PFEC_RSVD);

	/* 32-bit paging with PSE: a 4 MiB page at 0xc0000000 -> GPA 0xfec00000 */
	setup(PM_32, false);
	ctx.pg.cr4 |= EMUL_CR4_PSE;
	uint32_t *pd = (uint32_t *)(ram + ctx.pg.cr3);
	pd[0xc0000000u >> 22] = 0xfec00000u | F_ALL | (1u << 7);
	CODE(0x8b, 0x08); /* mov ecx, [eax] */
	set_mmio_reg(0x10, 0xcafef00d, 4);
	ctx.gpr[X86_RAX] = 0xc0000000u + 0x200000 + 0x10;
	assert_int_equal(mmio_at(0x10), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RCX], 0xcafef00d);
	/* PSE-36 bit 21 is reserved */
	ctx.rip = CODE_GPA;
	pd[0xc0000000u >> 22] |= 1u << 21;
	assert_int_equal(mmio_at(0x10), EMUL_EXCEPTION);
	assert_int_equal(res.error_code, EMUL_PFEC_P | EMUL_PFEC_RSVD);
	/* without CR4.PSE the PS bit is ignored: the entry is a page table */
	ctx.pg.cr4 &= ~EMUL_CR4_PSE;
	pd[0xc0000000u >> 22] = 0x2000 | F_ALL | (1u << 7);
	memset(ram + 0x2000, 0, 4096);
	((uint32_t *)(ram + 0x2000))[0x200] = (uint32_t)MMIO_GPA | F_ALL;
	assert_int_equal(mmio_at(0x10), EMUL_DONE);
	assert_int_equal(ctx.gpr[X86_RCX], 0xcafef00d);
}

static void test_unsupported_and_errors(void **state)
{
	(void)state;
	setup(PM_LONG, true);
	CODE(0x0f, 0x0b); /* ud2 */
	assert_int_equal(mmio_at(0), EMUL_UNSUPPORTED);
	assert_true(res.nbytes >= 2);
	assert_int_equal(res.bytes[0], 0x0f);
	assert_int_equal(res.bytes[1], 0x0b);
	assert_non_null(res.reason);
	assert_int_equal(res.rip, CODE_GPA);
	CODE(0x89, 0xc8); /* mov eax, ecx: no memory operand */
	assert_int_equal(mmio_at(0), EMUL_UNSUPPORTED);
	/* device ends the VM / fails */
	CODE(0x89, 0x08);
	ctx.gpr[X86_RAX] = MMIO_LIN;
	mmio_rc = 1;
	assert_int_equal(mmio_at(0), EMUL_VM_END);
	mmio_rc = -5;
	assert_int_equal(mmio_at(0), EMUL_IO_ERROR);
	assert_int_equal(res.io_error, -5);
	assert_int_equal(ctx.rip, CODE_GPA);
	/* an access that straddles RAM and MMIO is split */
	mmio_rc = 0;
	map4k(MMIO_LIN - 0x1000, DATA_GPA, F_ALL);
	ctx.gpr[X86_RAX] = MMIO_LIN - 2;
	ctx.gpr[X86_RCX] = 0xa1b2c3d4;
	assert_int_equal(mmio_at(0), EMUL_DONE);
	assert_int_equal(*(uint16_t *)(ram + DATA_GPA + 0xffe), 0xc3d4);
	assert_int_equal(mmio_reg(0, 2), 0xa1b2);
}

/* ---- flags against the host CPU ---- */

static uint64_t native(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t fin,
		       uint64_t *fout)
{
	uint64_t f = 0;
#define NAT(mn, T)                                                                       \
	do {                                                                             \
		T x = (T)a, y = (T)b;                                                    \
		__asm__ volatile("sub $128, %%rsp\n\tpush %[fi]\n\tpopfq\n\t" mn           \
				 " %[y], %[x]\n\tpushfq\n\tpop %[f]\n\tadd $128, %%rsp"  \
				 : [x] "+r"(x), [f] "=&r"(f)                             \
				 : [y] "r"(y), [fi] "r"(fin)                             \
				 : "cc", "memory");                                      \
		a = (uint64_t)x;                                                         \
	} while (0)
#define SIZES(mn)                                                                        \
	do {                                                                             \
		switch (size) {                                                          \
		case 1: NAT(mn, uint8_t); break;                                         \
		case 2: NAT(mn, uint16_t); break;                                        \
		case 4: NAT(mn, uint32_t); break;                                        \
		default: NAT(mn, uint64_t); break;                                       \
		}                                                                        \
	} while (0)
	switch (op) {
	case X86_ALU_ADD: SIZES("add"); break;
	case X86_ALU_OR: SIZES("or"); break;
	case X86_ALU_ADC: SIZES("adc"); break;
	case X86_ALU_SBB: SIZES("sbb"); break;
	case X86_ALU_AND: SIZES("and"); break;
	case X86_ALU_SUB: SIZES("sub"); break;
	case X86_ALU_XOR: SIZES("xor"); break;
	case X86_ALU_CMP: SIZES("cmp"); break;
	default: SIZES("test"); break;
	}
	*fout = f;
	return a;
}

static void check_flags(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t fin)
{
	uint64_t fn, fe = fin;
	uint64_t rn = native(op, size, a, b, fin, &fn);
	uint64_t re = emul_alu(op, size, a, b, &fe);
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
	if ((fn & EMUL_RFLAGS_STATUS) != (fe & EMUL_RFLAGS_STATUS) ||
	    (op != X86_ALU_CMP && op != X86_ALU_TEST && (rn & mask) != re)) {
		print_error("op %u size %u a %#llx b %#llx fin %#llx: host flags %#llx res %#llx, "
			    "emul flags %#llx res %#llx\n", op, size, (unsigned long long)a,
			    (unsigned long long)b, (unsigned long long)fin,
			    (unsigned long long)(fn & EMUL_RFLAGS_STATUS),
			    (unsigned long long)rn,
			    (unsigned long long)(fe & EMUL_RFLAGS_STATUS), (unsigned long long)re);
		fail();
	}
}

static void test_flags_vs_host(void **state)
{
	(void)state;
	static const uint64_t vals[] = {
		0, 1, 2, 0xf, 0x10, 0x7f, 0x80, 0x81, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
		0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffffffeull, ~0ull,
		0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull,
	};
	const unsigned nv = sizeof(vals) / sizeof(vals[0]);
	static const unsigned sizes[] = { 1, 2, 4, 8 };
	unsigned long n = 0;
	for (unsigned op = 0; op <= X86_ALU_TEST; op++)
		for (unsigned s = 0; s < 4; s++)
			for (unsigned i = 0; i < nv; i++)
				for (unsigned j = 0; j < nv; j++)
					for (unsigned cf = 0; cf < 2; cf++) {
						/* all other status flags set or clear */
						uint64_t fin = 2 | (cf ? EMUL_RFLAGS_CF : 0) |
							       (j & 1 ? EMUL_RFLAGS_STATUS &
							       ~EMUL_RFLAGS_CF : 0);
						check_flags(op, sizes[s], vals[i], vals[j], fin);
						n++;
					}
	/* and random operands */
	uint64_t x = 0x243f6a8885a308d3ull;
	for (unsigned k = 0; k < 200000; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t a = x;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check_flags(k % 9, sizes[(k / 9) % 4], a, x, 2 | (x & 1 ? EMUL_RFLAGS_CF : 0));
		n++;
	}
	assert_true(n > 200000);
}

int main(void)
{
	ram = aligned_alloc(4096, RAM_SIZE);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mov_store_load),
		cmocka_unit_test(test_mov_moffs_imm_riprel),
		cmocka_unit_test(test_movzx_movsx),
		cmocka_unit_test(test_alu_rmw),
		cmocka_unit_test(test_xchg_bt),
		cmocka_unit_test(test_rep_stos_bounded),
		cmocka_unit_test(test_rep_movs_df),
		cmocka_unit_test(test_string_io),
		cmocka_unit_test(test_string_io_runs),
		cmocka_unit_test(test_port_io),
		cmocka_unit_test(test_real_mode),
		cmocka_unit_test(test_paging_modes),
		cmocka_unit_test(test_fetch_across_pages),
		cmocka_unit_test(test_data_faults),
		cmocka_unit_test(test_pae_32bit_faults),
		cmocka_unit_test(test_large_pages),
		cmocka_unit_test(test_unsupported_and_errors),
		cmocka_unit_test(test_flags_vs_host),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(ram);
	return rc;
}
