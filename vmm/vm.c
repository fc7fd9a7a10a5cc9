/* A VM's life: created (its RAM, vCPUs, registries and devices), loaded
 * with its guest and what firmware leaves in memory, run on its vCPUs' CPUs
 * (vmm/vcpu_run.c), and destroyed at its end (vm_end, vm_fault). */
#include "vmm/vm.h"

#include <stdarg.h>

#include "core/console.h"
#include "core/cpu.h"
#include "core/idt.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/tsc.h"
#include "dev/tick_math.h"
#include "lib/printf.h"
#include "lib/string.h"
#include "vmm/exit.h"
#include "vmm/exit_cost.h"
#include "vmm/exit_setup.h"
#include "vmm/firmware.h"
#include "vmm/guest_clock.h"
#include "vmm/io_registry.h"
#include "vmm/spec_ctrl.h"
#include "vmm/vcpu_exit.h"
#include "vmm/linux_boot.h"
#include "vmm/loader.h"
#include "vmm/platform.h"
#include "vmm/vcpu_run.h"
#include "vmm/vendor.h"
#include "vmm/vm_console.h"
#include "vmm/vm_timers.h"

void vm_end(struct vm *vm, unsigned status, const char *why)
{
	if (vm->ended)
		return;
	vm->ended = true;
	vm->status = status;
	vm->end_reason = why;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_notify(vm->vcpus[i]);   /* every light loop must stop now */
	/* An ended VM has no timers (vm_timer_arm refuses them): a heavy-path
	 * wait for the next timer, such as a blocking HLT, ends too. */
	vm_timers_cancel_all(vm);
}

void vm_fault(struct vm *vm, const char *fmt, ...)
{
	char buf[KPRINTF_LINE_MAX];   /* a longer reason is cut (visibly) by kprintf */
	va_list ap;
	if (vm->ended)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("lightpath: vm%u: stopped: %s\n", vm->id, buf);
	vm_end(vm, LP_STATUS_VM_FAULT, "stopped");
	vm->end_reason = 0; /* already reported */
}

/* The PCI functions the VM's firmware tables describe (vmm/firmware.h). */
static unsigned vm_pci_functions(const struct vm *vm)
{
	return (vm->disk ? FW_PCI_DISK : 0) | (vm->net ? FW_PCI_NET : 0);
}

static void vm_create_devices(struct vm *vm)
{
	vm_timers_init(vm);
	guest_clock_init(vm);          /* first: the timer devices keep its address */
	platform_create(vm);
}

static void time_limit_fire(struct vm_timer *t, uint64_t now)
{
	struct vm *vm = t->opaque;
	uint64_t host = rdtsc();   /* (now is the VM's time for the second timer) */
	(void)now;
	vm->time_limit_reached = true;
	vm->time_limit_host = host - vm->time_limit_started;
	vm->time_limit_guest = clock_at(&vm->clock, host) - vm->time_limit_started_guest;
	vm_fault(vm, "time limit of %u s reached", vm->time_limit_s);
}

/* The VM's time limit, counted from its start in host time: a VM timer, so
 * that a guest spinning without exits is stopped too (the host timer
 * interrupts it). A second one on the VM's clock, a little past the same
 * time, makes a clock read past it stop the VM as a device timer fires
 * at one (vm_timers_reprogram's next_due), however late the host timer
 * comes: the VM's time never gains on the host's, so it is never early,
 * and the margin (one minimum timer period) is more than the timer lead
 * that can fire it ahead of its time. */
static void time_limit_start(struct vm *vm, unsigned seconds)
{
	if (!seconds)
		return;
	uint64_t ticks = (uint64_t)seconds * tsc_hz();
	vm->time_limit_s = seconds;
	vm_timer_init(&vm->time_limit, vm->pc, time_limit_fire, vm);
	vm->time_limit.host_clock = true;
	vm_timer_init(&vm->time_limit_read, vm->pc, time_limit_fire, vm);
	kprintf("lightpath: vm%u: time limit %u s\n", vm->id, seconds);
	vm->time_limit_started = rdtsc();
	vm->time_limit_started_guest = clock_at(&vm->clock, vm->time_limit_started);
	vm_timer_arm(&vm->time_limit, vm->time_limit_started + ticks);
	vm_timer_arm(&vm->time_limit_read, vm->time_limit_started_guest + ticks + vm->timer_min_gap);
}

void vm_time_limit_print_stats(const struct vm *vm)
{
	if (!vm->time_limit_reached)
		return;
	/* the limit counts host time; the VM's clock (its clock devices) can
	 * be behind it by the time polling hid */
	kprintf("  time limit: reached %lu ms after the VM's start, at %lu ms of its clock\n",
		muldiv64(vm->time_limit_host, 1000, tsc_hz()),
		muldiv64(vm->time_limit_guest, 1000, tsc_hz()));
}

static void report_end(struct vm *vm)
{
	if (vm->end_reason)
		kprintf("lightpath: vm%u: ended with status %u (%s)\n", vm->id, vm->status,
			vm->end_reason);
}

/* Debug events of the guest that reached lightpath (core/idt.c): none
 * should on hardware; said if any did. */
static void report_debug_events_dropped(struct vm *vm)
{
	unsigned n = this_cpu()->guest_debug_events_dropped;
	this_cpu()->guest_debug_events_dropped = 0;
	if (n)
		kprintf("lightpath: vm%u: %u debug exceptions of the guest (breakpoints or single "
			"steps) reached lightpath and were dropped\n", vm->id, n);
}

/* Loads the guest image and what a PC's firmware leaves in memory (the
 * BIOS data area, the EBDA, the ACPI tables: vmm/firmware.h), the same for
 * every guest; fills a one-line description for the log. */
static int load_guest(struct vm *vm, const struct vm_spec *spec, char *what, size_t whatlen,
		      char *err, size_t errlen)
{
	struct vcpu *v = vm->vcpu;
	uint8_t *ram = gpa_to_host(vm, 0, vm->mem_size);
	uint64_t rsdp;
	if (!spec->linux_kernel) {
		struct loaded_guest g;
		if (load_multiboot_elf(ram, vm->mem_size, spec->image, spec->image_size, spec->cmdline,
				       spec->modules, spec->nr_modules, &g, err, errlen))
			return -1;
		if (firmware_build(ram, vm->mem_size, vm->nr_vcpus, vm_pci_functions(vm), &rsdp)) {
			snprintf(err, errlen, "could not write the BIOS data area and ACPI tables");
			return -1;
		}
		int n = snprintf(what, whatlen, "%s, entry 0x%lx", g.format, g.entry);
		if (g.nr_modules && n > 0 && (size_t)n < whatlen)
			snprintf(what + n, whatlen - (size_t)n, ", %u module%s", g.nr_modules,
				 g.nr_modules == 1 ? "" : "s");
		vendor_vcpu_init(v, g.entry, MB_BOOT_MAGIC, g.info_gpa);
		return 0;
	}
	struct e820_entry map[FW_MAP_ENTRIES];
	unsigned nmap = firmware_memory_map(vm->mem_size, map);
	struct linux_boot_state st;
	if (linux_boot_prepare(ram, vm->mem_size, spec->image, spec->image_size, spec->initrd,
			       spec->initrd_size, spec->cmdline, map, nmap, &st, err, errlen))
		return -1;
	if (firmware_build(ram, vm->mem_size, vm->nr_vcpus, vm_pci_functions(vm), &rsdp)) {
		snprintf(err, errlen, "could not write the BIOS data area and ACPI tables");
		return -1;
	}
	linux_boot_set_rsdp(ram, &st, rsdp);
	snprintf(what, whatlen, "Linux bzImage, boot protocol %u.%02u, initrd %lu KiB",
		 st.version >> 8, st.version & 0xff, spec->initrd_size >> 10);
	vendor_vcpu_init_linux(v, &st);
	return 0;
}

bool vm_cpu_panicked(void)
{
	struct percpu *pc = this_cpu();
	struct vcpu *v = pc->vcpu_owned;
	if (!v)
		return false;
	struct vm *vm = v->vm;
	unsigned i = 0;
	while (i < vm->nr_vcpus && vm->vcpus[i] != v)
		i++;
	if (vm->nr_vcpus > 1 && vm->lock_cpu == pc)   /* it panicked holding it */
		vm_unlock(vm);
	vm_lock(vm);
	vm_fault(vm, "CPU %u panicked while it ran vCPU %u; that CPU is out of use from now on",
		 pc->cpu_id, i);
	vm_unlock(vm);
	/* last: vCPU 0's CPU may free the VM once it sees this */
	__atomic_store_n(&v->finished, true, __ATOMIC_RELEASE);
	if (i)
		return false;   /* vm_run, on vCPU 0's CPU, ends the VM as usual */
	if (vm->vcpus_posted)
		vcpus_wait_finished(vm);
	vm_running_remove(vm);
	return true;
}

static void report_cpus(struct vm *vm)
{
	if (vm->nr_vcpus == 1) {
		kprintf("lightpath: vm%u: runs on CPU %u\n", vm->id, vm->vcpu->host_cpu->cpu_id);
		return;
	}
	char list[4 * VM_MAX_VCPUS + 1];
	unsigned n = 0;
	for (unsigned i = 0; i < vm->nr_vcpus && n + 5 < sizeof(list); i++)
		n += (unsigned)snprintf(list + n, sizeof(list) - n, "%s%u", i ? "," : "",
					vm->vcpus[i]->host_cpu->cpu_id);
	kprintf("lightpath: vm%u: %u vCPUs on CPUs %s (vCPU i on the i-th)\n", vm->id, vm->nr_vcpus,
		list);
}

unsigned vm_run(unsigned id, const struct vm_spec *spec, const struct lp_options *opt)
{
	char err[200], what[96];
	uint64_t vm_pages = (sizeof(struct vm) + 0xfff) & ~0xfffull;
	struct vm *vm = (struct vm *)(uintptr_t)pmem_alloc(vm_pages, 4096);
	uint64_t mem = (uint64_t)spec->mem_mb << 20;
	uint64_t mem_hpa = pmem_alloc(mem, 2u << 20);
	if (vm)
		memset(vm, 0, sizeof(*vm));
	if (!vm || !mem_hpa || !vcpus_alloc(vm, spec)) {
		kprintf("lightpath: vm%u: not enough memory for a %u MiB VM (%lu MiB free)\n", id,
			spec->mem_mb, pmem_free_bytes() >> 20);
		if (mem_hpa)
			pmem_free(mem_hpa, mem);
		if (vm) {
			vcpus_free(vm);
			pmem_free((uint64_t)(uintptr_t)vm, vm_pages);
		}
		return LP_STATUS_HV_ERROR;
	}
	vm->id = id;
	vm->name = spec->name;
	vm->cmdline = spec->cmdline;
	vm->opt = opt;
	vm->unclaimed_stop = spec->has_unclaimed ? spec->unclaimed_stop : !opt->unclaimed_pc;
	vm->disk = spec->disk;
	vm->disk_size = spec->disk_size;
	vm->disk_ro = spec->disk_ro;
	vm->net = spec->net;
	vm->has_mac = spec->has_mac;
	memcpy(vm->mac, spec->mac, sizeof(vm->mac));
	vm->mem_hpa = mem_hpa;
	vm->mem_size = mem;
	struct vcpu *v = vm->vcpu;
	this_cpu()->vcpu_owned = v;

	unsigned status;
	if (!platform_alloc(vm)) {
		kprintf("lightpath: vm%u: not enough memory for its devices (%lu MiB free)\n", id,
			pmem_free_bytes() >> 20);
		status = LP_STATUS_HV_ERROR;
		goto out;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (!exit_cost_alloc(vm->vcpus[i])) {
			kprintf("lightpath: vm%u: not enough memory for stats=cost/sites (%lu MiB free)\n",
				id, pmem_free_bytes() >> 20);
			status = LP_STATUS_HV_ERROR;
			goto out;
		}
	vm_msrs_init(vm);
	exit_register_msrs(vm);
	spec_register_msrs(vm);
	vm_create_devices(vm);
	exit_register_cpu_msrs(vm);
	if (vendor_vm_init(vm)) {
		kprintf("lightpath: vm%u: cannot set up the VM (out of memory)\n", id);
		status = LP_STATUS_HV_ERROR;
		goto out;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		exit_vcpu_init(vm->vcpus[i]);
	if (load_guest(vm, spec, what, sizeof(what), err, sizeof(err))) {
		kprintf("lightpath: vm%u: cannot load guest image '%s': %s\n", id, spec->image_name,
			err);
		vendor_vcpu_release(v);
		vendor_vm_destroy(vm);
		status = LP_STATUS_VM_FAULT;
		goto out;
	}
	kprintf("lightpath: vm%u: loaded %s (%s), %u MiB, cmdline \"%s\"\n", id, spec->name, what,
		spec->mem_mb, spec->cmdline);
	if (vm_side_by_side)
		report_cpus(vm);
	platform_start(vm);
	spec_vm_switch(opt);         /* the previous VM cannot steer this one's branches */
	time_limit_start(vm, spec->has_timeout ? spec->timeout_s : opt->vm_timeout_s);
	vm_running_add(vm);
	vcpus_post(vm);
	vcpu_life(v);
	vendor_vcpu_release(v);
	vcpus_wait_finished(vm);
	vm_timers_cancel_all(vm);
	console_lock();              /* its last lines and table together */
	vm_line_flush(vm);           /* its unfinished line; kprintf ends it */
	report_end(vm);
	report_debug_events_dropped(vm);
	host_nmis_report();          /* one that came while lightpath ran, GIF=1 */
	if (opt->stats)
		exit_print_stats(vm);
	console_unlock();
	vm_running_remove(vm);
	vendor_vm_destroy(vm);
	status = vm->status;
out:
	this_cpu()->vcpu_owned = 0;
	platform_free(vm);
	pmem_free(mem_hpa, mem);
	vcpus_free(vm);
	pmem_free((uint64_t)(uintptr_t)vm, vm_pages);
	return status;
}
