/* kmain: from the boot stub to running every VM given as a boot module. */
#include <stdint.h>

#include "core/bootinfo.h"
#include "core/console.h"
#include "core/cpu.h"
#include "core/hv.h"
#include "core/idt.h"
#include "core/options.h"
#include "core/percpu.h"
#include "core/pmem.h"
#include "core/smp.h"
#include "core/timer.h"
#include "core/tsc.h"
#include "core/xstate.h"
#include "include/lightpath/abi.h"
#include "lib/printf.h"

extern char __image_end[];

static struct boot_info boot_info;
static struct lp_options options;

static void mask_legacy_pic(void)
{
	outb(0x21, 0xff);
	outb(0xa1, 0xff);
}

void kmain(uint32_t magic, uint32_t info);

void kmain(uint32_t magic, uint32_t info)
{
	this_cpu()->cpu_id = 0;   /* the boot CPU; smp_init starts the others */
	console_init();
	idt_init();
	mask_legacy_pic();
	kprintf("lightpath: lightweight-exit hypervisor, %s backend\n", hv_backend_name());
	if (bootinfo_parse(&boot_info, magic, info)) {
		kprintf("lightpath: error: not started by a multiboot loader (magic 0x%x)\n", magic);
		power_off(LP_STATUS_HV_ERROR);
	}

	char err[256];
	options_defaults(&options);
	if (options_parse(&options, boot_info.cmdline, err, sizeof(err)) < 0) {
		kprintf("lightpath: error: %s\n", err);
		power_off(LP_STATUS_HV_ERROR);
	}
	kprintf("lightpath: options: light=%s svm.vmload=%s vmx.tpr=%s vmx.apicv=%s "
		"vmx.bochs_quirk=%s dr=%s pmu=%s msr=%s io=%s spec=%s unclaimed=%s clock=%s timer=%s "
		"mem=%u stats=%s\n",
		options.light ? "on" : "off", options.vmload_lazy ? "lazy" : "always",
		options.vmx_tpr_shadow ? "shadow" : "exit", options.vmx_apicv ? "on" : "off",
		opt_auto_word(options.vmx_bochs_quirk),
		options.dr_lazy ? "lazy" : "always", options.pmu_lazy ? "lazy" : "always",
		options.msr_lazy ? "lazy" : "always", options.io_fast ? "fast" : "emulate",
		options.spec ? "on" : "off", options.unclaimed_pc ? "pc" : "stop",
		options.clock_poll ? "poll" : "host", options.timer_lead ? "lead" : "exact",
		options.mem_mb, options.stats ? "on" : "off");
	if (options.test_panic_ap)
		kprintf("lightpath: test.panic_ap=%u: CPU %u panics when it starts running a vCPU "
			"(a test option)\n", options.test_panic_ap, options.test_panic_ap);

	uint64_t reserved = (uint64_t)(uintptr_t)__image_end;
	if (boot_info.highest_used > reserved)
		reserved = boot_info.highest_used;
	pmem_init(&boot_info, reserved);
	tsc_calibrate();
	tsc_check(options.tsc_check_s);

	if (xstate_init() < 0 || hv_boot_cpu_init(&options) < 0 || timer_init() < 0)
		power_off(LP_STATUS_HV_ERROR);
	hv_boot_cpu_ready(&options);
	smp_init(&boot_info, &options);   /* the other CPUs wait, idle; VMs run on this one */

	if (boot_info.nr_modules == 0) {
		kprintf("lightpath: error: no guest given (pass one as a multiboot module, "
			"e.g. QEMU -initrd \"guest.elf args\")\n");
		power_off(LP_STATUS_HV_ERROR);
	}

	power_off(hv_run_guests(&boot_info, &options));
}
