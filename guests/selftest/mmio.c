/* mmio: the instruction emulator against the MMIO test device
 * (dev/mmio_test.h, LP_MMIO_TEST_BASE), built flat 32-bit (mmio32.elf) and
 * 64-bit paged (mmio64.elf).
 *
 * Every instruction family the emulator supports (emul/x86_decode.h) runs
 * once on MMIO and, where it can, the very same instruction runs natively on
 * a RAM copy of the device window: the register result, all of RFLAGS and
 * the memory window must agree (a strong oracle). The device's access count
 * and last-access record are checked for each one, so a wrong size, a wrong
 * address or a double access is caught. String port I/O (INS/OUTS, also
 * REP, also to/from MMIO) is checked against the POST-code port 0x80 and the
 * unhandled port 0x1234.
 *
 * Device counters: COUNT returns the accesses made before this read (the
 * read is then counted), LAST the record of the access before it. A test
 * reads COUNT (c0), runs the instruction, reads LAST, then COUNT (c1): the
 * instruction made c1 - c0 - 2 accesses, the last one being LAST. */
#include "guests/rt/rt.h"

#define BASE        ((uintptr_t)LP_MMIO_TEST_BASE)
#define OFF_COUNT   0x800u
#define OFF_LAST    0x808u
#define M(off)      (BASE + (off))
#define REC(size, wr, off) ((uint32_t)(size) | (uint32_t)(wr) << 8 | (uint32_t)(off) << 16)

#define FL_CF     0x001u
#define FL_PF     0x004u
#define FL_AF     0x010u
#define FL_ZF     0x040u
#define FL_SF     0x080u
#define FL_TF     0x100u
#define FL_DF     0x400u
#define FL_OF     0x800u
#define FL_STATUS (FL_CF | FL_PF | FL_AF | FL_ZF | FL_SF | FL_OF)

#ifdef __x86_64__
#define NAME "mmio64"
#define SI "%%rsi"
#define DI "%%rdi"
#else
#define NAME "mmio32"
#define SI "%%esi"
#define DI "%%edi"
#endif

/* RAM mirror of the device's scratch half: the oracle runs here. */
static uint8_t ram_mirror[0x800] __attribute__((aligned(4096)));
/* RAM buffers whose middle is a 4 KiB page boundary. */
static uint8_t pagebuf[3 * 4096] __attribute__((aligned(4096)));
#define PAGE_CROSS (pagebuf + 4096)
static uint8_t tmp[0x800], want[0x800];
static ureg_t base_flags;

/* ------------------------------------------------------------------ */
/* Device accessors with an exact size (inline asm: exactly one MOV). */

static inline uint8_t rd8(uintptr_t a)
{
	uint8_t v;
	asm volatile("movb (%1), %0" : "=q"(v) : "r"(a) : "memory");
	return v;
}

static inline uint32_t rd32(uintptr_t a)
{
	uint32_t v;
	asm volatile("movl (%1), %0" : "=r"(v) : "r"(a) : "memory");
	return v;
}

static inline void wr8(uintptr_t a, uint8_t v)
{
	asm volatile("movb %0, (%1)" : : "q"(v), "r"(a) : "memory");
}

static inline void wr32(uintptr_t a, uint32_t v)
{
	asm volatile("movl %0, (%1)" : : "r"(v), "r"(a) : "memory");
}

static void mmio_write(unsigned off, const uint8_t *src, unsigned n)
{
	unsigned i = 0;
	for (; i < n && ((off + i) & 3); i++)
		wr8(M(off + i), src[i]);
	for (; i + 4 <= n; i += 4) {
		uint32_t v;
		memcpy(&v, src + i, 4);
		wr32(M(off + i), v);
	}
	for (; i < n; i++)
		wr8(M(off + i), src[i]);
}

static void mmio_read(unsigned off, uint8_t *dst, unsigned n)
{
	unsigned i = 0;
	for (; i < n && ((off + i) & 3); i++)
		dst[i] = rd8(M(off + i));
	for (; i + 4 <= n; i += 4) {
		uint32_t v = rd32(M(off + i));
		memcpy(dst + i, &v, 4);
	}
	for (; i < n; i++)
		dst[i] = rd8(M(off + i));
}

/* The byte a pattern puts at absolute offset i. */
static uint8_t pat(unsigned i, unsigned seed)
{
	return (uint8_t)(i * 7u + seed * 29u + 0x31u);
}

static void pattern(uint8_t *b, unsigned off, unsigned n, unsigned seed)
{
	for (unsigned i = 0; i < n; i++)
		b[i] = pat(off + i, seed);
}

/* Same pattern into [off, off+n) of the device and of the RAM mirror. */
static void fill_both(unsigned off, unsigned n, unsigned seed)
{
	pattern(ram_mirror + off, off, n, seed);
	mmio_write(off, ram_mirror + off, n);
}

/* ------------------------------------------------------------------ */
/* One TAP line per case; the mismatches are printed as '#' lines. */

static unsigned nbad;
static char sub[48];

static void begin_case(void)
{
	nbad = 0;
	sub[0] = 0;
}

static void expect(const char *what, uint64_t got, uint64_t exp)
{
	if (got == exp)
		return;
	nbad++;
	rt_printf("#   %s%s%s: got 0x%llx, expected 0x%llx\n", sub, sub[0] ? ": " : "", what,
		  (unsigned long long)got, (unsigned long long)exp);
}

static void expect_bytes(const char *what, const uint8_t *got, const uint8_t *exp, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (got[i] != exp[i]) {
			nbad++;
			rt_printf("#   %s%s%s: byte +0x%x is 0x%x, expected 0x%x\n", sub,
				  sub[0] ? ": " : "", what, i, got[i], exp[i]);
			return;
		}
	}
}

/* The device window [off, off+n) holds exp. */
static void expect_mmio(const char *what, unsigned off, const uint8_t *exp, unsigned n)
{
	mmio_read(off, tmp, n);
	expect_bytes(what, tmp, exp, n);
}

static void end_case(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void end_case(const char *fmt, ...)
{
	char desc[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	tap_eq(nbad, 0, "%s", desc);
}

static uint32_t acc_c0;

static inline void acc_begin(void)
{
	acc_c0 = rd32(M(OFF_COUNT));
}

/* The instruction since acc_begin made n device accesses, the last one
 * described by rec (n == 0: the last access is acc_begin's own read). */
static void acc_end(unsigned n, uint32_t rec)
{
	uint32_t last = rd32(M(OFF_LAST));
	uint32_t c1 = rd32(M(OFF_COUNT));
	if (n == 0)
		rec = REC(4, 0, OFF_COUNT);
	expect("device accesses", c1 - acc_c0 - 2, n);
	expect("last access record", last, rec);
}

/* ------------------------------------------------------------------ */
/* Single-operand instructions: fn(p, &reg, flags_in) -> flags_out. The
 * instruction's memory operand is at p (+rel); reg is its register operand. */

typedef ureg_t (*mfn)(uintptr_t p, ureg_t *vp, ureg_t fin);

#define ASM_CASE(insn, vcons, ...)                                                  \
	asm volatile("push %[fi]\n\tpopf\n\t" insn "\n\tpushf\n\tpop %[fo]"         \
		     : [fo] "=&r"(fo), [v] vcons(v)                                   \
		     : [fi] "r"(fin), [p] "r"(p) __VA_ARGS__                          \
		     : "memory", "cc")

/* v in any byte-addressable register */
#define MC(name, insn)                                                              \
	static ureg_t name(uintptr_t p, ureg_t *vp, ureg_t fin)                     \
	{                                                                           \
		ureg_t fo, v = *vp;                                                 \
		ASM_CASE(insn, "+q");                                               \
		*vp = v;                                                            \
		return fo;                                                          \
	}
/* v in RAX/RBX/RCX/RDX (AH..BH forms) */
#define MCQ(name, insn)                                                             \
	static ureg_t name(uintptr_t p, ureg_t *vp, ureg_t fin)                     \
	{                                                                           \
		ureg_t fo, v = *vp;                                                 \
		ASM_CASE(insn, "+Q");                                               \
		*vp = v;                                                            \
		return fo;                                                          \
	}
/* v in rAX (moffs forms; p unused by the instruction) */
#define MCA(name, insn)                                                             \
	static ureg_t name(uintptr_t p, ureg_t *vp, ureg_t fin)                     \
	{                                                                           \
		ureg_t fo, v = *vp;                                                 \
		(void)p;                                                            \
		ASM_CASE(insn, "+a");                                               \
		*vp = v;                                                            \
		return fo;                                                          \
	}
/* with an index register [i] = 8 and p moved down by padj first */
#define MCI(name, padj, insn)                                                       \
	static ureg_t name(uintptr_t p, ureg_t *vp, ureg_t fin)                     \
	{                                                                           \
		ureg_t fo, v = *vp, i = 8;                                          \
		p -= (padj);                                                        \
		ASM_CASE(insn, "+q", , [i] "r"(i));                                 \
		*vp = v;                                                            \
		return fo;                                                          \
	}
/* p / 2 as the only address register (SIB, no base, scale 2, disp32) */
#define MCH(name, insn)                                                             \
	static ureg_t name(uintptr_t p, ureg_t *vp, ureg_t fin)                     \
	{                                                                           \
		ureg_t fo, v = *vp, h = (p - 0x20) / 2;                             \
		ASM_CASE(insn, "+q", , [h] "r"(h));                                 \
		*vp = v;                                                            \
		return fo;                                                          \
	}

/* ALU: both directions, each size */
#define ALU32(op)                                                                   \
	MC(op##_mr1, #op "b %b[v], (%[p])") MC(op##_mr2, #op "w %w[v], (%[p])")      \
	MC(op##_mr4, #op "l %k[v], (%[p])") MC(op##_rm1, #op "b (%[p]), %b[v]")      \
	MC(op##_rm2, #op "w (%[p]), %w[v]") MC(op##_rm4, #op "l (%[p]), %k[v]")
ALU32(add) ALU32(or) ALU32(adc) ALU32(sbb) ALU32(and) ALU32(sub) ALU32(xor) ALU32(cmp)
MC(test_mr1, "testb %b[v], (%[p])") MC(test_mr2, "testw %w[v], (%[p])")
MC(test_mr4, "testl %k[v], (%[p])")

/* MOV, MOVZX/MOVSX, XCHG */
MC(mov_st1, "movb %b[v], (%[p])") MC(mov_st2, "movw %w[v], (%[p])")
MC(mov_st4, "movl %k[v], (%[p])")
MC(mov_ld1, "movb (%[p]), %b[v]") MC(mov_ld2, "movw (%[p]), %w[v]")
MC(mov_ld4, "movl (%[p]), %k[v]")
MCQ(mov_ldh, "movb (%[p]), %h[v]") MCQ(mov_sth, "movb %h[v], (%[p])")
MCQ(sub_rmh, "subb (%[p]), %h[v]") MCQ(xor_mrh, "xorb %h[v], (%[p])")
MC(movi1, "movb $0x5a, (%[p])") MC(movi2, "movw $0x1234, (%[p])")
MC(movi4, "movl $0x89abcdef, (%[p])")
MC(movzbw, "movzbw (%[p]), %w[v]") MC(movzbl, "movzbl (%[p]), %k[v]")
MC(movzwl, "movzwl (%[p]), %k[v]") MC(movsbw, "movsbw (%[p]), %w[v]")
MC(movsbl, "movsbl (%[p]), %k[v]") MC(movswl, "movswl (%[p]), %k[v]")
MC(xchg1, "xchgb %b[v], (%[p])") MC(xchg2, "xchgw %w[v], (%[p])")
MC(xchg4, "xchgl %k[v], (%[p])") MC(xchg1r, "xchgb (%[p]), %b[v]")

/* ALU with an immediate: 80, 81 (iw, id), 83 (sign-extended ib), F6/F7 */
MC(addi1, "addb $0x80, (%[p])") MC(ori2, "orw $0x1234, (%[p])")
MC(adci4, "adcl $0x7fffffff, (%[p])") MC(sbbi4, "sbbl $-2, (%[p])")
MC(andi2, "andw $-16, (%[p])") MC(subi4, "subl $0x12345678, (%[p])")
MC(xori1, "xorb $0x5a, (%[p])") MC(cmpi4, "cmpl $-1, (%[p])")
MC(cmpi1, "cmpb $0x7f, (%[p])") MC(addi2b, "addw $3, (%[p])")
MC(testi1, "testb $0x81, (%[p])") MC(testi2, "testw $0x8001, (%[p])")
MC(testi4, "testl $0x80000001, (%[p])")

/* LOCK where the CPU allows it */
MC(lock_add4, "lock addl %k[v], (%[p])") MC(lock_xchg4, "lock xchgl %k[v], (%[p])")
MC(lock_or1, "lock orb $0x81, (%[p])") MC(lock_sub2, "lock subw %w[v], (%[p])")

/* Addressing: SIB + displacement (disp8, negative disp8, disp32), no base */
MCI(sib_ld, 0, "movl 0x10(%[p],%[i],4), %k[v]")        /* +0x30 */
MCI(sib_st, 0, "movw %w[v], -0x8(%[p],%[i],2)")        /* +0x08 */
MCI(sib_add, 0x1f0, "addl %k[v], 0x200(%[p],%[i],1)")  /* +0x18 */
MCH(nobase_ld, "movl 0x20(,%[h],2), %k[v]")            /* +0x00 */
MC(disp8_ld, "movl 0x3c(%[p]), %k[v]")                 /* +0x3c */

/* Segment overrides: the bases of CS/DS/ES/SS are 0 in both modes (FS/GS
 * too in 32-bit); 64-bit FS/GS with non-zero bases are below. */
MC(seg_cs_ld, "movl %%cs:(%[p]), %k[v]") MC(seg_ds_ld, ".byte 0x3e /* ds */\n\tmovl (%[p]), %k[v]")
MC(seg_es_st, "movl %k[v], %%es:(%[p])") MC(seg_ss_add, "addl %k[v], %%ss:(%[p])")

#ifdef __x86_64__
/* The RAM oracle of the moffs and FS/GS forms: the ModRM equivalents. */
#define ALU64(op) MC(op##_mr8, #op "q %q[v], (%[p])") MC(op##_rm8, #op "q (%[p]), %q[v]")
ALU64(add) ALU64(or) ALU64(adc) ALU64(sbb) ALU64(and) ALU64(sub) ALU64(xor) ALU64(cmp)
MC(test_mr8, "testq %q[v], (%[p])")
MC(mov_st8, "movq %q[v], (%[p])") MC(mov_ld8, "movq (%[p]), %q[v]")
MC(movi8, "movq $-2, (%[p])") MC(movi8b, "movq $0x7edcba98, (%[p])")
MC(movzbq, "movzbq (%[p]), %q[v]") MC(movzwq, "movzwq (%[p]), %q[v]")
MC(movsbq, "movsbq (%[p]), %q[v]") MC(movswq, "movswq (%[p]), %q[v]")
MC(xchg8, "xchgq %q[v], (%[p])")
MC(subi8, "subq $0x12345678, (%[p])") MC(cmpi8, "cmpq $-0x80000000, (%[p])")
MC(testi8, "testq $-1, (%[p])") MC(addi8b, "addq $-128, (%[p])")
MC(lock_xor8, "lock xorq %q[v], (%[p])")
/* 32-bit address size (67): the addresses fit in 32 bits here */
MC(a32_ld, "movl (%k[p]), %k[v]") MC(a32_st, "movq %q[v], 0x8(%k[p])")
MCA(moffs_ld1, "movabs 0xfeb00100, %%al") MCA(moffs_ld2, "movabs 0xfeb00100, %%ax")
MCA(moffs_ld4, "movabs 0xfeb00100, %%eax") MCA(moffs_ld8, "movabs 0xfeb00100, %%rax")
MCA(moffs_st1, "movabs %%al, 0xfeb00100") MCA(moffs_st2, "movabs %%ax, 0xfeb00100")
MCA(moffs_st4, "movabs %%eax, 0xfeb00100") MCA(moffs_st8, "movabs %%rax, 0xfeb00100")

/* REX: SIL (not DH), R9B, R13 as a base (needs a disp8), R10 as an index */
static ureg_t rex_sil_ld(uintptr_t p, ureg_t *vp, ureg_t fin)
{
	ureg_t fo, v = *vp;
	ASM_CASE("movb (%[p]), %%sil", "+S");
	*vp = v;
	return fo;
}
static ureg_t rex_r9b_st(uintptr_t p, ureg_t *vp, ureg_t fin)
{
	ureg_t fo;
	register ureg_t v asm("r9") = *vp;
	ASM_CASE("movb %%r9b, (%[p])", "+r");
	*vp = v;
	return fo;
}
static ureg_t rex_r13_add(uintptr_t p0, ureg_t *vp, ureg_t fin)
{
	ureg_t fo;
	register ureg_t v asm("r11") = *vp;
	register uintptr_t p asm("r13") = p0;
	asm volatile("push %[fi]\n\tpopf\n\taddq (%%r13), %%r11\n\tpushf\n\tpop %[fo]"
		     : [fo] "=&r"(fo), "+r"(v) : [fi] "r"(fin), "r"(p) : "memory", "cc");
	*vp = v;
	return fo;
}
static ureg_t rex_sib(uintptr_t p0, ureg_t *vp, ureg_t fin)
{
	ureg_t fo;
	register ureg_t v asm("r14") = *vp;
	register uintptr_t p asm("r9") = p0 - 0x18;
	register uintptr_t i asm("r10") = 4;
	asm volatile("push %[fi]\n\tpopf\n\tmovq -0x8(%%r9,%%r10,8), %%r14\n\tpushf\n\tpop %[fo]"
		     : [fo] "=&r"(fo), "+r"(v) : [fi] "r"(fin), "r"(p), "r"(i) : "memory", "cc");
	*vp = v;                                            /* -0x18 - 8 + 32 = +0x00 */
	return fo;
}

/* FS/GS with non-zero bases (set around the cases, see run_seg64). */
MC(fs_ld, "movl %%fs:0x20, %k[v]")          /* FS base = p - 0x20 */
MC(gs_st, "movq %q[v], %%gs:0x8")           /* GS base = p - 0x8 */
MC(plain_ld4, "movl (%[p]), %k[v]") MC(plain_st8, "movq %q[v], (%[p])")
#else
/* moffs with a 32-bit absolute address */
MCA(moffs_ld1, "movb 0xfeb00100, %%al") MCA(moffs_ld2, "movw 0xfeb00100, %%ax")
MCA(moffs_ld4, "movl 0xfeb00100, %%eax")
MCA(moffs_st1, "movb %%al, 0xfeb00100") MCA(moffs_st2, "movw %%ax, 0xfeb00100")
MCA(moffs_st4, "movl %%eax, 0xfeb00100")
MC(seg_fs_ld, "movl %%fs:(%[p]), %k[v]") MC(seg_gs_xor, "xorw %w[v], %%gs:(%[p])")
/* 82 /0 ib: the 80 alias, valid outside 64-bit mode (gas never emits it) */
static ureg_t op82_add(uintptr_t p, ureg_t *vp, ureg_t fin)
{
	ureg_t fo;
	asm volatile("push %[fi]\n\tpopf\n\t.byte 0x82, 0x01, 0x7f /* addb $0x7f,(%%ecx) */\n\t"
		     "pushf\n\tpop %[fo]"
		     : [fo] "=&r"(fo) : [fi] "r"(fin), "c"(p) : "memory", "cc");
	(void)vp;
	return fo;
}
#endif

struct mcase {
	const char *desc;
	mfn fn;
	mfn oracle;     /* NULL: fn itself on the RAM mirror */
	uint8_t size;   /* device access size */
	uint8_t nacc;   /* device accesses */
	uint8_t wr;     /* the last access is a write */
	int8_t rel;     /* the access is at p + rel */
};

/* mem dst writes (read + write), CMP/TEST only read */
#define ALU_MR(op, n, s, w) { #op " [mmio], r" #n, op##_mr##s, 0, s, (w) ? 2 : 1, w, 0 }
#define ALU_RM(op, n, s)    { #op " r" #n ", [mmio]", op##_rm##s, 0, s, 1, 0, 0 }
#define ALU_ALL(op, w)                                                           \
	ALU_MR(op, 8, 1, w), ALU_MR(op, 16, 2, w), ALU_MR(op, 32, 4, w),          \
	ALU_RM(op, 8, 1), ALU_RM(op, 16, 2), ALU_RM(op, 32, 4)
#define RD(desc, fn, s)  { desc, fn, 0, s, 1, 0, 0 }
#define WR(desc, fn, s)  { desc, fn, 0, s, 1, 1, 0 }
#define RMW(desc, fn, s) { desc, fn, 0, s, 2, 1, 0 }

static const struct mcase mcases[] = {
	/* MOV */
	WR("mov [mmio], r8 (88)", mov_st1, 1), WR("mov [mmio], r16 (66 89)", mov_st2, 2),
	WR("mov [mmio], r32 (89)", mov_st4, 4),
	RD("mov r8, [mmio] (8a)", mov_ld1, 1), RD("mov r16, [mmio] (66 8b)", mov_ld2, 2),
	RD("mov r32, [mmio] (8b)", mov_ld4, 4),
	RD("mov ah-bh, [mmio] (8a, high byte register)", mov_ldh, 1),
	WR("mov [mmio], ah-bh (88, high byte register)", mov_sth, 1),
	WR("mov byte [mmio], imm8 (c6)", movi1, 1), WR("mov word [mmio], imm16 (66 c7)", movi2, 2),
	WR("mov dword [mmio], imm32 (c7)", movi4, 4),
	{ "mov al, [moffs] (a0)", moffs_ld1, mov_ld1, 1, 1, 0, 0 },
	{ "mov ax, [moffs] (66 a1)", moffs_ld2, mov_ld2, 2, 1, 0, 0 },
	{ "mov eax, [moffs] (a1)", moffs_ld4, mov_ld4, 4, 1, 0, 0 },
	{ "mov [moffs], al (a2)", moffs_st1, mov_st1, 1, 1, 1, 0 },
	{ "mov [moffs], ax (66 a3)", moffs_st2, mov_st2, 2, 1, 1, 0 },
	{ "mov [moffs], eax (a3)", moffs_st4, mov_st4, 4, 1, 1, 0 },
	/* MOVZX / MOVSX */
	RD("movzx r16, byte [mmio] (66 0f b6)", movzbw, 1), RD("movzx r32, byte [mmio] (0f b6)", movzbl, 1),
	RD("movzx r32, word [mmio] (0f b7)", movzwl, 2), RD("movsx r16, byte [mmio] (66 0f be)", movsbw, 1),
	RD("movsx r32, byte [mmio] (0f be)", movsbl, 1), RD("movsx r32, word [mmio] (0f bf)", movswl, 2),
	/* ALU, both directions */
	ALU_ALL(add, 1), ALU_ALL(or, 1), ALU_ALL(adc, 1), ALU_ALL(sbb, 1),
	ALU_ALL(and, 1), ALU_ALL(sub, 1), ALU_ALL(xor, 1), ALU_ALL(cmp, 0),
	ALU_MR(test, 8, 1, 0), ALU_MR(test, 16, 2, 0), ALU_MR(test, 32, 4, 0),
	RD("sub ah-bh, [mmio] (2a, high byte register)", sub_rmh, 1),
	RMW("xor [mmio], ah-bh (30, high byte register)", xor_mrh, 1),
	RMW("add byte [mmio], 0x80 (80 /0)", addi1, 1), RMW("or word [mmio], 0x1234 (66 81 /1)", ori2, 2),
	RMW("adc dword [mmio], 0x7fffffff (81 /2)", adci4, 4), RMW("sbb dword [mmio], -2 (83 /3)", sbbi4, 4),
	RMW("and word [mmio], -16 (66 83 /4)", andi2, 2), RMW("sub dword [mmio], 0x12345678 (81 /5)", subi4, 4),
	RMW("xor byte [mmio], 0x5a (80 /6)", xori1, 1), RD("cmp dword [mmio], -1 (83 /7)", cmpi4, 4),
	RD("cmp byte [mmio], 0x7f (80 /7)", cmpi1, 1), RMW("add word [mmio], 3 (66 83 /0)", addi2b, 2),
	RD("test byte [mmio], 0x81 (f6 /0)", testi1, 1), RD("test word [mmio], 0x8001 (66 f7 /0)", testi2, 2),
	RD("test dword [mmio], 0x80000001 (f7 /0)", testi4, 4),
	/* XCHG: a read, then a write */
	RMW("xchg [mmio], r8 (86)", xchg1, 1), RMW("xchg [mmio], r16 (66 87)", xchg2, 2),
	RMW("xchg [mmio], r32 (87)", xchg4, 4), RMW("xchg r8, [mmio] (86, reversed syntax)", xchg1r, 1),
	/* LOCK */
	RMW("lock add [mmio], r32", lock_add4, 4), RMW("lock xchg [mmio], r32", lock_xchg4, 4),
	RMW("lock or byte [mmio], 0x81", lock_or1, 1), RMW("lock sub [mmio], r16", lock_sub2, 2),
	/* addressing */
	{ "mov r32, [base + index*4 + disp8] (SIB)", sib_ld, 0, 4, 1, 0, 0x30 },
	{ "mov [base + index*2 - disp8], r16 (SIB, negative disp8)", sib_st, 0, 2, 1, 1, 0x08 },
	{ "add [base + index*1 + disp32], r32 (SIB, disp32)", sib_add, 0, 4, 2, 1, 0x18 },
	{ "mov r32, [index*2 + disp32] (SIB, no base)", nobase_ld, 0, 4, 1, 0, 0 },
	{ "mov r32, [base + disp8]", disp8_ld, 0, 4, 1, 0, 0x3c },
	/* segment overrides */
	RD("mov r32, cs:[mmio] (2e)", seg_cs_ld, 4), RD("mov r32, ds:[mmio] (3e)", seg_ds_ld, 4),
	WR("mov es:[mmio], r32 (26)", seg_es_st, 4), RMW("add ss:[mmio], r32 (36)", seg_ss_add, 4),
#ifdef __x86_64__
	ALU_MR(add, 64, 8, 1), ALU_RM(add, 64, 8), ALU_MR(or, 64, 8, 1), ALU_RM(or, 64, 8),
	ALU_MR(adc, 64, 8, 1), ALU_RM(adc, 64, 8), ALU_MR(sbb, 64, 8, 1), ALU_RM(sbb, 64, 8),
	ALU_MR(and, 64, 8, 1), ALU_RM(and, 64, 8), ALU_MR(sub, 64, 8, 1), ALU_RM(sub, 64, 8),
	ALU_MR(xor, 64, 8, 1), ALU_RM(xor, 64, 8), ALU_MR(cmp, 64, 8, 0), ALU_RM(cmp, 64, 8),
	ALU_MR(test, 64, 8, 0),
	WR("mov [mmio], r64 (48 89)", mov_st8, 8), RD("mov r64, [mmio] (48 8b)", mov_ld8, 8),
	WR("mov qword [mmio], -2 (48 c7, sign-extended imm32)", movi8, 8),
	WR("mov qword [mmio], 0x7edcba98 (48 c7)", movi8b, 8),
	{ "mov rax, [moffs64] (48 a1)", moffs_ld8, mov_ld8, 8, 1, 0, 0 },
	{ "mov [moffs64], rax (48 a3)", moffs_st8, mov_st8, 8, 1, 1, 0 },
	RD("movzx r64, byte [mmio] (48 0f b6)", movzbq, 1), RD("movzx r64, word [mmio] (48 0f b7)", movzwq, 2),
	RD("movsx r64, byte [mmio] (48 0f be)", movsbq, 1), RD("movsx r64, word [mmio] (48 0f bf)", movswq, 2),
	RMW("xchg [mmio], r64 (48 87)", xchg8, 8),
	RMW("sub qword [mmio], 0x12345678 (48 81 /5)", subi8, 8),
	RD("cmp qword [mmio], -0x80000000 (48 81 /7)", cmpi8, 8),
	RD("test qword [mmio], -1 (48 f7 /0)", testi8, 8),
	RMW("add qword [mmio], -128 (48 83 /0)", addi8b, 8),
	RMW("lock xor [mmio], r64", lock_xor8, 8),
	RD("mov r32, [e32] (67: 32-bit address size)", a32_ld, 4),
	{ "mov [e32 + 8], r64 (67 48 89)", a32_st, 0, 8, 1, 1, 8 },
	RD("mov sil, [mmio] (40 8a: REX byte register)", rex_sil_ld, 1),
	WR("mov [mmio], r9b (44 88)", rex_r9b_st, 1),
	RD("add r11, [r13] (4d 03 5d 00: r13 base needs disp8)", rex_r13_add, 8),
	RD("mov r14, [r9 + r10*8 - 8] (4f 8b: REX.RXB SIB)", rex_sib, 8),
#else
	RD("mov r32, fs:[mmio] (64, FS base 0)", seg_fs_ld, 4),
	RMW("xor gs:[mmio], r16 (65 66 31, GS base 0)", seg_gs_xor, 2),
	RMW("add byte [mmio], 0x7f (82 /0, the 80 alias)", op82_add, 1),
#endif
};

/* Operand sets: memory value at p (8 bytes), register value, status flags in. */
static const struct {
	uint64_t mem, reg;
	unsigned flags;
} tri[] = {
	{ 0x7fffffffffffffffull, 0x0000000000000001ull, 0 },
	{ 0x0123456789abcdefull, 0xfedcba9876543281ull, FL_CF },
	{ 0x8000000080008080ull, 0x8000000080008080ull, FL_STATUS },
	{ 0xfffffffffffffff0ull, 0x00000000000000a1ull, FL_CF | FL_ZF },
};

#define P_OFF  0x100u
#define WIN_LO (P_OFF - 0x10)
#define WIN_N  0x60u

static void prepare_window(unsigned seed, uint64_t mem)
{
	pattern(ram_mirror + WIN_LO, WIN_LO, WIN_N, seed);
	memcpy(ram_mirror + P_OFF, &mem, 8);
	mmio_write(WIN_LO, ram_mirror + WIN_LO, WIN_N);
}

static void run_mcase(const struct mcase *c)
{
	begin_case();
	for (unsigned t = 0; t < sizeof(tri) / sizeof(tri[0]); t++) {
		snprintf(sub, sizeof(sub), "operands %u", t);
		prepare_window(t, tri[t].mem);
		ureg_t fin = base_flags | tri[t].flags;
		ureg_t vm = (ureg_t)tri[t].reg, vr = vm;
		acc_begin();
		ureg_t fm = c->fn(M(P_OFF), &vm, fin);
		acc_end(c->nacc, REC(c->size, c->wr, P_OFF + c->rel));
		ureg_t fr = (c->oracle ? c->oracle : c->fn)((uintptr_t)ram_mirror + P_OFF, &vr, fin);
		expect("register", vm, vr);
		expect("rflags", fm, fr);
		expect_mmio("memory", WIN_LO, ram_mirror + WIN_LO, WIN_N);
	}
	sub[0] = 0;
	end_case("%s: register, flags, memory; %u access%s, last %u-byte %s at +0x%x", c->desc,
		 c->nacc, c->nacc == 1 ? "" : "es", c->size, c->wr ? "write" : "read",
		 P_OFF + c->rel);
}

#ifdef __x86_64__

/* 64-bit FS/GS overrides with the base pointing into the device window
 * (the oracle: the same access without a segment, on RAM). */
static void run_seg64(void)
{
	static const struct mcase fs = { "mov r32, fs:[0x20] (64, FS base = MMIO - 0x20)", fs_ld,
					 plain_ld4, 4, 1, 0, 0 };
	static const struct mcase gs = { "mov gs:[0x8], r64 (65 48, GS base = MMIO - 8)", gs_st,
					 plain_st8, 8, 1, 1, 0 };
	unsigned v1 = wrmsr_safe(MSR_FS_BASE, M(P_OFF) - 0x20);
	unsigned v2 = wrmsr_safe(MSR_GS_BASE, M(P_OFF) - 0x8);
	if (v1 || v2) {
		tap_eq(v1 | v2, 0, "WRMSR FS_BASE/GS_BASE for the segment override cases");
	} else {
		run_mcase(&fs);
		run_mcase(&gs);
	}
	wrmsr_safe(MSR_FS_BASE, 0);
	wrmsr_safe(MSR_GS_BASE, 0);
}
#endif

/* ------------------------------------------------------------------ */
/* BT, BTS, BTR, BTC: CF and memory against RAM; the access goes to the
 * operand-sized unit the bit offset selects. */

typedef ureg_t (*bfn)(uintptr_t p, ureg_t off, ureg_t fin);

#define BT_FN(name, insn)                                                           \
	static ureg_t name(uintptr_t p, ureg_t o, ureg_t fin)                       \
	{                                                                           \
		ureg_t fo;                                                          \
		asm volatile("push %[fi]\n\tpopf\n\t" insn "\n\tpushf\n\tpop %[fo]" \
			     : [fo] "=&r"(fo)                                         \
			     : [fi] "r"(fin), [p] "r"(p), [o] "r"(o)                  \
			     : "memory", "cc");                                       \
		return fo;                                                          \
	}
#define BT_SET(op)                                                                  \
	BT_FN(op##_r2, #op "w %w[o], (%[p])") BT_FN(op##_r4, #op "l %k[o], (%[p])")
BT_SET(bt) BT_SET(bts) BT_SET(btr) BT_SET(btc)
BT_FN(bt_i2, "btw $9, (%[p])") BT_FN(bts_i4, "btsl $35, (%[p])")
BT_FN(btr_i4, "btrl $31, (%[p])") BT_FN(btc_i2, "btcw $17, (%[p])")
BT_FN(lock_bts_r4, "lock btsl %k[o], (%[p])")
#ifdef __x86_64__
BT_FN(bt_r8, "btq %q[o], (%[p])") BT_FN(bts_r8, "btsq %q[o], (%[p])")
BT_FN(btr_r8, "btrq %q[o], (%[p])") BT_FN(btc_r8, "btcq %q[o], (%[p])")
BT_FN(btc_i8, "btcq $70, (%[p])")
#endif

static void run_bt(const char *desc, bfn fn, unsigned size, bool imm, bool writes)
{
	int bits = (int)size * 8;
	/* register offsets: in the unit, the next ones, the ones before
	 * (signed), with junk above the operand size for 16 bits */
	sreg_t offs[] = { 3, bits + 5, -1, 3 * bits - 1, -bits - 3 };
	unsigned n = imm ? 1 : sizeof(offs) / sizeof(offs[0]);
	begin_case();
	for (unsigned k = 0; k < n; k++) {
		for (unsigned t = 0; t < 2; t++) {
			sreg_t so = offs[k];
			ureg_t o = (ureg_t)so;
			if (size == 2)
				o = (o & 0xffff) | 0x5a5a0000u;
			snprintf(sub, sizeof(sub), "offset %lld, pattern %u", (long long)so, t);
			prepare_window(t + 2 * k, tri[t].mem);
			ureg_t fin = base_flags | tri[t + 1].flags;
			sreg_t unit = so >= 0 ? so / bits : -((-so - 1) / bits) - 1;
			unsigned at = imm ? P_OFF : (unsigned)((sreg_t)P_OFF + unit * (sreg_t)size);
			acc_begin();
			ureg_t fm = fn(M(P_OFF), o, fin);
			acc_end(writes ? 2 : 1, REC(size, writes, at));
			ureg_t fr = fn((uintptr_t)ram_mirror + P_OFF, o, fin);
			expect("CF", fm & FL_CF, fr & FL_CF);
			expect_mmio("memory", WIN_LO, ram_mirror + WIN_LO, WIN_N);
		}
	}
	sub[0] = 0;
	end_case("%s: CF and memory; %u access%s of %u bytes at the selected unit", desc,
		 writes ? 2 : 1, writes ? "es" : "", size);
}

/* ------------------------------------------------------------------ */
/* String instructions: explicit expectations (registers, memory, accesses). */

struct sregs {
	ureg_t di, si, cx, ax, dx;
};
typedef void (*sfn)(struct sregs *r);

#define STR(name, body)                                                             \
	static void name(struct sregs *r)                                           \
	{                                                                           \
		ureg_t di = r->di, si = r->si, cx = r->cx, ax = r->ax, dx = r->dx;  \
		asm volatile(body : "+D"(di), "+S"(si), "+c"(cx), "+a"(ax), "+d"(dx) \
			     : : "memory", "cc");                                     \
		r->di = di; r->si = si; r->cx = cx; r->ax = ax; r->dx = dx;         \
	}
#define DOWN(insn) "std\n\t" insn "\n\tcld"

STR(stosb_rep, "rep stosb") STR(stosl_rep_down, DOWN("rep stosl"))
STR(stosb_rep_down, DOWN("rep stosb")) STR(stosw_one, "stosw")
STR(stosw_rep_down, DOWN("rep stosw"))
STR(movsb_rep, "rep movsb") STR(movsl_rep, "rep movsl") STR(movsb_rep_down, DOWN("rep movsb"))
STR(movsw_one, "movsw") STR(movsl_rep_fs, "rep movsl %%fs:(" SI "), %%es:(" DI ")")
STR(lodsb_one, "lodsb") STR(lodsw_one, "lodsw") STR(lodsl_one, "lodsl")
STR(lodsb_rep, "rep lodsb") STR(lodsl_rep, "rep lodsl") STR(lodsb_fs, "lodsb %%fs:(" SI ")")
STR(outsb_rep, "rep outsb") STR(outsw_rep, "rep outsw") STR(outsl_rep, "rep outsl")
STR(insb_rep, "rep insb") STR(insw_rep, "rep insw") STR(insl_rep, "rep insl")
STR(insb_rep_down, DOWN("rep insb")) STR(insl_one, "insl")
#ifdef __x86_64__
STR(stosq_rep, "rep stosq") STR(movsq_rep, "rep movsq") STR(lodsq_one, "lodsq")
#endif

static struct sregs R(ureg_t di, ureg_t si, ureg_t cx, ureg_t ax, ureg_t dx)
{
	struct sregs r = { di, si, cx, ax, dx };
	return r;
}

/* Runs fn on r with the device counters around it. */
static void run_str(sfn fn, struct sregs *r, unsigned nacc, uint32_t rec)
{
	acc_begin();
	fn(r);
	acc_end(nacc, rec);
}

static void expect_regs(const struct sregs *r, struct sregs e)
{
	expect("rdi", r->di, e.di);
	expect("rsi", r->si, e.si);
	expect("rcx", r->cx, e.cx);
	expect("rax", r->ax, e.ax);
	expect("rdx", r->dx, e.dx);
	expect("DF after cld", read_flags() & FL_DF, 0);
}

static void put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }

static void test_stos(void)
{
	struct sregs r;

	begin_case();
	fill_both(0x2f0, 0x30, 1);
	memset(ram_mirror + 0x300, 0xa5, 16);
	r = R(M(0x300), 0, 16, 0x123456a5, 0);
	run_str(stosb_rep, &r, 16, REC(1, 1, 0x30f));
	expect_regs(&r, R(M(0x310), 0, 0, 0x123456a5, 0));
	expect_mmio("memory", 0x2f0, ram_mirror + 0x2f0, 0x30);
	end_case("rep stosb, DF=0, 16 bytes into MMIO: 16 one-byte writes, RDI/RCX, neighbours kept");

	begin_case();
	fill_both(0x370, 0x60, 2);
	for (unsigned k = 0; k < 16; k++)
		put32(ram_mirror + 0x3c0 - 4 * k, 0x89abcdefu);
	r = R(M(0x3c0), 0, 16, 0x89abcdef, 0);
	run_str(stosl_rep_down, &r, 16, REC(4, 1, 0x384));
	expect_regs(&r, R(M(0x380), 0, 0, 0x89abcdef, 0));
	expect_mmio("memory", 0x370, ram_mirror + 0x370, 0x60);
	end_case("rep stosd, DF=1, 16 dwords into MMIO going down: last write at the lowest dword");

	begin_case();
	fill_both(0x320, 0x30, 3);
	memset(ram_mirror + 0x330, 0x3c, 16);
	r = R(M(0x33f), 0, 16, 0x3c, 0);
	run_str(stosb_rep_down, &r, 16, REC(1, 1, 0x330));
	expect_regs(&r, R(M(0x32f), 0, 0, 0x3c, 0));
	expect_mmio("memory", 0x320, ram_mirror + 0x320, 0x30);
	end_case("rep stosb, DF=1, 16 bytes into MMIO going down");

	begin_case();
	fill_both(0x3d0, 0x10, 4);
	ram_mirror[0x3d2] = 0xef;
	ram_mirror[0x3d3] = 0xbe;
	r = R(M(0x3d2), 0, 7, 0xdeadbeef, 0);
	run_str(stosw_one, &r, 1, REC(2, 1, 0x3d2));
	expect_regs(&r, R(M(0x3d4), 0, 7, 0xdeadbeef, 0));
	expect_mmio("memory", 0x3d0, ram_mirror + 0x3d0, 0x10);
	end_case("stosw without REP: one 2-byte write, RCX untouched");

#ifdef __x86_64__
	begin_case();
	fill_both(0x3e0, 0x20, 5);
	for (unsigned k = 0; k < 3; k++) {
		uint64_t q = 0x0102030405060708ull;
		memcpy(ram_mirror + 0x3e0 + 8 * k, &q, 8);
	}
	r = R(M(0x3e0), 0, 3, 0x0102030405060708ull, 0);
	run_str(stosq_rep, &r, 3, REC(8, 1, 0x3f0));
	expect_regs(&r, R(M(0x3f8), 0, 0, 0x0102030405060708ull, 0));
	expect_mmio("memory", 0x3e0, ram_mirror + 0x3e0, 0x20);
	end_case("rep stosq, 3 qwords into MMIO: three 8-byte writes");
#endif
}

static void test_movs(void)
{
	struct sregs r;
	uint8_t *src, *dst;

	begin_case();
	src = PAGE_CROSS - 32;
	pattern(src, 0, 64, 5);
	fill_both(0x3f0, 0x60, 6);
	memcpy(ram_mirror + 0x400, src, 64);
	r = R(M(0x400), (uintptr_t)src, 64, 0, 0);
	run_str(movsb_rep, &r, 64, REC(1, 1, 0x43f));
	expect_regs(&r, R(M(0x440), (uintptr_t)src + 64, 0, 0, 0));
	expect_mmio("memory", 0x3f0, ram_mirror + 0x3f0, 0x60);
	end_case("rep movsb RAM->MMIO, 64 bytes, the RAM source crosses a page");

	begin_case();
	src = PAGE_CROSS - 130;              /* dword 32 straddles the page boundary */
	pattern(src, 0, 256, 7);
	fill_both(0x3f0, 0x120, 8);
	memcpy(ram_mirror + 0x400, src, 256);
	r = R(M(0x400), (uintptr_t)src, 64, 0, 0);
	run_str(movsl_rep, &r, 64, REC(4, 1, 0x4fc));
	expect_regs(&r, R(M(0x500), (uintptr_t)src + 256, 0, 0, 0));
	expect_mmio("memory", 0x3f0, ram_mirror + 0x3f0, 0x120);
	end_case("rep movsd RAM->MMIO, 64 dwords, one source dword straddles a page");

	begin_case();
	dst = PAGE_CROSS - 32;
	memset(dst - 16, 0xee, 96);
	fill_both(0x400, 0x40, 9);
	r = R((uintptr_t)dst, M(0x400), 64, 0, 0);
	run_str(movsb_rep, &r, 64, REC(1, 0, 0x43f));
	expect_regs(&r, R((uintptr_t)dst + 64, M(0x440), 0, 0, 0));
	memset(want, 0xee, 96);
	memcpy(want + 16, ram_mirror + 0x400, 64);
	expect_bytes("RAM", dst - 16, want, 96);
	end_case("rep movsb MMIO->RAM, 64 bytes, the RAM destination crosses a page");

	begin_case();
	dst = PAGE_CROSS - 130;
	memset(dst - 16, 0xee, 256 + 32);
	fill_both(0x400, 0x100, 10);
	r = R((uintptr_t)dst, M(0x400), 64, 0, 0);
	run_str(movsl_rep, &r, 64, REC(4, 0, 0x4fc));
	expect_regs(&r, R((uintptr_t)dst + 256, M(0x500), 0, 0, 0));
	memset(want, 0xee, 256 + 32);
	memcpy(want + 16, ram_mirror + 0x400, 256);
	expect_bytes("RAM", dst - 16, want, 256 + 32);
	end_case("rep movsd MMIO->RAM, 64 dwords, one destination dword straddles a page");

	begin_case();
	fill_both(0x400, 0x20, 11);
	fill_both(0x5f0, 0x40, 12);
	memcpy(ram_mirror + 0x600, ram_mirror + 0x400, 32);
	r = R(M(0x600), M(0x400), 8, 0, 0);
	run_str(movsl_rep, &r, 16, REC(4, 1, 0x61c));
	expect_regs(&r, R(M(0x620), M(0x420), 0, 0, 0));
	expect_mmio("memory", 0x5f0, ram_mirror + 0x5f0, 0x40);
	end_case("rep movsd MMIO->MMIO, 8 dwords: a read and a write each");

	begin_case();
	src = PAGE_CROSS - 8;
	pattern(src, 0, 16, 13);
	fill_both(0x430, 0x30, 14);
	memcpy(ram_mirror + 0x440, src, 16);
	r = R(M(0x44f), (uintptr_t)src + 15, 16, 0, 0);
	run_str(movsb_rep_down, &r, 16, REC(1, 1, 0x440));
	expect_regs(&r, R(M(0x43f), (uintptr_t)src - 1, 0, 0, 0));
	expect_mmio("memory", 0x430, ram_mirror + 0x430, 0x30);
	end_case("rep movsb RAM->MMIO, DF=1, 16 bytes going down across a RAM page");

	begin_case();
	dst = pagebuf + 0x100;
	memset(dst, 0xee, 8);
	fill_both(0x460, 0x10, 15);
	r = R((uintptr_t)dst + 2, M(0x466), 5, 0, 0);
	run_str(movsw_one, &r, 1, REC(2, 0, 0x466));
	expect_regs(&r, R((uintptr_t)dst + 4, M(0x468), 5, 0, 0));
	memset(want, 0xee, 8);
	memcpy(want + 2, ram_mirror + 0x466, 2);
	expect_bytes("RAM", dst, want, 8);
	end_case("movsw without REP MMIO->RAM: one 2-byte read");

	begin_case();
	dst = pagebuf + 0x200;
	memset(dst, 0xee, 48);
	fill_both(0x480, 0x20, 16);
	r = R((uintptr_t)dst + 8, M(0x480), 8, 0, 0);
	run_str(movsl_rep_fs, &r, 8, REC(4, 0, 0x49c));
	expect_regs(&r, R((uintptr_t)dst + 40, M(0x4a0), 0, 0, 0));
	memset(want, 0xee, 48);
	memcpy(want + 8, ram_mirror + 0x480, 32);
	expect_bytes("RAM", dst, want, 48);
	end_case("rep movsd fs:[rSI] (64 prefix, FS base 0) MMIO->RAM, 8 dwords");

#ifdef __x86_64__
	begin_case();
	src = PAGE_CROSS - 24;
	pattern(src, 0, 64, 17);
	fill_both(0x4f0, 0x60, 18);
	memcpy(ram_mirror + 0x500, src, 64);
	r = R(M(0x500), (uintptr_t)src, 8, 0, 0);
	run_str(movsq_rep, &r, 8, REC(8, 1, 0x538));
	expect_regs(&r, R(M(0x540), (uintptr_t)src + 64, 0, 0, 0));
	expect_mmio("memory", 0x4f0, ram_mirror + 0x4f0, 0x60);
	end_case("rep movsq RAM->MMIO, 8 qwords across a RAM page");
#endif
}

static void test_lods(void)
{
	struct sregs r;
	const ureg_t ax0 = (ureg_t)0x1122334455667788ull;
	ureg_t b, w, d;

	fill_both(0x480, 0x20, 19);
	b = ram_mirror[0x481];
	w = ram_mirror[0x482] | (ureg_t)ram_mirror[0x483] << 8;
	d = 0;
	memcpy(&d, ram_mirror + 0x484, 4);

	begin_case();
	r = R(0, M(0x481), 9, ax0, 0);
	run_str(lodsb_one, &r, 1, REC(1, 0, 0x481));
	expect_regs(&r, R(0, M(0x482), 9, (ax0 & ~(ureg_t)0xff) | b, 0));
	end_case("lodsb from MMIO: AL loaded, the rest of RAX kept");

	begin_case();
	r = R(0, M(0x482), 9, ax0, 0);
	run_str(lodsw_one, &r, 1, REC(2, 0, 0x482));
	expect_regs(&r, R(0, M(0x484), 9, (ax0 & ~(ureg_t)0xffff) | w, 0));
	end_case("lodsw from MMIO: AX loaded, the rest of RAX kept");

	begin_case();
	r = R(0, M(0x484), 9, ax0, 0);
	run_str(lodsl_one, &r, 1, REC(4, 0, 0x484));
	expect_regs(&r, R(0, M(0x488), 9, d, 0));
	end_case("lodsd from MMIO: EAX loaded (zero-extended in 64-bit mode)");

#ifdef __x86_64__
	begin_case();
	uint64_t q;
	memcpy(&q, ram_mirror + 0x488, 8);
	r = R(0, M(0x488), 9, ax0, 0);
	run_str(lodsq_one, &r, 1, REC(8, 0, 0x488));
	expect_regs(&r, R(0, M(0x490), 9, q, 0));
	end_case("lodsq from MMIO: one 8-byte read");
#endif

	begin_case();
	r = R(0, M(0x480), 4, ax0, 0);
	run_str(lodsb_rep, &r, 4, REC(1, 0, 0x483));
	expect_regs(&r, R(0, M(0x484), 0, (ax0 & ~(ureg_t)0xff) | ram_mirror[0x483], 0));
	end_case("rep lodsb, 4 bytes from MMIO: AL is the last one, 4 reads");

	begin_case();
	r = R(0, M(0x481), 9, ax0, 0);
	run_str(lodsb_fs, &r, 1, REC(1, 0, 0x481));
	expect_regs(&r, R(0, M(0x482), 9, (ax0 & ~(ureg_t)0xff) | b, 0));
	end_case("lodsb fs:[rSI] (64 prefix, FS base 0) from MMIO");
}

/* REP with rCX = 0: no access at all, nothing changes. */
static void test_rep_zero(void)
{
	struct sregs r;

	fill_both(0x500, 0x40, 20);
	begin_case();
	r = R(M(0x510), 0, 0, 0x77, 0);
	run_str(stosb_rep, &r, 0, 0);
	expect_regs(&r, R(M(0x510), 0, 0, 0x77, 0));
	end_case("rep stosb with RCX=0: no access, RDI unchanged");

	begin_case();
	r = R(M(0x520), M(0x500), 0, 0, 0);
	run_str(movsb_rep, &r, 0, 0);
	expect_regs(&r, R(M(0x520), M(0x500), 0, 0, 0));
	end_case("rep movsb MMIO->MMIO with RCX=0: no access");

	begin_case();
	r = R(0, M(0x500), 0, 0x99, 0);
	run_str(lodsl_rep, &r, 0, 0);
	expect_regs(&r, R(0, M(0x500), 0, 0x99, 0));
	end_case("rep lodsd with RCX=0: no access, EAX unchanged");

	begin_case();
	outb(0x80, 0x42);
	r = R(M(0x530), 0, 0, 0, 0x80);
	run_str(insb_rep, &r, 0, 0);
	expect_regs(&r, R(M(0x530), 0, 0, 0, 0x80));
	r = R(0, M(0x500), 0, 0, 0x80);
	run_str(outsb_rep, &r, 0, 0);
	expect_regs(&r, R(0, M(0x500), 0, 0, 0x80));
	expect("port 0x80", inb(0x80), 0x42);
	end_case("rep insb/outsb with RCX=0 between port 0x80 and MMIO: no access, no port write");

	begin_case();
	expect_mmio("memory", 0x500, ram_mirror + 0x500, 0x40);
	end_case("the REP RCX=0 cases left the MMIO window unchanged");
}

/* More than EMUL_REP_MAX (256) iterations: the emulator resumes in chunks. */
static void test_rep_long(void)
{
	struct sregs r;
	uint8_t *src, *dst;

	begin_case();
	fill_both(0, 0x270, 21);
	memset(ram_mirror, 0x3c, 600);
	r = R(M(0), 0, 600, 0x3c, 0);
	run_str(stosb_rep, &r, 600, REC(1, 1, 0x257));
	expect_regs(&r, R(M(600), 0, 0, 0x3c, 0));
	expect_mmio("memory", 0, ram_mirror, 0x270);
	end_case("rep stosb of 600 bytes into MMIO (> 256: resumed in chunks), complete");

	begin_case();
	src = PAGE_CROSS - 600;
	pattern(src, 0, 1200, 22);
	fill_both(0, 0x4c0, 23);
	memcpy(ram_mirror, src, 1200);
	r = R(M(0), (uintptr_t)src, 300, 0, 0);
	run_str(movsl_rep, &r, 300, REC(4, 1, 0x4ac));
	expect_regs(&r, R(M(1200), (uintptr_t)src + 1200, 0, 0, 0));
	expect_mmio("memory", 0, ram_mirror, 0x4c0);
	end_case("rep movsd of 300 dwords RAM->MMIO across a RAM page, complete");

	begin_case();
	dst = PAGE_CROSS - 350;
	memset(dst - 8, 0xee, 716);
	fill_both(0, 700, 24);
	r = R((uintptr_t)dst, M(0), 700, 0, 0);
	run_str(movsb_rep, &r, 700, REC(1, 0, 0x2bb));
	expect_regs(&r, R((uintptr_t)dst + 700, M(700), 0, 0, 0));
	memset(want, 0xee, 716);
	memcpy(want + 8, ram_mirror, 700);
	expect_bytes("RAM", dst - 8, want, 716);
	end_case("rep movsb of 700 bytes MMIO->RAM across a RAM page, complete");

	begin_case();
	fill_both(0x2a0, 0x270, 25);
	for (unsigned k = 0; k < 300; k++) {
		ram_mirror[0x4fe - 2 * k] = 0x34;
		ram_mirror[0x4ff - 2 * k] = 0x12;
	}
	r = R(M(0x4fe), 0, 300, 0x1234, 0);
	run_str(stosw_rep_down, &r, 300, REC(2, 1, 0x2a8));
	expect_regs(&r, R(M(0x2a6), 0, 0, 0x1234, 0));
	expect_mmio("memory", 0x2a0, ram_mirror + 0x2a0, 0x270);
	end_case("rep stosw of 300 words, DF=1, into MMIO going down, complete");
}

/* Explicit-address and byte-register checks that need no oracle. */
static void expect_all(const char *what, const uint8_t *b, uint8_t v, unsigned n)
{
	memset(want, v, n);
	expect_bytes(what, b, want, n);
}

#define PORT_NONE 0x1234u

static void test_string_pio(void)
{
	struct sregs r;
	/* sources cross the first page boundary of pagebuf, destinations the second */
	uint8_t *src = PAGE_CROSS - 32, *dst = PAGE_CROSS + 4096 - 40;

	begin_case();
	pattern(src, 0, 64, 26);
	outb(0x80, (uint8_t)~src[63]);
	r = R(0, (uintptr_t)src, 64, 0, 0x80);
	outsb_rep(&r);
	expect_regs(&r, R(0, (uintptr_t)src + 64, 0, 0, 0x80));
	expect("inb 0x80 (the last byte written)", inb(0x80), src[63]);
	end_case("rep outsb of 64 bytes to port 0x80 from RAM across a page");

	begin_case();
	memset(dst - 8, 0xee, 80);
	r = R((uintptr_t)dst, 0, 64, 0, 0x80);
	insb_rep(&r);
	expect_regs(&r, R((uintptr_t)dst + 64, 0, 0, 0, 0x80));
	memset(want, 0xee, 80);
	memset(want + 8, src[63], 64);
	expect_bytes("RAM", dst - 8, want, 80);
	end_case("rep insb of 64 bytes from port 0x80 into RAM: every byte is the last value written");

	begin_case();
	r = R(0, (uintptr_t)src, 64, 0, PORT_NONE);
	outsb_rep(&r);
	expect_regs(&r, R(0, (uintptr_t)src + 64, 0, 0, PORT_NONE));
	r = R(0, (uintptr_t)src, 16, 0, PORT_NONE);
	outsw_rep(&r);
	expect_regs(&r, R(0, (uintptr_t)src + 32, 0, 0, PORT_NONE));
	r = R(0, (uintptr_t)src, 16, 0, PORT_NONE);
	outsl_rep(&r);
	expect_regs(&r, R(0, (uintptr_t)src + 64, 0, 0, PORT_NONE));
	expect("inb 0x80 (not written)", inb(0x80), src[63]);
	end_case("rep outsb/outsw/outsd to unhandled port 0x1234: dropped, registers advance");

	begin_case();
	memset(dst - 8, 0xee, 80);
	r = R((uintptr_t)dst, 0, 64, 0, PORT_NONE);
	insb_rep(&r);
	expect_regs(&r, R((uintptr_t)dst + 64, 0, 0, 0, PORT_NONE));
	memset(want, 0xee, 80);
	memset(want + 8, 0xff, 64);
	expect_bytes("RAM", dst - 8, want, 80);
	end_case("rep insb of 64 bytes from unhandled port 0x1234: all 0xff");

	begin_case();
	memset(dst - 8, 0xee, 80);
	r = R((uintptr_t)dst, 0, 16, 0, PORT_NONE);
	insw_rep(&r);
	expect_regs(&r, R((uintptr_t)dst + 32, 0, 0, 0, PORT_NONE));
	expect_all("RAM (insw)", dst, 0xff, 32);
	expect_all("RAM after (insw)", dst + 32, 0xee, 40);
	r = R((uintptr_t)dst, 0, 16, 0, PORT_NONE);
	insl_rep(&r);
	expect_regs(&r, R((uintptr_t)dst + 64, 0, 0, 0, PORT_NONE));
	expect_all("RAM (insl)", dst, 0xff, 64);
	expect_all("RAM after (insl)", dst + 64, 0xee, 8);
	expect_all("RAM before", dst - 8, 0xee, 8);
	end_case("rep insw/insd of 16 from unhandled port 0x1234: all 0xff, nothing beyond");

	begin_case();
	memset(dst - 8, 0xee, 32);
	r = R((uintptr_t)dst + 15, 0, 16, 0, PORT_NONE);
	insb_rep_down(&r);
	expect_regs(&r, R((uintptr_t)dst - 1, 0, 0, 0, PORT_NONE));
	memset(want, 0xee, 32);
	memset(want + 8, 0xff, 16);
	expect_bytes("RAM", dst - 8, want, 32);
	end_case("rep insb, DF=1, 16 bytes from port 0x1234 going down");

	begin_case();
	src = PAGE_CROSS - 150;
	pattern(src, 0, 300, 27);
	r = R(0, (uintptr_t)src, 300, 0, 0x80);
	outsb_rep(&r);
	expect_regs(&r, R(0, (uintptr_t)src + 300, 0, 0, 0x80));
	expect("inb 0x80", inb(0x80), src[299]);
	dst = PAGE_CROSS + 4096 - 160;
	memset(dst - 8, 0xee, 316);
	r = R((uintptr_t)dst, 0, 300, 0, 0x80);
	insb_rep(&r);
	expect_regs(&r, R((uintptr_t)dst + 300, 0, 0, 0, 0x80));
	memset(want, 0xee, 316);
	memset(want + 8, src[299], 300);
	expect_bytes("RAM", dst - 8, want, 316);
	end_case("rep outsb/insb of 300 bytes with port 0x80 (> 256: resumed in chunks)");

	begin_case();
	fill_both(0x6f8, 0x20, 28);
	outb(0x80, 0x6b);
	memset(ram_mirror + 0x700, 0x6b, 8);
	r = R(M(0x700), 0, 8, 0, 0x80);
	run_str(insb_rep, &r, 8, REC(1, 1, 0x707));
	expect_regs(&r, R(M(0x708), 0, 0, 0, 0x80));
	expect_mmio("memory", 0x6f8, ram_mirror + 0x6f8, 0x20);
	end_case("rep insb of 8 from port 0x80 into MMIO: 8 one-byte device writes");

	begin_case();
	fill_both(0x700, 0x20, 29);
	r = R(0, M(0x700), 8, 0, 0x80);
	run_str(outsb_rep, &r, 8, REC(1, 0, 0x707));
	expect_regs(&r, R(0, M(0x708), 0, 0, 0x80));
	expect("inb 0x80", inb(0x80), ram_mirror[0x707]);
	r = R(0, M(0x700), 4, 0, PORT_NONE);
	run_str(outsl_rep, &r, 4, REC(4, 0, 0x70c));
	expect_regs(&r, R(0, M(0x710), 0, 0, PORT_NONE));
	end_case("rep outsb/outsd from MMIO to ports 0x80/0x1234: one device read per element");

	begin_case();
	fill_both(0x710, 0x10, 30);
	memset(ram_mirror + 0x714, 0xff, 4);
	r = R(M(0x714), 0, 3, 0, PORT_NONE);
	run_str(insl_one, &r, 1, REC(4, 1, 0x714));
	expect_regs(&r, R(M(0x718), 0, 3, 0, PORT_NONE));
	expect_mmio("memory", 0x710, ram_mirror + 0x710, 0x10);
	end_case("insd without REP from port 0x1234 into MMIO: one 4-byte write of 0xffffffff");
}

/* ------------------------------------------------------------------ */

#ifdef __x86_64__
#endif

int guest_main(void)
{
	tap_begin(NAME);
	rt_map_mmio_test();
	base_flags = read_flags() & ~(ureg_t)(FL_STATUS | FL_DF | FL_TF);

	/* The device itself: scratch reads back, counters count. */
	begin_case();
	wr32(M(0x810), 1);                        /* reset: clears scratch and counters */
	expect("COUNT after reset", rd32(M(OFF_COUNT)), 0);
	expect("LAST after two accesses", rd32(M(OFF_LAST)), REC(4, 0, OFF_COUNT));
	wr32(M(0x10), 0xcafef00d);
	expect("scratch read-back", rd32(M(0x10)), 0xcafef00d);
	expect("COUNT", rd32(M(OFF_COUNT)), 4);
	end_case("MMIO test device: reset, read-back and the access counters");

	for (unsigned i = 0; i < sizeof(mcases) / sizeof(mcases[0]); i++)
		run_mcase(&mcases[i]);
#ifdef __x86_64__
	run_seg64();
#endif

	run_bt("bt [mmio], r16 (66 0f a3)", bt_r2, 2, false, false);
	run_bt("bt [mmio], r32 (0f a3)", bt_r4, 4, false, false);
	run_bt("bts [mmio], r16 (66 0f ab)", bts_r2, 2, false, true);
	run_bt("bts [mmio], r32 (0f ab)", bts_r4, 4, false, true);
	run_bt("btr [mmio], r16 (66 0f b3)", btr_r2, 2, false, true);
	run_bt("btr [mmio], r32 (0f b3)", btr_r4, 4, false, true);
	run_bt("btc [mmio], r16 (66 0f bb)", btc_r2, 2, false, true);
	run_bt("btc [mmio], r32 (0f bb)", btc_r4, 4, false, true);
	run_bt("lock bts [mmio], r32", lock_bts_r4, 4, false, true);
	run_bt("bt word [mmio], 9 (66 0f ba /4)", bt_i2, 2, true, false);
	run_bt("bts dword [mmio], 35 (0f ba /5, offset masked to 3)", bts_i4, 4, true, true);
	run_bt("btr dword [mmio], 31 (0f ba /6)", btr_i4, 4, true, true);
	run_bt("btc word [mmio], 17 (66 0f ba /7, offset masked to 1)", btc_i2, 2, true, true);
#ifdef __x86_64__
	run_bt("bt [mmio], r64 (48 0f a3)", bt_r8, 8, false, false);
	run_bt("bts [mmio], r64 (48 0f ab)", bts_r8, 8, false, true);
	run_bt("btr [mmio], r64 (48 0f b3)", btr_r8, 8, false, true);
	run_bt("btc [mmio], r64 (48 0f bb)", btc_r8, 8, false, true);
	run_bt("btc qword [mmio], 70 (48 0f ba /7, offset masked to 6)", btc_i8, 8, true, true);
#endif

	test_stos();
	test_movs();
	test_lods();
	test_rep_zero();
	test_rep_long();
	test_string_pio();
	return tap_end();
}
