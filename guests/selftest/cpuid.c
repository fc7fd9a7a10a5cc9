/* cpuid: the CPUID view lightpath gives a guest, and the next RIP after
 * CPUID/VMMCALL (VMCALL on Intel)/RDMSR encoded with prefixes (32-bit flat
 * guest). */
#include "guests/rt/rt.h"
#include "guests/selftest/nextrip.h"

int guest_main(void)
{
	tap_begin("cpuid");

	struct cpuid_regs r = cpuid(LP_CPUID_BASE, 0);
	tap_ge(r.eax, LP_CPUID_INFO, "cpuid 0x40000000: max hypervisor leaf >= 0x40000001");
	tap_eq(r.ebx, LP_CPUID_SIG_EBX, "cpuid 0x40000000: EBX = \"ligh\"");
	tap_eq(r.ecx, LP_CPUID_SIG_ECX, "cpuid 0x40000000: ECX = \"tpat\"");
	tap_eq(r.edx, LP_CPUID_SIG_EDX, "cpuid 0x40000000: EDX = \"h\\0\\0\\0\"");

	r = cpuid(LP_CPUID_INFO, 0);
	tap_eq(r.eax, LP_ABI_VERSION, "cpuid 0x40000001: EAX = LP_ABI_VERSION");

	r = cpuid(1, 0);
	tap_eq((r.ecx >> 31) & 1, 1, "cpuid 1: ECX bit 31 (hypervisor present) set");
	tap_eq((r.ecx >> 5) & 1, 0, "cpuid 1: ECX bit 5 (VMX) clear");

	r = cpuid(0x80000001, 0);
	tap_eq((r.ecx >> 2) & 1, 0, "cpuid 0x80000001: ECX bit 2 (SVM) clear, no nested virtualization");

	r = cpuid(0, 0);
	char vendor[13];
	memcpy(vendor, &r.ebx, 4);
	memcpy(vendor + 4, &r.edx, 4);
	memcpy(vendor + 8, &r.ecx, 4);
	vendor[12] = '\0';
	/* the host's vendor shows through: AMD under the SVM backend, Intel
	 * under VMX (rt_intel picked VMCALL from this same leaf; the hypercall
	 * tests below show the pick works) */
	const char *want = rt_intel ? "GenuineIntel" : "AuthenticAMD";
	tap_ok(!strcmp(vendor, want), r.ebx, rt_intel ? "\"GenuineIntel\"" : "\"AuthenticAMD\"",
	       "cpuid 0: vendor is %s (is \"%s\")", want, vendor);

	nr_cpuid("cpuid (0f a2)", 0);
	nr_cpuid("cpuid with operand-size prefix (66 0f a2)", 1);
	nr_cpuid("cpuid with three prefixes (2e 3e 66 0f a2)", 3);
	const ureg_t enosys = (ureg_t)-LP_ENOSYS;
	nr_vmmcall("vmmcall LP_HC_NULL (0f 01 d9)", 0, LP_HC_NULL, 0);
	nr_vmmcall("vmmcall LP_HC_NULL with CS prefix (2e 0f 01 d9)", 1, LP_HC_NULL, 0);
	nr_vmmcall("vmmcall 0x777 with CS prefix (2e 0f 01 d9)", 1, 0x777, enosys);
	nr_vmmcall("vmmcall LP_HC_NULL with DS+ES prefixes (3e 26 0f 01 d9)", 3, LP_HC_NULL, 0);
	nr_rdmsr("rdmsr 0x2ff (0f 32)", 0, 0xc06);
	nr_rdmsr("rdmsr 0x2ff with DS prefix (3e 0f 32)", 1, 0x806);
	nr_rdmsr("rdmsr 0x2ff with ES+66 prefixes (26 66 0f 32)", 3, 0xc00);

	return tap_end();
}
