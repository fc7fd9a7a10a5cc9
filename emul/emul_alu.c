/* x86 emulator: ALU results and their flags (emul_alu). See
 * emul/emul_internal.h. */
#include "emul/emul_internal.h"

static bool parity_even(uint64_t v)
{
	uint8_t b = (uint8_t)v;
	b ^= b >> 4;
	b ^= b >> 2;
	b ^= b >> 1;
	return !(b & 1);
}

uint64_t emul_alu(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t *rflags)
{
	uint64_t mask = size_mask(size);
	uint64_t sign = 1ull << (8 * size - 1);
	uint64_t cin = (*rflags & EMUL_RFLAGS_CF) ? 1 : 0;
	uint64_t r;
	bool cf = false, of = false, af = false;

	a &= mask;
	b &= mask;
	switch (op) {
	case X86_ALU_ADD:
		cin = 0;
		/* fall through */
	case X86_ALU_ADC:
		r = (a + b + cin) & mask;
		cf = r < a || (cin && r == a);
		of = (a ^ r) & (b ^ r) & sign;
		af = (a ^ b ^ r) & 0x10;
		break;
	case X86_ALU_SUB:
	case X86_ALU_CMP:
		cin = 0;
		/* fall through */
	case X86_ALU_SBB:
		r = (a - b - cin) & mask;
		cf = a < b || (cin && a == b);
		of = (a ^ b) & (a ^ r) & sign;
		af = (a ^ b ^ r) & 0x10;
		break;
	case X86_ALU_OR:
		r = a | b;
		break;
	case X86_ALU_XOR:
		r = a ^ b;
		break;
	default: /* AND, TEST: AF is cleared, as AMD and Intel CPUs do */
		r = a & b;
		break;
	}
	uint64_t f = *rflags & ~EMUL_RFLAGS_STATUS;
	if (cf)
		f |= EMUL_RFLAGS_CF;
	if (parity_even(r))
		f |= EMUL_RFLAGS_PF;
	if (af)
		f |= EMUL_RFLAGS_AF;
	if (r == 0)
		f |= EMUL_RFLAGS_ZF;
	if (r & sign)
		f |= EMUL_RFLAGS_SF;
	if (of)
		f |= EMUL_RFLAGS_OF;
	*rflags = f;
	return r;
}
