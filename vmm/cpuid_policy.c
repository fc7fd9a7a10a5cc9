/* What a VM's CPUID shows of the host's: a pure function of the host's
 * words (vmm/cpuid.h), one allow-list per leaf and register. The reason for
 * every bit, and what works for each shown feature, is docs/CPUID.md; the
 * comments here name the hidden bits that have a reason beyond "lightpath
 * does not emulate its MSRs". */
#include "vmm/cpuid.h"

#define B(n) (1u << (n))

/* CPUID.1:ECX: SSE3, PCLMULQDQ, SSSE3, FMA, CMPXCHG16B, PCID, SSE4.1/4.2,
 * x2APIC, MOVBE, POPCNT, TSC-deadline, AES, XSAVE, AVX, F16C, RDRAND,
 * hypervisor. Hidden: DTES64, MONITOR, DS-CPL, VMX, SMX, EST, TM2,
 * CNXT-ID, SDBG, xTPR, PDCM, DCA (and OSXSAVE, which follows CR4). */
#define LEAF1_ECX (B(0) | B(1) | B(9) | B(12) | B(13) | B(17) | B(19) | B(20) | B(21) | B(22) | \
		   B(23) | B(24) | B(25) | B(26) | B(28) | B(29) | B(30) | B(31))
/* CPUID.1:EDX: FPU, VME, DE, PSE, TSC, MSR, PAE, CX8, APIC, SEP, MTRR, PGE,
 * CMOV, PAT, PSE-36, CLFSH, MMX, FXSR, SSE, SSE2, SS, HTT. Hidden: MCE,
 * MCA (no machine-check MSRs), PSN, DS, ACPI, TM, PBE. */
#define LEAF1_EDX (B(0) | B(1) | B(2) | B(3) | B(4) | B(5) | B(6) | B(8) | B(9) | B(11) | \
		   B(12) | B(13) | B(15) | B(16) | B(17) | B(19) | B(23) | B(24) | B(25) | B(26) | \
		   B(27) | B(28))
/* CPUID.7.0:EBX: all but SGX, RDT-M, MPX, RDT-A, PCOMMIT and PT. */
#define LEAF7_EBX (~(B(2) | B(12) | B(14) | B(15) | B(22) | B(25)))
/* CPUID.7.0:ECX: PREFETCHWT1, AVX512_VBMI, UMIP, PKU, AVX512_VBMI2, GFNI,
 * VAES, VPCLMULQDQ, AVX512_VNNI, AVX512_BITALG, AVX512_VPOPCNTDQ, RDPID,
 * CLDEMOTE, MOVDIRI, MOVDIR64B. Hidden: WAITPKG (VT-x leaves it #UD), CET,
 * TME, LA57 (lightpath's guest page walk has four levels), Key Locker,
 * bus-lock detection, ENQCMD, SGX_LC, PKS (and OSPKE, which follows CR4). */
#define LEAF7_ECX (B(0) | B(1) | B(2) | B(3) | B(6) | B(8) | B(9) | B(10) | B(11) | B(12) | \
		   B(14) | B(22) | B(25) | B(27) | B(28))
/* CPUID.7.0:EDX: AVX512_4VNNIW/4FMAPS, FSRM, VP2INTERSECT, MD_CLEAR,
 * RTM_ALWAYS_ABORT, SERIALIZE, TSXLDTRK, AVX512_FP16; IBRS/IBPB, STIBP and
 * SSBD only as spec_leaf7_edx says. Hidden: UINTR, SRBDS_CTRL,
 * TSX_FORCE_ABORT, HYBRID, PCONFIG, arch LBR, CET_IBT, AMX,
 * L1D_FLUSH, ARCH_CAPABILITIES, CORE_CAPABILITIES. */
#define LEAF7_EDX (B(2) | B(3) | B(4) | B(8) | B(10) | B(11) | B(14) | B(16) | B(23))
#define LEAF7_EDX_SPEC (B(26) | B(27) | B(31))
/* CPUID.7.1:EAX: AVX-VNNI, AVX512_BF16, CMPCCXADD, fast zero-length MOVSB,
 * fast short STOSB/CMPSB, AVX-IFMA. Hidden: FRED, LKGS, WRMSRNS, AMX-FP16,
 * HRESET, LAM and the rest. EDX: AVX-VNNI-INT8, AVX-NE-CONVERT,
 * AVX-VNNI-INT16, PREFETCHI (not AVX10: leaf 24H is not passed). */
#define LEAF7_1_EAX (B(4) | B(5) | B(7) | B(10) | B(11) | B(12) | B(23))
#define LEAF7_1_EDX (B(4) | B(5) | B(10) | B(14))
/* CPUID.7.2:EDX: MCDT_NO only (the others are IA32_SPEC_CTRL bits). */
#define LEAF7_2_EDX B(5)
/* CPUID.6:EAX: ARAT (the emulated local APIC timer does not stop). */
#define LEAF6_EAX B(2)
/* CPUID.(0DH,1):EAX: XSAVEOPT, XSAVEC, XGETBV with ECX=1. Hidden: XSAVES
 * (no IA32_XSS; VT-x leaves XSAVES #UD), XFD. */
#define LEAFD_1_EAX (B(0) | B(1) | B(2))
/* CPUID.80000001H:ECX: LAHF/SAHF, CmpLegacy, AltMovCr8, ABM/LZCNT, SSE4A,
 * MisAlignSse, 3DNowPrefetch, XOP, FMA4, TBM, TopologyExtensions. Hidden:
 * SVM, ExtApicSpace, OSVW, IBS, SKINIT, WDT, LWP, TCE (Bochs' ryzen shows
 * it but its VMRUN refuses EFER.TCE; no OS needs it), NodeId,
 * PerfCtrExtCore/NB/LLC, DataBkptExt, PerfTsc, MONITORX, AdMskExtn. */
#define LEAF81_ECX (B(0) | B(1) | B(4) | B(5) | B(6) | B(7) | B(8) | B(11) | B(16) | B(21) | \
		    B(22))
/* CPUID.80000001H:EDX: the duplicates of CPUID.1:EDX (not MCE, MCA),
 * SYSCALL, NX, MmxExt, FFXSR (EFER.FFXSR works), Page1GB, RDTSCP, LM,
 * 3DNowExt, 3DNow. */
#define LEAF81_EDX (B(0) | B(1) | B(2) | B(3) | B(4) | B(5) | B(6) | B(8) | B(9) | B(11) | \
		    B(12) | B(13) | B(15) | B(16) | B(17) | B(20) | B(22) | B(23) | B(24) | B(25) | \
		    B(26) | B(27) | B(29) | B(30) | B(31))
/* CPUID.80000007H:EDX: invariant TSC only (no power-management MSRs). */
#define LEAF87_EDX B(8)
/* CPUID.80000008H:EBX: CLZERO, XSaveErPtr, WBNOINVD, SSB_NO, BTC_NO; the
 * IBPB/IBRS/STIBP/SSBD bits only as spec_ext8_ebx says, and the IBRS and
 * STIBP mode hints (16-19) and IBPB_RET only with them. Hidden: IRPERF,
 * INVLPGB, RDPRU, MCOMMIT, PPIN, VIRT_SSBD, CPPC, PSFD. */
#define LEAF88_EBX (B(0) | B(2) | B(9) | B(26) | B(29))
#define LEAF88_EBX_SPEC (B(12) | B(14) | B(15) | B(24))
#define LEAF88_EBX_IBRS_HINTS (B(16) | B(17) | B(18) | B(19))
#define LEAF88_EBX_IBPB_RET B(30)
/* CPUID.80000021H:EAX: NoNestedDataBp, LFENCE always serializing,
 * NullSelectClearsBase, NoSmmCtlMsr, FSRS, FSRC, IBPB_BRTYPE, SRSO_NO,
 * SRSO_USER_KERNEL_NO. Hidden: UpperAddressIgnore and Automatic IBRS
 * (EFER bits), the prefetch-control and CPUID-faulting MSRs, SBPB. */
#define LEAF821_EAX (B(0) | B(2) | B(6) | B(9) | B(10) | B(11) | B(28) | B(29) | B(30))

static void zero(uint32_t r[4])
{
	r[0] = r[1] = r[2] = r[3] = 0;
}

static void basic(const struct cpuid_host *h, uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	switch (leaf) {
	case 0: case 2: case 4: case 0x15: case 0x16: case 0x18:
		return;                                /* vendor, caches, TSC and TLB information */
	case 1:
		r[1] &= 0x00ffffffu;                   /* initial APIC ID 0 */
		r[2] = (r[2] & LEAF1_ECX) | CPUID1_ECX_HYPERVISOR |
		       CPUID1_ECX_X2APIC | CPUID1_ECX_TSC_DEADLINE;   /* the emulated local APIC's */
		r[3] = (r[3] & LEAF1_EDX) | CPUID1_EDX_APIC;
		return;
	case 6:
		r[0] &= LEAF6_EAX;
		r[1] = r[2] = r[3] = 0;
		return;
	case 7:
		if (sub == 0) {
			r[0] = r[0] < 2 ? r[0] : 2;
			r[1] &= LEAF7_EBX;
			r[2] &= LEAF7_ECX;
			r[3] = (r[3] & LEAF7_EDX) | (r[3] & h->spec_leaf7_edx & LEAF7_EDX_SPEC);
		} else if (sub == 1) {
			r[0] &= LEAF7_1_EAX;
			r[1] = r[2] = 0;
			r[3] &= LEAF7_1_EDX;
		} else if (sub == 2) {
			r[0] = r[1] = r[2] = 0;
			r[3] &= LEAF7_2_EDX;
		} else {
			zero(r);
		}
		return;
	case 0xb: case 0x1f:
		r[3] = 0;                              /* x2APIC ID 0 */
		return;
	case 0xd:
		if (sub == 0) {
			r[0] = (uint32_t)h->xcr0;
			r[3] = (uint32_t)(h->xcr0 >> 32);
			r[2] = h->xsave_size;          /* EBX: the CPU's, for the guest's XCR0 */
		} else if (sub == 1) {
			r[0] &= LEAFD_1_EAX;           /* EBX: exit_cpuid computes it for the XCR0 */
			r[2] = r[3] = 0;               /* no supervisor components */
		} else if (sub >= 64 || !(h->xcr0 >> sub & 1)) {
			zero(r);
		}
		return;
	default:
		/* MONITOR (5), PMU (0AH: no architectural PMU), RDT, SGX, PT,
		 * Key Locker, hybrid, PCONFIG, arch LBR, AMX, AVX10... */
		zero(r);
	}
}

static void extended(const struct cpuid_host *h, uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	(void)sub;
	bool ibrs = h->spec_ext8_ebx & B(14), ibpb = h->spec_ext8_ebx & B(12);
	switch (leaf) {
	case 0x80000000u: case 0x80000002u: case 0x80000003u: case 0x80000004u:
	case 0x80000005u: case 0x80000006u: case 0x80000019u: case 0x8000001au:
	case 0x8000001du:
		return;                                /* brand string, caches and TLBs */
	case 0x80000001u:
		r[2] &= LEAF81_ECX;
		r[3] &= LEAF81_EDX;
		return;
	case 0x80000007u:
		r[0] = r[1] = r[2] = 0;
		r[3] &= LEAF87_EDX;
		return;
	case 0x80000008u:
		r[1] = (r[1] & LEAF88_EBX) | (r[1] & h->spec_ext8_ebx & LEAF88_EBX_SPEC) |
		       (ibrs ? r[1] & LEAF88_EBX_IBRS_HINTS : 0) |
		       (ibpb ? r[1] & LEAF88_EBX_IBPB_RET : 0);
		if (!h->intel)
			r[1] |= CPUID88_EBX_LMSLE_UNSUPPORTED;   /* EFER.LMSLE is #GP */
		r[2] &= 0xf0ffu;                   /* core count, APIC ID size; no PerfTsc */
		r[3] = 0;                          /* no INVLPGB, no RDPRU */
		return;
	case 0x8000001eu:
		r[0] = 0;                          /* extended APIC ID 0 */
		r[1] &= 0xff00u;                   /* threads per core; compute unit 0 */
		r[2] &= 0x700u;                    /* nodes per processor; node 0 */
		r[3] = 0;
		return;
	case 0x80000021u:
		r[0] &= LEAF821_EAX;
		r[1] = r[2] = r[3] = 0;
		return;
	default:
		/* SVM (0AH), IBS (1BH), LWP (1CH), SEV (1FH), PQoS (20H),
		 * PerfMonV2 (22H)... */
		zero(r);
	}
}

void cpuid_policy_apply(const struct cpuid_host *h, uint32_t leaf, uint32_t subleaf,
			uint32_t r[4])
{
	if (leaf & 0x80000000u) {
		if (leaf > h->max_ext || leaf >= 0x80000100u)
			zero(r);
		else
			extended(h, leaf, subleaf, r);
	} else if (leaf > h->max_basic || leaf >= 0x100u) {
		zero(r);
	} else {
		basic(h, leaf, subleaf, r);
	}
}

uint32_t cpuid_xsave_size(uint64_t xcr0, const uint32_t offset[64], const uint32_t size[64])
{
	uint32_t end = 576;                /* legacy area and XSAVE header */
	for (unsigned i = 2; i < 64; i++)
		if ((xcr0 >> i & 1) && offset[i] + size[i] > end)
			end = offset[i] + size[i];
	return end;
}

uint32_t cpuid_xsave_compacted_size(uint64_t xfeatures, const uint32_t size[64], uint64_t align64)
{
	uint32_t end = 576;                /* legacy area and XSAVE header */
	for (unsigned i = 2; i < 64; i++) {
		if (!(xfeatures >> i & 1))
			continue;
		if (align64 >> i & 1)
			end = (end + 63) & ~63u;
		end += size[i];
	}
	return end;
}
