/* VM and vCPU objects shared by the common code and the vendor backend. */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/options.h"
#include "core/percpu.h"
#include "core/spinlock.h"
#include "dev/device.h"
#include "dev/lapic.h"
#include "include/lightpath/abi.h"
#include "vmm/guest_clock.h"
#include "vmm/light.h"
#include "vmm/loader.h"
#include "vmm/msr_map.h"
#include "vmm/timer_lead.h"
#include "vmm/vmconfig.h"
#include "arch_vcpu.h"   /* the backend's: -Ivmm/svm or -Ivmm/vmx */

#define CPUID_CACHED_LEAVES 0x20

#define VM_MAX_IO_RANGES  32
#define VM_MAX_MMIO_RANGES 10
#define VM_MAX_VCPUS      VMCONFIG_CPUS_MAX
/* Every timer a VM can have armed at once (a full list panics): an APIC
 * timer per vCPU; the HPET's 3, the PIT, the console's, polling's idle
 * timer, the test hypercall's and the time limit's 2 are 9. */
#define VM_MAX_TIMERS     (VM_MAX_VCPUS + 12)
#define VM_TIMERS_FIRING  1u    /* vm_timers_run is firing: it programs the host timer once, after */
#define VM_TIMERS_HOMED   2u    /* several vCPUs: each CPU wakes for its own vCPU's timers */
#define VM_MAX_MSR_HANDLERS 32     /* distinct handler functions, 0 = the #GP one */
#define VM_LINE_MAX       256     /* a guest line held while VMs run side by side */
#define VM_LINE_QUIET_POLLS 20    /* 100 ms of console polls */

/* Guest GPRs the exit stub moves. On SVM, RAX and RSP live in the VMCB.
 * In the light loop only rcx, rdx, rsi, rdi, r8 and r9 (and rax on VT-x)
 * are valid here; rbx, rbp and r10-r15 stay in the CPU and are stored on
 * the way out to the heavy path (a light handler that needs rbx here copies
 * it in and back: light_rbx_*, vmm/exit_light.c). */
struct guest_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
};

/* Registered MSR handler: returns 0, negative to raise #GP in the guest,
 * or MSR_NEEDS_LOCK (in a VM of several vCPUs, on the light path: the
 * access changes the VM's shared state, vm_shared_ok is false; nothing was
 * done and the heavy path calls it again with the VM lock held). */
#define MSR_NEEDS_LOCK 1
typedef int (*msr_handler_fn)(struct vcpu *vcpu, uint32_t msr, uint64_t *val, bool is_write);

struct exit_stats {
	uint64_t exits[LP_EXIT_COUNT];   /* counted once per exit */
	uint64_t heavy[LP_EXIT_COUNT];   /* of those, the ones that took the heavy path */
	uint64_t denied_port_reads, denied_port_writes, denied_msrs;
	uint64_t denied_mmio_reads, denied_mmio_writes;
	uint64_t emulated;       /* instructions the emulator performed */
};

/* IPIs (ICR writes that put a message on the VM's APIC bus) a vCPU sent, of
 * them on the light path, and IPIs it received (counted by the sender,
 * atomically). Apart from struct exit_stats: the light paths' offsets into
 * struct vcpu stay as they were. */
struct ipi_stats {
	uint64_t sent, sent_light, received;
};

/* vcpu->pending: hazard bits, tested once at the end of every handled light
 * exit (vmm/light.h). */
#define VCPU_PENDING_RECHECK (1u << 0)  /* an interrupt may have become deliverable,
					   or the VM ended: re-check before resuming */
#define VCPU_PENDING_STEP    (1u << 1)  /* lightpath completed an instruction for a
					   guest with RFLAGS.TF set: the single-step
					   #DB is due (delivered on the heavy path) */
#define VCPU_PENDING_TIMERS  (1u << 2)  /* a guest's clock read found a device
					   timer due that has not fired: the VM's
					   timers run before it resumes */
#define VCPU_PENDING_CLOCK   (1u << 3)  /* the guest polls its clocks: every exit
					   advances its time (vmm/guest_clock.h) */
#define VCPU_PENDING_HOST_NMI PERCPU_HAZARD_HOST_NMI  /* a physical NMI came while
					   lightpath ran (core/idt.c): the heavy
					   path says it before the guest resumes */

/* vcpu->heavy_action: what the heavy path does once the light loop is left */
enum heavy_action {
	HEAVY_NONE = 0,       /* the exit was handled: only state and interrupts */
	HEAVY_EXIT,           /* the exit still needs its heavy handler */
};

/* The syscall MSRs msr=lazy|always switches. */
enum syscall_msr { SMSR_STAR, SMSR_LSTAR, SMSR_CSTAR, SMSR_SFMASK, SMSR_KGS, SMSR_COUNT };

struct vm;
struct vcpu;
struct exit_cost;

struct vcpu {
	struct vcpu_arch arch;      /* first: the backend's page-aligned block */
	struct guest_regs regs;     /* fixed offset the exit stub relies on */
	/* light handler per exit code, filled from the backend's exit table once
	 * per VM; codes past the table share the last entry */
	light_handler_fn *light_table[VENDOR_EXIT_CODES];
	uint32_t pending;
	uint32_t heavy_action;
	uint64_t spec_ctrl;         /* the guest's IA32_SPEC_CTRL (vmm/spec_ctrl.h) */
	unsigned entry_variant;     /* which exit stub variant runs it (spec=) */
	unsigned light_sw;          /* its switch set (vmm/light.h SW_*), which the
				       generic light handlers test (in the hole before vm) */
	struct vm *vm;
	struct exit_stats stats;

	/* CPUID as this vCPU sees it, computed once, for the leaves without
	 * subleaves: the light path copies four words instead of asking the CPU */
	uint32_t cpuid_basic[CPUID_CACHED_LEAVES][4], cpuid_ext[CPUID_CACHED_LEAVES][4];
	uint32_t cpuid_basic_n, cpuid_ext_n;

	/* cached translation of the guest code page, for computing next RIP */
	uint64_t code_lin, code_cr3, code_cr0;
	uint8_t *code_host;

	/* msr=always: the guest's syscall MSRs while the host's are in the CPU */
	uint64_t guest_smsr[SMSR_COUNT];
	/* dr=lazy|always: the guest's DR0-3 while the host's are in the CPU */
	uint64_t guest_dr[4];
	bool dr_dirty;
	/* interrupts: the local APIC, and the test facility's vector
	 * (LP_HC_RAISE_IRQ, LP_HC_TIMER), injected like an ExtINT */
	struct lapic lapic;
	uint8_t test_irq;
	/* instruction emulator: consecutive RETRY results at one RIP */
	uint64_t emul_retry_rip;
	unsigned emul_retries;
	/* IA32_TSC_ADJUST (the TSC offset itself is lapic.tsc_offset) */
	uint64_t tsc_adjust;
	/* pmu=lazy|always: perf-counter MSRs (selects 0-3, counters 0-3) */
	uint64_t guest_pmu[8], host_pmu[8];

	/* several vCPUs (docs/SMP.md): the host CPU it is pinned to; kicked is
	 * set (atomically) by another CPU that gave it work, with a host IPI
	 * to make it look (vcpu_notify); started: it left wait-for-SIPI;
	 * finished: its CPU is done with it (the VM may be freed) */
	struct percpu *host_cpu;
	bool kicked;
	/* vectors of fixed IPIs the light path of another vCPU posted here
	 * (set atomically, lock-free); its heavy path moves them to the local
	 * APIC's IRR with the VM lock held (vcpu_take_notices) */
	uint32_t posted[8];
	/* the host deadline its CPU's timer was last programmed for by
	 * vm_timers_reprogram (UINT64_MAX: none; 0: not yet), under the VM lock */
	uint64_t timer_programmed;
	bool started;
	bool finished;
	struct ipi_stats ipis;
	/* stats=cost|sites|all: what is measured per exit (vmm/exit_cost.h) */
	struct exit_cost *cost;
};

/* A registered port range, padded to 64 bytes: the light path finds io[idx]
 * with one shift (a 48-byte entry took three instructions). */
struct vm_io_slot {
	struct io_range r;
} __attribute__((aligned(64)));

struct vm {
	unsigned id;
	const char *name;           /* the image path */
	const char *cmdline;
	const struct lp_options *opt;
	bool has_vpmu;              /* no VM is given a vPMU yet */
	uint64_t mem_hpa, mem_size; /* guest RAM: GPA 0 .. mem_size */
	uint64_t npt_root;
	uint64_t iopm_pa, msrpm_pa;  /* backend bitmaps (SVM: IOPM 12 KiB, MSRPM 8 KiB) */
	/* VT-x's APIC virtualization (vmm/vmx/ept.c), 0 when unused: the
	 * APIC-access page, the two EPT tables that can map it at 0xFEE00000,
	 * and the MSR bitmap of a vCPU in virtualized x2APIC mode */
	uint64_t apic_access_pa, apic_access_pd, apic_access_pt, msrpm_x2apic_pa;
	bool ended;
	bool vcpus_posted;           /* vcpus_post ran: each AP vCPU will be finished */
	unsigned status;
	const char *end_reason;

	uint8_t port_map[65536];    /* port -> index into io[], | VM_PORT_SLOW */
	unsigned nr_io;
	struct vm_io_slot io[VM_MAX_IO_RANGES];
	unsigned nr_mmio;
	struct io_range mmio[VM_MAX_MMIO_RANGES];   /* guest-physical, above RAM */
	/* MSRs: msr_map names each registered MSR's handler in msr_fn[];
	 * msr_fn[0] is the one of every other MSR (#GP, counted as denied) */
	unsigned nr_msr_fn;
	msr_handler_fn msr_fn[VM_MAX_MSR_HANDLERS];
	struct msr_map msr_map;
	uint64_t mtrr_def_type;
	uint64_t nb_cfg;            /* AMD NB_CFG, remembered only */
	bool unclaimed_stop;        /* unclaimed=stop: an access nobody claims stops the VM */
	const uint8_t *disk;        /* disk =: the module's image (virtio-blk), or 0 */
	uint64_t disk_size;
	bool disk_ro;
	const char *net;            /* net =: the link its virtio-net device is on, or 0 */
	bool has_mac;
	uint8_t mac[6];             /* with has_mac: its address (else lightpath's pick) */

	/* the PC: devices, their interrupt wiring, console input (vmm/platform.h);
	 * its devices see it as their struct dev_host, and nothing else of the VM */
	struct dev_host *pc;
	struct vm_timer time_limit;  /* timeout = / vm.timeout=: stops the VM when it fires */
	unsigned time_limit_s;       /* 0 = none */
	/* its start, in host TSC and in the VM's time; how long it took until
	 * reached, in each */
	uint64_t time_limit_started, time_limit_started_guest, time_limit_host, time_limit_guest;
	bool time_limit_reached;
	struct vm_timer time_limit_read;   /* the same on the VM's clock (vm.c) */

	struct guest_clock clock;    /* the VM's time (vmm/guest_clock.h) */
	struct clock_poll clock_poll;

	struct vm_timer *timers[VM_MAX_TIMERS];  /* armed ones */
	unsigned nr_timers;
	uint8_t timers_mode;     /* VM_TIMERS_* (vmm/vm_timers.c) */
	uint64_t timer_min_gap;  /* TIMER_MIN_PERIOD_US in TSC ticks (vm_timers.c), set at creation */
	struct timer_lead timer_lead;  /* timer=lead (vmm/timer_lead.h) */
	struct vm_timer test_timer; /* LP_HC_TIMER */

	struct vcpu *vcpu;          /* the boot vCPU, vcpus[0] */
	/* every vCPU, by APIC ID: the APIC bus (vmm/apic_bus.c) reaches these
	 * and no other */
	struct vcpu *vcpus[VM_MAX_VCPUS];
	unsigned nr_vcpus;
	/* With several vCPUs, the VM's shared state (its devices, its timers,
	 * every local APIC, the end) is touched only under this lock: on the
	 * heavy path, which every exit that needs it takes (vm_lock). A VM of
	 * one vCPU never takes it. */
	struct spinlock lock;
	struct percpu *lock_cpu;     /* the CPU holding it, or 0 */
	uint64_t lock_halted;        /* CPUs (bit = cpu_id) halted until it is theirs */
	/* the waits for it (host TSC ticks; written under the lock) */
	uint64_t lock_takes, lock_waits, lock_wait, lock_wait_max, lock_halts;
	bool console_after_cr;      /* its last console byte was '\r' */
	/* output held while other VMs run (vm_console_putc) */
	char out_line[VM_LINE_MAX];
	unsigned out_len;
	unsigned out_quiet;         /* console polls since its last byte */
};

/* The platform (struct dev_host, vmm/dev_host.h) begins with this: the
 * VM's timers find their VM from the handle a device arms them with. */
struct dev_host_head {
	struct vm *vm;
};
static inline struct vm *dev_host_vm(const struct dev_host *h)
{
	return ((const struct dev_host_head *)(const void *)h)->vm;
}

/* The VM lock, for VMs of several vCPUs only (struct vm's lock): a ticket
 * lock whose waiter, on a vCPU's heavy path (vm_lock_vcpu), spins for
 * VM_LOCK_SPIN_NS and then halts its CPU until the holder's vm_unlock wakes
 * it (vmm/vm_lock.c says why). vm_lock spins only: for the callers outside a
 * vCPU's exit, where halting is not the CPU's state to take. */
void vm_lock_wait(struct vm *vm, uint32_t ticket, bool may_halt);
void vm_lock_wake_halted(struct vm *vm);
static inline void vm_lock_take(struct vm *vm, bool may_halt)
{
	uint32_t mine = __atomic_fetch_add(&vm->lock.next, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&vm->lock.serving, __ATOMIC_ACQUIRE) != mine)
		vm_lock_wait(vm, mine, may_halt);
	vm->lock_cpu = this_cpu();
	vm->lock_takes++;
}
static inline void vm_lock(struct vm *vm)
{
	if (vm->nr_vcpus > 1)
		vm_lock_take(vm, false);
}
/* On a vCPU's heavy path (host interrupts can be let in to halt: the state
 * vendor_host_wait_for_interrupt expects; vm_lock_wait runs the VM's timers
 * when the host timer's interrupt came in the halt). */
static inline void vm_lock_vcpu(struct vm *vm)
{
	if (vm->nr_vcpus > 1)
		vm_lock_take(vm, true);
}
static inline void vm_unlock(struct vm *vm)
{
	if (vm->nr_vcpus > 1) {
		vm->lock_cpu = 0;
		spin_unlock(&vm->lock);
		/* the store above before the load below: a waiter sets its bit
		 * and then reads `serving` (vm_lock_wait) */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&vm->lock_halted, __ATOMIC_RELAXED))
			vm_lock_wake_halted(vm);
	}
}
/* May this CPU touch the VM's shared state now: one vCPU, or the VM lock
 * held here (false on the light path of a VM of several vCPUs). */
static inline bool vm_shared_ok(const struct vm *vm)
{
	return vm->nr_vcpus == 1 || vm->lock_cpu == this_cpu();
}

/* The vCPU whose exit this CPU is handling, for the platform's device
 * wrappers, whose callbacks get only the device: vcpu_run sets it on its
 * CPU for the whole run, the light and the heavy path of every exit
 * (0 on a CPU running no vCPU). */
static inline struct vcpu *exit_vcpu(void)
{
	return this_cpu()->current;
}

/* The vCPU a local APIC belongs to (each embeds its own). */
static inline struct vcpu *lapic_vcpu(struct lapic *a)
{
	return (struct vcpu *)(void *)((char *)a - __builtin_offsetof(struct vcpu, lapic));
}

/* Translates a guest-physical range to a host pointer, or 0 if any of it is
 * outside guest RAM. */
static inline void *gpa_to_host(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if (gpa >= vm->mem_size || len > vm->mem_size - gpa)
		return 0;
	return (void *)(uintptr_t)(vm->mem_hpa + gpa);
}

/* Ends the VM with `status` (the first end stands); `why` goes in its end
 * line. Devices reach it through dev_vm_end. */
void vm_end(struct vm *vm, unsigned status, const char *why);

/* The exit statistics' row for a VM its time limit stopped. */
void vm_time_limit_print_stats(const struct vm *vm);

/* Stops the VM for misbehaving: one report line, status LP_STATUS_VM_FAULT.
 * A VM that has already ended is left alone (the first reason stands). */
void vm_fault(struct vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What one VM runs: a multiboot ELF kernel (cmdline = the whole module
 * string, as a boot loader passes it) or a Linux bzImage (cmdline = the
 * kernel's command line, initrd optional). */
struct vm_spec {
	const char *name;          /* for the log: the config's name or the image path */
	const char *image_name;
	const uint8_t *image;
	uint64_t image_size;
	const char *cmdline;
	const uint8_t *initrd;     /* Linux only: a multiboot kernel gets modules[] */
	uint64_t initrd_size;
	const char *disk_name;     /* a description's disk =: a virtio-blk disk, or none */
	const uint8_t *disk;
	uint64_t disk_size;        /* a non-zero multiple of 512 */
	bool disk_ro;
	const char *net;           /* net =: the link of a virtio-net device, or 0 */
	bool has_mac;
	uint8_t mac[6];
	struct mb_module modules[MB_MAX_MODULES];   /* multiboot kernels: in this order */
	unsigned nr_modules;
	unsigned mem_mb;
	bool linux_kernel;
	bool has_timeout;          /* a description's `timeout =`; else vm.timeout= applies */
	unsigned timeout_s;        /* seconds, 0 = no limit */
	bool has_unclaimed;        /* a description's `unclaimed =`; else unclaimed= applies */
	bool unclaimed_stop;
	unsigned cpus;             /* vCPUs asked for (a description's cpus =; 1 otherwise) */
	unsigned nr_pcpus;         /* pcpus = given (one per vCPU), or 0: lightpath picks */
	uint8_t pcpus[VM_MAX_VCPUS];
	/* the host CPU of each vCPU, chosen by vmm/guests.c when the VM starts */
	uint8_t run_on[VM_MAX_VCPUS];
};

/* This CPU panicked (core/smp.c) while it was given to a vCPU: the VM is
 * stopped with one line ("stopped: CPU n panicked while it ran vCPU i") and
 * that vCPU counts as finished. True when it was the VM's first vCPU (whose
 * CPU runs vm_run, which will never return): its other vCPUs have finished
 * and it is off the running list; its memory stays allocated, as the
 * parked CPU may still hold its VMCB or VMCS. */
bool vm_cpu_panicked(void);

/* Creates, runs to its end and destroys one VM. Returns its end status. */
unsigned vm_run(unsigned id, const struct vm_spec *spec, const struct lp_options *opt);

#endif
