/* CPUID as a VM sees it (docs/CPUID.md). The host's answer goes through an
 * allow-list per leaf and register: a bit is shown only where lightpath has
 * decided what it means for the guest (its MSRs emulated, its instructions
 * running natively on guest state only, or nothing to emulate); every other
 * bit is hidden, so that a CPU newer than this code shows nothing lightpath
 * does not know. Bits that follow the guest's own state (CPUID.1:ECX.OSXSAVE,
 * CPUID.7:ECX.OSPKE, the APIC bits) are set afterwards: cpuid_guest_state
 * and the vCPU cache (vmm/exit.h).
 *
 * cpuid_policy_apply is a pure function of the host's words, so the host
 * unit tests (tests/unit/test_cpuid.c) run it on the CPU models the guests
 * meet (QEMU's EPYC, Bochs' corei7_skylake_x and ryzen) and on others. */
#ifndef VMM_CPUID_H
#define VMM_CPUID_H

#include <stdbool.h>
#include <stdint.h>

/* What the policy needs to know beyond the leaf it filters. */
struct cpuid_host {
	bool intel;              /* GenuineIntel (else AMD's layout) */
	uint32_t max_basic;      /* CPUID.0:EAX */
	uint32_t max_ext;        /* CPUID.80000000H:EAX */
	/* the speculation-control bits whose MSRs lightpath gives the VM
	 * (vmm/spec_ctrl.c registers IA32_SPEC_CTRL and IA32_PRED_CMD) */
	uint32_t spec_leaf7_edx; /* Intel CPUID.7.0:EDX bits 26, 27, 31 */
	uint32_t spec_ext8_ebx;  /* AMD CPUID.80000008H:EBX bits 12, 14, 15, 24 */
	uint64_t xcr0;           /* XSAVE components offered: host's & CPUID_XCR0_ALLOWED */
	uint32_t xsave_size;     /* standard-form XSAVE area for all of them */
	uint32_t xsave_comp_size[64];  /* CPUID.(0DH,i):EAX of the offered ones */
	uint64_t xsave_comp_align;     /* bit i: CPUID.(0DH,i):ECX[1], 64-byte aligned when compacted */
};

/* CPUID.1 */
#define CPUID1_ECX_MONITOR     (1u << 3)
#define CPUID1_ECX_VMX         (1u << 5)
#define CPUID1_ECX_PCID        (1u << 17)
#define CPUID1_ECX_X2APIC      (1u << 21)
#define CPUID1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID1_ECX_XSAVE       (1u << 26)
#define CPUID1_ECX_OSXSAVE     (1u << 27)
#define CPUID1_ECX_HYPERVISOR  (1u << 31)
#define CPUID1_EDX_TSC         (1u << 4)
#define CPUID1_EDX_MCE         (1u << 7)
#define CPUID1_EDX_APIC        (1u << 9)
#define CPUID1_EDX_MTRR        (1u << 12)
#define CPUID1_EDX_MCA         (1u << 14)
/* CPUID.7.0 */
#define CPUID7_EBX_TSC_ADJUST  (1u << 1)
#define CPUID7_EBX_AVX512F     (1u << 16)
#define CPUID7_ECX_PKU         (1u << 3)
#define CPUID7_ECX_OSPKE       (1u << 4)
#define CPUID7_ECX_WAITPKG     (1u << 5)
/* CPUID.80000001H */
#define CPUID81_ECX_SVM        (1u << 2)
#define CPUID81_ECX_PERFCTR_CORE (1u << 23)
#define CPUID81_ECX_MONITORX   (1u << 29)
#define CPUID81_EDX_APIC       (1u << 9)
#define CPUID81_EDX_FFXSR      (1u << 25)
/* CPUID.80000008H:EBX */
#define CPUID88_EBX_RDPRU      (1u << 4)
#define CPUID88_EBX_LMSLE_UNSUPPORTED (1u << 20)

/* XSAVE components a VM may be offered (those the CPU has): x87, SSE, AVX,
 * the AVX-512 trio and PKRU. MPX, AMX and the supervisor components are
 * hidden (docs/CPUID.md). */
#define CPUID_XCR0_ALLOWED 0x2e7ull

/* The VM's static view of (leaf, subleaf): `r` holds the host's answer and
 * becomes the VM's. The bits that follow guest state come out in their
 * reset state: OSXSAVE and OSPKE clear, APIC set. */
void cpuid_policy_apply(const struct cpuid_host *h, uint32_t leaf, uint32_t subleaf,
			uint32_t r[4]);

/* Size of the standard-form XSAVE area for the components in `xcr0`, from
 * each component's offset and size (CPUID.(0DH,i):EBX and EAX): the legacy
 * area and header (576 bytes) at least. */
uint32_t cpuid_xsave_size(uint64_t xcr0, const uint32_t offset[64], const uint32_t size[64]);

/* Size of the compacted-form XSAVE area (XSAVEC) for the components in
 * `xfeatures`: 576 bytes, then each component in order, at a 64-byte
 * boundary where bit i of `align64` says so. CPUID.(0DH,1):EBX is this for
 * XCR0 | IA32_XSS (Linux sizes its XSAVEC buffers with it). */
uint32_t cpuid_xsave_compacted_size(uint64_t xfeatures, const uint32_t size[64], uint64_t align64);

/* The bits of `leaf` that mirror guest state, from the guest's CR4:
 * CPUID.1:ECX.OSXSAVE is CR4.OSXSAVE (bit 18), CPUID.7.0:ECX.OSPKE is
 * CR4.PKE (bit 22) where PKU is shown. */
static inline void cpuid_guest_state(uint32_t leaf, uint32_t subleaf, uint32_t r[4],
				     uint64_t cr4)
{
	if (leaf == 1 && (r[2] & CPUID1_ECX_XSAVE))
		r[2] |= (uint32_t)(cr4 >> 18 & 1) << 27;
	else if (leaf == 7 && subleaf == 0 && (r[2] & CPUID7_ECX_PKU))
		r[2] |= (uint32_t)(cr4 >> 22 & 1) << 4;
}

/* The host's words for the policy, read once (uses spec_caps: call after
 * spec_init). */
const struct cpuid_host *cpuid_host(void);

/* The VM's static view of (leaf, subleaf) on this host: CPUID, then the
 * policy; leaves beyond the host's maxima read 0. */
void cpuid_vm_view(uint32_t leaf, uint32_t subleaf, uint32_t r[4]);

#endif
