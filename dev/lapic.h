/* Local APIC register logic for one vCPU, in xAPIC mode (MMIO at
 * 0xFEE00000) and x2APIC mode (MSRs 0x800-0x8FF), after the Intel SDM vol. 3
 * ch. 10/11 and AMD APM vol. 2 ch. 16.
 *
 * One register file serves both: xAPIC offset `off` is x2APIC MSR
 * 0x800 + (off >> 4). ID, version, TPR, APR, PPR, EOI, LDR, DFR (xAPIC),
 * SVR, ISR/TMR/IRR, ESR, ICR (self and broadcast-to-self IPIs; one vCPU),
 * the LVT (timer, thermal, perf, LINT0, LINT1, error), the timer (one-shot,
 * periodic, TSC-deadline through MSR 0x6E0; counting in the VM's time, the
 * clock the guest's TSC reads; driven by a vm_timer; periodic
 * expiries that fall due while the last interrupt still waits in IRR are
 * counted and accepted one by one as the CPU takes them, none lost) and
 * SELF IPI (x2APIC).
 *
 * The hypervisor's interrupt model:
 *  - lapic_accept(vector, level) when an interrupt message arrives (I/O APIC,
 *    self IPI, timer: the device calls it itself);
 *  - before entering the guest, lapic_highest_pending() gives the vector to
 *    inject (-1 if none may be delivered now); when the CPU takes it,
 *    lapic_ack(vector) moves it from IRR to ISR;
 *  - an EOI of a level-triggered vector calls the eoi hook (-> ioapic_eoi);
 *  - lapic_pic_intr_allowed() says whether the 8259's INTR reaches the CPU
 *    (LINT0 in ExtINT mode, or the APIC globally disabled). */
#ifndef DEV_LAPIC_H
#define DEV_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define LAPIC_BASE           0xfee00000ull
#define LAPIC_SIZE           0x1000u
#define LAPIC_BUS_HZ         1000000000ull  /* the APIC timer's clock: 1 tick = 1 ns */

/* Register offsets (xAPIC MMIO). */
#define LAPIC_ID             0x020
#define LAPIC_VERSION        0x030
#define LAPIC_TPR            0x080
#define LAPIC_APR            0x090
#define LAPIC_PPR            0x0a0
#define LAPIC_EOI            0x0b0
#define LAPIC_RRD            0x0c0
#define LAPIC_LDR            0x0d0
#define LAPIC_DFR            0x0e0
#define LAPIC_SVR            0x0f0
#define LAPIC_ISR            0x100  /* 8 registers, 0x100-0x170 */
#define LAPIC_TMR            0x180
#define LAPIC_IRR            0x200
#define LAPIC_ESR            0x280
#define LAPIC_LVT_CMCI       0x2f0
#define LAPIC_ICR_LO         0x300
#define LAPIC_ICR_HI         0x310
#define LAPIC_LVT_TIMER      0x320
#define LAPIC_LVT_THERMAL    0x330
#define LAPIC_LVT_PERF       0x340
#define LAPIC_LVT_LINT0      0x350
#define LAPIC_LVT_LINT1      0x360
#define LAPIC_LVT_ERROR      0x370
#define LAPIC_TIMER_INIT     0x380
#define LAPIC_TIMER_CUR      0x390
#define LAPIC_TIMER_DIV      0x3e0
#define LAPIC_SELF_IPI       0x3f0  /* x2APIC only */

/* MSRs. */
#define MSR_APIC_BASE        0x1bu
#define MSR_TSC_DEADLINE     0x6e0u
#define MSR_X2APIC_FIRST     0x800u
#define MSR_X2APIC_LAST      0x8ffu
#define LAPIC_X2APIC_MSR(off) (MSR_X2APIC_FIRST + ((off) >> 4))

#define APIC_BASE_BSP        (1ull << 8)
#define APIC_BASE_EXTD       (1ull << 10)  /* x2APIC mode */
#define APIC_BASE_EN         (1ull << 11)  /* globally enabled */

#define LAPIC_SVR_ENABLE     (1u << 8)
#define LAPIC_LVT_MASKED     (1u << 16)
#define LAPIC_LVT_LEVEL      (1u << 15)
#define LAPIC_LVT_REMOTE_IRR (1u << 14)
#define LAPIC_LVT_DELIVS     (1u << 12)
#define LAPIC_LVT_DM(v)      (((v) >> 8) & 7)
#define LAPIC_DM_FIXED       0u
#define LAPIC_DM_LOWEST      1u
#define LAPIC_DM_SMI         2u
#define LAPIC_DM_NMI         4u
#define LAPIC_DM_INIT        5u
#define LAPIC_DM_SIPI        6u
#define LAPIC_DM_EXTINT      7u

/* ICR destination shorthands */
#define LAPIC_SH_NONE        0u
#define LAPIC_SH_SELF        1u
#define LAPIC_SH_ALL         2u
#define LAPIC_SH_OTHERS      3u

#define LAPIC_TIMER_ONESHOT     0u
#define LAPIC_TIMER_PERIODIC    1u
#define LAPIC_TIMER_TSCDEADLINE 2u
#define LAPIC_TIMER_MODE(lvt)   (((lvt) >> 17) & 3)

/* ESR bits. */
#define LAPIC_ESR_SEND_ILLEGAL   (1u << 5)
#define LAPIC_ESR_RECV_ILLEGAL   (1u << 6)
#define LAPIC_ESR_ILLEGAL_REG    (1u << 7)

/* lapic_* register accessors return this for an access the CPU answers
 * with #GP (x2APIC rules); the hypervisor injects #GP(0). */
#define LAPIC_GP (-1)

enum lapic_lvt { LVT_TIMER, LVT_THERMAL, LVT_PERF, LVT_LINT0, LVT_LINT1, LVT_ERROR, LVT_COUNT };

struct lapic;
/* EOI of a vector that was accepted level-triggered (TMR set): the
 * hypervisor passes it on to ioapic_eoi(). */
typedef void (*lapic_eoi_fn)(void *ctx, uint8_t vector);

/* One interrupt message on a VM's APIC bus: an IPI (an ICR write) or an
 * I/O APIC redirection. `dest` is as the sender means it: 8 bits from an
 * xAPIC or the I/O APIC, 32 from an x2APIC. */
struct apic_msg {
	uint32_t dest;
	uint8_t vector;
	uint8_t delivery_mode;  /* LAPIC_DM_* */
	uint8_t shorthand;      /* LAPIC_SH_* (the I/O APIC sends none) */
	bool logical;           /* destination mode */
	bool level;             /* level-triggered: TMR set, the EOI goes back to the I/O APIC */
};
/* Where an APIC's IPIs go: the VM's APIC bus, which hands each message to
 * the APICs it names (vmm/apic_bus.c). An APIC without one is alone on its
 * bus (the unit tests). */
typedef void (*lapic_send_fn)(void *ctx, struct lapic *from, const struct apic_msg *m);

#define LAPIC_CHANGED_TMR    1u
#define LAPIC_CHANGED_ISR    2u   /* a reset: the CPU's SVI is wrong now */

/* Words of the register file: offsets 0x000-0x3F0, laid out as the xAPIC
 * page (VT-x's virtual-APIC page has the same layout). */
#define LAPIC_REG_WORDS      (0x400 / 4)

/* The model's state, kept by dev/lapic*.c (the files: dev/lapic_internal.h).
 * Other code goes through the functions below, the vCPU code (vmm/) aside,
 * which reads the ID and drives the INIT/STARTUP, NMI and TSC-offset fields
 * itself. */
struct lapic {
	uint32_t id;            /* APIC ID */
	uint64_t apic_base;     /* IA32_APIC_BASE */
	/* The register file as the xAPIC page lays it out: the register at
	 * offset off is regs[off >> 2]. It is regs_own, or VT-x's virtual-APIC
	 * page (lapic_regs_move), where the CPU reads and writes it without an
	 * exit. TPR, IRR, ISR and TMR live only here (the CPU changes them:
	 * the TPR shadow, virtual-interrupt delivery). The other registers are
	 * the fields below, each copied here when it changes, so that a read
	 * the CPU serves from the page (APIC-register virtualization) finds
	 * it, and so that a write the CPU stored there before its exit does not
	 * destroy the value the model had. */
	uint32_t *regs;
	/* VT-x's virtual-interrupt delivery: the CPU takes interrupts from
	 * IRR into ISR and performs EOIs itself (isr_words is not kept then) */
	bool cpu_delivers;
	/* what the model changed in TMR or ISR since the backend last looked
	 * (LAPIC_CHANGED_*): VT-x's EOI-exit bitmap and SVI follow them */
	uint8_t changed;
	uint32_t svr, ldr, dfr;
	uint32_t esr;           /* what ESR reads: latched at the last ESR write */
	uint32_t esr_pending;   /* errors since then */
	uint32_t icr_lo, icr_hi;
	uint32_t isr_words;     /* bit i: ISR word i is not 0 (the highest in service
				   without a scan of the eight words) */
	uint32_t irr_words;     /* the same for IRR (not kept either while the CPU
				   delivers: it clears IRR bits itself) */
	uint32_t lvt[LVT_COUNT];
	/* timer */
	uint32_t timer_init;    /* initial count */
	uint32_t timer_div;     /* divide configuration register */
	uint64_t timer_start;   /* VM time (dev_clock) at which the current count was loaded */
	bool timer_running;     /* one-shot/periodic count in progress */
	uint64_t timer_periods; /* periodic: expiries counted since timer_start */
	uint32_t timer_late;    /* of those, interrupts not accepted yet (the last
				   one still waited in IRR) */
	uint64_t tsc_deadline;  /* IA32_TSC_DEADLINE in guest TSC, 0 = disarmed */
	int64_t tsc_offset;     /* guest TSC = the VM's time (dev_clock) + tsc_offset:
				   the guest's IA32_TSC writes (vmm/exit_msr.c) */
	struct guest_clock *clock;
	uint64_t tsc_hz;
	struct vm_timer timer;
	/* hooks */
	lapic_eoi_fn eoi_hook;
	void *eoi_ctx;
	lapic_send_fn send_hook;
	void *send_ctx;
	bool nmi_pending;       /* an NMI IPI to self was sent; the hypervisor clears it */
	/* INIT and STARTUP for the vCPU (the hypervisor acts on them):
	 * init_pending: an INIT reset this APIC, the vCPU is to be reset into
	 * wait-for-SIPI; wait_sipi: a STARTUP is taken (an AP from power-up,
	 * any vCPU after INIT); sipi_pending: one was, with sipi_vector */
	bool init_pending, wait_sipi, sipi_pending;
	uint8_t sipi_vector;
	uint64_t timer_fires;   /* interrupts the timer sent, for statistics and tests */
	uint64_t timer_fires_late; /* of those, sent after their time (a periodic
				      one that waited for the previous) */
	uint32_t regs_own[LAPIC_REG_WORDS];
};

#define LAPIC_MAX_LATE 0x10000u  /* periodic expiries kept for a guest that takes none */

/* Power-up state: xAPIC mode, globally enabled, software disabled (SVR =
 * 0xFF), every LVT masked, timer stopped. `bsp` sets APIC_BASE.BSP. The TSC
 * frequency is read with platform_tsc_hz(). */
void lapic_init(struct lapic *a, struct dev_host *host, uint32_t apic_id, bool bsp);

/* The state SeaBIOS leaves for an OS (what Linux expects from firmware):
 * software enabled, LINT0 ExtINT (the 8259 passes through), LINT1 NMI. */
void lapic_firmware_setup(struct lapic *a);

void lapic_set_eoi_hook(struct lapic *a, lapic_eoi_fn fn, void *ctx);
void lapic_set_send_hook(struct lapic *a, lapic_send_fn fn, void *ctx);

/* Is APIC `a` among the destinations of message m? `from` is the APIC that
 * sent it (for the shorthands), or 0 (the I/O APIC). */
bool lapic_msg_targets(const struct lapic *a, const struct lapic *from, const struct apic_msg *m);
/* APIC `a` takes message m: fixed and lowest priority go to IRR, an NMI
 * waits in nmi_pending, an INIT resets the APIC (its ID and APIC_BASE
 * kept, SDM vol. 3 11.4.7.3) and sets init_pending and wait_sipi, a STARTUP
 * is latched only in wait-for-SIPI (SDM 9.4.4: others ignore it). SMI and
 * ExtINT messages are dropped, and so is an INIT to the boot processor
 * (APIC_BASE.BSP): on a PC it restarts the firmware at the reset vector,
 * and a lightpath VM has no firmware (docs/SMP.md). */
void lapic_msg_receive(struct lapic *a, const struct apic_msg *m);

/* For an IPI sent without the APIC's own send path (the light path of a VM
 * of several vCPUs posts it to the target itself): the destination of an
 * ICR write `icr` (x2APIC: the 64-bit MSR value; xAPIC: the low register,
 * the destination is in ICR_HI already) when it is a fixed, edge-triggered
 * IPI to one physical APIC ID, without shorthand, with a legal vector, from
 * an enabled APIC; else -1 (the write must go through lapic_msr or
 * lapic_mmio). */
int64_t lapic_fixed_unicast_dest(const struct lapic *a, uint64_t icr);
/* Records such a write: the ICR reads it back. */
void lapic_icr_record(struct lapic *a, uint64_t icr);

/* Register file by xAPIC offset (0x000-0x3F0), mode-independent; value is
 * 32 bits except the x2APIC ICR (64). These do not apply the x2APIC access
 * rules; lapic_msr() and lapic_mmio() do. */
uint64_t lapic_read(struct lapic *a, unsigned off);
void lapic_write(struct lapic *a, unsigned off, uint64_t value);

/* MMIO callback (dev/device.h shape; dev is the struct lapic), for the
 * 4 KiB page at 0xFEE00000: 32-bit accesses (narrower reads are served
 * from the register's low bytes, narrower writes are ignored as on the
 * hardware). In x2APIC mode, or with the APIC globally disabled, the page
 * is not decoded: reads all-ones, writes dropped. */
int lapic_mmio(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc lapic_desc;

/* MSRs IA32_APIC_BASE (0x1B), IA32_TSC_DEADLINE (0x6E0) and the x2APIC range
 * (0x800-0x8FF). Returns 0, or LAPIC_GP for #GP: an x2APIC MSR outside
 * x2APIC mode, a reserved or absent register, a write to a read-only one
 * (ID, version, PPR, LDR, ISR/TMR/IRR, current count) or a read of a
 * write-only one (EOI, SELF IPI), a non-zero write to EOI or ESR, reserved
 * bits set, an invalid APIC_BASE mode transition. */
int lapic_msr(struct lapic *a, uint32_t msr, uint64_t *value, bool is_write);
/* A WRMSR of IA32_TSC_DEADLINE (never a #GP): armed in TSC-deadline mode,
 * delivered at once if already due, ignored in the other modes. */
void lapic_tsc_deadline_write(struct lapic *a, uint64_t value);

/* IA32_APIC_BASE write with the SDM's transition rules (xAPIC -> x2APIC,
 * either -> disabled; x2APIC -> xAPIC and disabled -> x2APIC are #GP).
 * Disabling resets the APIC (ID kept). The base address is recorded but the
 * MMIO window stays at 0xFEE00000. */
int lapic_set_base(struct lapic *a, uint64_t value);

static inline bool lapic_x2apic(const struct lapic *a)
{
	return (a->apic_base & (APIC_BASE_EN | APIC_BASE_EXTD)) == (APIC_BASE_EN | APIC_BASE_EXTD);
}
static inline bool lapic_hw_enabled(const struct lapic *a)
{
	return a->apic_base & APIC_BASE_EN;
}
static inline bool lapic_sw_enabled(const struct lapic *a)
{
	return lapic_hw_enabled(a) && (a->svr & LAPIC_SVR_ENABLE);
}

/* An interrupt message with `vector` arrives (trigger mode level or edge).
 * Vectors 0-15 are illegal (ESR receive-illegal-vector, dropped); a
 * disabled APIC drops fixed interrupts. */
void lapic_accept(struct lapic *a, uint8_t vector, bool level);

/* Word i (vectors 32i..32i+31) of ISR, TMR or IRR (base LAPIC_ISR,
 * LAPIC_TMR or LAPIC_IRR): the words are 16 bytes apart. */
static inline uint32_t *lapic_vec_word(const struct lapic *a, unsigned base, unsigned i)
{
	return &a->regs[(base >> 2) + 4 * i];
}

/* Is any interrupt requested (IRR non-empty)? Cheap: the light path asks it
 * after every write that could make one deliverable. irr_words answers,
 * except while the CPU delivers (and clears IRR bits itself). */
static inline bool lapic_irr_nonempty(const struct lapic *a)
{
	if (__builtin_expect(a->cpu_delivers, 0)) {
		const uint32_t *irr = lapic_vec_word(a, LAPIC_IRR, 0);
		return (irr[0] | irr[4] | irr[8] | irr[12] | irr[16] | irr[20] | irr[24] | irr[28]) != 0;
	}
	return a->irr_words != 0;
}

/* The word of ISR, TMR or IRR that holds `vector` (vector / 32 * 16 bytes
 * into the array). */
static inline uint32_t *lapic_vec_word_of(const struct lapic *a, unsigned base, unsigned vector)
{
	return (uint32_t *)((char *)a->regs + base + ((vector >> 1) & 0x70));
}

static inline bool lapic_vec_test(const struct lapic *a, unsigned base, unsigned vector)
{
	return *lapic_vec_word_of(a, base, vector) & (1u << (vector & 31));
}

/* The highest vector set in ISR, TMR or IRR, or -1. */
int lapic_highest_vec(const struct lapic *a, unsigned base);

/* The highest vector in IRR whose priority class is above the processor
 * priority (PPR), or -1. */
int lapic_highest_pending(struct lapic *a);

/* The CPU takes `vector`: IRR -> ISR. */
void lapic_ack(struct lapic *a, uint8_t vector);

/* Both in one pass, as the CPU takes an interrupt: the highest deliverable
 * vector moves from IRR to ISR and is returned; -1 (nothing changed) if
 * there is none. */
int lapic_take_highest(struct lapic *a);

/* An EOI: clears the highest ISR bit; returns its vector (-1 if ISR was
 * empty). A vector with TMR set calls the eoi hook. */
int lapic_eoi(struct lapic *a);

/* An EOI that touches nothing but this APIC's ISR: done (true) unless the
 * vector in service was accepted level-triggered, whose EOI goes on to the
 * I/O APIC (false: nothing done; the caller takes lapic_eoi's way, with
 * whatever the I/O APIC needs). */
bool lapic_eoi_edge(struct lapic *a);

/* Processor priority register as the hardware computes it. */
uint32_t lapic_ppr(const struct lapic *a);

static inline uint32_t lapic_tpr(const struct lapic *a)
{
	return a->regs[LAPIC_TPR >> 2];
}

/* Does this APIC accept a message for (dest, logical)? Physical: its ID or
 * the broadcast ID; logical: flat/cluster model (xAPIC) or x2APIC cluster. */
bool lapic_match_dest(const struct lapic *a, uint32_t dest, bool logical);

/* Whether the 8259's INTR output is delivered to the CPU: the APIC is
 * globally disabled, or LINT0 is unmasked in ExtINT mode. */
bool lapic_pic_intr_allowed(const struct lapic *a);

/* The timer's current count now (0 when stopped or expired). */
uint32_t lapic_timer_current(struct lapic *a);

/* ---- APIC virtualization (dev/lapic_apicv.c) ----
 * VT-x's virtual-APIC page, virtual-interrupt delivery and EOI exits keep
 * the CPU's view of the APIC in step with the model through these alone
 * (the backend touches no field of struct lapic). */

/* Keeps the register file at `page` from now on (its contents move there):
 * VT-x's virtual-APIC page; lapic_regs_move_back moves it back into the
 * model (the page may be cleared then). */
void lapic_regs_move(struct lapic *a, uint32_t *page);
void lapic_regs_move_back(struct lapic *a);

/* The CPU delivers interrupts from IRR and performs EOIs from now on
 * (VT-x's virtual-interrupt delivery), or no longer: lapic_highest_pending
 * still says what is deliverable (a HLT's wake-up), nobody calls lapic_ack,
 * and EOIs the CPU performed come back through lapic_eoi_done. */
void lapic_set_cpu_delivers(struct lapic *a, bool on);

static inline bool lapic_cpu_delivers(const struct lapic *a)
{
	return a->cpu_delivers;
}

/* The CPU performed the EOI of `vector` itself (VT-x's EOI virtualization,
 * which exits for a vector whose EOI-exit bit is set): a level-triggered
 * one goes on to the eoi hook. */
void lapic_eoi_done(struct lapic *a, uint8_t vector);

/* The CPU stored a guest's write of the register at offset `off` in the
 * register file (VT-x's APIC-write virtualization, a trap-like exit): the
 * model performs it (it kept the old value, see struct lapic) and puts what
 * the register reads now back in the page, so that a write the model
 * ignores (an initial count in TSC-deadline mode) does not stay there. An
 * ICR-low write takes ICR high from the page first (the CPU stores that one
 * without an exit); a SELF IPI, which the page does not keep, reads 0. */
void lapic_apicv_write(struct lapic *a, unsigned off);

/* What the model changed in TMR or ISR (LAPIC_CHANGED_*) since the backend
 * last marked the changes seen: VT-x's EOI-exit bitmap and SVI follow them. */
static inline unsigned lapic_apicv_changed(const struct lapic *a)
{
	return a->changed;
}

static inline void lapic_apicv_changes_seen(struct lapic *a)
{
	a->changed = 0;
}

/* TMR's vectors 64i..64i+63 (i < 4) as one word: the EOI-exit bitmap's
 * word i, but for lapic_eoi_exit_vector. */
static inline uint64_t lapic_tmr_quad(const struct lapic *a, unsigned i)
{
	return *lapic_vec_word(a, LAPIC_TMR, 2 * i) |
	       (uint64_t)*lapic_vec_word(a, LAPIC_TMR, 2 * i + 1) << 32;
}

/* The edge-triggered vector whose EOI the model must see too, or -1: the
 * timer's while periodic expiries wait to be sent one by one as the guest
 * takes them (without lapic_ack, its EOI tells). */
int lapic_eoi_exit_vector(const struct lapic *a);

/* The priority class (vector >> 4) of the highest interrupt in IRR when
 * the TPR alone keeps it there (its class is not above TPR[7:4]), else 0:
 * lowering TPR[7:4] below it makes the interrupt deliverable (VT-x's TPR
 * threshold). */
unsigned lapic_tpr_blocked_class(const struct lapic *a);

#endif
