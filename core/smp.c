/* Host SMP bring-up: the MADT's CPUs, INIT-SIPI-SIPI, each AP's setup and
 * idle loop (core/smp.h, docs/SMP.md). */
#include "core/smp.h"

#include "core/bootinfo.h"
#include "core/console.h"
#include "core/cpu.h"
#include "core/hv.h"
#include "core/idt.h"
#include "core/madt.h"
#include "core/options.h"
#include "core/pmem.h"
#include "core/timer.h"
#include "core/tsc.h"
#include "core/xstate.h"
#include "lib/printf.h"
#include "lib/string.h"

_Static_assert(SMP_MAX_CPUS == MADT_MAX_CPUS, "one limit");

#define IDENTITY_LIMIT   (4ull << 30)   /* boot/entry.S maps the first 4 GiB */
#define TRAMPOLINE_LOW   0x1000ull      /* not page 0: the real-mode IVT and BDA */
#define TRAMPOLINE_HIGH  0x100000ull    /* a SIPI vector names a page below 1 MiB */
/* The MP initialization sequence's delays (SDM vol. 3A 8.4.4.1, APM vol. 2
 * 15.27.8): 10 ms after INIT, 200 us after each SIPI. */
#define INIT_DELAY_US    10000u
#define SIPI_DELAY_US    200u
/* How long an AP has from its first SIPI to being online. Under QEMU TCG an
 * AP is up within a few ms; the margin is for a loaded emulator host. */
#define AP_START_TIMEOUT_US 1000000u
#define AP_ANSWER_TIMEOUT_US 1000000u
#define CR4_VMXE_BIT     (1ull << 13)
#define LAPIC_DEFAULT_BASE 0xfee00000ull   /* as core/timer.c and boot/ap_entry.S use it */

extern char ap_trampoline[], ap_trampoline_end[];
extern uint64_t ap_boot_stack_top;
extern uint32_t ap_boot_apic_id, ap_boot_cr3;

struct percpu *smp_cpus[SMP_MAX_CPUS];
unsigned smp_nr_cpus;

/* The boot CPU's control state, which every AP takes over. */
static struct {
	uint64_t cr0, cr4, efer, xcr0;
	const struct lp_options *opt;
} bsp_state;

static struct madt_info madt;
static uint8_t saved_page[4096];

static const void *phys_identity(uint64_t pa, uint64_t len, void *ctx)
{
	(void)ctx;
	if (pa == 0 || len > IDENTITY_LIMIT || pa > IDENTITY_LIMIT - len)
		return 0;
	return (const void *)(uintptr_t)pa;
}

static void delay_us(uint64_t us)
{
	uint64_t ticks = tsc_hz() / 1000000 * us, start = rdtsc();
	while (rdtsc() - start < ticks)
		asm volatile("pause");
}

static uint32_t cpu_state(const struct percpu *pc)
{
	return __atomic_load_n(&pc->state, __ATOMIC_ACQUIRE);
}

/* The first page in usable RAM between 4 KiB and 1 MiB. lightpath gives
 * none of its low memory to guests (guest RAM comes from pmem, above the
 * image); the page may still hold the boot loader's data (the multiboot
 * information, module strings), so smp_init saves it and puts it back. */
static uint64_t trampoline_page(const struct boot_info *bi)
{
	for (unsigned i = 0; i < bi->nr_ram; i++) {
		uint64_t s = (bi->ram[i].start + 0xfff) & ~0xfffull, e = bi->ram[i].end & ~0xfffull;
		if (s < TRAMPOLINE_LOW)
			s = TRAMPOLINE_LOW;
		if (e > TRAMPOLINE_HIGH)
			e = TRAMPOLINE_HIGH;
		if (s + 4096 <= e)
			return s;
	}
	return 0;
}

/* ---- on the AP ---- */

static void __attribute__((noreturn)) smp_idle(struct percpu *pc)
{
	for (;;) {
		asm volatile("cli" ::: "memory");
		smp_work_fn *fn = __atomic_load_n(&pc->work, __ATOMIC_ACQUIRE);
		if (!fn) {
			/* the wake IPI (or any interrupt) ends the hlt; sti's
			 * shadow keeps one arriving after the test from being lost */
			asm volatile("sti; hlt" ::: "memory");
			host_nmis_report();
			continue;
		}
		fn(pc->work_arg);
		__atomic_store_n(&pc->work, (smp_work_fn *)0, __ATOMIC_RELEASE);
	}
}

void ap_main(void) __attribute__((noreturn));

/* From boot/ap_entry.S: long mode, the host's page tables, ap_gdt, on this
 * CPU's own stack (so this_cpu() is its own struct percpu), interrupts off. */
void ap_main(void)
{
	struct percpu *pc = this_cpu();
	__atomic_store_n(&pc->state, PERCPU_ALIVE, __ATOMIC_RELEASE);
	wrmsr(MSR_EFER, bsp_state.efer & ~EFER_SVME);    /* the backend turns SVME on */
	asm volatile("mov %0, %%cr0" ::"r"(bsp_state.cr0) : "memory");
	asm volatile("mov %0, %%cr4" ::"r"(bsp_state.cr4 & ~CR4_VMXE_BIT) : "memory");
	if (bsp_state.cr4 & CR4_OSXSAVE)
		xsetbv(0, bsp_state.xcr0);
	idt_load();
	timer_init_ap();
	const char *why = hv_ap_init(pc, bsp_state.opt);
	if (why) {
		pc->fail_why = why;
		__atomic_store_n(&pc->state, PERCPU_FAILED, __ATOMIC_RELEASE);
		halt_forever();
	}
	__atomic_store_n(&pc->state, PERCPU_ONLINE, __ATOMIC_RELEASE);
	smp_idle(pc);
}

/* ---- on the boot CPU ---- */

bool smp_run_on(unsigned cpu, smp_work_fn *fn, void *arg)
{
	if (cpu == 0 || cpu >= SMP_MAX_CPUS || !smp_cpus[cpu])
		return false;
	struct percpu *pc = smp_cpus[cpu];
	if (cpu_state(pc) != PERCPU_ONLINE || __atomic_load_n(&pc->work, __ATOMIC_ACQUIRE))
		return false;
	pc->work_arg = arg;
	__atomic_store_n(&pc->work, fn, __ATOMIC_RELEASE);
	if (host_lapic_send_ipi(pc->apic_id, LAPIC_ICR_FIXED | LAPIC_ICR_ASSERT | IDT_VECTOR_WAKE))
		return true;
	/* No wake-up sent: take the job back, unless the AP took it already
	 * (then it runs there), so that the caller may run it elsewhere. */
	smp_work_fn *posted = fn;
	return !__atomic_compare_exchange_n(&pc->work, &posted, (smp_work_fn *)0, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void smp_kick(const struct percpu *pc)
{
	host_lapic_send_ipi(pc->apic_id, LAPIC_ICR_FIXED | LAPIC_ICR_ASSERT | IDT_VECTOR_WAKE);
}

/* Every wait for another CPU spins with PAUSE, as the SDM advises for
 * spin-wait loops; under QEMU it is also what lets the other CPU run at all.
 * With -icount QEMU runs every CPU in one thread, in turn (round robin), and
 * QEMU 7.2 (Debian 12's) gives the CPU whose turn it is every instruction up
 * to the next virtual timer deadline, and the next CPU what is left of it:
 * nothing. A CPU that spins without PAUSE thus runs to the deadline every
 * round and the CPU it waits for never runs (QEMU fixed this in 8.1: "ensure
 * fairness with icount", which splits the budget between the CPUs). PAUSE
 * ends the CPU's turn at once in QEMU's x86 TCG (helper_pause: "let another
 * CPU run"). */
bool smp_wait_done(unsigned cpu, uint64_t timeout_us)
{
	if (cpu == 0 || cpu >= SMP_MAX_CPUS || !smp_cpus[cpu])
		return false;
	uint64_t ticks = tsc_hz() / 1000000 * timeout_us, start = rdtsc();
	while (__atomic_load_n(&smp_cpus[cpu]->work, __ATOMIC_ACQUIRE)) {
		if (rdtsc() - start > ticks)
			return false;
		asm volatile("pause" ::: "memory");
	}
	return true;
}

bool smp_cpu_parked(unsigned cpu)
{
	return cpu < SMP_MAX_CPUS && smp_cpus[cpu] && cpu_state(smp_cpus[cpu]) == PERCPU_PARKED;
}

void smp_ap_panicked(void)
{
	struct percpu *pc = this_cpu();
	asm volatile("cli" ::: "memory");
	console_release_mine();
	if (__atomic_load_n(&pc->work, __ATOMIC_ACQUIRE))   /* a VM's vCPU, or none */
		hv_ap_panicked(pc);
	/* parked only now: the boot CPU stops waiting for a parked CPU and may
	 * power off, which cut the VM's "stopped" line (ap-panic, once in a
	 * fresh-clone make test) */
	__atomic_store_n(&pc->state, PERCPU_PARKED, __ATOMIC_RELEASE);
	halt_forever();
}

bool smp_cpu_idle(unsigned cpu)
{
	if (cpu >= SMP_MAX_CPUS || !smp_cpus[cpu])
		return false;
	return cpu == 0 || !__atomic_load_n(&smp_cpus[cpu]->work, __ATOMIC_ACQUIRE);
}

/* INIT-SIPI-SIPI to one AP, then wait for it to be online. Returns NULL, or
 * why it did not start (the caller prints it). */
static const char *start_ap(struct percpu *pc, uint64_t page)
{
	__atomic_store_n(&pc->state, PERCPU_STARTING, __ATOMIC_RELEASE);
	ap_boot_stack_top = (uint64_t)(uintptr_t)pc + PERCPU_STACK_SIZE;
	__atomic_store_n(&ap_boot_apic_id, pc->apic_id, __ATOMIC_RELEASE);
	const char *why = 0;
	if (!host_lapic_send_ipi(pc->apic_id, LAPIC_ICR_INIT | LAPIC_ICR_ASSERT)) {
		why = "the INIT IPI was not delivered";
		goto out;
	}
	delay_us(INIT_DELAY_US);
	for (int i = 0; i < 2; i++) {
		/* a second SIPI is ignored by an AP that took the first */
		if (!host_lapic_send_ipi(pc->apic_id, LAPIC_ICR_STARTUP | LAPIC_ICR_ASSERT |
					(uint32_t)(page >> 12))) {
			why = "the startup IPI was not delivered";
			goto out;
		}
		delay_us(SIPI_DELAY_US);
	}
	uint64_t ticks = tsc_hz() / 1000000 * AP_START_TIMEOUT_US, start = rdtsc();
	uint32_t st;
	while ((st = cpu_state(pc)) != PERCPU_ONLINE && st != PERCPU_FAILED &&
	       rdtsc() - start < ticks)
		asm volatile("pause");
	if (st == PERCPU_FAILED)
		why = pc->fail_why;
	else if (st != PERCPU_ONLINE)
		why = "";        /* no answer */
out:
	/* a late AP now parks itself in ap_entry32 (its APIC ID no longer
	 * matches), and INIT stops one that is on its way */
	__atomic_store_n(&ap_boot_apic_id, 0xffffffffu, __ATOMIC_RELEASE);
	if (why && cpu_state(pc) != PERCPU_FAILED) {
		host_lapic_send_ipi(pc->apic_id, LAPIC_ICR_INIT | LAPIC_ICR_ASSERT);
		__atomic_store_n(&pc->state, PERCPU_OFF, __ATOMIC_RELEASE);
	}
	return why;
}

struct ap_answer {
	unsigned cpu_id;
	uint32_t apic_id;
	bool virt_on;
};

/* The first work item every AP gets: proof that its mailbox, the wake IPI
 * and its own per-CPU data work, and that virtualization is on there. */
static void ap_answer(void *arg)
{
	struct ap_answer *a = arg;
	a->cpu_id = this_cpu()->cpu_id;
	a->apic_id = host_lapic_id();
	a->virt_on = (rdmsr(MSR_EFER) & EFER_SVME) || (read_cr4() & CR4_VMXE_BIT);
}

static bool ap_answers(unsigned cpu)
{
	/* Not on this stack: an AP that answers after the time out still writes */
	static struct ap_answer answers[SMP_MAX_CPUS];
	struct ap_answer *a = &answers[cpu];
	*a = (struct ap_answer){ ~0u, ~0u, false };
	if (!smp_run_on(cpu, ap_answer, a) || !smp_wait_done(cpu, AP_ANSWER_TIMEOUT_US))
		return false;
	return a->cpu_id == cpu && a->apic_id == smp_cpus[cpu]->apic_id && a->virt_on;
}

static const char *plural(unsigned n)
{
	return n == 1 ? "" : "s";
}

void smp_init(const struct boot_info *bi, const struct lp_options *opt)
{
	struct percpu *bsp = this_cpu();
	bsp->apic_id = host_lapic_id();
	__atomic_store_n(&bsp->state, PERCPU_ONLINE, __ATOMIC_RELEASE);
	smp_cpus[0] = bsp;
	smp_nr_cpus = 1;

	char err[160];
	int rc = madt_find(phys_identity, 0, &madt, err, sizeof(err));
	if (rc == MADT_NONE) {
		kprintf("lightpath: no ACPI MADT (%s); running on the boot CPU alone\n", err);
		return;
	}
	if (rc != MADT_OK) {
		kprintf("lightpath: %s; running on the boot CPU alone\n", err);
		return;
	}

	if (madt.lapic_base != LAPIC_DEFAULT_BASE) {
		/* core/timer.c reaches every local APIC at its reset address */
		kprintf("lightpath: the ACPI MADT puts the local APICs at 0x%lx, not at 0x%lx; "
			"running on the boot CPU alone\n", (unsigned long)madt.lapic_base,
			(unsigned long)LAPIC_DEFAULT_BASE);
		return;
	}

	/* CPU numbers: the boot CPU is 0, the others follow in MADT order */
	unsigned found = madt.nr_cpus, listed_bsp = 0;
	for (unsigned i = 0; i < madt.nr_cpus; i++)
		listed_bsp |= madt.cpus[i].apic_id == bsp->apic_id;
	if (!listed_bsp) {
		kprintf("lightpath: the boot CPU (APIC id %u) is not in the ACPI MADT\n",
			bsp->apic_id);
		found++;
	}
	unsigned limit = opt->cpus ? opt->cpus : SMP_MAX_CPUS;
	bool need_page = found > 1 && limit > 1;
	uint64_t page = need_page ? trampoline_page(bi) : 0;
	if (need_page && !page) {
		kprintf("lightpath: %u CPUs found (ACPI MADT), 1 started: no free page below 1 MiB "
			"for the APs' start-up code\n", found);
		return;
	}

	bsp_state.cr0 = read_cr0();
	bsp_state.cr4 = read_cr4();
	bsp_state.efer = rdmsr(MSR_EFER);
	bsp_state.xcr0 = (bsp_state.cr4 & CR4_OSXSAVE) ? xgetbv(0) : 0;
	bsp_state.opt = opt;
	ap_boot_cr3 = (uint32_t)read_cr3();     /* the boot page tables, below 4 GiB */

	size_t tlen = (size_t)(ap_trampoline_end - ap_trampoline);
	if (page) {
		memcpy(saved_page, (void *)(uintptr_t)page, sizeof(saved_page));
		memcpy((void *)(uintptr_t)page, ap_trampoline, tlen);
	}

	unsigned started = 1, over_limit = 0, next = 1;
	for (unsigned i = 0; i < madt.nr_cpus; i++) {
		uint32_t apic_id = madt.cpus[i].apic_id;
		if (apic_id == bsp->apic_id)
			continue;
		unsigned n = next++;
		if (started >= limit) {
			over_limit++;
			continue;
		}
		if (apic_id > 0xfe) {
			kprintf("lightpath: CPU %u (APIC id %u) did not start (its APIC id needs x2APIC "
				"mode, which lightpath does not use); left out\n", n, apic_id);
			continue;
		}
		struct percpu *pc = (struct percpu *)(uintptr_t)pmem_alloc(PERCPU_STACK_SIZE,
									    PERCPU_STACK_SIZE);
		if (!pc || hv_ap_alloc(pc) < 0) {
			kprintf("lightpath: CPU %u (APIC id %u) did not start (out of memory); left "
				"out\n", n, apic_id);
			continue;     /* what was allocated stays: boot time only */
		}
		pc->cpu_id = n;
		pc->apic_id = apic_id;
		const char *why = start_ap(pc, page);
		if (why && !*why)
			kprintf("lightpath: CPU %u (APIC id %u) did not start; left out\n", n, apic_id);
		else if (why)
			kprintf("lightpath: CPU %u (APIC id %u) did not start (%s); left out\n", n,
				apic_id, why);
		else {
			smp_cpus[n] = pc;
			smp_nr_cpus = n + 1;
			started++;
		}
	}
	if (page)
		memcpy((void *)(uintptr_t)page, saved_page, sizeof(saved_page));

	/* every AP takes one work item before it counts */
	for (unsigned n = 1; n < smp_nr_cpus; n++) {
		if (smp_cpus[n] && !ap_answers(n)) {
			kprintf("lightpath: CPU %u (APIC id %u) started but does not answer its "
				"mailbox; left out\n", n, smp_cpus[n]->apic_id);
			smp_cpus[n] = 0;
			started--;
		}
	}

	char a[48] = "", b[48] = "", c[64] = "";
	unsigned ignored = madt.nr_duplicate + madt.nr_invalid_id;
	if (madt.nr_not_enabled)
		snprintf(a, sizeof(a), "; %u more listed, not enabled", madt.nr_not_enabled);
	if (madt.nr_beyond)
		snprintf(b, sizeof(b), "; %u more beyond lightpath's %u", madt.nr_beyond,
			 SMP_MAX_CPUS);
	if (ignored)
		snprintf(c, sizeof(c), "; %u entr%s with a repeated or invalid APIC id ignored",
			 ignored, ignored == 1 ? "y" : "ies");
	char lim[32] = "";
	if (over_limit)
		snprintf(lim, sizeof(lim), " (cpus=%u)", opt->cpus);
	kprintf("lightpath: %u CPU%s found (ACPI MADT%s%s%s), %u started%s\n", found,
		plural(found), a, b, c, started, lim);
}
