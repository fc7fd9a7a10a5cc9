/* dev/lapic*.c: register file, priorities, EOI, timer modes, x2APIC rules,
 * APIC virtualization. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dev/lapic.h"
#include "tests/unit/stubs.h"

static struct lapic apic;
static uint8_t eoi_seen[8];
static unsigned neoi;

static void eoi_hook(void *ctx, uint8_t vector)
{
	assert_ptr_equal(ctx, &apic);
	eoi_seen[neoi++ & 7] = vector;
}

/* 1 GHz TSC: one TSC cycle per APIC bus tick. */
static int setup(void **state)
{
	(void)state;
	stubs_reset();
	stub_tsc_hz = 1000000000ull;
	stub_tsc = 1000;
	neoi = 0;
	lapic_init(&apic, FAKE_HOST, 0, true);
	lapic_set_eoi_hook(&apic, eoi_hook, &apic);
	return 0;
}

static uint32_t mr(unsigned off)
{
	uint64_t d = 0xdeadbeefdeadbeefull;
	assert_int_equal(lapic_mmio(&apic, LAPIC_BASE + off, &d, 4, false), IO_OK);
	return (uint32_t)d;
}

static void mw(unsigned off, uint32_t v)
{
	uint64_t d = v;
	assert_int_equal(lapic_mmio(&apic, LAPIC_BASE + off, &d, 4, true), IO_OK);
}

static int msr_r(uint32_t msr, uint64_t *v) { return lapic_msr(&apic, msr, v, false); }
static int msr_w(uint32_t msr, uint64_t v) { return lapic_msr(&apic, msr, &v, true); }

static bool irr_has(uint8_t v) { return mr(LAPIC_IRR + (v >> 5) * 0x10) & (1u << (v & 31)); }
static bool isr_has(uint8_t v) { return mr(LAPIC_ISR + (v >> 5) * 0x10) & (1u << (v & 31)); }

static void enable(void) { mw(LAPIC_SVR, 0x1ff); }

static void test_reset_state(void **state)
{
	(void)state;
	assert_true(lapic_desc.mmio);
	assert_true(lapic_desc.lock_free);   /* the page is each vCPU's own */
	assert_true(stub_desc_range_is(&lapic_desc, 0, 0xfee00000ull, 0x1000, lapic_mmio, true));

	uint64_t base;
	assert_int_equal(msr_r(MSR_APIC_BASE, &base), 0);
	assert_int_equal(base, 0xfee00900ull);          /* EN | BSP */
	assert_int_equal(mr(LAPIC_ID), 0);
	assert_int_equal(mr(LAPIC_VERSION), 0x00050014);
	assert_int_equal(mr(LAPIC_SVR), 0xff);
	assert_int_equal(mr(LAPIC_DFR), 0xffffffffu);
	for (unsigned off = LAPIC_LVT_TIMER; off <= LAPIC_LVT_ERROR; off += 0x10)
		assert_int_equal(mr(off), LAPIC_LVT_MASKED);
	assert_int_equal(mr(LAPIC_TPR), 0);
	assert_false(lapic_pic_intr_allowed(&apic));

	/* xAPIC ID is bits 31:24 and writable */
	mw(LAPIC_ID, 0x05000000);
	assert_int_equal(mr(LAPIC_ID), 0x05000000);
	assert_int_equal(apic.id, 5);

	/* software-disabled: LVT writes stay masked, fixed interrupts dropped */
	mw(LAPIC_LVT_LINT0, 0x700);
	assert_int_equal(mr(LAPIC_LVT_LINT0), 0x10700);
	lapic_accept(&apic, 0x40, false);
	assert_false(irr_has(0x40));

	/* firmware state: LINT0 ExtINT passes the 8259 through */
	lapic_firmware_setup(&apic);
	assert_int_equal(mr(LAPIC_LVT_LINT0), 0x8700);
	assert_int_equal(mr(LAPIC_LVT_LINT1), 0x8400);
	assert_true(lapic_pic_intr_allowed(&apic));
	assert_true(lapic_sw_enabled(&apic));
	/* a masked LINT0 does not */
	mw(LAPIC_LVT_LINT0, 0x10700);
	assert_false(lapic_pic_intr_allowed(&apic));
	/* nor does a non-ExtINT LINT0 */
	mw(LAPIC_LVT_LINT0, 0x00000);
	assert_false(lapic_pic_intr_allowed(&apic));
	/* remote IRR and delivery status are read-only */
	mw(LAPIC_LVT_LINT0, 0x5700);
	assert_int_equal(mr(LAPIC_LVT_LINT0), 0x0700);
}

/* What SeaBIOS leaves (its smp_scan) and every VM starts with: software
 * enabled with the spurious vector 0xff, LINT0 ExtINT and LINT1 NMI, both
 * level and unmasked, every other LVT still masked, TPR 0. */
static void test_firmware_state(void **state)
{
	(void)state;
	lapic_firmware_setup(&apic);
	assert_int_equal(mr(LAPIC_SVR), 0x1ff);
	assert_int_equal(mr(LAPIC_LVT_LINT0), 0x8700);
	assert_int_equal(mr(LAPIC_LVT_LINT1), 0x8400);
	assert_int_equal(mr(LAPIC_LVT_TIMER), LAPIC_LVT_MASKED);
	assert_int_equal(mr(LAPIC_LVT_THERMAL), LAPIC_LVT_MASKED);
	assert_int_equal(mr(LAPIC_LVT_PERF), LAPIC_LVT_MASKED);
	assert_int_equal(mr(LAPIC_LVT_ERROR), LAPIC_LVT_MASKED);
	assert_int_equal(mr(LAPIC_TPR), 0);
	assert_int_equal(mr(LAPIC_TIMER_INIT), 0);
	assert_false(lapic_irr_nonempty(&apic));
	assert_int_equal(lapic_highest_pending(&apic), -1);
	assert_true(lapic_pic_intr_allowed(&apic));
	assert_false(apic.nmi_pending);
	assert_int_equal(stub_nr_timers, 0);        /* no timer running */
}

static void test_tpr_ppr_priority(void **state)
{
	(void)state;
	enable();
	lapic_accept(&apic, 0x45, false);
	assert_true(irr_has(0x45));
	assert_int_equal(lapic_highest_pending(&apic), 0x45);
	mw(LAPIC_TPR, 0x50);
	assert_int_equal(mr(LAPIC_PPR), 0x50);
	assert_int_equal(lapic_highest_pending(&apic), -1);
	mw(LAPIC_TPR, 0x40);                 /* same class: still blocked */
	assert_int_equal(lapic_highest_pending(&apic), -1);
	mw(LAPIC_TPR, 0x3f);
	assert_int_equal(lapic_highest_pending(&apic), 0x45);
	lapic_ack(&apic, 0x45);
	assert_false(irr_has(0x45));
	assert_true(isr_has(0x45));
	assert_int_equal(mr(LAPIC_PPR), 0x40); /* ISR class above TPR */
	lapic_accept(&apic, 0x42, false);
	assert_int_equal(lapic_highest_pending(&apic), -1); /* class 4 in service */
	lapic_accept(&apic, 0x51, false);
	assert_int_equal(lapic_highest_pending(&apic), 0x51);
	lapic_ack(&apic, 0x51);
	assert_int_equal(mr(LAPIC_PPR), 0x50);
	/* EOI ends the highest in service first */
	mw(LAPIC_EOI, 0);
	assert_false(isr_has(0x51));
	assert_true(isr_has(0x45));
	assert_int_equal(lapic_eoi(&apic), 0x45);
	assert_int_equal(lapic_eoi(&apic), -1);
	assert_int_equal(mr(LAPIC_PPR), 0x3f);
	assert_int_equal(lapic_highest_pending(&apic), 0x42);
	assert_int_equal(neoi, 0);           /* all edge: no EOI broadcast */
}

/* VT-x's TPR shadow: the register file moves to the virtual-APIC page, where
 * the CPU's MOV to CR8 writes it; the APIC's reads, writes, priorities and
 * reset use it there, and the TPR threshold is the class it holds back. */
static void test_tpr_moved_and_blocked_class(void **state)
{
	(void)state;
	static uint32_t vapic[1024];
	enable();
	mw(LAPIC_TPR, 0x20);
	lapic_regs_move(&apic, vapic);
	assert_int_equal(vapic[LAPIC_TPR / 4], 0x20);
	assert_int_equal(lapic_tpr_blocked_class(&apic), 0);   /* IRR empty */
	lapic_accept(&apic, 0x45, false);
	assert_int_equal(lapic_tpr_blocked_class(&apic), 0);   /* deliverable */
	vapic[LAPIC_TPR / 4] = 0x50;   /* the guest's MOV to CR8 (5) */
	assert_int_equal(mr(LAPIC_TPR), 0x50);
	assert_int_equal(mr(LAPIC_PPR), 0x50);
	assert_int_equal(lapic_highest_pending(&apic), -1);
	assert_int_equal(lapic_tpr_blocked_class(&apic), 4);
	vapic[LAPIC_TPR / 4] = 0x40;   /* same class: still held back */
	assert_int_equal(lapic_tpr_blocked_class(&apic), 4);
	mw(LAPIC_TPR, 0x30);
	assert_int_equal(vapic[LAPIC_TPR / 4], 0x30);
	assert_int_equal(lapic_tpr_blocked_class(&apic), 0);
	assert_int_equal(lapic_highest_pending(&apic), 0x45);
	vapic[LAPIC_TPR / 4] = 0xf0;
	uint64_t base;
	assert_int_equal(msr_r(MSR_APIC_BASE, &base), 0);
	assert_int_equal(msr_w(MSR_APIC_BASE, base & ~APIC_BASE_EN), 0);   /* reset */
	assert_int_equal(vapic[LAPIC_TPR / 4], 0);
	assert_int_equal(lapic_tpr_blocked_class(&apic), 0);
}

/* The registers a CPU reads from the virtual-APIC page without an exit
 * (VT-x's APIC-register virtualization): the register file must always
 * hold what the model reads, in both modes and after every kind of change. */
static const unsigned page_served[] = {
	LAPIC_ID, LAPIC_VERSION, LAPIC_TPR, LAPIC_LDR, LAPIC_DFR, LAPIC_SVR, LAPIC_ESR,
	LAPIC_ICR_LO, LAPIC_ICR_HI, LAPIC_LVT_TIMER, LAPIC_LVT_THERMAL, LAPIC_LVT_PERF,
	LAPIC_LVT_LINT0, LAPIC_LVT_LINT1, LAPIC_LVT_ERROR, LAPIC_TIMER_INIT, LAPIC_TIMER_DIV,
};

static void assert_page_matches(void)
{
	for (unsigned i = 0; i < sizeof(page_served) / sizeof(page_served[0]); i++) {
		unsigned off = page_served[i];
		uint32_t want = (uint32_t)lapic_read(&apic, off);   /* x2APIC ICR: the low half */
		if (apic.regs[off >> 2] != want)
			fail_msg("offset 0x%x: page 0x%x, model 0x%x", off, apic.regs[off >> 2], want);
	}
	for (unsigned v = 0; v < 256; v += 32)
		for (unsigned base = LAPIC_ISR; base <= LAPIC_IRR; base += 0x80)
			assert_int_equal(apic.regs[(base + (v >> 5) * 0x10) >> 2],
					 (uint32_t)lapic_read(&apic, base + (v >> 5) * 0x10));
}

static void test_register_file_is_the_page(void **state)
{
	(void)state;
	static uint32_t page[1024];
	assert_page_matches();   /* power-up */
	mw(LAPIC_TPR, 0x31);
	lapic_regs_move(&apic, page);
	assert_ptr_equal(apic.regs, page);
	assert_page_matches();
	enable();
	mw(LAPIC_ID, 0x07000000);
	mw(LAPIC_LDR, 0x12345678);
	mw(LAPIC_DFR, 0x0);
	mw(LAPIC_LVT_LINT0, 0x1a7ff | LAPIC_LVT_REMOTE_IRR | LAPIC_LVT_DELIVS);
	mw(LAPIC_LVT_TIMER, (LAPIC_TIMER_PERIODIC << 17) | 0x40);
	mw(LAPIC_TIMER_DIV, 0xf);
	mw(LAPIC_TIMER_INIT, 1000000);
	mw(LAPIC_ICR_HI, 0x07ffffff);
	mw(LAPIC_ICR_LO, 0x4041);   /* fixed, to APIC 7: itself */
	lapic_accept(&apic, 0x90, true);
	mw(LAPIC_LVT_ERROR, 0x33);
	mw(LAPIC_ICR_LO, 0x05);     /* illegal vector: ESR send-illegal */
	mw(LAPIC_ESR, 0);
	assert_page_matches();
	assert_int_equal(page[LAPIC_ESR >> 2], LAPIC_ESR_SEND_ILLEGAL);
	assert_int_equal(page[LAPIC_TPR >> 2], 0x31);
	/* a software disable masks every LVT */
	mw(LAPIC_SVR, 0xff);
	assert_page_matches();
	enable();
	/* x2APIC: the ID and the LDR change form */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00d00ull), 0);
	assert_page_matches();
	assert_int_equal(page[LAPIC_ID >> 2], 7);
	assert_int_equal(msr_w(0x830, (7ull << 32) | 0x55), 0);
	assert_page_matches();
	assert_int_equal(page[LAPIC_ICR_HI >> 2], 7);
	/* a reset (disable) clears the page's TPR, IRR, ISR and TMR too */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00100ull), 0);
	assert_page_matches();
	assert_int_equal(page[LAPIC_TPR >> 2], 0);
	assert_false(lapic_irr_nonempty(&apic));
	lapic_regs_move_back(&apic);
	assert_ptr_equal(apic.regs, apic.regs_own);
	assert_page_matches();
}

/* An APIC-write exit: the CPU stored the guest's value in the page before
 * the exit; the model's write still sees the old value (the timer's mode
 * switch) and leaves its own result in the page (read-only bits). */
static void test_write_after_cpu_store(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_LVT_TIMER, (LAPIC_TIMER_TSCDEADLINE << 17) | 0x40);
	assert_int_equal(msr_w(MSR_TSC_DEADLINE, 5000), 0);
	assert_true(apic.timer.armed);
	uint32_t oneshot = 0x41;
	apic.regs[LAPIC_LVT_TIMER >> 2] = oneshot;   /* the CPU's store */
	lapic_write(&apic, LAPIC_LVT_TIMER, apic.regs[LAPIC_LVT_TIMER >> 2]);
	assert_false(apic.timer.armed);             /* deadline mode left: disarmed */
	uint64_t dl;
	assert_int_equal(msr_r(MSR_TSC_DEADLINE, &dl), 0);
	assert_int_equal(dl, 0);
	apic.regs[LAPIC_LVT_LINT1 >> 2] = 0xffffffffu;
	lapic_write(&apic, LAPIC_LVT_LINT1, 0xffffffffu);
	assert_int_equal(apic.regs[LAPIC_LVT_LINT1 >> 2], 0x0001a7ffu);
	assert_page_matches();
	/* lapic_apicv_write, the whole exit: the value from the page, the
	 * model's result back in it */
	apic.regs[LAPIC_LVT_LINT0 >> 2] = 0xffffffffu;
	lapic_apicv_write(&apic, LAPIC_LVT_LINT0);
	assert_int_equal(apic.regs[LAPIC_LVT_LINT0 >> 2], 0x0001a7ffu);
	/* an ICR-low write takes ICR high from the page (stored without an exit) */
	mw(LAPIC_ID, 0x07000000);
	apic.regs[LAPIC_ICR_HI >> 2] = 0x07000000;
	apic.regs[LAPIC_ICR_LO >> 2] = 0x41;   /* fixed, physical, to APIC 7: itself */
	lapic_apicv_write(&apic, LAPIC_ICR_LO);
	assert_int_equal(lapic_read(&apic, LAPIC_ICR_HI), 0x07000000);
	assert_true(lapic_vec_test(&apic, LAPIC_IRR, 0x41));
	/* an initial count in TSC-deadline mode is ignored: it must not stay */
	mw(LAPIC_LVT_TIMER, (LAPIC_TIMER_TSCDEADLINE << 17) | 0x40);
	apic.regs[LAPIC_TIMER_INIT >> 2] = 1000;
	lapic_apicv_write(&apic, LAPIC_TIMER_INIT);
	assert_int_equal(apic.regs[LAPIC_TIMER_INIT >> 2], 0);
	assert_false(apic.timer.armed);
	/* the SELF IPI slot (an xAPIC ignores it) is not kept */
	apic.regs[LAPIC_SELF_IPI >> 2] = 0x55;
	lapic_apicv_write(&apic, LAPIC_SELF_IPI);
	assert_int_equal(apic.regs[LAPIC_SELF_IPI >> 2], 0);
	assert_false(lapic_vec_test(&apic, LAPIC_IRR, 0x55));
	assert_page_matches();
}

/* Virtual-interrupt delivery: the CPU moves vectors from IRR to ISR and
 * performs EOIs in the page; the model's priorities follow the page, and a
 * level-triggered EOI it performed goes on to the hook. */
static void test_cpu_delivers(void **state)
{
	(void)state;
	enable();
	lapic_set_cpu_delivers(&apic, true);
	lapic_accept(&apic, 0x51, true);
	assert_int_equal(lapic_highest_pending(&apic), 0x51);   /* (a HLT wakes) */
	/* the CPU delivers 0x51 */
	apic.regs[(LAPIC_IRR + 0x20) >> 2] &= ~(1u << 0x11);
	apic.regs[(LAPIC_ISR + 0x20) >> 2] |= 1u << 0x11;
	assert_int_equal(mr(LAPIC_PPR), 0x50);
	lapic_accept(&apic, 0x42, false);
	assert_int_equal(lapic_highest_pending(&apic), -1);     /* below the one in service */
	/* its EOI, by the CPU, and the exit its EOI-exit bit asked for */
	apic.regs[(LAPIC_ISR + 0x20) >> 2] &= ~(1u << 0x11);
	lapic_eoi_done(&apic, 0x51);
	assert_int_equal(neoi, 1);
	assert_int_equal(eoi_seen[0], 0x51);
	lapic_eoi_done(&apic, 0x42);                           /* edge: no hook */
	assert_int_equal(neoi, 1);
	assert_int_equal(lapic_highest_pending(&apic), 0x42);
	/* back to the model's delivery: its ISR summary is rebuilt */
	apic.regs[(LAPIC_ISR + 0x60) >> 2] |= 1u << 3;   /* 0xc3 in service */
	lapic_set_cpu_delivers(&apic, false);
	assert_int_equal(mr(LAPIC_PPR), 0xc0);
	mw(LAPIC_EOI, 0);
	assert_false(isr_has(0xc3));
	assert_int_equal(mr(LAPIC_PPR), 0);
}

/* irr_words, the IRR summary the light path reads instead of the eight
 * words (lapic_irr_nonempty, the highest pending vector), must follow IRR
 * through every way the model sets and clears it. */
static void check_irr_words(void)
{
	uint32_t words = 0;
	int highest = -1;
	for (unsigned i = 0; i < 8; i++) {
		uint32_t w = apic.regs[(LAPIC_IRR >> 2) + 4 * i];
		if (w) {
			words |= 1u << i;
			highest = (int)(i * 32 + 31 - (unsigned)__builtin_clz(w));
		}
	}
	assert_int_equal(apic.irr_words, words);
	assert_int_equal(lapic_irr_nonempty(&apic), words != 0);
	int pending = lapic_highest_pending(&apic);
	assert_true(pending < 0 || pending == highest);
}

static void test_irr_words_follow_irr(void **state)
{
	(void)state;
	enable();
	check_irr_words();
	uint32_t rnd = 12345;
	for (unsigned i = 0; i < 2000; i++) {
		rnd = rnd * 1103515245u + 12345u;
		unsigned op = (rnd >> 16) % 8, vec = 16 + (rnd >> 8) % 240;
		switch (op) {
		case 0: case 1: case 2:
			lapic_accept(&apic, (uint8_t)vec, op == 2);   /* edge or level */
			break;
		case 3: case 4:
			lapic_take_highest(&apic);
			break;
		case 5:
			mw(LAPIC_EOI, 0);
			break;
		case 6:
			mw(LAPIC_TPR, (rnd >> 4) & 0xf0);
			break;
		default:
			if ((rnd >> 12) % 16 == 0) {   /* now and then: a disable clears IRR */
				assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00100ull), 0);
				assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00900ull), 0);
				enable();
			} else {
				mw(LAPIC_LVT_ERROR, 0xe5);   /* an illegal vector's error interrupt */
				lapic_accept(&apic, 3, false);
			}
		}
		check_irr_words();
	}
	/* the CPU clears IRR bits while it delivers; the summary is rebuilt when
	 * the model delivers again */
	lapic_accept(&apic, 0x61, false);
	lapic_accept(&apic, 0x22, false);
	lapic_set_cpu_delivers(&apic, true);
	apic.regs[(LAPIC_IRR + 0x30) >> 2] &= ~(1u << 1);   /* 0x61 delivered by the CPU */
	lapic_set_cpu_delivers(&apic, false);
	check_irr_words();
}

/* Late periodic expiries under virtual-interrupt delivery: nobody calls
 * lapic_ack, so the timer vector's EOI (an EOI-exit the backend asks for
 * while any wait) sends the next one. */
static void test_cpu_delivers_late_timer(void **state)
{
	(void)state;
	enable();
	lapic_set_cpu_delivers(&apic, true);
	assert_int_equal(lapic_eoi_exit_vector(&apic), -1);
	mw(LAPIC_TIMER_DIV, 0xb);
	mw(LAPIC_LVT_TIMER, 0x20042);        /* periodic, vector 0x42 */
	mw(LAPIC_TIMER_INIT, 1000);
	assert_int_equal(stubs_advance_to(3500), 2);
	assert_int_equal(apic.timer_late, 1);
	assert_int_equal(lapic_eoi_exit_vector(&apic), 0x42);
	/* the CPU delivers 0x42 (IRR -> ISR), the guest's EOI clears ISR */
	apic.regs[(LAPIC_IRR + 0x20) >> 2] &= ~(1u << 2);
	lapic_eoi_done(&apic, 0x42);
	assert_int_equal(apic.timer_late, 0);
	assert_int_equal(apic.timer_fires, 2);
	assert_true(irr_has(0x42));
	assert_int_equal(lapic_eoi_exit_vector(&apic), -1);
	assert_int_equal(neoi, 0);                /* edge: no I/O APIC EOI */
}

/* x2APIC: a WRMSR that sets a reserved bit is #GP and changes nothing (SDM
 * vol. 3 11.12.1.3); the LVTs' read-only bits are carried, not reserved. */
static void test_x2apic_reserved_bits(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00d00ull), 0);
	assert_int_equal(msr_w(0x80f, 0x1ff), 0);
	assert_int_equal(msr_w(0x808, 0x100), LAPIC_GP);          /* TPR bit 8 */
	assert_int_equal(msr_w(0x80f, 0x1ff | (1u << 16)), LAPIC_GP);   /* SVR bit 16 */
	assert_int_equal(msr_w(0x80f, 0x1ff | (1u << 12)), LAPIC_GP);   /* no EOI-broadcast suppression */
	assert_int_equal(msr_w(0x832, 0x40 | (1u << 20)), LAPIC_GP);    /* LVT timer bit 20 */
	assert_int_equal(msr_w(0x832, 0x40 | (1u << 8)), LAPIC_GP);     /* the timer has no delivery mode */
	assert_int_equal(msr_w(0x83e, 0x1b), LAPIC_GP);          /* divide bit 4 */
	assert_int_equal(msr_r(0x80f, &v), 0);
	assert_int_equal(v, 0x1ff);
	assert_int_equal(msr_r(0x832, &v), 0);
	assert_int_equal(v, LAPIC_LVT_MASKED);
	assert_int_equal(msr_w(0x835, 0x10700 | LAPIC_LVT_DELIVS | LAPIC_LVT_REMOTE_IRR), 0);
	assert_int_equal(msr_r(0x835, &v), 0);
	assert_int_equal(v, 0x10700);                              /* LINT0: RO bits ignored */
	assert_int_equal(msr_w(0x83e, 0xb), 0);
	assert_int_equal(msr_w(0x808, 0xff), 0);
}

static void test_level_eoi_hook(void **state)
{
	(void)state;
	enable();
	lapic_accept(&apic, 0x61, true);
	assert_true(mr(LAPIC_TMR + 0x30) & 2);
	lapic_ack(&apic, 0x61);
	mw(LAPIC_EOI, 0);
	assert_int_equal(neoi, 1);
	assert_int_equal(eoi_seen[0], 0x61);
	/* the same vector accepted edge-triggered clears TMR */
	lapic_accept(&apic, 0x61, false);
	assert_false(mr(LAPIC_TMR + 0x30) & 2);
	lapic_ack(&apic, 0x61);
	mw(LAPIC_EOI, 0);
	assert_int_equal(neoi, 1);
}

static void test_illegal_vector_and_esr(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_LVT_ERROR, 0xfe);
	lapic_accept(&apic, 5, false);
	assert_false(irr_has(5));
	assert_true(irr_has(0xfe));          /* the error LVT fired */
	assert_int_equal(mr(LAPIC_ESR), 0);  /* latched only by an ESR write */
	mw(LAPIC_ESR, 0);
	assert_int_equal(mr(LAPIC_ESR), LAPIC_ESR_RECV_ILLEGAL);
	mw(LAPIC_ESR, 0);
	assert_int_equal(mr(LAPIC_ESR), 0);
	/* sending an illegal vector */
	mw(LAPIC_ICR_LO, 0x00040003);        /* self, fixed, vector 3 */
	mw(LAPIC_ESR, 0);
	assert_int_equal(mr(LAPIC_ESR), LAPIC_ESR_SEND_ILLEGAL);
}

static void test_xapic_ipis(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_ICR_HI, 0x00000000);
	mw(LAPIC_ICR_LO, 0x00000050);        /* fixed, physical dest 0 = me */
	assert_true(irr_has(0x50));
	assert_int_equal(mr(LAPIC_ICR_LO), 0x50); /* delivery status idle */
	mw(LAPIC_ICR_HI, 0x01000000);
	mw(LAPIC_ICR_LO, 0x00000051);        /* to APIC 1: nobody */
	assert_false(irr_has(0x51));
	assert_int_equal(mr(LAPIC_ICR_HI), 0x01000000);
	mw(LAPIC_ICR_LO, 0x000c0052);        /* all excluding self */
	assert_false(irr_has(0x52));
	mw(LAPIC_ICR_LO, 0x00080053);        /* all including self */
	assert_true(irr_has(0x53));
	mw(LAPIC_ICR_LO, 0x00040054);        /* self */
	assert_true(irr_has(0x54));
	mw(LAPIC_ICR_HI, 0xff000000);
	mw(LAPIC_ICR_LO, 0x00000055);        /* broadcast */
	assert_true(irr_has(0x55));
	/* logical, flat model */
	mw(LAPIC_LDR, 0x02000000);
	assert_int_equal(mr(LAPIC_LDR), 0x02000000);
	mw(LAPIC_ICR_HI, 0x06000000);
	mw(LAPIC_ICR_LO, 0x00000856);
	assert_true(irr_has(0x56));
	mw(LAPIC_ICR_HI, 0x01000000);
	mw(LAPIC_ICR_LO, 0x00000857);
	assert_false(irr_has(0x57));
	/* cluster model: cluster 0, member bit 1 */
	mw(LAPIC_DFR, 0x0fffffff);
	assert_int_equal(mr(LAPIC_DFR), 0x0fffffff);
	assert_true(lapic_match_dest(&apic, 0x02, true));
	assert_false(lapic_match_dest(&apic, 0x12, true));
	/* NMI to self */
	mw(LAPIC_ICR_LO, 0x00040400);
	assert_true(apic.nmi_pending);
	/* SELF IPI is x2APIC-only */
	mw(LAPIC_SELF_IPI, 0x58);
	assert_false(irr_has(0x58));
}

/* With a send hook, an ICR write is one message on the bus, as sent; a
 * bus with two APICs delivers by lapic_msg_targets/lapic_msg_receive. */
static struct lapic other;
static struct apic_msg sent[4];
static unsigned nsent;

static void two_apic_bus(void *ctx, struct lapic *from, const struct apic_msg *m)
{
	assert_ptr_equal(ctx, &other);
	sent[nsent++ & 3] = *m;
	struct lapic *all[2] = { &apic, &other };
	for (unsigned i = 0; i < 2; i++)
		if (lapic_msg_targets(all[i], from, m))
			lapic_msg_receive(all[i], m);
}

static bool other_irr(uint8_t v)
{
	return lapic_vec_test(&other, LAPIC_IRR, v);
}

static void test_ipi_bus(void **state)
{
	(void)state;
	nsent = 0;
	lapic_init(&other, FAKE_HOST, 1, false);
	lapic_msr(&other, MSR_APIC_BASE, &(uint64_t){ 0xfee00800ull }, true);
	uint64_t svr = 0x1ff;
	lapic_write(&other, LAPIC_SVR, svr);
	lapic_set_send_hook(&apic, two_apic_bus, &other);
	enable();
	mw(LAPIC_ICR_HI, 0x01000000);
	mw(LAPIC_ICR_LO, 0x00004851);        /* fixed, logical, assert, dest 1 */
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].dest, 1);
	assert_int_equal(sent[0].vector, 0x51);
	assert_int_equal(sent[0].delivery_mode, LAPIC_DM_FIXED);
	assert_int_equal(sent[0].shorthand, LAPIC_SH_NONE);
	assert_true(sent[0].logical);
	assert_false(sent[0].level);
	mw(LAPIC_ICR_LO, 0x00000052);        /* physical APIC 1: the other one only */
	assert_true(other_irr(0x52));
	assert_false(irr_has(0x52));
	mw(LAPIC_ICR_LO, 0x000c0053);        /* all excluding self */
	assert_true(other_irr(0x53));
	assert_false(irr_has(0x53));
	mw(LAPIC_ICR_LO, 0x00040054);        /* self */
	assert_false(other_irr(0x54));
	assert_true(irr_has(0x54));
	mw(LAPIC_ICR_LO, 0x00080055);        /* all including self */
	assert_true(other_irr(0x55));
	assert_true(irr_has(0x55));
	mw(LAPIC_ICR_LO, 0x000c0400);        /* NMI to the others */
	assert_true(other.nmi_pending);
	assert_false(apic.nmi_pending);
	unsigned before = nsent;
	mw(LAPIC_ICR_LO, 0x00000005);        /* illegal vector: never on the bus */
	assert_int_equal(nsent, before);
	mw(LAPIC_ESR, 0);                    /* latches the errors since */
	assert_true(mr(LAPIC_ESR) & LAPIC_ESR_SEND_ILLEGAL);
	/* INIT and SIPI are carried but not taken (one vCPU per VM) */
	mw(LAPIC_ICR_LO, 0x00000500);
	mw(LAPIC_ICR_LO, 0x00000608);
	assert_int_equal(sent[(nsent - 1) & 3].delivery_mode, LAPIC_DM_SIPI);
	assert_false(other_irr(0x08));
}

static void test_timer_oneshot(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_TIMER_DIV, 0xb);            /* divide by 1 */
	mw(LAPIC_LVT_TIMER, 0x40);           /* one-shot, vector 0x40 */
	mw(LAPIC_TIMER_INIT, 1000);
	assert_true(apic.timer.armed);
	assert_int_equal(apic.timer.deadline_tsc, 2000);
	stub_tsc = 1400;
	assert_int_equal(mr(LAPIC_TIMER_CUR), 600);
	assert_int_equal(stubs_advance_to(1999), 0);
	assert_false(irr_has(0x40));
	assert_int_equal(mr(LAPIC_TIMER_CUR), 1);
	assert_int_equal(stubs_advance_to(2000), 1);
	assert_true(irr_has(0x40));
	assert_int_equal(mr(LAPIC_TIMER_CUR), 0);
	assert_false(apic.timer.armed);
	assert_int_equal(stubs_advance_to(100000), 0);
	assert_int_equal(mr(LAPIC_TIMER_INIT), 1000);

	/* 2 GHz TSC, divide by 16: 100 counts = 1600 ns = 3200 cycles */
	stubs_reset();
	stub_tsc_hz = 2000000000ull;
	lapic_init(&apic, FAKE_HOST, 0, true);
	enable();
	mw(LAPIC_TIMER_DIV, 0x3);
	assert_int_equal(mr(LAPIC_TIMER_DIV), 3);
	mw(LAPIC_LVT_TIMER, 0x41);
	mw(LAPIC_TIMER_INIT, 100);
	assert_int_equal(apic.timer.deadline_tsc, 3200);
	stub_tsc = 32;                       /* 16 ns: one count */
	assert_int_equal(mr(LAPIC_TIMER_CUR), 99);
	stubs_advance_to(3200);
	assert_true(irr_has(0x41));

	/* writing 0 stops the timer */
	mw(LAPIC_TIMER_INIT, 100);
	assert_true(apic.timer.armed);
	mw(LAPIC_TIMER_INIT, 0);
	assert_false(apic.timer.armed);
	assert_int_equal(mr(LAPIC_TIMER_CUR), 0);
}

static void test_timer_periodic_and_mask(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_TIMER_DIV, 0xb);
	mw(LAPIC_LVT_TIMER, 0x20042);        /* periodic, vector 0x42 */
	mw(LAPIC_TIMER_INIT, 1000);          /* loaded at 1000 */
	assert_int_equal(stubs_advance_to(4500), 3);
	/* three periods ended, but the CPU took none: one waits in IRR, the
	 * other two are counted, not merged into it */
	assert_int_equal(apic.timer_fires, 1);
	assert_int_equal(apic.timer_late, 2);
	assert_true(irr_has(0x42));
	assert_int_equal(mr(LAPIC_TIMER_CUR), 500);
	assert_int_equal(apic.timer.deadline_tsc, 5000);
	/* each one the CPU takes lets the next into IRR at once */
	lapic_ack(&apic, 0x42);
	assert_int_equal(apic.timer_fires, 2);
	assert_true(irr_has(0x42));
	lapic_eoi(&apic);
	lapic_ack(&apic, 0x42);
	lapic_eoi(&apic);
	assert_int_equal(apic.timer_fires, 3);
	assert_int_equal(apic.timer_fires_late, 2);
	assert_int_equal(apic.timer_late, 0);
	assert_true(irr_has(0x42));
	/* a late expiry (the vCPU did not run for six periods): all counted */
	stub_tsc = 10500;
	vm_timer_cancel(&apic.timer);
	apic.timer.fire(&apic.timer, 10500);
	assert_int_equal(apic.timer_late, 6);   /* 4000..10000, the first still in IRR */
	assert_int_equal(apic.timer.deadline_tsc, 11000);
	for (unsigned i = 0; i < 6; i++) {
		lapic_ack(&apic, 0x42);
		lapic_eoi(&apic);
	}
	assert_int_equal(apic.timer_fires, 9);
	assert_int_equal(apic.timer_late, 0);
	assert_true(irr_has(0x42));
	lapic_ack(&apic, 0x42);
	lapic_eoi(&apic);
	assert_int_equal(apic.timer_fires, 9);
	assert_false(irr_has(0x42));
	/* masked: it keeps counting but sends nothing */
	mw(LAPIC_LVT_TIMER, 0x30042);
	stubs_advance_to(12999);                 /* expiries at 11000 and 12000 */
	assert_int_equal(apic.timer_fires, 9);
	assert_int_equal(apic.timer_late, 0);   /* masked ones are not kept */
	assert_false(irr_has(0x42));
	/* periodic -> one-shot: the current period ends it */
	mw(LAPIC_LVT_TIMER, 0x00042);
	stubs_advance_to(20000);                 /* 13000, then stops */
	assert_int_equal(apic.timer_fires, 10);
	assert_int_equal(stub_tsc, 20000);
	assert_true(irr_has(0x42));
	assert_false(apic.timer.armed);
}

static void test_timer_divide_change(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_TIMER_DIV, 0xb);
	mw(LAPIC_LVT_TIMER, 0x40);
	mw(LAPIC_TIMER_INIT, 1000);          /* at 1000, ends at 2000 */
	stub_tsc = 1600;                     /* 400 left */
	mw(LAPIC_TIMER_DIV, 0x0);            /* divide by 2: 400 counts = 800 cycles */
	assert_int_equal(mr(LAPIC_TIMER_CUR), 400);
	assert_int_equal(apic.timer.deadline_tsc, 2400);
}

/* A new deadline over an armed one, or a new initial count over a running
 * count, moves the timer: one arm, no cancel (each programs the host timer),
 * and one timer in the list. */
static void test_rearm_moves_the_timer(void **state)
{
	(void)state;
	enable();
	mw(LAPIC_LVT_TIMER, 0x40043);        /* TSC deadline */
	msr_w(MSR_TSC_DEADLINE, 5000);
	unsigned arms = stub_timer_arms, cancels = stub_timer_cancels;
	msr_w(MSR_TSC_DEADLINE, 7000);
	assert_int_equal(stub_timer_arms, arms + 1);
	assert_int_equal(stub_timer_cancels, cancels);
	assert_int_equal(stub_nr_timers, 1);
	assert_int_equal(apic.timer.deadline_tsc, 7000);
	stubs_advance_to(5000);
	assert_false(irr_has(0x43));         /* the old deadline is gone */
	stubs_advance_to(7000);
	assert_true(irr_has(0x43));
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	mw(LAPIC_LVT_TIMER, 0x43);           /* one-shot */
	mw(LAPIC_TIMER_INIT, 1000);
	arms = stub_timer_arms;
	cancels = stub_timer_cancels;
	mw(LAPIC_TIMER_INIT, 3000);          /* restarts the count */
	assert_int_equal(stub_timer_arms, arms + 1);
	assert_int_equal(stub_timer_cancels, cancels);
	assert_int_equal(stub_nr_timers, 1);
	mw(LAPIC_TIMER_INIT, 0);             /* stops it */
	assert_int_equal(stub_timer_cancels, cancels + 1);
	assert_int_equal(stub_nr_timers, 0);
}

static void test_tsc_deadline(void **state)
{
	(void)state;
	uint64_t v;
	enable();
	/* outside TSC-deadline mode the MSR ignores writes */
	assert_int_equal(msr_w(MSR_TSC_DEADLINE, 5000), 0);
	assert_int_equal(msr_r(MSR_TSC_DEADLINE, &v), 0);
	assert_int_equal(v, 0);
	mw(LAPIC_LVT_TIMER, 0x40043);        /* TSC deadline, vector 0x43 */
	assert_int_equal(msr_w(MSR_TSC_DEADLINE, 5000), 0);
	assert_int_equal(msr_r(MSR_TSC_DEADLINE, &v), 0);
	assert_int_equal(v, 5000);
	assert_int_equal(apic.timer.deadline_tsc, 5000);
	/* the initial count is ignored in this mode */
	mw(LAPIC_TIMER_INIT, 10);
	assert_int_equal(mr(LAPIC_TIMER_INIT), 0);
	assert_int_equal(mr(LAPIC_TIMER_CUR), 0);
	stubs_advance_to(4999);
	assert_false(irr_has(0x43));
	stubs_advance_to(5000);
	assert_true(irr_has(0x43));
	assert_int_equal(msr_r(MSR_TSC_DEADLINE, &v), 0);
	assert_int_equal(v, 0);              /* disarmed once it fired */
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	/* a deadline in the past fires at once */
	msr_w(MSR_TSC_DEADLINE, 100);
	assert_true(irr_has(0x43));
	assert_false(apic.timer.armed);
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	/* 0 disarms */
	msr_w(MSR_TSC_DEADLINE, 90000);
	assert_true(apic.timer.armed);
	msr_w(MSR_TSC_DEADLINE, 0);
	assert_false(apic.timer.armed);
	/* the deadline is in the VM's time, whatever the host TSC */
	stub_clock.offset = 1000;
	msr_w(MSR_TSC_DEADLINE, 9000);
	assert_int_equal(apic.timer.deadline_tsc, 9000);
	msr_w(MSR_TSC_DEADLINE, stub_tsc + 500);   /* passed in the VM's time */
	assert_true(irr_has(0x43));
	assert_false(apic.timer.armed);
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	/* the guest's own IA32_TSC offset: the deadline is in guest TSC = the
	 * VM's time + tsc_offset; the timer service counts the VM's time */
	apic.tsc_offset = (int64_t)(1ull << 62);
	msr_w(MSR_TSC_DEADLINE, (1ull << 62) + stub_tsc + 1000 + 7000);
	assert_true(apic.timer.armed);
	assert_int_equal(apic.timer.deadline_tsc, stub_tsc + 1000 + 7000);
	msr_w(MSR_TSC_DEADLINE, (1ull << 62) + stub_tsc + 1000);   /* guest TSC now: due */
	assert_true(irr_has(0x43));
	assert_false(apic.timer.armed);
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	/* around a wrap of the guest's TSC the CPU compares unsigned in guest
	 * TSC: 2^64 - 100 has passed 50, and 2^64 - 50 is 50 ticks ahead */
	uint64_t vm_now = stub_tsc + (uint64_t)stub_clock.offset;
	apic.tsc_offset = (int64_t)(0 - vm_now - 100);     /* guest TSC = 2^64 - 100 */
	msr_w(MSR_TSC_DEADLINE, 50);
	assert_true(irr_has(0x43));
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	msr_w(MSR_TSC_DEADLINE, 0 - 50ull);
	assert_true(apic.timer.armed);
	assert_int_equal(apic.timer.deadline_tsc, vm_now + 50);
	stubs_advance_to(vm_now + 49);   /* the stub's timers count the VM's time */
	assert_false(irr_has(0x43));
	stubs_advance_to(vm_now + 50);
	assert_true(irr_has(0x43));
	lapic_ack(&apic, 0x43);
	lapic_eoi(&apic);
	/* once the guest's TSC wrapped to 100, 2^64 - 50 is far ahead: never */
	apic.tsc_offset = (int64_t)(100 - stub_tsc - (uint64_t)stub_clock.offset);
	msr_w(MSR_TSC_DEADLINE, 0 - 50ull);
	assert_false(irr_has(0x43));
	assert_true(apic.timer.armed);
	assert_int_equal(apic.timer.deadline_tsc, UINT64_MAX);
	msr_w(MSR_TSC_DEADLINE, 0);
	apic.tsc_offset = 0;
	mw(LAPIC_LVT_TIMER, 0x40043);
	/* leaving TSC-deadline mode disarms and clears */
	mw(LAPIC_LVT_TIMER, 0x00043);
	assert_false(apic.timer.armed);
	assert_int_equal(msr_r(MSR_TSC_DEADLINE, &v), 0);
	assert_int_equal(v, 0);
}

static void test_x2apic_msrs(void **state)
{
	(void)state;
	uint64_t v;
	lapic_init(&apic, FAKE_HOST, 3, true);
	/* not in x2APIC mode: every x2APIC MSR is #GP */
	assert_int_equal(msr_r(0x802, &v), LAPIC_GP);
	assert_int_equal(msr_w(0x808, 0), LAPIC_GP);
	/* xAPIC -> x2APIC */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00c00ull), 0);
	assert_true(lapic_x2apic(&apic));
	assert_int_equal(msr_r(MSR_APIC_BASE, &v), 0);
	assert_int_equal(v, 0xfee00d00ull);  /* BSP kept */
	/* no MMIO in x2APIC mode */
	assert_int_equal(mr(LAPIC_VERSION), 0xffffffffu);
	mw(LAPIC_SVR, 0x1ff);
	assert_int_equal(apic.svr, 0xff);

	assert_int_equal(msr_r(0x802, &v), 0);
	assert_int_equal(v, 3);              /* ID: the full 32 bits, not << 24 */
	assert_int_equal(msr_w(0x802, 7), LAPIC_GP); /* read-only */
	assert_int_equal(msr_r(0x803, &v), 0);
	assert_int_equal(v, 0x00050014);
	assert_int_equal(msr_r(0x80d, &v), 0);
	assert_int_equal(v, 0x00000008);     /* LDR: cluster 0, bit 3 */
	assert_int_equal(msr_w(0x80d, 0), LAPIC_GP);
	assert_int_equal(msr_r(0x80e, &v), LAPIC_GP);  /* no DFR */
	assert_int_equal(msr_r(0x809, &v), LAPIC_GP);  /* no APR */
	assert_int_equal(msr_r(0x804, &v), LAPIC_GP);  /* reserved */
	assert_int_equal(msr_r(0x831, &v), LAPIC_GP);  /* no ICR high */
	assert_int_equal(msr_r(0x80b, &v), LAPIC_GP);  /* EOI is write-only */
	assert_int_equal(msr_r(0x83f, &v), LAPIC_GP);  /* SELF IPI is write-only */
	assert_int_equal(msr_w(0x839, 0), LAPIC_GP);   /* current count is RO */
	assert_int_equal(msr_w(0x80a, 0), LAPIC_GP);   /* PPR is RO */
	assert_int_equal(msr_w(0x810, 0), LAPIC_GP);   /* ISR is RO */

	assert_int_equal(msr_w(0x80f, 0x1ff), 0);      /* SVR */
	assert_int_equal(msr_w(0x808, 0x20), 0);       /* TPR */
	assert_int_equal(msr_r(0x808, &v), 0);
	assert_int_equal(v, 0x20);
	assert_int_equal(msr_w(0x808, 1ull << 32), LAPIC_GP); /* reserved high half */
	assert_int_equal(msr_r(0x80a, &v), 0);
	assert_int_equal(v, 0x20);

	/* ICR: one 64-bit write, destination in the high half */
	assert_int_equal(msr_w(0x830, (3ull << 32) | 0x60), 0);
	assert_true(lapic_vec_test(&apic, LAPIC_IRR, 0x60));
	assert_int_equal(msr_r(0x830, &v), 0);
	assert_int_equal(v, (3ull << 32) | 0x60);
	assert_int_equal(msr_w(0x830, (4ull << 32) | 0x61), 0); /* APIC 4: nobody */
	assert_false(lapic_vec_test(&apic, LAPIC_IRR, 0x61));
	assert_int_equal(msr_w(0x830, 0x1000 | 0x62), LAPIC_GP); /* bit 12 reserved */
	/* logical x2APIC: cluster 0, member bit 3 */
	assert_int_equal(msr_w(0x830, (0x00000008ull << 32) | 0x863), 0);
	assert_true(lapic_vec_test(&apic, LAPIC_IRR, 0x63));

	/* SELF IPI */
	assert_int_equal(msr_w(0x83f, 0x70), 0);
	assert_int_equal(lapic_highest_pending(&apic), 0x70);
	assert_int_equal(msr_w(0x83f, 0x170), LAPIC_GP);
	/* EOI and ESR take only 0 */
	lapic_ack(&apic, 0x70);
	assert_int_equal(msr_w(0x80b, 1), LAPIC_GP);
	assert_int_equal(msr_w(0x80b, 0), 0);
	assert_false(lapic_vec_test(&apic, LAPIC_ISR, 0x70));
	assert_int_equal(msr_w(0x828, 1), LAPIC_GP);
	assert_int_equal(msr_w(0x828, 0), 0);
	/* the timer through MSRs */
	stub_tsc_hz = 1000000000ull;
	apic.tsc_hz = stub_tsc_hz;
	stub_tsc = 0;
	assert_int_equal(msr_w(0x83e, 0xb), 0);
	assert_int_equal(msr_w(0x832, 0x44), 0);
	assert_int_equal(msr_w(0x838, 500), 0);
	stub_tsc = 100;
	assert_int_equal(msr_r(0x839, &v), 0);
	assert_int_equal(v, 400);
	/* MSRs that are not the APIC's */
	assert_int_equal(msr_r(0x900, &v), LAPIC_GP);
	assert_int_equal(msr_r(0x7ff, &v), LAPIC_GP);
}

static void test_apic_base_transitions(void **state)
{
	(void)state;
	uint64_t v;
	enable();
	mw(LAPIC_TPR, 0x30);
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00100ull | 0x1), LAPIC_GP); /* reserved bit 0 */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00400ull), LAPIC_GP);       /* EXTD without EN */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00c00ull), 0);              /* -> x2APIC */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00800ull), LAPIC_GP);       /* x2APIC -> xAPIC */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00000ull), 0);              /* -> disabled */
	assert_false(lapic_hw_enabled(&apic));
	assert_true(lapic_pic_intr_allowed(&apic));
	assert_int_equal(mr(LAPIC_VERSION), 0xffffffffu); /* not decoded */
	lapic_accept(&apic, 0x50, false);
	assert_int_equal(lapic_highest_pending(&apic), -1);
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00c00ull), LAPIC_GP);       /* disabled -> x2APIC */
	assert_int_equal(msr_w(MSR_APIC_BASE, 0xfee00800ull), 0);              /* -> xAPIC */
	/* disabling reset the registers */
	assert_int_equal(mr(LAPIC_SVR), 0xff);
	assert_int_equal(mr(LAPIC_TPR), 0);
	assert_int_equal(msr_r(MSR_APIC_BASE, &v), 0);
	assert_int_equal(v, 0xfee00900ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_reset_state, setup),
		cmocka_unit_test_setup(test_firmware_state, setup),
		cmocka_unit_test_setup(test_tpr_ppr_priority, setup),
		cmocka_unit_test_setup(test_tpr_moved_and_blocked_class, setup),
		cmocka_unit_test_setup(test_level_eoi_hook, setup),
		cmocka_unit_test_setup(test_illegal_vector_and_esr, setup),
		cmocka_unit_test_setup(test_xapic_ipis, setup),
		cmocka_unit_test_setup(test_ipi_bus, setup),
		cmocka_unit_test_setup(test_register_file_is_the_page, setup),
		cmocka_unit_test_setup(test_write_after_cpu_store, setup),
		cmocka_unit_test_setup(test_cpu_delivers, setup),
		cmocka_unit_test_setup(test_irr_words_follow_irr, setup),
		cmocka_unit_test_setup(test_x2apic_reserved_bits, setup),
		cmocka_unit_test_setup(test_cpu_delivers_late_timer, setup),
		cmocka_unit_test_setup(test_timer_oneshot, setup),
		cmocka_unit_test_setup(test_timer_periodic_and_mask, setup),
		cmocka_unit_test_setup(test_timer_divide_change, setup),
		cmocka_unit_test_setup(test_tsc_deadline, setup),
		cmocka_unit_test_setup(test_rearm_moves_the_timer, setup),
		cmocka_unit_test_setup(test_x2apic_msrs, setup),
		cmocka_unit_test_setup(test_apic_base_transitions, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
