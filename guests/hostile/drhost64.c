/* drhost64: a hostile guest that points its breakpoints at the hypervisor.
 * lightpath is loaded at 1 MiB (boot/linker.ld), so a guest can aim DR0-3
 * at every linear address there; the test harness passes it the ranges
 * that matter (read from the image's symbols), as an attacker who reads
 * the code would pick them (numbers in hex, without 0x):
 *
 *   x=ADDR+LEN/ADDR+LEN...   instruction breakpoints on every byte of up
 *                            to eight code ranges
 *   d=ADDR+LEN               read/write breakpoints (8 bytes) on a data range
 *   t=ADDR/ADDR/ADDR/ADDR    four instruction breakpoints armed together
 *                            (say, the instruction after VMRUN and the #DB
 *                            handler's first ones)
 *
 * Four at a time, each set is armed in DR7 and carried across a VM exit (a
 * null hypercall, and in the targeted round a heavy one too), then DR7 is
 * cleared again. The arming, the exit and the disarming are one block of
 * instructions that touch no memory, whose own addresses are left out, so
 * no breakpoint can fire in the guest itself. A CPU or emulator that keeps
 * the guest's breakpoints armed after the VM exit (QEMU 7.2) makes the
 * hypervisor take a #DB, which stopped lightpath with a panic.
 *
 * Then it checks that its debug registers read back what it wrote, that no
 * #DB came to it, and that its breakpoints still work on its own code and
 * data. Exits 0 when everything held. */
#include "guests/rt/rt.h"

#define DR7_L(i)        (1ull << (2 * (i)))
#define DR7_RW(i, t)    ((uint64_t)(t) << (16 + 4 * (i)))
#define DR7_LEN(i, l)   ((uint64_t)(l) << (18 + 4 * (i)))
#define RW_EXEC         0
#define RW_WRITE        1
#define RW_ACCESS       3
#define LEN_8           2
#define DR6_INIT        0xffff0ff0ull

static volatile unsigned db_count;
static volatile uint64_t db_dr6, db_ip;
static unsigned readback_bad;
static volatile uint64_t watched;

static void on_db(struct rt_frame *f)
{
	db_count++;
	asm volatile("mov %%dr6, %0" : "=r"(db_dr6));
	asm volatile("mov %0, %%dr6" ::"r"(DR6_INIT));
	db_ip = f->ip;
	f->flags |= RT_FLAGS_RF;
}

/* The armed block: DR0-3 and DR7 loaded, a VM exit (RAX = hypercall), DR7
 * cleared; registers only. Its bounds are the labels around it. */
extern const char armed_amd[], armed_amd_end[], armed_intel[], armed_intel_end[];

__attribute__((noinline)) static void arm_across_exit(const uint64_t a[4], uint64_t dr7, uint64_t hc)
{
	uint64_t back[5];
	register uint64_t r8 asm("r8") = a[0], r9 asm("r9") = a[1], r10 asm("r10") = a[2],
				    r11 asm("r11") = a[3], rsi asm("rsi") = dr7;
	if (rt_intel)
		asm volatile("armed_intel:\n\t"
			     "mov %%r8, %%dr0\n\tmov %%r9, %%dr1\n\tmov %%r10, %%dr2\n\t"
			     "mov %%r11, %%dr3\n\tmov %%rsi, %%dr7\n\tvmcall\n\t"
			     "xor %%esi, %%esi\n\tmov %%rsi, %%dr7\n"
			     "armed_intel_end:"
			     : "+a"(hc), "+r"(rsi)
			     : "r"(r8), "r"(r9), "r"(r10), "r"(r11)
			     : "rbx", "rcx", "rdx", "memory");
	else
		asm volatile("armed_amd:\n\t"
			     "mov %%r8, %%dr0\n\tmov %%r9, %%dr1\n\tmov %%r10, %%dr2\n\t"
			     "mov %%r11, %%dr3\n\tmov %%rsi, %%dr7\n\tvmmcall\n\t"
			     "xor %%esi, %%esi\n\tmov %%rsi, %%dr7\n"
			     "armed_amd_end:"
			     : "+a"(hc), "+r"(rsi)
			     : "r"(r8), "r"(r9), "r"(r10), "r"(r11)
			     : "rbx", "rcx", "rdx", "memory");
	asm volatile("mov %%dr0, %0; mov %%dr1, %1; mov %%dr2, %2; mov %%dr3, %3; mov %%dr7, %4"
		     : "=r"(back[0]), "=r"(back[1]), "=r"(back[2]), "=r"(back[3]), "=r"(back[4]));
	for (unsigned i = 0; i < 4; i++)
		readback_bad += back[i] != a[i];
	readback_bad += (back[4] & 0xffffffffull) != 0x400;   /* DR7 cleared */
}

/* Is an instruction breakpoint at `a` one the guest itself would hit? */
static bool own_code(uint64_t a)
{
	const char *blk = rt_intel ? armed_intel : armed_amd;
	const char *end = rt_intel ? armed_intel_end : armed_amd_end;
	return a >= (uint64_t)(uintptr_t)blk && a < (uint64_t)(uintptr_t)end;
}

/* Every byte of [from, from + n) as instruction breakpoints, four a round. */
static unsigned scan_code(uint64_t from, uint64_t n)
{
	uint64_t a[4];
	unsigned k = 0, total = 0;
	for (uint64_t p = from; p < from + n; p++) {
		if (own_code(p))
			continue;
		a[k++] = p;
		if (k == 4 || p + 1 == from + n) {
			uint64_t dr7 = 0;
			for (unsigned i = 0; i < k; i++)
				dr7 |= DR7_L(i) | DR7_RW(i, RW_EXEC);
			while (k < 4)
				a[k++] = 0;
			arm_across_exit(a, dr7, LP_HC_NULL);
			total += 4;
			k = 0;
		}
	}
	return total;
}

/* [from, from + n) as 8-byte read/write breakpoints, four a round. */
static unsigned scan_data(uint64_t from, uint64_t n)
{
	uint64_t dr7 = 0, a[4];
	unsigned total = 0;
	for (unsigned i = 0; i < 4; i++)
		dr7 |= DR7_L(i) | DR7_RW(i, RW_ACCESS) | DR7_LEN(i, LEN_8);
	for (uint64_t p = from & ~7ull; p < from + n; p += 32) {
		for (unsigned i = 0; i < 4; i++)
			a[i] = p + 8 * i;
		arm_across_exit(a, dr7, LP_HC_NULL);
		total += 4;
	}
	return total;
}

__attribute__((noinline, noclone)) static unsigned own_target(unsigned x)
{
	return x * 3;
}
static unsigned (*volatile own_fn)(unsigned) = own_target;

/* The next hex number at *p (no 0x), and the character after it. */
static uint64_t hex_at(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			     c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (d == 16)
			return v;
		v = v * 16 + d;
	}
}

/* key=A+N/A+N/...: up to max (address, length) pairs (length 0 for a
 * plain A/A/... list); returns how many. */
static unsigned parse_list(const char *key, uint64_t addr[], uint64_t len[], unsigned max)
{
	char buf[160];
	unsigned n = 0;
	if (!rt_arg(key, buf, sizeof(buf)))
		return 0;
	for (const char *p = buf; *p && n < max;) {
		addr[n] = hex_at(&p);
		len[n] = 0;
		if (*p == '+') {
			p++;
			len[n] = hex_at(&p);
		}
		n++;
		if (*p != '/')
			break;
		p++;
	}
	return n;
}

int guest_main(void)
{
	uint64_t xa[8], xn[8], da[1], dn[1], ta[4], tn[4];
	rt_set_handler(1, on_db);
	rt_printf("drhost64: breakpoints on lightpath's code and data, four at a time, each "
		  "armed across a VM exit\n");

	unsigned code = 0, data = 0, nx = parse_list("x", xa, xn, 8);
	for (unsigned r = 0; r < nx; r++)
		code += scan_code(xa[r], xn[r]);
	if (parse_list("d", da, dn, 1))
		data = scan_data(da[0], dn[0]);
	uint64_t t[4] = { 0, 0, 0, 0 }, dr7 = 0;
	unsigned together = 0, nt = parse_list("t", ta, tn, 4);
	for (unsigned i = 0; i < nt; i++) {
		t[i] = ta[i];
		if (t[i] && !own_code(t[i])) {
			dr7 |= DR7_L(i) | DR7_RW(i, RW_EXEC);
			together++;
		}
	}
	arm_across_exit(t, dr7, LP_HC_NULL);
	arm_across_exit(t, dr7, LP_HC_NULL_HEAVY);
	rt_printf("drhost64: %u instruction breakpoints, %u data breakpoints, %u together\n", code,
		  data, together);

	unsigned bad = readback_bad, stray = db_count;
	rt_printf("drhost64: DR0-DR3 and DR7 read back what was written: %s\n",
		  bad ? "NO" : "yes");
	rt_printf("drhost64: #DB in the guest meanwhile: %u\n", stray);

	/* control: its breakpoints still work on its own code and data */
	db_count = 0;
	uint64_t own[4] = { (uint64_t)(uintptr_t)own_target, (uint64_t)(uintptr_t)&watched, 0, 0 };
	asm volatile("mov %0, %%dr0; mov %1, %%dr1" ::"r"(own[0]), "r"(own[1]));
	asm volatile("mov %0, %%dr7" ::"r"(DR7_L(0) | DR7_RW(0, RW_EXEC) | DR7_L(1) |
					   DR7_RW(1, RW_WRITE) | DR7_LEN(1, LEN_8)));
	unsigned r = own_fn(14);
	bool exec_ok = db_count == 1 && (db_dr6 & 0xf) == 1 && db_ip == own[0] && r == 42;
	/* a VM exit that delivers nothing first: lightpath leaves data
	 * breakpoints out of an entry that delivers an event, under QEMU
	 * (docs/SECURITY.md), and the #DB just delivered was one */
	lp_hypercall(LP_HC_NULL, 0, 0, 0, NULL, NULL);
	watched = 1;
	bool data_ok = db_count == 2 && (db_dr6 & 0xf) == 2;
	asm volatile("mov %0, %%dr7" ::"r"(0ull));
	rt_printf("drhost64: a breakpoint on its own code still fires: %s\n", exec_ok ? "yes" : "NO");
	rt_printf("drhost64: a breakpoint on its own data still fires: %s\n", data_ok ? "yes" : "NO");
	return bad || stray || !exec_ok || !data_ok;
}
