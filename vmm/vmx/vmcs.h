/* Intel VMX: VMCS field encodings, control bits, exit reasons and the
 * capability MSRs (Intel SDM vol. 3, appendices A-C), every one named. */
#ifndef VMM_VMX_VMCS_H
#define VMM_VMX_VMCS_H

#include <stdint.h>

/* ---- capability and control MSRs ---- */
#define MSR_IA32_FEATURE_CONTROL     0x03au
#define MSR_IA32_PMC0                0x0c1u  /* general-purpose counters 0..3 */
#define MSR_IA32_PERFEVTSEL0         0x186u  /* their event selects */
#define MSR_IA32_VMX_BASIC           0x480u
#define MSR_IA32_VMX_PINBASED_CTLS   0x481u
#define MSR_IA32_VMX_PROCBASED_CTLS  0x482u
#define MSR_IA32_VMX_EXIT_CTLS       0x483u
#define MSR_IA32_VMX_ENTRY_CTLS      0x484u
#define MSR_IA32_VMX_MISC            0x485u
#define MSR_IA32_VMX_CR0_FIXED0      0x486u
#define MSR_IA32_VMX_CR0_FIXED1      0x487u
#define MSR_IA32_VMX_CR4_FIXED0      0x488u
#define MSR_IA32_VMX_CR4_FIXED1      0x489u
#define MSR_IA32_VMX_PROCBASED_CTLS2 0x48bu
#define MSR_IA32_VMX_EPT_VPID_CAP    0x48cu
#define MSR_IA32_VMX_TRUE_PINBASED   0x48du
#define MSR_IA32_VMX_TRUE_PROCBASED  0x48eu
#define MSR_IA32_VMX_TRUE_EXIT       0x48fu
#define MSR_IA32_VMX_TRUE_ENTRY      0x490u

#define FEATURE_CONTROL_LOCK         (1ull << 0)
#define FEATURE_CONTROL_VMX_OUTSIDE_SMX (1ull << 2)
#define VMX_BASIC_TRUE_CTLS          (1ull << 55)
#define VMX_MISC_UNRESTRICTED_LMA    (1ull << 5)   /* EFER.LMA stored on exit */
#define EPT_CAP_WB                   (1ull << 14)
#define EPT_CAP_PAGEWALK4            (1ull << 6)
#define EPT_CAP_2M                   (1ull << 16)
#define EPT_CAP_INVEPT               (1ull << 20)
#define EPT_CAP_INVEPT_SINGLE        (1ull << 25)
#define EPT_CAP_INVEPT_ALL           (1ull << 26)
#define VPID_CAP_INVVPID             (1ull << 32)
#define VPID_CAP_INVVPID_SINGLE      (1ull << 41)
#define VPID_CAP_INVVPID_ALL         (1ull << 42)

#define CR4_VMXE                     (1ull << 13)

/* ---- 16-bit fields ---- */
#define VMCS_VPID                    0x0000u
#define VMCS_GUEST_ES_SEL            0x0800u   /* ES, CS, SS, DS, FS, GS, LDTR, TR: +2 each */
#define VMCS_GUEST_CS_SEL            0x0802u
#define VMCS_GUEST_SS_SEL            0x0804u
#define VMCS_GUEST_DS_SEL            0x0806u
#define VMCS_GUEST_FS_SEL            0x0808u
#define VMCS_GUEST_GS_SEL            0x080au
#define VMCS_GUEST_LDTR_SEL          0x080cu
#define VMCS_GUEST_TR_SEL            0x080eu
#define VMCS_GUEST_INTR_STATUS       0x0810u   /* RVI (7:0), SVI (15:8) */
#define VMCS_HOST_ES_SEL             0x0c00u
#define VMCS_HOST_CS_SEL             0x0c02u
#define VMCS_HOST_SS_SEL             0x0c04u
#define VMCS_HOST_DS_SEL             0x0c06u
#define VMCS_HOST_FS_SEL             0x0c08u
#define VMCS_HOST_GS_SEL             0x0c0au
#define VMCS_HOST_TR_SEL             0x0c0cu

/* ---- 64-bit fields ---- */
#define VMCS_IO_BITMAP_A             0x2000u
#define VMCS_IO_BITMAP_B             0x2002u
#define VMCS_MSR_BITMAP              0x2004u
#define VMCS_EXIT_MSR_STORE_ADDR     0x2006u
#define VMCS_EXIT_MSR_LOAD_ADDR      0x2008u
#define VMCS_ENTRY_MSR_LOAD_ADDR     0x200au
#define VMCS_TSC_OFFSET              0x2010u
#define VMCS_VIRTUAL_APIC_PAGE       0x2012u
#define VMCS_APIC_ACCESS_ADDR        0x2014u
#define VMCS_EOI_EXIT_BITMAP0        0x201cu   /* vectors 0-63; 1-3 follow, +2 each */
#define VMCS_EPT_POINTER             0x201au
#define VMCS_GUEST_PHYS_ADDR         0x2400u
#define VMCS_LINK_POINTER            0x2800u
#define VMCS_GUEST_DEBUGCTL          0x2802u
#define VMCS_GUEST_PAT               0x2804u
#define VMCS_GUEST_EFER              0x2806u
#define VMCS_GUEST_PERF_GLOBAL_CTRL  0x2808u
#define VMCS_HOST_PAT                0x2c00u
#define VMCS_HOST_EFER               0x2c02u
#define VMCS_HOST_PERF_GLOBAL_CTRL   0x2c04u

/* ---- 32-bit fields ---- */
#define VMCS_PIN_CONTROLS            0x4000u
#define VMCS_PROC_CONTROLS           0x4002u
#define VMCS_EXCEPTION_BITMAP        0x4004u
#define VMCS_PF_ERROR_MASK           0x4006u
#define VMCS_PF_ERROR_MATCH          0x4008u
#define VMCS_CR3_TARGET_COUNT        0x400au
#define VMCS_EXIT_CONTROLS           0x400cu
#define VMCS_EXIT_MSR_STORE_COUNT    0x400eu
#define VMCS_EXIT_MSR_LOAD_COUNT     0x4010u
#define VMCS_ENTRY_CONTROLS          0x4012u
#define VMCS_ENTRY_MSR_LOAD_COUNT    0x4014u
#define VMCS_ENTRY_INTR_INFO         0x4016u
#define VMCS_ENTRY_EXCEPTION_ERRCODE 0x4018u
#define VMCS_ENTRY_INSN_LEN          0x401au
#define VMCS_TPR_THRESHOLD           0x401cu
#define VMCS_PROC_CONTROLS2          0x401eu
#define VMCS_INSN_ERROR              0x4400u
#define VMCS_EXIT_REASON             0x4402u
#define VMCS_EXIT_INTR_INFO          0x4404u
#define VMCS_EXIT_INTR_ERRCODE       0x4406u
#define VMCS_IDT_VECTORING_INFO      0x4408u
#define VMCS_IDT_VECTORING_ERRCODE   0x440au
#define VMCS_EXIT_INSN_LEN           0x440cu
#define VMCS_EXIT_INSN_INFO          0x440eu
#define VMCS_GUEST_ES_LIMIT          0x4800u   /* ES..TR: +2 each */
#define VMCS_GUEST_CS_LIMIT          0x4802u
#define VMCS_GUEST_SS_LIMIT          0x4804u
#define VMCS_GUEST_DS_LIMIT          0x4806u
#define VMCS_GUEST_FS_LIMIT          0x4808u
#define VMCS_GUEST_GS_LIMIT          0x480au
#define VMCS_GUEST_LDTR_LIMIT        0x480cu
#define VMCS_GUEST_TR_LIMIT          0x480eu
#define VMCS_GUEST_GDTR_LIMIT        0x4810u
#define VMCS_GUEST_IDTR_LIMIT        0x4812u
#define VMCS_GUEST_ES_AR             0x4814u   /* ES..TR: +2 each */
#define VMCS_GUEST_CS_AR             0x4816u
#define VMCS_GUEST_SS_AR             0x4818u
#define VMCS_GUEST_DS_AR             0x481au
#define VMCS_GUEST_FS_AR             0x481cu
#define VMCS_GUEST_GS_AR             0x481eu
#define VMCS_GUEST_LDTR_AR           0x4820u
#define VMCS_GUEST_TR_AR             0x4822u
#define VMCS_GUEST_INTERRUPTIBILITY  0x4824u
#define VMCS_GUEST_ACTIVITY_STATE    0x4826u
#define VMCS_GUEST_SMBASE            0x4828u
#define VMCS_GUEST_SYSENTER_CS       0x482au
#define VMCS_PREEMPTION_TIMER        0x482eu
#define VMCS_HOST_SYSENTER_CS        0x4c00u

/* ---- natural-width fields ---- */
#define VMCS_CR0_GUEST_HOST_MASK     0x6000u
#define VMCS_CR4_GUEST_HOST_MASK     0x6002u
#define VMCS_CR0_READ_SHADOW         0x6004u
#define VMCS_CR4_READ_SHADOW         0x6006u
#define VMCS_EXIT_QUALIFICATION      0x6400u
#define VMCS_GUEST_LINEAR_ADDR       0x640au
#define VMCS_GUEST_CR0               0x6800u
#define VMCS_GUEST_CR3               0x6802u
#define VMCS_GUEST_CR4               0x6804u
#define VMCS_GUEST_ES_BASE           0x6806u   /* ES..TR: +2 each */
#define VMCS_GUEST_CS_BASE           0x6808u
#define VMCS_GUEST_SS_BASE           0x680au
#define VMCS_GUEST_DS_BASE           0x680cu
#define VMCS_GUEST_FS_BASE           0x680eu
#define VMCS_GUEST_GS_BASE           0x6810u
#define VMCS_GUEST_LDTR_BASE         0x6812u
#define VMCS_GUEST_TR_BASE           0x6814u
#define VMCS_GUEST_GDTR_BASE         0x6816u
#define VMCS_GUEST_IDTR_BASE         0x6818u
#define VMCS_GUEST_DR7               0x681au
#define VMCS_GUEST_RSP               0x681cu
#define VMCS_GUEST_RIP               0x681eu
#define VMCS_GUEST_RFLAGS            0x6820u
#define VMCS_GUEST_PENDING_DBG       0x6822u
#define VMCS_GUEST_SYSENTER_ESP      0x6824u
#define VMCS_GUEST_SYSENTER_EIP      0x6826u
#define VMCS_HOST_CR0                0x6c00u
#define VMCS_HOST_CR3                0x6c02u
#define VMCS_HOST_CR4                0x6c04u
#define VMCS_HOST_FS_BASE            0x6c06u
#define VMCS_HOST_GS_BASE            0x6c08u
#define VMCS_HOST_TR_BASE            0x6c0au
#define VMCS_HOST_GDTR_BASE          0x6c0cu
#define VMCS_HOST_IDTR_BASE          0x6c0eu
#define VMCS_HOST_SYSENTER_ESP       0x6c10u
#define VMCS_HOST_SYSENTER_EIP       0x6c12u
#define VMCS_HOST_RSP                0x6c14u
#define VMCS_HOST_RIP                0x6c16u

/* ---- pin-based controls ---- */
#define PIN_EXT_INTR_EXITING         (1u << 0)
#define PIN_NMI_EXITING              (1u << 3)
#define PIN_VIRTUAL_NMIS             (1u << 5)
#define PIN_PREEMPTION_TIMER         (1u << 6)
#define PIN_POSTED_INTERRUPTS        (1u << 7)
/* ---- primary processor-based controls ---- */
#define PROC_INTR_WINDOW_EXITING     (1u << 2)
#define PROC_USE_TSC_OFFSETTING      (1u << 3)
#define PROC_HLT_EXITING             (1u << 7)
#define PROC_INVLPG_EXITING          (1u << 9)
#define PROC_MWAIT_EXITING           (1u << 10)
#define PROC_RDPMC_EXITING           (1u << 11)
#define PROC_RDTSC_EXITING           (1u << 12)
#define PROC_CR3_LOAD_EXITING        (1u << 15)
#define PROC_CR3_STORE_EXITING       (1u << 16)
#define PROC_CR8_LOAD_EXITING        (1u << 19)
#define PROC_CR8_STORE_EXITING       (1u << 20)
#define PROC_USE_TPR_SHADOW          (1u << 21)
#define PROC_NMI_WINDOW_EXITING      (1u << 22)
#define PROC_MOV_DR_EXITING          (1u << 23)
#define PROC_UNCOND_IO_EXITING       (1u << 24)
#define PROC_USE_IO_BITMAPS          (1u << 25)
#define PROC_USE_MSR_BITMAPS         (1u << 28)
#define PROC_MONITOR_EXITING         (1u << 29)
#define PROC_SECONDARY_CONTROLS      (1u << 31)
/* The instructions that would reach the physical CPU (docs/SECURITY.md):
 * MONITOR/MWAIT (#UD), RDPMC (#GP) */
#define VMX_PROC_GUEST_INSN_EXITS    (PROC_MWAIT_EXITING | PROC_MONITOR_EXITING | \
				      PROC_RDPMC_EXITING)
/* MOV to/from CR8 reaches the physical TPR unless it exits (then it is
 * emulated on the VM's local APIC) or the TPR shadow takes it */
#define VMX_PROC_CR8_EXITS           (PROC_CR8_LOAD_EXITING | PROC_CR8_STORE_EXITING)
/* ---- secondary processor-based controls ---- */
#define PROC2_VIRTUALIZE_APIC_ACCESS (1u << 0)
#define PROC2_ENABLE_EPT             (1u << 1)
#define PROC2_ENABLE_RDTSCP          (1u << 3)
#define PROC2_VIRTUALIZE_X2APIC      (1u << 4)
#define PROC2_ENABLE_VPID            (1u << 5)
#define PROC2_WBINVD_EXITING         (1u << 6)
#define PROC2_UNRESTRICTED_GUEST     (1u << 7)
#define PROC2_APIC_REGISTER_VIRT     (1u << 8)
#define PROC2_VIRTUAL_INTR_DELIVERY  (1u << 9)
#define PROC2_ENABLE_INVPCID         (1u << 12)
#define PROC2_ENABLE_XSAVES          (1u << 20)
/* ---- VM-exit controls ---- */
#define EXIT_SAVE_DEBUG_CONTROLS     (1u << 2)
#define EXIT_HOST_ADDR_SPACE_SIZE    (1u << 9)
#define EXIT_ACK_INTR_ON_EXIT        (1u << 15)
#define EXIT_SAVE_PAT                (1u << 18)
#define EXIT_LOAD_PAT                (1u << 19)
#define EXIT_SAVE_EFER               (1u << 20)
#define EXIT_SAVE_PREEMPTION_TIMER   (1u << 22)
#define EXIT_LOAD_EFER               (1u << 21)
/* ---- VM-entry controls ---- */
#define ENTRY_LOAD_DEBUG_CONTROLS    (1u << 2)
#define ENTRY_IA32E_MODE_GUEST       (1u << 9)
#define ENTRY_LOAD_PAT               (1u << 14)
#define ENTRY_LOAD_EFER              (1u << 15)

/* ---- basic exit reasons (exit reason bits 15:0) ---- */
#define VMX_EXIT_EXCEPTION_NMI       0
#define VMX_EXIT_EXT_INTR            1
#define VMX_EXIT_TRIPLE_FAULT        2
#define VMX_EXIT_INIT                3
#define VMX_EXIT_SIPI                4
#define VMX_EXIT_INTR_WINDOW         7
#define VMX_EXIT_NMI_WINDOW          8
#define VMX_EXIT_TASK_SWITCH         9
#define VMX_EXIT_CPUID               10
#define VMX_EXIT_GETSEC              11
#define VMX_EXIT_HLT                 12
#define VMX_EXIT_INVD                13
#define VMX_EXIT_INVLPG              14
#define VMX_EXIT_RDPMC               15
#define VMX_EXIT_RDTSC               16
#define VMX_EXIT_RSM                 17
#define VMX_EXIT_VMCALL              18
#define VMX_EXIT_VMCLEAR             19
#define VMX_EXIT_VMLAUNCH            20
#define VMX_EXIT_VMPTRLD             21
#define VMX_EXIT_VMPTRST             22
#define VMX_EXIT_VMREAD              23
#define VMX_EXIT_VMRESUME            24
#define VMX_EXIT_VMWRITE             25
#define VMX_EXIT_VMXOFF              26
#define VMX_EXIT_VMXON               27
#define VMX_EXIT_CR_ACCESS           28
#define VMX_EXIT_MOV_DR              29
#define VMX_EXIT_IO                  30
#define VMX_EXIT_RDMSR               31
#define VMX_EXIT_WRMSR               32
#define VMX_EXIT_INVALID_GUEST_STATE 33
#define VMX_EXIT_MSR_LOADING         34
#define VMX_EXIT_MWAIT               36
#define VMX_EXIT_MONITOR_TRAP        37
#define VMX_EXIT_MONITOR             39
#define VMX_EXIT_PAUSE               40
#define VMX_EXIT_MACHINE_CHECK       41
#define VMX_EXIT_TPR_BELOW_THRESHOLD 43
#define VMX_EXIT_APIC_ACCESS         44   /* fault-like; qualification: offset, access type */
#define VMX_EXIT_EOI_INDUCED         45   /* trap-like; qualification: the vector */
#define VMX_EXIT_EPT_VIOLATION       48
#define VMX_EXIT_EPT_MISCONFIG       49
#define VMX_EXIT_INVEPT              50
#define VMX_EXIT_RDTSCP              51
#define VMX_EXIT_PREEMPTION_TIMER    52
#define VMX_EXIT_INVVPID             53
#define VMX_EXIT_WBINVD              54
#define VMX_EXIT_XSETBV              55
#define VMX_EXIT_APIC_WRITE          56   /* trap-like; qualification: the offset */
#define VMX_EXIT_VMFUNC              59
#define VMX_EXIT_REASON_ENTRY_FAIL   (1u << 31)

/* ---- exit qualification of an I/O exit (reason 30) ---- */
#define VMX_IOQ_SIZE_MASK            0x7u      /* size - 1 */
#define VMX_IOQ_IN                   (1u << 3)
#define VMX_IOQ_STRING               (1u << 4)
#define VMX_IOQ_REP                  (1u << 5)
#define VMX_IOQ_PORT_SHIFT           16
/* ---- exit qualification of a MOV DR exit ---- */
#define VMX_DRQ_FROM_DR              (1u << 4)

/* ---- event injection (VM-entry interruption information) ---- */
#define VMX_INTR_INFO_VALID          (1u << 31)
#define VMX_INTR_INFO_ERRCODE        (1u << 11)
#define VMX_INTR_TYPE_EXT_INTR       (0u << 8)
#define VMX_INTR_TYPE_NMI            (2u << 8)
#define VMX_INTR_TYPE_HW_EXCEPTION   (3u << 8)
#define VMX_INTR_TYPE_PRIV_SW_EXCEPTION (5u << 8)   /* INT1 (ICEBP) */
#define VMX_INTR_TYPE_MASK           (7u << 8)
/* exit interruption information, and an EPT violation's qualification: the
 * exit came in the middle of an IRET that had ended (virtual-)NMI blocking */
#define VMX_NMI_UNBLOCKED_BY_IRET    (1u << 12)
#define VMX_INTR_VECTOR_MASK         0xffu

/* ---- the exception bitmap: one bit per vector ---- */
#define VMX_EXC_DB                   (1u << 1)    /* #DB: its delivery can loop (CVE-2015-8104) */
#define VMX_EXC_AC                   (1u << 17)   /* #AC: its delivery can loop (CVE-2015-5307) */
/* exceptions whose delivery can fault again forever inside the CPU:
 * intercepted, so that each round is a VM exit (reflected, vmm/vmx/exits.c) */
#define VMX_EXC_INTERCEPTS           (VMX_EXC_DB | VMX_EXC_AC)

/* ---- every exiting control a vCPU may have ----
 * The vCPU's set-up (vmm/vmx/vcpu.c) sets some of these as the options and
 * the CPU choose, the run loop switches others (the interrupt and NMI
 * windows, the VM's clock, dr=lazy's first use); at boot the exit table is
 * checked to have a row for each exit these can produce
 * (vendor_intercept_spans). */
#define VMX_PIN_INTERCEPTS (PIN_EXT_INTR_EXITING | PIN_NMI_EXITING | PIN_PREEMPTION_TIMER)
#define VMX_PROC_INTERCEPTS                                                                \
	(PROC_HLT_EXITING | PROC_USE_IO_BITMAPS | PROC_USE_MSR_BITMAPS | PROC_MOV_DR_EXITING | \
	 PROC_USE_TPR_SHADOW | VMX_PROC_CR8_EXITS | VMX_PROC_GUEST_INSN_EXITS |               \
	 PROC_INTR_WINDOW_EXITING | PROC_NMI_WINDOW_EXITING | PROC_RDTSC_EXITING)
#define VMX_PROC2_INTERCEPTS                                                                \
	(PROC2_ENABLE_EPT | PROC2_ENABLE_RDTSCP | PROC2_WBINVD_EXITING |                      \
	 PROC2_VIRTUALIZE_APIC_ACCESS | PROC2_APIC_REGISTER_VIRT | PROC2_VIRTUAL_INTR_DELIVERY)

/* ---- exit qualification of a #DB exit: the DR6 bits the CPU did not write ---- */
#define VMX_DBQ_DR6_BITS             0x600full    /* B0-B3, BD (13), BS (14) */
#define VMX_PENDING_DBG_BS           (1ull << 14)

/* ---- guest interruptibility state ---- */
#define VMX_INTERRUPTIBILITY_STI     (1u << 0)
#define VMX_INTERRUPTIBILITY_MOV_SS  (1u << 1)
#define VMX_INTERRUPTIBILITY_NMI     (1u << 3)

/* ---- segment access rights ---- */
#define VMX_AR_L                     (1u << 13)   /* 64-bit code segment */
#define VMX_AR_DB                    (1u << 14)   /* default operand size 32 */
#define VMX_AR_UNUSABLE              (1u << 16)

/* ---- EPT entries ---- */
#define EPT_RWX                      0x7ull
#define EPT_MEMTYPE_WB               (6ull << 3)
#define EPT_LARGE                    (1ull << 7)
#define EPTP_WB                      6ull
#define EPTP_WALK4                   (3ull << 3)

#endif
