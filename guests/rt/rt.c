/* lightpath guest runtime: console, command line, IDT and trap dispatch,
 * hypercalls, TAP output. Shared by the 32- and 64-bit guests. */
#include "guests/rt/rt.h"

#include "lib/printf.h"
#include "lib/string.h"

#define COM1          0x3f8
#define COM1_LSR      (COM1 + 5)
#define LSR_THRE      0x20
#define MB_BOOT_MAGIC 0x2BADB002u
#define MB_INFO_CMDLINE (1u << 2)

/* ---------------------------------------------------------------- exit */

void guest_exit(unsigned status)
{
	outb(LP_DEBUG_EXIT_PORT, (uint8_t)status);
	/* Only reached if nothing ends the VM on port 0xf4 (a test looks for this). */
	rt_puts("guest_exit: still running after the port 0xf4 write\n");
	lp_hypercall(LP_HC_EXIT, status, 0, 0, NULL, NULL);
	for (;;)
		asm volatile("cli; hlt");
}

/* ---------------------------------------------------------------- serial */

void rt_putc(char c)
{
	/* Bounded wait: a broken LSR must not hang the guest. */
	for (unsigned i = 0; i < 100000; i++)
		if (inb(COM1_LSR) & LSR_THRE)
			break;
	outb(COM1, (uint8_t)c);
}

void rt_puts(const char *s)
{
	while (*s)
		rt_putc(*s++);
}

int rt_vprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	rt_puts(buf);
	return n;
}

int rt_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = rt_vprintf(fmt, ap);
	va_end(ap);
	return n;
}

/* ---------------------------------------------------------------- cmdline */

static char cmdline[1024];
static const char *args = "";

static void cmdline_init(void)
{
	if (rt_mb_magic != MB_BOOT_MAGIC || !rt_mb_info)
		return;
	const uint32_t *mbi = (const uint32_t *)(uintptr_t)rt_mb_info;
	if (!(mbi[0] & MB_INFO_CMDLINE) || !mbi[4])
		return;
	const char *src = (const char *)(uintptr_t)mbi[4];
	size_t i;
	for (i = 0; i + 1 < sizeof(cmdline) && src[i]; i++)
		cmdline[i] = src[i];
	cmdline[i] = '\0';
	/* The first word is the image path. */
	const char *p = cmdline;
	while (*p == ' ')
		p++;
	while (*p && *p != ' ')
		p++;
	while (*p == ' ')
		p++;
	args = p;
}

const char *rt_args(void)
{
	return args;
}

bool rt_arg(const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	const char *p = args;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		if ((size_t)(p - w) > klen && !strncmp(w, key, klen) && w[klen] == '=') {
			const char *v = w + klen + 1;
			size_t n = 0;
			while (v + n < p && n + 1 < len) {
				buf[n] = v[n];
				n++;
			}
			if (len)
				buf[n] = '\0';
			return true;
		}
	}
	return false;
}

uint64_t rt_arg_u64(const char *key, uint64_t def)
{
	char buf[32];
	if (!rt_arg(key, buf, sizeof(buf)) || !buf[0])
		return def;
	const char *s = buf;
	unsigned base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	uint64_t v = 0;
	if (!*s)
		return def;
	for (; *s; s++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return def;
		v = v * base + d;
	}
	return v;
}

/* ---------------------------------------------------------------- traps */

extern char rt_isr_stubs[];
#define RT_STUB_SIZE 16

#ifdef __x86_64__
struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));
struct idt_ptr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));
#else
struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t zero, type;
	uint16_t off_hi;
} __attribute__((packed));
struct idt_ptr {
	uint16_t limit;
	uint32_t base;
} __attribute__((packed));
#endif
_Static_assert(sizeof(struct idt_gate) == 2 * sizeof(ureg_t), "IDT gate size");

#define GATE_INTR 0x8e	/* present, DPL 0, interrupt gate: IF cleared */

static struct idt_gate idt[256] __attribute__((aligned(16)));
static rt_handler_t handlers[256];
static unsigned tap_pass, tap_fail;
struct rt_trap rt_trap;
volatile ureg_t rt_resume;
static const char *tap_name;

static void idt_init(void)
{
	for (unsigned v = 0; v < 256; v++) {
		uintptr_t a = (uintptr_t)(rt_isr_stubs + v * RT_STUB_SIZE);
		struct idt_gate *g = &idt[v];
		g->off_lo = (uint16_t)a;
		g->sel = RT_SEL_CODE;
		g->type = GATE_INTR;
#ifdef __x86_64__
		g->off_mid = (uint16_t)(a >> 16);
		g->off_hi = (uint32_t)(a >> 32);
#else
		g->off_hi = (uint16_t)(a >> 16);
#endif
	}
	rt_idt_load();
}

uint32_t rt_pm_now(void)
{
	return inl(LP_PMTIMER_PORT) & 0xffffffu;
}

uint64_t rt_tsc_per_ms(void)
{
	uint32_t need = LP_PMTIMER_HZ / 500, elapsed = 0, last = rt_pm_now();  /* 2 ms */
	uint64_t t0 = rdtsc();
	while (elapsed < need) {
		uint32_t now = rt_pm_now();
		elapsed += (now - last) & 0xffffffu;
		last = now;
	}
	uint64_t per_ms = (rdtsc() - t0) / 2;
	return per_ms ? per_ms : 1;
}

void rt_idt_load(void)
{
	struct idt_ptr p = { sizeof(idt) - 1, (uintptr_t)idt };
	asm volatile("lidt %0" : : "m"(p));
}

void rt_set_handler(unsigned vector, rt_handler_t fn)
{
	if (vector < 256)
		handlers[vector] = fn;
}

void rt_trap_clear(void)
{
	rt_trap.count = 0;
	rt_trap.vector = ~0u;
	rt_trap.error = 0;
	rt_trap.ip = 0;
	rt_resume = 0;
}

/* Called by rt_isr_common with the saved frame. */
void rt_trap_entry(struct rt_frame *f);
void rt_trap_entry(struct rt_frame *f)
{
	unsigned v = (unsigned)f->vector;
	if (handlers[v]) {
		handlers[v](f);
		return;
	}
	if (rt_resume && v < 32) {
		/* An armed test instruction faulted: record and skip it. */
		rt_trap.count++;
		rt_trap.vector = v;
		rt_trap.error = f->error;
		rt_trap.ip = f->ip;
		f->ip = rt_resume;
		rt_resume = 0;
		return;
	}
	if (v >= 32) {
		rt_printf("rt: spurious interrupt vector %u\n", v);
		return;
	}
	rt_printf("rt: unexpected exception vector %u error 0x%llx at ip 0x%llx\n",
		  v, (unsigned long long)f->error, (unsigned long long)f->ip);
	if (tap_name) {
		/* Count it as a failed test so the summary line still comes. */
		rt_printf("not ok %u - no unexpected exception (got vector %u)\n",
			  tap_pass + tap_fail + 1, v);
		tap_fail++;
		tap_end();
	}
	guest_exit(1);
}

unsigned rdmsr_safe(uint32_t msr, uint64_t *v)
{
	uint32_t lo = 0, hi = 0;
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "rdmsr\n1:"
		     : "+a"(lo), "+d"(hi) : "c"(msr) : "memory");
	rt_resume = 0;
	*v = ((uint64_t)hi << 32) | lo;
	return rt_trap.count ? rt_trap.vector : 0;
}

unsigned wrmsr_safe(uint32_t msr, uint64_t v)
{
	rt_trap_clear();
	asm volatile(RT_ARM_RESUME "wrmsr\n1:"
		     : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
		     : "memory");
	rt_resume = 0;
	return rt_trap.count ? rt_trap.vector : 0;
}

/* ---------------------------------------------------------------- hypercalls */

bool rt_intel;

static void vendor_init(void)
{
	struct cpuid_regs r = cpuid(0, 0);
	rt_intel = r.ebx == 0x756e6547u && r.edx == 0x49656e69u && r.ecx == 0x6c65746eu;
}

sreg_t lp_hypercall(ureg_t nr, ureg_t a, ureg_t b, ureg_t c,
		    ureg_t *out_rbx, ureg_t *out_rcx)
{
	ureg_t ax = nr, bx = a, cx = b, dx = c;
	rt_trap_clear();
	if (rt_intel)
		asm volatile(RT_ARM_RESUME "vmcall\n1:"
			     : "+a"(ax), "+b"(bx), "+c"(cx), "+d"(dx) : : "memory");
	else
		asm volatile(RT_ARM_RESUME "vmmcall\n1:"
			     : "+a"(ax), "+b"(bx), "+c"(cx), "+d"(dx) : : "memory");
	rt_resume = 0;
	if (rt_trap.count)
		return LP_HC_FAULTED;
	if (out_rbx)
		*out_rbx = bx;
	if (out_rcx)
		*out_rcx = cx;
	return (sreg_t)ax;
}

bool rt_on_lightpath(void)
{
	struct cpuid_regs r = cpuid(LP_CPUID_BASE, 0);
	return r.ebx == LP_CPUID_SIG_EBX && r.ecx == LP_CPUID_SIG_ECX &&
	       r.edx == LP_CPUID_SIG_EDX;
}

/* ---------------------------------------------------------------- TAP */

void tap_begin(const char *name)
{
	tap_name = name;
	tap_pass = tap_fail = 0;
}

static bool tap_report(bool ok, const char *detail, const char *fmt, va_list ap)
{
	char desc[256];
	vsnprintf(desc, sizeof(desc), fmt, ap);
	unsigned n = tap_pass + tap_fail + 1;
	if (ok) {
		tap_pass++;
		rt_printf("ok %u - %s\n", n, desc);
	} else {
		tap_fail++;
		rt_printf("not ok %u - %s (%s)\n", n, desc, detail);
	}
	return ok;
}

bool tap_eq(uint64_t got, uint64_t expected, const char *fmt, ...)
{
	char detail[96];
	snprintf(detail, sizeof(detail), "got 0x%llx, expected 0x%llx",
		 (unsigned long long)got, (unsigned long long)expected);
	va_list ap;
	va_start(ap, fmt);
	bool ok = tap_report(got == expected, detail, fmt, ap);
	va_end(ap);
	return ok;
}

bool tap_ge(uint64_t got, uint64_t min, const char *fmt, ...)
{
	char detail[96];
	snprintf(detail, sizeof(detail), "got %llu, expected >= %llu",
		 (unsigned long long)got, (unsigned long long)min);
	va_list ap;
	va_start(ap, fmt);
	bool ok = tap_report(got >= min, detail, fmt, ap);
	va_end(ap);
	return ok;
}

bool tap_ok(bool cond, uint64_t got, const char *expected, const char *fmt, ...)
{
	char detail[160];
	snprintf(detail, sizeof(detail), "got 0x%llx, expected %s",
		 (unsigned long long)got, expected);
	va_list ap;
	va_start(ap, fmt);
	bool ok = tap_report(cond, detail, fmt, ap);
	va_end(ap);
	return ok;
}

void tap_skip(const char *fmt, ...)
{
	char why[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	tap_ok(true, 0, "", "# SKIP %s", why);
}

int tap_end(void)
{
	rt_printf("selftest %s: %u passed, %u failed\n",
		  tap_name ? tap_name : "?", tap_pass, tap_fail);
	return tap_fail ? 1 : 0;
}

/* ---------------------------------------------------------------- ACPI */

/* A pointer to a physical address; the asm hides the constant from the
 * compiler's bounds checks (addresses below 4 KiB look like NULL + n). */
static const volatile uint8_t *acpi_phys(uint64_t a)
{
	uintptr_t p = (uintptr_t)a;
	asm("" : "+r"(p));
	return (const volatile uint8_t *)p;
}

static uint32_t acpi_rd32(uint64_t a)
{
	const volatile uint8_t *p = acpi_phys(a);
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool acpi_sum_ok(uint64_t a, uint32_t len)
{
	const volatile uint8_t *p = acpi_phys(a);
	uint8_t sum = 0;
	for (uint32_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return sum == 0;
}

static bool acpi_sig(uint64_t a, const char *sig, unsigned n)
{
	const volatile uint8_t *p = acpi_phys(a);
	for (unsigned i = 0; i < n; i++)
		if (p[i] != (uint8_t)sig[i])
			return false;
	return true;
}

/* Reachable: paging off, or the first GiB that entry64 maps. */
static bool acpi_reachable(uint64_t a, uint64_t len)
{
#ifdef __x86_64__
	return a && a + len <= (1ull << 30);
#else
	return a && a + len <= (1ull << 32);
#endif
}

static uint64_t rsdp_scan(uint64_t from, uint64_t to)
{
	for (uint64_t a = from; a + 20 <= to; a += 16)
		if (acpi_sig(a, "RSD PTR ", 8) && acpi_sum_ok(a, 20))
			return a;
	return 0;
}

uint64_t rt_acpi_rsdp(void)
{
	const volatile uint8_t *bda = acpi_phys(0x40e);
	uint64_t ebda = (uint64_t)(bda[0] | bda[1] << 8) << 4;
	uint64_t a = 0;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		a = rsdp_scan(ebda, ebda + 1024);
	return a ? a : rsdp_scan(0xe0000, 0x100000);
}

uint64_t rt_acpi_table(const char *sig)
{
	uint64_t rsdp = rt_acpi_rsdp();
	if (!rsdp)
		return 0;
	const volatile uint8_t *r = acpi_phys(rsdp);
	uint64_t root = acpi_rd32(rsdp + 16);
	unsigned width = 4;
	if (r[15] >= 2 && acpi_sum_ok(rsdp, acpi_rd32(rsdp + 20))) {
		uint64_t x = acpi_rd32(rsdp + 24) | (uint64_t)acpi_rd32(rsdp + 28) << 32;
		if (x) {
			root = x;
			width = 8;
		}
	}
	if (!acpi_reachable(root, 36) || !acpi_sig(root, width == 8 ? "XSDT" : "RSDT", 4))
		return 0;
	uint32_t len = acpi_rd32(root + 4);
	if (len < 36 || !acpi_reachable(root, len) || !acpi_sum_ok(root, len))
		return 0;
	for (uint32_t off = 36; off + width <= len; off += width) {
		uint64_t t = acpi_rd32(root + off);
		if (width == 8)
			t |= (uint64_t)acpi_rd32(root + off + 4) << 32;
		if (!acpi_reachable(t, 36) || !acpi_sig(t, sig, 4))
			continue;
		uint32_t tlen = acpi_rd32(t + 4);
		if (tlen >= 36 && acpi_reachable(t, tlen) && acpi_sum_ok(t, tlen))
			return t;
	}
	return 0;
}

/* ---------------------------------------------------------------- start */

void rt_start(void);
void rt_start(void)
{
	idt_init();
	vendor_init();
	rt_trap_clear();
	cmdline_init();
	guest_exit((unsigned)guest_main());
}

#ifdef __x86_64__
extern uint64_t rt_pdpt[512];
static uint64_t mmio_pd[512] __attribute__((aligned(4096)));   /* the 4th GiB */
#endif

void rt_map_mmio(uint64_t pa)
{
#ifdef __x86_64__
	if ((pa >> 30) != 3)
		return;   /* entry64 maps the first GiB; devices sit in the 4th */
	mmio_pd[(pa >> 21) & 511] = (pa & ~0x1fffffull) | 0x80 | 0x18 | 0x3; /* 2M, PCD|PWT, RW, P */
	rt_pdpt[3] = (uintptr_t)mmio_pd | 0x3;
	ureg_t cr3;
	asm volatile("mov %%cr3, %0\n\tmov %0, %%cr3" : "=r"(cr3) : : "memory");
#else
	(void)pa;
#endif
}

void rt_map_mmio_test(void)
{
	rt_map_mmio(LP_MMIO_TEST_BASE);
}
