#include "core/idt.h"

#include "core/console.h"
#include "core/cpu.h"
#include "core/percpu.h"
#include "core/timer.h"

struct idt_gate {
	uint16_t off_lo, sel;
	uint8_t ist, type;
	uint16_t off_mid;
	uint32_t off_hi, zero;
} __attribute__((packed));

static struct idt_gate idt[256] __attribute__((aligned(16)));

#define DECLARE(v) extern char idt_stub_##v[]
DECLARE(0); DECLARE(1); DECLARE(2); DECLARE(3); DECLARE(4); DECLARE(5); DECLARE(6);
DECLARE(7); DECLARE(8); DECLARE(10); DECLARE(11); DECLARE(12); DECLARE(13); DECLARE(14);
DECLARE(16); DECLARE(17); DECLARE(18); DECLARE(19); DECLARE(32); DECLARE(240); DECLARE(255);

static void set_gate(unsigned vec, void *handler)
{
	uint64_t a = (uint64_t)(uintptr_t)handler;
	idt[vec] = (struct idt_gate){ (uint16_t)a, 0x08, 0, 0x8e, (uint16_t)(a >> 16),
				      (uint32_t)(a >> 32), 0 };
}

void idt_init(void)
{
	static const struct { unsigned vec; char *stub; } gates[] = {
		{ 0, idt_stub_0 }, { 1, idt_stub_1 }, { 2, idt_stub_2 }, { 3, idt_stub_3 },
		{ 4, idt_stub_4 }, { 5, idt_stub_5 }, { 6, idt_stub_6 }, { 7, idt_stub_7 },
		{ 8, idt_stub_8 }, { 10, idt_stub_10 }, { 11, idt_stub_11 }, { 12, idt_stub_12 },
		{ 13, idt_stub_13 }, { 14, idt_stub_14 }, { 16, idt_stub_16 }, { 17, idt_stub_17 },
		{ 18, idt_stub_18 }, { 19, idt_stub_19 }, { IDT_VECTOR_TIMER, idt_stub_32 },
		{ IDT_VECTOR_WAKE, idt_stub_240 }, { IDT_VECTOR_SPURIOUS, idt_stub_255 },
	};
	for (unsigned i = 0; i < sizeof(gates) / sizeof(gates[0]); i++)
		set_gate(gates[i].vec, gates[i].stub);
	idt_load();
}

void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) desc = { sizeof(idt) - 1, (uint64_t)(uintptr_t)idt };
	asm volatile("lidt %0" ::"m"(desc));
}

/* lightpath sets no breakpoint and never single-steps itself, so every #DB
 * it takes is a guest's debug event that the CPU or emulator carried across
 * the VM exit: a breakpoint left armed (QEMU 7.2; lightpath disarms them
 * right after every exit, so none should get here: docs/SECURITY.md), or
 * the single-step trap of a guest instruction that exited, delivered after
 * VMRUN (Bochs 2.7's SVM). The stub has disarmed the breakpoints already;
 * clear DR6, count it (vm_run reports it), and go on, with RF set so that
 * an instruction breakpoint cannot fire again on the way back and TF clear
 * so that no step can. */
static void idt_guest_debug_event(struct idt_frame *f)
{
	asm volatile("mov %0, %%dr6" ::"r"(DR6_INIT));
	f->rflags = (f->rflags | RFLAGS_RF) & ~RFLAGS_TF;
	this_cpu()->guest_debug_events_dropped++;
}

/* A physical NMI is lightpath's, never a guest's (SVM intercepts NMI and
 * VT-x has NMI exiting: the exit hands it here, docs/SECURITY.md). lightpath
 * sends none itself; on a PC one is a watchdog's, a hardware error's or the
 * operator's. It is counted, and said outside NMI context. */
static void idt_host_nmi(void)
{
	struct percpu *pc = this_cpu();
	__atomic_store_n(&pc->host_nmis, pc->host_nmis + 1, __ATOMIC_RELAXED);
	uint32_t *hazard = __atomic_load_n(&pc->hazard, __ATOMIC_RELAXED);
	if (hazard)   /* a vCPU runs here: its exit says it (host_nmis_report) */
		__atomic_or_fetch(hazard, PERCPU_HAZARD_HOST_NMI, __ATOMIC_RELAXED);
}

void host_nmis_report(void)
{
	struct percpu *pc = this_cpu();
	unsigned n = __atomic_load_n(&pc->host_nmis, __ATOMIC_RELAXED);
	while (pc->host_nmis_reported != n) {
		unsigned k = ++pc->host_nmis_reported;
		if (k < HOST_NMI_LINES)
			kprintf("lightpath: cpu%u: NMI (host)\n", pc->cpu_id);
		else if (k == HOST_NMI_LINES)
			kprintf("lightpath: cpu%u: NMI (host); later ones on this CPU are not "
				"reported\n", pc->cpu_id);
	}
}

void idt_dispatch(struct idt_frame *f)
{
	if (f->vector == IDT_VECTOR_TIMER) {
		timer_interrupt();
		return;
	}
	if (f->vector == IDT_VECTOR_SPURIOUS)
		return;
	if (f->vector == IDT_VECTOR_WAKE) {   /* the idle loop looks at its mailbox */
		host_lapic_eoi();
		return;
	}
	if (f->vector == 1) {
		idt_guest_debug_event(f);
		return;
	}
	if (f->vector == 2) {
		idt_host_nmi();
		return;
	}
	uint64_t cr2;
	asm volatile("mov %%cr2, %0" : "=r"(cr2));
	panic("host exception %lu (error 0x%lx) at rip 0x%lx, cr2 0x%lx", f->vector, f->error,
	      f->rip, cr2);
}
