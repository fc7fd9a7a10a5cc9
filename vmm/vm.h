/* VM and vCPU objects shared by the common code and the vendor backend. */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/options.h"
#include "dev/acpi_pm.h"
#include "dev/debug_exit.h"
#include "dev/fwcfg.h"
#include "dev/i8042.h"
#include "dev/ioapic.h"
#include "dev/lapic.h"
#include "dev/mmio_test.h"
#include "dev/device.h"
#include "dev/pci_host.h"
#include "dev/pic8259.h"
#include "dev/pit8254.h"
#include "dev/pmtimer.h"
#include "dev/postcode.h"
#include "dev/rtc.h"
#include "dev/uart16550.h"
#include "include/lightpath/abi.h"
#include "arch_vcpu.h"   /* the backend's: -Ivmm/svm or -Ivmm/vmx */

#define LIGHT_TABLE_SIZE  0x91
#define CPUID_CACHED_LEAVES 0x20

#define VM_MAX_IO_RANGES  32
#define VM_MAX_MMIO_RANGES 8
#define VM_MAX_TIMERS     16
#define VM_MAX_MSR_RANGES 16
#define VM_CONSOLE_BACKLOG 4096   /* typed bytes held for a guest that is not reading */

/* Guest GPRs the exit stub moves. On SVM, RAX and RSP live in the VMCB.
 * In the light loop only rbx, rcx, rdx and rdi are valid here; the others
 * stay in the CPU (handlers preserve them) and are stored on the
 * way out to the heavy path. */
struct guest_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
};

/* Registered MSR handler: returns 0, or negative to raise #GP in the guest. */
typedef int (*msr_handler_fn)(struct vcpu *vcpu, uint32_t msr, uint64_t *val, bool is_write);

struct msr_range {
	uint32_t base, count;
	msr_handler_fn fn;
};

struct exit_stats {
	uint64_t exits[LP_EXIT_COUNT];   /* counted once per exit */
	uint64_t heavy[LP_EXIT_COUNT];   /* of those, the ones that took the heavy path */
	uint64_t denied_port_reads, denied_port_writes, denied_msrs;
	uint64_t denied_mmio_reads, denied_mmio_writes;
	uint64_t emulated;       /* instructions the emulator performed */
};

/* vcpu->pending: hazard bits tested once at the end of every light exit. */
#define VCPU_PENDING_HEAVY   (1u << 0)  /* the handler asked for the heavy path */

/* vcpu->heavy_action: why the light loop was left */
enum heavy_action {
	HEAVY_NONE = 0,       /* light=off: handled, just go round */
	HEAVY_EXIT,           /* vendor exit needing the heavy handler */
};

/* The syscall MSRs seed 000 switches lazily (msr=lazy|always). */
enum syscall_msr { SMSR_STAR, SMSR_LSTAR, SMSR_CSTAR, SMSR_SFMASK, SMSR_KGS, SMSR_COUNT };

struct vm;
struct vcpu;
typedef uint64_t light_handler_fn(struct vcpu *);

struct vcpu {
	struct vcpu_arch arch;      /* first: the backend's page-aligned block */
	struct guest_regs regs;     /* fixed offset the exit stub relies on */
	/* light handler per exit code, chosen once per VM; the last entry takes
	 * every code beyond the table (NPF, invalid state...) */
	light_handler_fn *light_table[LIGHT_TABLE_SIZE];
	uint32_t pending;
	uint32_t heavy_action;
	struct vm *vm;
	struct exit_stats stats;

	/* CPUID as this vCPU sees it, computed once, for the leaves without
	 * subleaves: the light path copies four words instead of asking the CPU */
	uint32_t cpuid_basic[CPUID_CACHED_LEAVES][4], cpuid_ext[CPUID_CACHED_LEAVES][4];
	uint32_t cpuid_basic_n, cpuid_ext_n;

	/* cached translation of the guest code page, for computing next RIP */
	uint64_t code_lin, code_cr3, code_cr0;
	uint8_t *code_host;

	/* seed 000: syscall MSRs; guest copy used while msr=always */
	uint64_t guest_smsr[SMSR_COUNT], host_smsr[SMSR_COUNT];
	bool vmstate_in_cpu;        /* VMLOAD state of the guest currently in the CPU */
	/* seed 001: debug registers */
	uint64_t guest_dr[4];
	bool dr_dirty;
	/* interrupts: the local APIC, and the test facility's vector
	 * (LP_HC_RAISE_IRQ, LP_HC_TIMER), injected like an ExtINT */
	struct lapic lapic;
	uint8_t test_irq;
	/* instruction emulator: consecutive RETRY results at one RIP */
	uint64_t emul_retry_rip;
	unsigned emul_retries;
	/* seed 002: perf-counter MSRs */
	uint64_t guest_pmu[8], host_pmu[8];
};

struct vm {
	unsigned id;
	const char *name;           /* the image path */
	const char *cmdline;
	const struct lp_options *opt;
	bool has_vpmu;              /* no VM is given a vPMU yet */
	uint64_t mem_hpa, mem_size; /* guest RAM: GPA 0 .. mem_size */
	uint64_t npt_root;
	uint64_t iopm_pa, msrpm_pa;  /* backend bitmaps (SVM: IOPM 12 KiB, MSRPM 8 KiB) */
	bool ended;
	unsigned status;
	const char *end_reason;

	uint8_t port_map[65536];    /* port -> index into io[] (0 = nobody) */
	unsigned nr_io;
	struct io_range io[VM_MAX_IO_RANGES];
	unsigned nr_mmio;
	struct io_range mmio[VM_MAX_MMIO_RANGES];   /* guest-physical, above RAM */
	unsigned nr_msr;
	struct msr_range msr[VM_MAX_MSR_RANGES];
	uint64_t mtrr_def_type;
	uint64_t nb_cfg;            /* AMD NB_CFG, remembered only */

	struct uart16550 uart;
	struct debug_exit debug_exit;
	struct pmtimer pmtimer;
	struct postcode postcode;
	struct mmio_test mmio_test;
	struct pic8259 pic;
	struct ioapic ioapic;
	struct pit8254 pit;
	struct rtc rtc;
	struct pci_host pci;
	struct i8042 kbd;
	struct fwcfg fwcfg;
	struct acpi_pm acpi_pm;
	struct vm_timer console_timer;
	/* host console input the guest's UART could not take yet (a ring) */
	uint8_t console_backlog[VM_CONSOLE_BACKLOG];
	unsigned console_backlog_head, console_backlog_len;
	struct vm_timer time_limit;  /* timeout = / vm.timeout=: stops the VM when it fires */
	unsigned time_limit_s;       /* 0 = none */

	struct vm_timer *timers[VM_MAX_TIMERS];  /* armed ones */
	unsigned nr_timers;
	struct vm_timer test_timer; /* LP_HC_TIMER */

	struct vcpu *vcpu;
	bool prefix_output;         /* several VMs: prefix their console lines */
	bool at_line_start;
};

/* One port access as a device sees it (the light path's exit_port_io and
 * the emulator share it): *data in/out. Nobody there: reads all-ones,
 * writes dropped, both counted as denied. */
static inline int vm_port_access(struct vcpu *v, uint16_t port, uint64_t *data, unsigned size,
				 bool is_write)
{
	struct vm *vm = v->vm;
	unsigned idx = vm->port_map[port];
	if (__builtin_expect(idx == 0, 0)) {
		if (is_write) {
			v->stats.denied_port_writes++;
		} else {
			v->stats.denied_port_reads++;
			*data = ~0ull;
		}
		return IO_OK;
	}
	return vm->io[idx].fn(v, port, data, size, is_write, vm->io[idx].opaque);
}

/* Translates a guest-physical range to a host pointer, or 0 if any of it is
 * outside guest RAM. */
static inline void *gpa_to_host(struct vm *vm, uint64_t gpa, uint64_t len)
{
	if (gpa >= vm->mem_size || len > vm->mem_size - gpa)
		return 0;
	return (void *)(uintptr_t)(vm->mem_hpa + gpa);
}

int vm_register_io(struct vm *vm, const struct io_range *r);
int vm_register_mmio(struct vm *vm, const struct io_range *r);
const struct io_range *vm_find_mmio(const struct vm *vm, uint64_t gpa);
/* One device access as the instruction emulator makes it: *data in/out,
 * size 1/2/4(/8 for MMIO). Nobody there: reads all-ones, writes dropped
 * (counted as denied). Returns IO_OK, IO_VM_END or a negative error. */
int vm_mmio_access(struct vcpu *v, uint64_t gpa, uint64_t *data, unsigned size, bool is_write);
struct emul_ctx;
/* Points the instruction emulator's memory, MMIO and port callbacks at this
 * vCPU's VM (the backends fill in the registers). */
void vm_emul_bind(struct vcpu *v, struct emul_ctx *c);
struct emul_result;
/* EMUL_RETRY at `rip`: resume, unless it keeps happening (then stop the VM). */
void vm_emul_retry(struct vcpu *v, uint64_t rip);
/* EMUL_UNSUPPORTED: stop the VM with one line naming `what` and the bytes. */
void vm_emul_unsupported(struct vcpu *v, const struct emul_result *res, const char *what);
int vm_register_msr(struct vm *vm, uint32_t base, uint32_t count, msr_handler_fn fn);
/* Fires every armed timer whose deadline has passed and reprograms the host
 * timer for the next one. Returns true if any fired. */
bool vm_timers_run(struct vm *vm);

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
	const uint8_t *initrd;
	uint64_t initrd_size;
	unsigned mem_mb;
	bool linux_kernel;
	bool has_timeout;          /* a description's `timeout =`; else vm.timeout= applies */
	unsigned timeout_s;        /* seconds, 0 = no limit */
};

/* Creates, runs to its end and destroys one VM. Returns its end status. */
unsigned vm_run(unsigned id, const struct vm_spec *spec, const struct lp_options *opt,
		bool prefix_output);

#endif
