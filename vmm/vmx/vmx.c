/* Intel VT-x backend: CPU checks and VMXON, VMCS/EPT/bitmaps, the light exit
 * handlers (one specialised copy per switch combination) and the heavy path.
 * The same shape as vmm/svm/svm.c; what differs is where state lives: the
 * guest's RIP/RSP/RFLAGS/EFER/PAT/DR7/SYSENTER are VMCS fields, RAX is a
 * saved GPR, and the syscall MSRs, DR0-3/DR6 and PMU MSRs stay in the CPU
 * across a VM exit until lightpath switches them. */
#include <stdbool.h>
#include <stdint.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/pmem.h"
#include "emul/pio_decode.h"
#include "emul/x86_emulate.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/guest_mem.h"
#include "vmm/linux_boot.h"
#include "vmm/state_switch.h"
#include "vmm/vendor.h"
#include "vmm/vm.h"
#include "vmm/vmx/vmcs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_ops.h"

void vmx_light_loop(struct vcpu *v);
void vmx_exit_stub(void);

/* Compile-time switch set of one light-handler copy ("always" = seed's before).
 * svm.vmload has no VMX meaning (there is no VMLOAD/VMSAVE): it is ignored. */
#define SW_LIGHT_OFF     (1u << 0)
#define SW_DR_ALWAYS     (1u << 1)
#define SW_PMU_ALWAYS    (1u << 2)
#define SW_MSR_ALWAYS    (1u << 3)
#define SW_IO_EMULATE    (1u << 4)
#define SW_COUNT         32
#define PER_EXIT_MASK    (SW_DR_ALWAYS | SW_PMU_ALWAYS | SW_MSR_ALWAYS)

struct vmx_caps vmx_caps;

/* VM exits load TR from HOST_TR_SEL, which must not be 0: the boot GDT has
 * no TSS, so the backend installs its own GDT (the boot code/data
 * descriptors plus a TSS) before VMXON. */
#define HOST_SEL_CODE 0x08
#define HOST_SEL_DATA 0x10
#define HOST_SEL_TSS  0x18
static uint8_t host_tss[104] __attribute__((aligned(16)));
static uint64_t host_gdt[5] __attribute__((aligned(16)));

const char *vendor_name(void)
{
	return "Intel VT-x";
}

static void load_host_gdt(void)
{
	uint64_t tss = (uint64_t)(uintptr_t)host_tss;
	host_gdt[0] = 0;
	host_gdt[1] = 0x00AF9B000000FFFFull;      /* 64-bit code, as boot/entry.S */
	host_gdt[2] = 0x00CF93000000FFFFull;      /* data */
	host_gdt[3] = (sizeof(host_tss) - 1) | ((tss & 0xffffff) << 16) | (0x89ull << 40) |
		      (((tss >> 24) & 0xff) << 56);  /* available 64-bit TSS */
	host_gdt[4] = tss >> 32;
	*(uint16_t *)(host_tss + 102) = sizeof(host_tss);   /* no I/O bitmap */
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } d = {
		sizeof(host_gdt) - 1, (uint64_t)(uintptr_t)host_gdt
	};
	asm volatile("lgdt %0" ::"m"(d));
	asm volatile("ltr %w0" ::"r"(HOST_SEL_TSS));
}

static struct vmx_ctl_cap ctl_cap(uint32_t msr)
{
	uint64_t v = rdmsr(msr);
	return (struct vmx_ctl_cap){ (uint32_t)v, (uint32_t)(v >> 32) };
}

/* The control word lightpath wants, adjusted to what the CPU allows; `need`
 * bits it cannot have are reported by the caller. */
static uint32_t ctl_adjust(struct vmx_ctl_cap c, uint32_t want)
{
	return (want | c.must) & c.may;
}

static bool cpu_is_intel(void)
{
	uint32_t r[4];
	cpuid(0, 0, r);
	return r[1] == 0x756e6547u && r[3] == 0x49656e69u && r[2] == 0x6c65746eu; /* GenuineIntel */
}

static int vmx_fail(const char *what)
{
	kprintf("lightpath: %s\n", what);
	return -1;
}

int vendor_cpu_init(const struct lp_options *opt)
{
	(void)opt;
	uint32_t r[4];
	cpuid(1, 0, r);
	if (!cpu_is_intel() || !(r[2] & (1u << 5)))
		return vmx_fail("this CPU has no Intel VMX");
	uint64_t fc = rdmsr(MSR_IA32_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK))
		wrmsr(MSR_IA32_FEATURE_CONTROL,
		      fc | FEATURE_CONTROL_LOCK | FEATURE_CONTROL_VMX_OUTSIDE_SMX);
	else if (!(fc & FEATURE_CONTROL_VMX_OUTSIDE_SMX))
		return vmx_fail("VMX is disabled by the firmware (IA32_FEATURE_CONTROL is locked "
				"without VMX outside SMX)");

	struct vmx_caps *c = &vmx_caps;
	c->basic = rdmsr(MSR_IA32_VMX_BASIC);
	bool true_ctls = c->basic & VMX_BASIC_TRUE_CTLS;
	c->pin = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_PINBASED : MSR_IA32_VMX_PINBASED_CTLS);
	c->proc = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_PROCBASED : MSR_IA32_VMX_PROCBASED_CTLS);
	c->exit = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_EXIT : MSR_IA32_VMX_EXIT_CTLS);
	c->entry = ctl_cap(true_ctls ? MSR_IA32_VMX_TRUE_ENTRY : MSR_IA32_VMX_ENTRY_CTLS);
	c->misc = rdmsr(MSR_IA32_VMX_MISC);
	c->cr0_fixed0 = rdmsr(MSR_IA32_VMX_CR0_FIXED0);
	c->cr0_fixed1 = rdmsr(MSR_IA32_VMX_CR0_FIXED1);
	c->cr4_fixed0 = rdmsr(MSR_IA32_VMX_CR4_FIXED0);
	c->cr4_fixed1 = rdmsr(MSR_IA32_VMX_CR4_FIXED1);
	if (!(c->proc.may & PROC_SECONDARY_CONTROLS))
		return vmx_fail("this CPU's VMX has no secondary controls (no EPT)");
	c->proc2 = ctl_cap(MSR_IA32_VMX_PROCBASED_CTLS2);
	if (!(c->proc2.may & PROC2_ENABLE_EPT))
		return vmx_fail("this CPU's VMX has no EPT");
	c->ept_vpid = rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
	if ((c->ept_vpid & (EPT_CAP_PAGEWALK4 | EPT_CAP_WB | EPT_CAP_2M)) !=
	    (EPT_CAP_PAGEWALK4 | EPT_CAP_WB | EPT_CAP_2M))
		return vmx_fail("this CPU's EPT lacks 4-level walks, write-back memory or 2 MiB pages");
	if (!(c->proc2.may & PROC2_UNRESTRICTED_GUEST))
		return vmx_fail("this CPU's VMX has no unrestricted guest (needed to start multiboot "
				"guests in 32-bit protected mode with paging off)");
	if (!(c->pin.may & PIN_EXT_INTR_EXITING))
		return vmx_fail("this CPU's VMX has no external-interrupt exiting");
	uint32_t need_proc = PROC_HLT_EXITING | PROC_USE_IO_BITMAPS | PROC_USE_MSR_BITMAPS |
			     PROC_MOV_DR_EXITING | PROC_INTR_WINDOW_EXITING;
	if ((c->proc.may & need_proc) != need_proc)
		return vmx_fail("this CPU's VMX lacks HLT exiting, I/O or MSR bitmaps, MOV-DR exiting "
				"or interrupt-window exiting");
	uint32_t need_exit = EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER;
	uint32_t need_entry = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	if ((c->exit.may & need_exit) != need_exit || (c->entry.may & need_entry) != need_entry)
		return vmx_fail("this CPU's VMX cannot switch IA32_EFER on VM entry and exit");
	if ((c->proc.must & (PROC_CR3_LOAD_EXITING | PROC_CR3_STORE_EXITING | PROC_INVLPG_EXITING)))
		return vmx_fail("this CPU's VMX forces CR3/INVLPG exiting (no true controls)");
	c->vpid = (c->proc2.may & PROC2_ENABLE_VPID) &&
		  (c->ept_vpid & (VPID_CAP_INVVPID | VPID_CAP_INVVPID_ALL)) ==
			  (VPID_CAP_INVVPID | VPID_CAP_INVVPID_ALL);
	cpuid(0, 0, r);
	if (r[0] >= 0xa) {
		cpuid(0xa, 0, r);
		c->pmu_counters = (r[0] & 0xff) ? (r[0] >> 8) & 0xff : 0;
		if (c->pmu_counters > 4)
			c->pmu_counters = 4;
	}

	/* VMXON: CR0/CR4 must meet the fixed bits (NE, VMXE). */
	uint64_t cr0 = (read_cr0() | c->cr0_fixed0) & c->cr0_fixed1;
	uint64_t cr4 = (read_cr4() | c->cr4_fixed0 | CR4_VMXE) & c->cr4_fixed1;
	asm volatile("mov %0, %%cr0" ::"r"(cr0));
	asm volatile("mov %0, %%cr4" ::"r"(cr4));
	load_host_gdt();
	uint64_t region = pmem_alloc(4096, 4096);
	if (!region)
		return vmx_fail("error: out of memory setting up VMX");
	*(uint32_t *)(uintptr_t)region = (uint32_t)c->basic & 0x7fffffffu;
	if (!vmxon(region))
		return vmx_fail("VMXON failed");
	state_switch_init();
	kprintf("lightpath: Intel VMX with EPT and unrestricted guest%s; next RIP from the "
		"VM-exit instruction length; %u PMU counters; svm.vmload has no VMX meaning and "
		"is ignored\n", c->vpid ? ", VPID" : "", c->pmu_counters);
	return 0;
}

/* ---- EPT (guest RAM only, 2 MiB pages) and the bitmaps ---- */

static uint64_t vm_eptp(const struct vm *vm)
{
	return vm->npt_root | EPTP_WB | EPTP_WALK4;
}

int vendor_vm_init(struct vm *vm)
{
	/* whole 2 MiB pages only: a partial last page would map host memory */
	if (vm->mem_size & ((2ull << 20) - 1))
		return -1;
	uint64_t pml4 = pmem_alloc(4096, 4096), pdpt = pmem_alloc(4096, 4096);
	uint64_t npd = (vm->mem_size + (1ull << 30) - 1) >> 30;
	uint64_t pd = pmem_alloc(npd * 4096, 4096);
	vm->iopm_pa = pmem_alloc(2 * 4096, 4096);     /* I/O bitmaps A and B */
	vm->msrpm_pa = pmem_alloc(4096, 4096);        /* MSR bitmap */
	if (!pml4 || !pdpt || !pd || !vm->iopm_pa || !vm->msrpm_pa)
		return -1;
	uint64_t *l4 = (uint64_t *)(uintptr_t)pml4, *l3 = (uint64_t *)(uintptr_t)pdpt;
	uint64_t *l2 = (uint64_t *)(uintptr_t)pd;
	l4[0] = pdpt | EPT_RWX;
	for (uint64_t i = 0; i < npd; i++)
		l3[i] = (pd + i * 4096) | EPT_RWX;
	for (uint64_t gpa = 0; gpa < vm->mem_size; gpa += 2ull << 20)
		l2[gpa >> 21] = (vm->mem_hpa + gpa) | EPT_RWX | EPT_MEMTYPE_WB | EPT_LARGE;
	vm->npt_root = pml4;

	/* deny by default: every port and MSR exits... */
	memset((void *)(uintptr_t)vm->iopm_pa, 0xff, 2 * 4096);
	uint8_t *msrbm = (uint8_t *)(uintptr_t)vm->msrpm_pa;
	memset(msrbm, 0xff, 4096);
	/* ...except FS.base/GS.base, which the VMCS switches on every entry and
	 * exit: the guest reads and writes its own (read-high at 1 KiB,
	 * write-high at 3 KiB; bit = MSR - 0xc0000000). */
	msrbm[1024 + 0x100 / 8] &= ~0x03;
	msrbm[3072 + 0x100 / 8] &= ~0x03;

	/* The same EPTP or VPID may have served an earlier VM: forget its
	 * translations. */
	if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_ALL)
		invept(2, 0);
	else if (vmx_caps.ept_vpid & EPT_CAP_INVEPT_SINGLE)
		invept(1, vm_eptp(vm));
	if (vmx_caps.vpid)
		invvpid(2, 0);
	return 0;
}

void vendor_vm_destroy(struct vm *vm)
{
	vmclear((uint64_t)(uintptr_t)vm->vcpu->arch.vmcs);
	uint64_t npd = (vm->mem_size + (1ull << 30) - 1) >> 30;
	const uint64_t *l4 = (const uint64_t *)(uintptr_t)vm->npt_root;
	const uint64_t *l3 = (const uint64_t *)(uintptr_t)(l4[0] & ~0xfffull);
	pmem_free(l3[0] & ~0xfffull, npd * 4096);
	pmem_free(l4[0] & ~0xfffull, 4096);
	pmem_free(vm->npt_root, 4096);
	pmem_free(vm->iopm_pa, 2 * 4096);
	pmem_free(vm->msrpm_pa, 4096);
}

/* ---- per-exit state pieces (the "always" switches) and their lazy forms ---- */

/* The VMCS holds DR7 but not DR6: DR0-3 and DR6 are switched by hand. */
static inline void dr_save_guest_load_host(struct vcpu *v)
{
	dr03_save_guest_load_host(v);
	asm volatile("mov %%dr6, %0" : "=r"(v->arch.guest_dr6));
	asm volatile("mov %0, %%dr6" ::"r"(0xffff0ff0ull));   /* the host's DR6 at rest */
}

static inline void dr_load_guest(struct vcpu *v)
{
	dr03_load_guest(v);
	asm volatile("mov %0, %%dr6" ::"r"(v->arch.guest_dr6));
}

/* Intel's architectural counters: IA32_PERFEVTSELn and IA32_PMCn, as many as
 * CPUID 0xA reports (at most 4; none on a CPU without a PMU). */
static inline void pmu_save_guest_load_host(struct vcpu *v)
{
	unsigned n = vmx_caps.pmu_counters;
	for (unsigned i = 0; i < n; i++) {
		v->guest_pmu[i] = rdmsr(MSR_IA32_PERFEVTSEL0 + i);
		v->guest_pmu[4 + i] = rdmsr(MSR_IA32_PMC0 + i);
	}
	for (unsigned i = 0; i < n; i++) {
		wrmsr(MSR_IA32_PERFEVTSEL0 + i, v->host_pmu[i]);
		wrmsr(MSR_IA32_PMC0 + i, v->host_pmu[4 + i]);
	}
}

static inline void pmu_load_guest(struct vcpu *v)
{
	unsigned n = vmx_caps.pmu_counters;
	for (unsigned i = 0; i < n; i++) {
		wrmsr(MSR_IA32_PERFEVTSEL0 + i, v->guest_pmu[i]);
		wrmsr(MSR_IA32_PMC0 + i, v->guest_pmu[4 + i]);
	}
}

/* Right after the VM exit, for the switches set to "always". */
static inline __attribute__((always_inline)) void per_exit_leave(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_MSR_ALWAYS)
		smsr_save_guest_load_host(v);
	if (sw & SW_DR_ALWAYS)
		dr_save_guest_load_host(v);
	if (sw & SW_PMU_ALWAYS)
		pmu_save_guest_load_host(v);
}

/* Right before VMRESUME, when resuming from the light path. */
static inline __attribute__((always_inline)) void per_exit_enter(struct vcpu *v, const unsigned sw)
{
	if (sw & SW_PMU_ALWAYS)
		pmu_load_guest(v);
	if (sw & SW_DR_ALWAYS)
		dr_load_guest(v);
	if (sw & SW_MSR_ALWAYS)
		smsr_load_guest(v);
}

/* A VM exit clears RFLAGS.IF, and with external-interrupt exiting a host
 * interrupt arriving in the guest exits (reason 1) and stays pending in the
 * local APIC: the heavy path opens a window for it here. */
void vendor_host_interrupt_window(void)
{
	asm volatile("sti; nop; cli" ::: "memory");
}

void vendor_host_wait_for_interrupt(void)
{
	/* sti's one-instruction shadow makes "sti; hlt" race-free */
	asm volatile("sti; hlt; cli" ::: "memory");
}

void vendor_state_enter(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	if (!o->pmu_lazy || v->vm->has_vpmu)
		pmu_load_guest(v);
	if (!o->dr_lazy || v->dr_dirty)
		dr_load_guest(v);
	smsr_load_guest(v);
	v->arch.smsr_in_cpu = true;
}

void vendor_state_leave(struct vcpu *v)
{
	const struct lp_options *o = v->vm->opt;
	/* with "always" the per-exit piece already switched back on this exit */
	if (o->msr_lazy)
		smsr_save_guest_load_host(v);
	v->arch.smsr_in_cpu = false;
	if (o->dr_lazy && v->dr_dirty)
		dr_save_guest_load_host(v);
	if (o->pmu_lazy && v->vm->has_vpmu)
		pmu_save_guest_load_host(v);
}

/* ---- small pieces shared by the light and heavy paths ---- */

/* The CPU reports the exiting instruction's length, prefixes included. */
static inline uint64_t next_rip(void)
{
	return vmread(VMCS_GUEST_RIP) + vmread(VMCS_EXIT_INSN_LEN);
}

static inline void skip_insn(void)
{
	vmwrite(VMCS_GUEST_RIP, next_rip());
}

static void inject_exception(unsigned vector, bool has_err, uint32_t err)
{
	/* no error code is delivered in real mode (unrestricted guest, PE=0) */
	if (has_err && !(vmread(VMCS_GUEST_CR0) & CR0_PE))
		has_err = false;
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_HW_EXCEPTION | vector |
					      (has_err ? VMX_INTR_INFO_ERRCODE : 0));
	if (has_err)
		vmwrite(VMCS_ENTRY_EXCEPTION_ERRCODE, err);
}

static inline void do_cpuid(struct vcpu *v)
{
	uint32_t computed[4];
	const uint32_t *out = exit_cpuid_cached(v, (uint32_t)v->regs.rax);
	if (__builtin_expect(!out, 0)) {
		exit_cpuid(v, (uint32_t)v->regs.rax, (uint32_t)v->regs.rcx, computed);
		out = computed;
	}
	v->regs.rax = out[0];
	v->regs.rbx = out[1];
	v->regs.rcx = out[2];
	v->regs.rdx = out[3];
}

/* Returns false when the guest gets #GP instead (RIP stays). */
static inline bool do_msr(struct vcpu *v, bool is_write)
{
	uint32_t msr = (uint32_t)v->regs.rcx;
	uint64_t val = (v->regs.rax & 0xffffffffull) | (v->regs.rdx << 32);
	if (exit_msr(v, msr, &val, is_write)) {
		inject_exception(13, true, 0);
		return false;
	}
	if (!is_write) {
		v->regs.rax = val & 0xffffffffull;
		v->regs.rdx = val >> 32;
	}
	return true;
}

/* The queued virtual interrupt goes in now (the guest can take it). */
static inline void virq_deliver(struct vcpu *v)
{
	vmwrite(VMCS_ENTRY_INTR_INFO, VMX_INTR_INFO_VALID | VMX_INTR_TYPE_EXT_INTR | v->arch.virq);
	v->arch.virq = 0;
	v->arch.proc &= ~PROC_INTR_WINDOW_EXITING;
	vmwrite(VMCS_PROC_CONTROLS, v->arch.proc);
}

/* HLT with an interrupt queued: skip it, drop the STI shadow it sat in, and
 * deliver now if the guest has IF=1 (else the window exit will). */
static inline void hlt_wake(struct vcpu *v)
{
	skip_insn();
	uint64_t is = vmread(VMCS_GUEST_INTERRUPTIBILITY);
	if (is & (VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS))
		vmwrite(VMCS_GUEST_INTERRUPTIBILITY,
			is & ~(uint64_t)(VMX_INTERRUPTIBILITY_STI | VMX_INTERRUPTIBILITY_MOV_SS));
	if (vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF)
		virq_deliver(v);
}

/* ---- the light handlers: one copy per switch set ---- */

/* Statistics class of any exit reason. */
static unsigned vmx_exit_class(uint32_t reason)
{
	switch (reason & 0xffff) {
	case VMX_EXIT_VMCALL: return LP_EXIT_HYPERCALL;
	case VMX_EXIT_CPUID: return LP_EXIT_CPUID;
	case VMX_EXIT_IO: return LP_EXIT_IO;
	case VMX_EXIT_RDMSR: return LP_EXIT_MSR_READ;
	case VMX_EXIT_WRMSR: return LP_EXIT_MSR_WRITE;
	case VMX_EXIT_HLT: return LP_EXIT_HLT;
	case VMX_EXIT_MOV_DR: return LP_EXIT_DR_ACCESS;
	case VMX_EXIT_EXCEPTION_NMI: return LP_EXIT_EXCEPTION;
	case VMX_EXIT_EXT_INTR: return LP_EXIT_INTR;
	case VMX_EXIT_INTR_WINDOW: return LP_EXIT_VINTR;
	case VMX_EXIT_EPT_VIOLATION: case VMX_EXIT_EPT_MISCONFIG: return LP_EXIT_NPF;
	case VMX_EXIT_TRIPLE_FAULT: return LP_EXIT_SHUTDOWN;
	case VMX_EXIT_VMCLEAR: case VMX_EXIT_VMLAUNCH: case VMX_EXIT_VMPTRLD:
	case VMX_EXIT_VMPTRST: case VMX_EXIT_VMREAD: case VMX_EXIT_VMRESUME:
	case VMX_EXIT_VMWRITE: case VMX_EXIT_VMXOFF: case VMX_EXIT_VMXON:
	case VMX_EXIT_INVEPT: case VMX_EXIT_INVVPID: case VMX_EXIT_VMFUNC: case VMX_EXIT_GETSEC:
		return LP_EXIT_VIRT_INSN;
	}
	return LP_EXIT_OTHER;
}

static inline uint64_t vcpu_ret(struct vcpu *v) { return (uint64_t)(uintptr_t)v; }

/* Leave for the heavy path, which handles this exit from scratch. */
static __attribute__((noinline, cold)) uint64_t light_to_heavy(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_EXIT;
	return 0;
}

/* Leave for the heavy path after handling the exit here. */
static __attribute__((noinline, cold)) uint64_t light_handled_leave(struct vcpu *v, unsigned reason)
{
	v->stats.heavy[reason]++;
	v->heavy_action = HEAVY_NONE;
	v->pending = 0;
	return 0;
}

/* The hazard check that ends every light exit (NOVA's "one test"). */
static inline __attribute__((always_inline)) uint64_t light_resume(struct vcpu *v, unsigned reason)
{
	if (__builtin_expect(v->pending, 0))
		return light_handled_leave(v, reason);
	return vcpu_ret(v);
}

/* Every hypercall but the null one: out of line, reached by a tail call. */
static __attribute__((noinline)) uint64_t light_hypercall_other(struct vcpu *v)
{
	bool heavy = exit_hypercall_slow(v, &v->regs.rax);
	skip_insn();
	if (heavy)
		return light_handled_leave(v, LP_EXIT_HYPERCALL);
	return light_resume(v, LP_EXIT_HYPERCALL);
}

static __attribute__((noinline)) uint64_t lh_vmcall(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_HYPERCALL]++;
	if (v->regs.rax != LP_HC_NULL)
		return light_hypercall_other(v);
	v->regs.rax = 0;
	skip_insn();
	return light_resume(v, LP_EXIT_HYPERCALL);
}

static __attribute__((noinline)) uint64_t lh_cpuid(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_CPUID]++;
	do_cpuid(v);
	skip_insn();
	return light_resume(v, LP_EXIT_CPUID);
}

/* Seed 004: port, size and direction from the exit qualification. */
static __attribute__((noinline)) uint64_t lh_io(struct vcpu *v)
{
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	v->stats.exits[LP_EXIT_IO]++;
	if (q & VMX_IOQ_STRING)
		return light_to_heavy(v, LP_EXIT_IO);
	exit_port_io(v, (uint16_t)(q >> VMX_IOQ_PORT_SHIFT), (q & VMX_IOQ_SIZE_MASK) + 1,
		     q & VMX_IOQ_IN, &v->regs.rax);
	skip_insn();
	return light_resume(v, LP_EXIT_IO);
}

static __attribute__((noinline, cold)) uint64_t lh_io_emulate(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_IO]++;
	return light_to_heavy(v, LP_EXIT_IO);
}

static inline __attribute__((always_inline)) uint64_t light_msr(struct vcpu *v, bool wr)
{
	unsigned reason = wr ? LP_EXIT_MSR_WRITE : LP_EXIT_MSR_READ;
	v->stats.exits[reason]++;
	if (do_msr(v, wr))
		skip_insn();
	return light_resume(v, reason);
}

static __attribute__((noinline)) uint64_t lh_rdmsr(struct vcpu *v) { return light_msr(v, false); }
static __attribute__((noinline)) uint64_t lh_wrmsr(struct vcpu *v) { return light_msr(v, true); }

static __attribute__((noinline)) uint64_t lh_hlt(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_HLT]++;
	/* light only when the pending interrupt can wake it (IF=1) */
	if (!v->arch.virq || !(vmread(VMCS_GUEST_RFLAGS) & RFLAGS_IF))
		return light_to_heavy(v, LP_EXIT_HLT);
	hlt_wake(v);
	return light_resume(v, LP_EXIT_HLT);
}

static __attribute__((noinline)) uint64_t lh_intr_window(struct vcpu *v)
{
	v->stats.exits[LP_EXIT_VINTR]++;
	if (v->arch.virq)
		virq_deliver(v);
	return light_resume(v, LP_EXIT_VINTR);
}

static __attribute__((noinline, cold)) uint64_t light_other(struct vcpu *v)
{
	unsigned reason = vmx_exit_class((uint32_t)vmread(VMCS_EXIT_REASON));
	v->stats.exits[reason]++;
	return light_to_heavy(v, reason);
}

/* The dispatcher for the ablations, one copy per switch set: the "always"
 * pieces wrap around the same handlers. With every switch on the stub
 * calls the handlers straight from the table instead. */
static inline __attribute__((always_inline)) uint64_t vmx_exit_light(struct vcpu *v, const unsigned sw)
{
	uint64_t r;
	uint32_t reason = (uint32_t)vmread(VMCS_EXIT_REASON);
	per_exit_leave(v, sw);
	switch (reason) {
	case VMX_EXIT_VMCALL: r = lh_vmcall(v); break;
	case VMX_EXIT_CPUID: r = lh_cpuid(v); break;
	case VMX_EXIT_IO: r = (sw & SW_IO_EMULATE) ? lh_io_emulate(v) : lh_io(v); break;
	case VMX_EXIT_RDMSR: r = lh_rdmsr(v); break;
	case VMX_EXIT_WRMSR: r = lh_wrmsr(v); break;
	case VMX_EXIT_HLT: r = lh_hlt(v); break;
	case VMX_EXIT_INTR_WINDOW: r = lh_intr_window(v); break;
	default: r = light_other(v); break;
	}
	if (!r)
		return r;
	if (sw & SW_LIGHT_OFF)  /* seed 000's before: every exit goes round the outer loop */
		return light_handled_leave(v, vmx_exit_class(reason));
	per_exit_enter(v, sw);
	return r;
}

#define LV(a, b) \
	static uint64_t vmx_exit_light_##a##_##b(struct vcpu *v) { return vmx_exit_light(v, a * 8 + b); }
#define LV8(a) LV(a, 0) LV(a, 1) LV(a, 2) LV(a, 3) LV(a, 4) LV(a, 5) LV(a, 6) LV(a, 7)
LV8(0) LV8(1) LV8(2) LV8(3)
#define TV8(a) vmx_exit_light_##a##_0, vmx_exit_light_##a##_1, vmx_exit_light_##a##_2, \
	vmx_exit_light_##a##_3, vmx_exit_light_##a##_4, vmx_exit_light_##a##_5, \
	vmx_exit_light_##a##_6, vmx_exit_light_##a##_7
static light_handler_fn *const light_handlers[SW_COUNT] = { TV8(0), TV8(1), TV8(2), TV8(3) };

static unsigned switch_set(const struct lp_options *o)
{
	return (o->light ? 0 : SW_LIGHT_OFF) | (o->dr_lazy ? 0 : SW_DR_ALWAYS) |
	       (o->pmu_lazy ? 0 : SW_PMU_ALWAYS) | (o->msr_lazy ? 0 : SW_MSR_ALWAYS) |
	       (o->io_fast ? 0 : SW_IO_EMULATE);
}

void vendor_enter_guest(struct vcpu *v)
{
	vmx_light_loop(v);
}

/* ---- vCPU start state (multiboot: 32-bit protected mode, paging off) ---- */

/* VMWRITEs of the setup; the first failure is remembered and reported. */
static uint32_t setup_bad_field;
static unsigned setup_bad_error;

static void vmcs_set(uint32_t field, uint64_t value)
{
	if (!vmwrite_ok(field, value) && !setup_bad_field) {
		setup_bad_field = field;
		setup_bad_error = (unsigned)vmread(VMCS_INSN_ERROR);
	}
}

static void set_seg(unsigned n, uint16_t sel, uint32_t ar, uint32_t limit, uint64_t base)
{
	vmcs_set(VMCS_GUEST_ES_SEL + 2 * n, sel);
	vmcs_set(VMCS_GUEST_ES_AR + 2 * n, ar);
	vmcs_set(VMCS_GUEST_ES_LIMIT + 2 * n, limit);
	vmcs_set(VMCS_GUEST_ES_BASE + 2 * n, base);
}

enum { SEG_ES_N, SEG_CS_N, SEG_SS_N, SEG_DS_N, SEG_FS_N, SEG_GS_N, SEG_LDTR_N, SEG_TR_N };

/* CR0/CR4 bits the guest may not choose: fixed to 1 or 0 by VMX. With
 * unrestricted guest PE and PG are the guest's own. */
static uint64_t cr0_host_owned(void)
{
	return (vmx_caps.cr0_fixed0 & ~(CR0_PE | CR0_PG)) | ~vmx_caps.cr0_fixed1;
}

static uint64_t cr4_host_owned(void)
{
	return vmx_caps.cr4_fixed0 | ~vmx_caps.cr4_fixed1;
}

static void host_state_init(void)
{
	struct __attribute__((packed)) { uint16_t limit; uint64_t base; } idtr;
	asm volatile("sidt %0" : "=m"(idtr));
	vmcs_set(VMCS_HOST_CR0, read_cr0());
	vmcs_set(VMCS_HOST_CR3, read_cr3());
	vmcs_set(VMCS_HOST_CR4, read_cr4());
	vmcs_set(VMCS_HOST_CS_SEL, HOST_SEL_CODE);
	vmcs_set(VMCS_HOST_SS_SEL, HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_DS_SEL, HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_ES_SEL, HOST_SEL_DATA);
	vmcs_set(VMCS_HOST_FS_SEL, 0);
	vmcs_set(VMCS_HOST_GS_SEL, 0);
	vmcs_set(VMCS_HOST_TR_SEL, HOST_SEL_TSS);
	vmcs_set(VMCS_HOST_FS_BASE, rdmsr(MSR_FS_BASE));
	vmcs_set(VMCS_HOST_GS_BASE, rdmsr(MSR_GS_BASE));
	vmcs_set(VMCS_HOST_TR_BASE, (uint64_t)(uintptr_t)host_tss);
	vmcs_set(VMCS_HOST_GDTR_BASE, (uint64_t)(uintptr_t)host_gdt);
	vmcs_set(VMCS_HOST_IDTR_BASE, idtr.base);
	vmcs_set(VMCS_HOST_SYSENTER_CS, rdmsr(MSR_IA32_SYSENTER_CS));
	vmcs_set(VMCS_HOST_SYSENTER_ESP, rdmsr(MSR_IA32_SYSENTER_ESP));
	vmcs_set(VMCS_HOST_SYSENTER_EIP, rdmsr(MSR_IA32_SYSENTER_EIP));
	vmcs_set(VMCS_HOST_EFER, rdmsr(MSR_EFER));
	if (vmx_caps.exit.may & EXIT_LOAD_PAT)
		vmcs_set(VMCS_HOST_PAT, rdmsr(MSR_IA32_PAT));
	vmcs_set(VMCS_HOST_RIP, (uint64_t)(uintptr_t)vmx_exit_stub);
	/* HOST_RSP is written by the stub, which knows its stack */
}

void vendor_vcpu_init(struct vcpu *v, uint64_t entry, uint32_t eax, uint32_t ebx)
{
	struct vm *vm = v->vm;
	const struct lp_options *o = vm->opt;
	const struct vmx_caps *c = &vmx_caps;
	uint64_t vmcs_pa = (uint64_t)(uintptr_t)v->arch.vmcs;
	memset(&v->arch, 0, sizeof(v->arch));
	*(uint32_t *)v->arch.vmcs = (uint32_t)c->basic & 0x7fffffffu;
	if (!vmclear(vmcs_pa) || !vmptrld(vmcs_pa)) {
		vm_fault(vm, "VMCLEAR/VMPTRLD of the VMCS at 0x%lx failed", vmcs_pa);
		return;
	}
	setup_bad_field = 0;

	/* controls: what lightpath needs, adjusted to the capability MSRs */
	vmcs_set(VMCS_PIN_CONTROLS, ctl_adjust(c->pin, PIN_EXT_INTR_EXITING));
	uint32_t proc = PROC_HLT_EXITING | PROC_USE_IO_BITMAPS | PROC_USE_MSR_BITMAPS |
			PROC_SECONDARY_CONTROLS | (o->dr_lazy ? PROC_MOV_DR_EXITING : 0);
	v->arch.proc = ctl_adjust(c->proc, proc);
	if (!o->dr_lazy && (v->arch.proc & PROC_MOV_DR_EXITING))
		vm_fault(vm, "dr=always needs MOV-DR exiting off, but this CPU forces it on");
	vmcs_set(VMCS_PROC_CONTROLS, v->arch.proc);
	uint32_t proc2 = PROC2_ENABLE_EPT | PROC2_UNRESTRICTED_GUEST |
			 (c->vpid ? PROC2_ENABLE_VPID : 0) |
			 (c->proc2.may & PROC2_ENABLE_RDTSCP);    /* else RDTSCP would #UD */
	vmcs_set(VMCS_PROC_CONTROLS2, ctl_adjust(c->proc2, proc2));
	uint32_t exit_ctl = EXIT_HOST_ADDR_SPACE_SIZE | EXIT_SAVE_EFER | EXIT_LOAD_EFER |
			    EXIT_SAVE_DEBUG_CONTROLS |
			    (c->exit.may & (EXIT_SAVE_PAT | EXIT_LOAD_PAT));
	vmcs_set(VMCS_EXIT_CONTROLS, ctl_adjust(c->exit, exit_ctl));
	uint32_t entry_ctl = ENTRY_LOAD_EFER | ENTRY_LOAD_DEBUG_CONTROLS |
			     (c->entry.may & ENTRY_LOAD_PAT);
	vmcs_set(VMCS_ENTRY_CONTROLS, ctl_adjust(c->entry, entry_ctl) & ~ENTRY_IA32E_MODE_GUEST);
	vmcs_set(VMCS_EXCEPTION_BITMAP, 0);
	vmcs_set(VMCS_PF_ERROR_MASK, 0);
	vmcs_set(VMCS_PF_ERROR_MATCH, 0);
	vmcs_set(VMCS_CR3_TARGET_COUNT, 0);
	vmcs_set(VMCS_EXIT_MSR_STORE_COUNT, 0);
	vmcs_set(VMCS_EXIT_MSR_LOAD_COUNT, 0);
	vmcs_set(VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	vmcs_set(VMCS_IO_BITMAP_A, vm->iopm_pa);
	vmcs_set(VMCS_IO_BITMAP_B, vm->iopm_pa + 4096);
	vmcs_set(VMCS_MSR_BITMAP, vm->msrpm_pa);
	vmcs_set(VMCS_EPT_POINTER, vm_eptp(vm));
	if (c->vpid)
		vmcs_set(VMCS_VPID, 1 + vm->id % 0xfffeu);
	vmcs_set(VMCS_TSC_OFFSET, 0);
	vmcs_set(VMCS_LINK_POINTER, ~0ull);

	/* CR0/CR4: the guest sees the read shadows; the bits VMX fixes stay
	 * host-owned (a guest write that changes one exits) */
	uint64_t cr0 = CR0_PE | CR0_ET;
	vmcs_set(VMCS_CR0_GUEST_HOST_MASK, cr0_host_owned());
	vmcs_set(VMCS_CR0_READ_SHADOW, cr0);
	vmcs_set(VMCS_GUEST_CR0, (cr0 | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	vmcs_set(VMCS_CR4_GUEST_HOST_MASK, cr4_host_owned());
	vmcs_set(VMCS_CR4_READ_SHADOW, 0);
	vmcs_set(VMCS_GUEST_CR4, c->cr4_fixed0 & c->cr4_fixed1);
	vmcs_set(VMCS_GUEST_CR3, 0);

	/* flat 32-bit segments (access rights: G, D/B, P, S, type) */
	set_seg(SEG_CS_N, 0x10, 0xc09b, 0xffffffffu, 0);
	set_seg(SEG_DS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_ES_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_SS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_FS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_GS_N, 0x18, 0xc093, 0xffffffffu, 0);
	set_seg(SEG_TR_N, 0, 0x008b, 0xffff, 0);
	set_seg(SEG_LDTR_N, 0, VMX_AR_UNUSABLE, 0, 0);
	vmcs_set(VMCS_GUEST_GDTR_BASE, 0);
	vmcs_set(VMCS_GUEST_GDTR_LIMIT, 0xffff);
	vmcs_set(VMCS_GUEST_IDTR_BASE, 0);
	vmcs_set(VMCS_GUEST_IDTR_LIMIT, 0xffff);
	vmcs_set(VMCS_GUEST_EFER, 0);
	if (c->entry.may & ENTRY_LOAD_PAT)
		vmcs_set(VMCS_GUEST_PAT, 0x0007040600070406ull);
	vmcs_set(VMCS_GUEST_DEBUGCTL, 0);
	vmcs_set(VMCS_GUEST_DR7, 0x400);
	vmcs_set(VMCS_GUEST_RFLAGS, 2);
	vmcs_set(VMCS_GUEST_RIP, entry);
	vmcs_set(VMCS_GUEST_RSP, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_CS, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_ESP, 0);
	vmcs_set(VMCS_GUEST_SYSENTER_EIP, 0);
	vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	vmcs_set(VMCS_GUEST_ACTIVITY_STATE, 0);
	vmcs_set(VMCS_GUEST_PENDING_DBG, 0);
	host_state_init();
	if (setup_bad_field) {
		const char *name = vmcs_field_name(setup_bad_field);
		vm_fault(vm, "VMWRITE to %s (0x%x) failed: VM-instruction error %u (%s)",
			 name ? name : "an unnamed field", setup_bad_field, setup_bad_error,
			 vmx_insn_error_name(setup_bad_error));
	}

	memset(&v->regs, 0, sizeof(v->regs));
	v->regs.rax = eax;
	v->regs.rbx = ebx;
	v->arch.guest_dr6 = 0xffff0ff0;

	exit_cpuid_cache_init(v);
	unsigned sw = switch_set(o);
	if (sw & (PER_EXIT_MASK | SW_LIGHT_OFF)) {
		/* ablation: one generic dispatcher that wraps the "always" pieces */
		for (unsigned i = 0; i < LIGHT_TABLE_SIZE; i++)
			v->light_table[i] = light_handlers[sw];
	} else {
		for (unsigned i = 0; i < LIGHT_TABLE_SIZE; i++)
			v->light_table[i] = light_other;
		v->light_table[VMX_EXIT_VMCALL] = lh_vmcall;
		v->light_table[VMX_EXIT_CPUID] = lh_cpuid;
		v->light_table[VMX_EXIT_RDMSR] = lh_rdmsr;
		v->light_table[VMX_EXIT_WRMSR] = lh_wrmsr;
		v->light_table[VMX_EXIT_HLT] = lh_hlt;
		v->light_table[VMX_EXIT_INTR_WINDOW] = lh_intr_window;
		v->light_table[VMX_EXIT_IO] = (sw & SW_IO_EMULATE) ? lh_io_emulate : lh_io;
	}
	/* the VM starts with the host's PMU values and zeroed syscall MSRs */
	for (unsigned i = 0; i < c->pmu_counters; i++) {
		v->host_pmu[i] = v->guest_pmu[i] = rdmsr(MSR_IA32_PERFEVTSEL0 + i);
		v->host_pmu[4 + i] = v->guest_pmu[4 + i] = rdmsr(MSR_IA32_PMC0 + i);
	}
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		v->guest_smsr[i] = 0;
}

/* ---- MSRs whose guest copy lives in the VMCS or in the CPU ---- */

static bool canonical(uint64_t a)
{
	return (uint64_t)((int64_t)(a << 16) >> 16) == a;
}

static uint32_t vmcs_msr_field(uint32_t msr)
{
	switch (msr) {
	case MSR_IA32_SYSENTER_CS: return VMCS_GUEST_SYSENTER_CS;
	case MSR_IA32_SYSENTER_ESP: return VMCS_GUEST_SYSENTER_ESP;
	case MSR_IA32_SYSENTER_EIP: return VMCS_GUEST_SYSENTER_EIP;
	case MSR_IA32_PAT: return VMCS_GUEST_PAT;
	}
	return 0;
}

int vendor_msr_vmstate(struct vcpu *v, uint32_t msr, uint64_t *val, bool is_write)
{
	if (msr == MSR_EFER) {
		uint64_t efer = vmread(VMCS_GUEST_EFER);
		if (!is_write) {
			*val = efer;
			return 0;
		}
		if (*val & ~(EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE))
			return -1;
		/* LMA is the CPU's to set (and must match the IA-32e entry control) */
		vmwrite(VMCS_GUEST_EFER, (*val & ~EFER_LMA) | (efer & EFER_LMA));
		return 0;
	}
	if (is_write && (msr == MSR_LSTAR || msr == MSR_CSTAR || msr == MSR_KERNEL_GS_BASE ||
			 msr == MSR_IA32_SYSENTER_ESP || msr == MSR_IA32_SYSENTER_EIP) &&
	    !canonical(*val))
		return -1;
	/* reserved high halves: the guest gets #GP, never the host's WRMSR */
	if (is_write && (msr == MSR_SFMASK || msr == MSR_IA32_SYSENTER_CS) && (*val >> 32))
		return -1;
	uint32_t field = vmcs_msr_field(msr);
	if (field) {
		if (field == VMCS_GUEST_PAT && !(vmx_caps.entry.may & ENTRY_LOAD_PAT))
			return -1;
		if (field == VMCS_GUEST_PAT && is_write)
			for (int i = 0; i < 8; i++) {  /* types 2, 3 and 8+ are reserved */
				uint8_t type = (uint8_t)(*val >> (8 * i));
				if (type == 2 || type == 3 || type > 7)
					return -1;
			}
		if (is_write)
			vmwrite(field, *val);
		else
			*val = vmread(field);
		return 0;
	}
	int slot = smsr_slot(msr);
	if (slot < 0)
		return -1;
	/* The guest's value lives in exactly one place; writing anywhere else is
	 * seed 000's double-fault bug (the write is lost at the next switch).
	 * msr=lazy inside the light loop: the CPU holds it, so WRMSR goes there
	 * and a following SYSCALL sees it at once. */
	if (v->vm->opt->msr_lazy && v->arch.smsr_in_cpu) {
		if (is_write)
			wrmsr(msr, *val);
		else
			*val = rdmsr(msr);
		return 0;
	}
	if (is_write)
		v->guest_smsr[slot] = *val;   /* loaded into the CPU before VMRESUME */
	else
		*val = v->guest_smsr[slot];
	return 0;
}

int vendor_inject_virq(struct vcpu *v, uint8_t vector)
{
	if (v->arch.virq)
		return -1;
	/* delivered at the first interrupt window (an exit right away when the
	 * guest already has IF=1) */
	v->arch.virq = vector;
	v->arch.proc |= PROC_INTR_WINDOW_EXITING;
	vmwrite(VMCS_PROC_CONTROLS, v->arch.proc);
	return 0;
}

uint64_t vendor_guest_rip(struct vcpu *v)
{
	(void)v;
	return vmread(VMCS_GUEST_RIP);
}

/* ---- the heavy path ---- */

static void fill_guest_paging(struct guest_paging *pg)
{
	uint64_t ar = vmread(VMCS_GUEST_CS_AR);
	pg->cr0 = vmread(VMCS_GUEST_CR0);
	pg->cr3 = vmread(VMCS_GUEST_CR3);
	pg->cr4 = vmread(VMCS_GUEST_CR4);
	pg->efer = vmread(VMCS_GUEST_EFER);
	pg->cs_long = (pg->efer & EFER_LMA) && (ar & (1u << 13));
	pg->cs_32 = ar & (1u << 14);
}

/* What the emulator is asked to do. */
enum heavy_emul {
	HEAVY_EMUL_MMIO,      /* EPT violation on MMIO: emul_mmio */
	HEAVY_EMUL_STRING_IO, /* io=fast, string I/O exit: emul_string_io */
	HEAVY_EMUL_PORT_IO,   /* io=emulate, any I/O exit: emul_port_io */
};

static void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
			  const struct io_intercept *io);

static void heavy_io(struct vcpu *v)
{
	struct io_intercept io;
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	io.port = (uint16_t)(q >> VMX_IOQ_PORT_SHIFT);
	io.size = (uint8_t)((q & VMX_IOQ_SIZE_MASK) + 1);
	io.in = q & VMX_IOQ_IN;
	io.string = q & VMX_IOQ_STRING;
	io.rep = q & VMX_IOQ_REP;
	io.next_rip = next_rip();
	if (!v->vm->opt->io_fast) {
		/* io=emulate: seed 004's "before", every port I/O is fetched,
		 * decoded and performed by the instruction emulator; the exit
		 * qualification only cross-checks what it decoded */
		heavy_emulate(v, HEAVY_EMUL_PORT_IO, 0, &io);
		return;
	}
	if (io.string) {
		heavy_emulate(v, HEAVY_EMUL_STRING_IO, 0, &io);
		return;
	}
	exit_port_io(v, io.port, io.size, io.in, &v->regs.rax);
	vmwrite(VMCS_GUEST_RIP, io.next_rip);
}

/* ---- the instruction emulator (MMIO and port I/O), heavy path only ---- */

static void emul_ctx_load(struct vcpu *v, struct emul_ctx *c)
{
	const struct guest_regs *r = &v->regs;
	/* every field is set below: no memset of the 272-byte context */
	c->gpr[X86_RAX] = r->rax;     c->gpr[X86_RCX] = r->rcx;  c->gpr[X86_RDX] = r->rdx;
	c->gpr[X86_RBX] = r->rbx;     c->gpr[X86_RSP] = vmread(VMCS_GUEST_RSP);
	c->gpr[X86_RBP] = r->rbp;     c->gpr[X86_RSI] = r->rsi;  c->gpr[X86_RDI] = r->rdi;
	c->gpr[X86_R8] = r->r8;       c->gpr[X86_R9] = r->r9;    c->gpr[X86_R10] = r->r10;
	c->gpr[X86_R11] = r->r11;     c->gpr[X86_R12] = r->r12;  c->gpr[X86_R13] = r->r13;
	c->gpr[X86_R14] = r->r14;     c->gpr[X86_R15] = r->r15;
	c->rip = vmread(VMCS_GUEST_RIP);
	c->rflags = vmread(VMCS_GUEST_RFLAGS);
	for (unsigned i = 0; i < 6; i++)   /* ES CS SS DS FS GS: the VMCS order too */
		c->seg_base[i] = vmread(VMCS_GUEST_ES_BASE + 2 * i);
	fill_guest_paging(&c->pg);
	c->cpl = (vmread(VMCS_GUEST_SS_AR) >> 5) & 3;   /* SS.DPL is the CPL */
	c->maxphyaddr = 0;
	c->rep_max = 0;
	vm_emul_bind(v, c);
}

static void emul_ctx_store(struct vcpu *v, const struct emul_ctx *c)
{
	struct guest_regs *r = &v->regs;
	r->rax = c->gpr[X86_RAX];     r->rcx = c->gpr[X86_RCX];  r->rdx = c->gpr[X86_RDX];
	r->rbx = c->gpr[X86_RBX];     vmwrite(VMCS_GUEST_RSP, c->gpr[X86_RSP]);
	r->rbp = c->gpr[X86_RBP];     r->rsi = c->gpr[X86_RSI];  r->rdi = c->gpr[X86_RDI];
	r->r8 = c->gpr[X86_R8];       r->r9 = c->gpr[X86_R9];    r->r10 = c->gpr[X86_R10];
	r->r11 = c->gpr[X86_R11];     r->r12 = c->gpr[X86_R12];  r->r13 = c->gpr[X86_R13];
	r->r14 = c->gpr[X86_R14];     r->r15 = c->gpr[X86_R15];
	vmwrite(VMCS_GUEST_RIP, c->rip);
	vmwrite(VMCS_GUEST_RFLAGS, c->rflags);
}

/* Runs the emulator for an EPT violation on MMIO (fault_gpa) or a port I/O
 * exit (io) and acts on its result (as the SVM backend does). */
static void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
			  const struct io_intercept *io)
{
	struct emul_ctx c;
	struct emul_result res;
	enum emul_status st;
	emul_ctx_load(v, &c);
	memset(&res, 0, sizeof(res));
	switch (what) {
	case HEAVY_EMUL_STRING_IO:
		st = emul_string_io(&c, io, &res);
		break;
	case HEAVY_EMUL_PORT_IO:
		st = emul_port_io(&c, io, &res);
		break;
	default:
		st = emul_mmio(&c, fault_gpa, &res);
		break;
	}
	if (st != EMUL_RETRY)
		v->emul_retries = 0;
	uint64_t rip = c.rip;
	switch (st) {
	case EMUL_DONE:
		emul_ctx_store(v, &c);
		v->stats.emulated++;
		break;
	case EMUL_EXCEPTION:
		emul_ctx_store(v, &c);
		if (res.vector == EMUL_VEC_PF)   /* guest CR2 is the CPU's own under VMX */
			asm volatile("mov %0, %%cr2" ::"r"(res.cr2));
		inject_exception(res.vector, res.has_error_code, res.error_code);
		break;
	case EMUL_RETRY:
		vm_emul_retry(v, rip);
		return;
	case EMUL_VM_END:
		emul_ctx_store(v, &c);
		break;
	case EMUL_UNSUPPORTED:
		vm_emul_unsupported(v, &res, what == HEAVY_EMUL_MMIO ? "MMIO access" :
					     what == HEAVY_EMUL_STRING_IO ? "string I/O" : "port I/O");
		break;
	case EMUL_IO_ERROR:
		vm_fault(v->vm, "device error %d during emulation at rip 0x%lx", res.io_error, rip);
		break;
	}
}

/* EPT violation qualification: bit 7 = guest linear address valid, bit 8 =
 * (with bit 7) the access was to the translated address, not a page walk. */
#define EPT_QUAL_LINEAR_VALID (1ull << 7)
#define EPT_QUAL_FINAL_ACCESS (1ull << 8)

static void heavy_ept_violation(struct vcpu *v)
{
	uint64_t gpa = vmread(VMCS_GUEST_PHYS_ADDR), q = vmread(VMCS_EXIT_QUALIFICATION);
	bool final_access = !(q & EPT_QUAL_LINEAR_VALID) || (q & EPT_QUAL_FINAL_ACCESS);
	if (vm_find_mmio(v->vm, gpa)) {
		if (final_access) {
			heavy_emulate(v, HEAVY_EMUL_MMIO, gpa, 0);
			return;
		}
		vm_fault(v->vm, "the guest's page tables point into MMIO at 0x%lx (rip 0x%lx)", gpa,
			 vmread(VMCS_GUEST_RIP));
		return;
	}
	vm_fault(v->vm, "guest-physical access to 0x%lx outside its RAM and devices at rip 0x%lx",
		 gpa, vmread(VMCS_GUEST_RIP));
}

/* Register operand n (x86 encoding order) of a CR/DR access, in regs. */
static uint64_t *gpr_slot(struct vcpu *v, unsigned n)
{
	struct guest_regs *r = &v->regs;
	uint64_t *const slots[16] = { &r->rax, &r->rcx, &r->rdx, &r->rbx, 0, &r->rbp, &r->rsi,
				       &r->rdi, &r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13,
				       &r->r14, &r->r15 };
	return slots[n & 15];
}

/* MOV to CR0/CR4 that changed a host-owned bit: the guest's view goes to the
 * read shadow, the CPU gets it with the VMX-fixed bits applied. */
static void heavy_cr_access(struct vcpu *v)
{
	uint64_t q = vmread(VMCS_EXIT_QUALIFICATION);
	unsigned cr = q & 15, type = (q >> 4) & 3, reg = (q >> 8) & 15;
	uint64_t rip = vmread(VMCS_GUEST_RIP);
	if (type != 0 || (cr != 0 && cr != 4)) {
		vm_fault(v->vm, "unexpected control-register access (qualification 0x%lx) at rip 0x%lx",
			 q, rip);
		return;
	}
	uint64_t val = reg == 4 ? vmread(VMCS_GUEST_RSP) : *gpr_slot(v, reg);
	const struct vmx_caps *c = &vmx_caps;
	if (cr == 0) {
		if ((val >> 32) || ((val & CR0_PG) && !(val & CR0_PE))) {
			inject_exception(13, true, 0);
			return;
		}
		vmwrite(VMCS_CR0_READ_SHADOW, val);
		vmwrite(VMCS_GUEST_CR0, (val | (c->cr0_fixed0 & ~(CR0_PE | CR0_PG))) & c->cr0_fixed1);
	} else {
		/* VMXE is hidden from the guest (no nested VMX); other bits the CPU cannot have: #GP */
		if (val & ~c->cr4_fixed1 & ~CR4_VMXE) {
			inject_exception(13, true, 0);
			return;
		}
		if (val & CR4_VMXE) {
			inject_exception(13, true, 0);
			return;
		}
		vmwrite(VMCS_CR4_READ_SHADOW, val);
		vmwrite(VMCS_GUEST_CR4, (val | c->cr4_fixed0) & c->cr4_fixed1);
	}
	skip_insn();
}

static void report_entry_failure(struct vcpu *v, unsigned insn_error, uint32_t reason)
{
	char why[160];
	vmx_explain_entry_failure(insn_error, reason, why, sizeof(why));
	vm_fault(v->vm, "%s", why);
}

void vendor_handle_heavy(struct vcpu *v)
{
	if (v->arch.entry_failed) {
		v->arch.entry_failed = 0;
		report_entry_failure(v, (unsigned)vmread(VMCS_INSN_ERROR), 0);
		return;
	}
	if (v->heavy_action != HEAVY_EXIT || v->vm->ended)
		return;
	uint32_t reason = (uint32_t)vmread(VMCS_EXIT_REASON);
	if (reason & VMX_EXIT_REASON_ENTRY_FAIL) {
		report_entry_failure(v, 0, reason);
		return;
	}
	/* an event whose delivery this exit interrupted is delivered again */
	uint64_t idt = vmread(VMCS_IDT_VECTORING_INFO);
	if ((idt & VMX_INTR_INFO_VALID) && reason != VMX_EXIT_TRIPLE_FAULT) {
		vmwrite(VMCS_ENTRY_INTR_INFO, idt & ~(uint64_t)(1u << 12));
		if (idt & VMX_INTR_INFO_ERRCODE)
			vmwrite(VMCS_ENTRY_EXCEPTION_ERRCODE, vmread(VMCS_IDT_VECTORING_ERRCODE));
	}
	uint64_t rip = vmread(VMCS_GUEST_RIP);
	switch (reason) {
	case VMX_EXIT_VMCALL: {
		exit_hypercall(v, &v->regs.rax);
		skip_insn();
		break;
	}
	case VMX_EXIT_CPUID:
		do_cpuid(v);
		skip_insn();
		break;
	case VMX_EXIT_RDMSR:
	case VMX_EXIT_WRMSR:
		if (do_msr(v, reason == VMX_EXIT_WRMSR))
			skip_insn();
		break;
	case VMX_EXIT_IO:
		heavy_io(v);
		break;
	case VMX_EXIT_HLT: {
		/* a blocking HLT: sleep until a timer makes an interrupt pending */
		uint64_t rflags = vmread(VMCS_GUEST_RFLAGS);
		while ((rflags & RFLAGS_IF) && !v->arch.virq && v->vm->nr_timers) {
			vendor_host_wait_for_interrupt();
			vm_timers_run(v->vm);
		}
		if (v->arch.virq && (rflags & RFLAGS_IF))
			hlt_wake(v);
		else
			vm_fault(v->vm, "HLT at rip 0x%lx with no interrupt pending and no interrupt "
				 "source that could wake it (RFLAGS.IF=%u)", rip,
				 (unsigned)((rflags >> 9) & 1));
		break;
	}
	case VMX_EXIT_EXT_INTR:
		vendor_host_interrupt_window();
		vm_timers_run(v->vm);
		break;
	case VMX_EXIT_INTR_WINDOW:
		if (v->arch.virq)
			virq_deliver(v);
		break;
	case VMX_EXIT_INVD:
		skip_insn();  /* nothing cached to lose under EPT: a no-op */
		break;
	case VMX_EXIT_MOV_DR:
		/* seed 001: first use of a debug register. Stop trapping, switch the
		 * DRs from now on, and let the guest re-execute its MOV DR. */
		v->dr_dirty = true;
		v->arch.proc &= ~PROC_MOV_DR_EXITING;
		vmwrite(VMCS_PROC_CONTROLS, v->arch.proc);
		break;
	case VMX_EXIT_CR_ACCESS:
		heavy_cr_access(v);
		break;
	case VMX_EXIT_VMCLEAR: case VMX_EXIT_VMLAUNCH: case VMX_EXIT_VMPTRLD:
	case VMX_EXIT_VMPTRST: case VMX_EXIT_VMREAD: case VMX_EXIT_VMRESUME:
	case VMX_EXIT_VMWRITE: case VMX_EXIT_VMXOFF: case VMX_EXIT_VMXON:
	case VMX_EXIT_INVEPT: case VMX_EXIT_INVVPID: case VMX_EXIT_VMFUNC: case VMX_EXIT_GETSEC:
		inject_exception(6, false, 0);  /* no nested VMX: #UD as on a CPU without it */
		break;
	case VMX_EXIT_TRIPLE_FAULT:
		vm_fault(v->vm, "triple fault (VM exit 2) at rip 0x%lx", rip);
		break;
	case VMX_EXIT_EPT_VIOLATION:
		heavy_ept_violation(v);
		break;
	case VMX_EXIT_EPT_MISCONFIG:
		vm_fault(v->vm, "EPT misconfiguration at guest-physical 0x%lx (a lightpath bug)",
			 vmread(VMCS_GUEST_PHYS_ADDR));
		break;
	default:
		vm_fault(v->vm, "unexpected VM exit, reason %u, qualification 0x%lx, at rip 0x%lx",
			 reason, vmread(VMCS_EXIT_QUALIFICATION), rip);
		break;
	}
}

void vendor_vcpu_init_linux(struct vcpu *v, const struct linux_boot_state *st)
{
	/* the 64-bit entry state is not set up in the VMCS yet: say so */
	vendor_vcpu_init(v, st->rip, 0, 0);
	vm_fault(v->vm, "Linux guests are not supported on the Intel VT-x backend yet");
}

const char *vendor_interrupt_state(struct vcpu *v)
{
	(void)v;
	return "(no interrupt state on the Intel VT-x backend yet)";
}
