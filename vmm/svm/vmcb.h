/* AMD SVM VMCB layout (AMD APM vol. 2, appendix B), every field named, the
 * layout asserted at compile time. */
#ifndef VMM_SVM_VMCB_H
#define VMM_SVM_VMCB_H

#include <stddef.h>
#include <stdint.h>

struct vmcb_seg {
	uint16_t sel;
	uint16_t attrib;
	uint32_t limit;
	uint64_t base;
};

struct vmcb {
	/* control area */
	uint32_t intercept_cr;        /* 0x000: reads 15:0, writes 31:16 */
	uint32_t intercept_dr;        /* 0x004: reads 15:0, writes 31:16 */
	uint32_t intercept_exc;       /* 0x008 */
	uint32_t intercept_misc1;     /* 0x00c */
	uint32_t intercept_misc2;     /* 0x010 */
	uint32_t intercept_misc3;     /* 0x014 */
	uint8_t rsvd0[0x03c - 0x018];
	uint16_t pause_filter_thresh; /* 0x03c */
	uint16_t pause_filter_count;  /* 0x03e */
	uint64_t iopm_base_pa;        /* 0x040 */
	uint64_t msrpm_base_pa;       /* 0x048 */
	uint64_t tsc_offset;          /* 0x050 */
	uint32_t asid;                /* 0x058 */
	uint8_t tlb_control;          /* 0x05c */
	uint8_t rsvd1[3];
	uint64_t int_ctl;             /* 0x060 */
	uint64_t int_state;           /* 0x068: bit 0 interrupt shadow */
	uint64_t exitcode;            /* 0x070 */
	uint64_t exitinfo1;           /* 0x078 */
	uint64_t exitinfo2;           /* 0x080 */
	uint64_t exitintinfo;         /* 0x088 */
	uint64_t np_enable;           /* 0x090 */
	uint64_t avic_apic_bar;       /* 0x098 */
	uint64_t ghcb_pa;             /* 0x0a0 */
	uint64_t eventinj;            /* 0x0a8 */
	uint64_t n_cr3;               /* 0x0b0 */
	uint64_t virt_ext;            /* 0x0b8: LBR virtualization, virtual VMLOAD/VMSAVE */
	uint32_t clean_bits;          /* 0x0c0 */
	uint32_t rsvd2;
	uint64_t nrip;                /* 0x0c8 */
	uint8_t insn_len;             /* 0x0d0 */
	uint8_t insn_bytes[15];       /* 0x0d1 */
	uint8_t rsvd3[0x400 - 0x0e0];

	/* state save area */
	struct vmcb_seg es, cs, ss, ds, fs, gs, gdtr, ldtr, idtr, tr; /* 0x400 */
	uint8_t rsvd4[0x4cb - 0x4a0];
	uint8_t cpl;                  /* 0x4cb */
	uint32_t rsvd5;
	uint64_t efer;                /* 0x4d0 */
	uint8_t rsvd6[0x548 - 0x4d8];
	uint64_t cr4;                 /* 0x548 */
	uint64_t cr3;                 /* 0x550 */
	uint64_t cr0;                 /* 0x558 */
	uint64_t dr7;                 /* 0x560 */
	uint64_t dr6;                 /* 0x568 */
	uint64_t rflags;              /* 0x570 */
	uint64_t rip;                 /* 0x578 */
	uint8_t rsvd7[0x5d8 - 0x580];
	uint64_t rsp;                 /* 0x5d8 */
	uint64_t s_cet, ssp, isst_addr;
	uint64_t rax;                 /* 0x5f8 */
	uint64_t star;                /* 0x600 */
	uint64_t lstar;               /* 0x608 */
	uint64_t cstar;               /* 0x610 */
	uint64_t sfmask;              /* 0x618 */
	uint64_t kernel_gs_base;      /* 0x620 */
	uint64_t sysenter_cs;         /* 0x628 */
	uint64_t sysenter_esp;        /* 0x630 */
	uint64_t sysenter_eip;        /* 0x638 */
	uint64_t cr2;                 /* 0x640 */
	uint8_t rsvd8[0x668 - 0x648];
	uint64_t g_pat;               /* 0x668 */
	uint64_t dbgctl;              /* 0x670 */
	uint8_t rsvd9[0x1000 - 0x678];
} __attribute__((packed, aligned(4096)));

_Static_assert(sizeof(struct vmcb) == 4096, "VMCB is one page");
_Static_assert(offsetof(struct vmcb, iopm_base_pa) == 0x040, "iopm");
_Static_assert(offsetof(struct vmcb, asid) == 0x058, "asid");
_Static_assert(offsetof(struct vmcb, int_ctl) == 0x060, "int_ctl");
_Static_assert(offsetof(struct vmcb, exitcode) == 0x070, "exitcode");
_Static_assert(offsetof(struct vmcb, exitintinfo) == 0x088, "exitintinfo");
_Static_assert(offsetof(struct vmcb, np_enable) == 0x090, "np_enable");
_Static_assert(offsetof(struct vmcb, eventinj) == 0x0a8, "eventinj");
_Static_assert(offsetof(struct vmcb, n_cr3) == 0x0b0, "n_cr3");
_Static_assert(offsetof(struct vmcb, nrip) == 0x0c8, "nrip");
_Static_assert(offsetof(struct vmcb, insn_bytes) == 0x0d1, "insn_bytes");
_Static_assert(offsetof(struct vmcb, es) == 0x400, "es");
_Static_assert(offsetof(struct vmcb, tr) == 0x490, "tr");
_Static_assert(offsetof(struct vmcb, cpl) == 0x4cb, "cpl");
_Static_assert(offsetof(struct vmcb, efer) == 0x4d0, "efer");
_Static_assert(offsetof(struct vmcb, cr4) == 0x548, "cr4");
_Static_assert(offsetof(struct vmcb, rip) == 0x578, "rip");
_Static_assert(offsetof(struct vmcb, rsp) == 0x5d8, "rsp");
_Static_assert(offsetof(struct vmcb, rax) == 0x5f8, "rax");
_Static_assert(offsetof(struct vmcb, star) == 0x600, "star");
_Static_assert(offsetof(struct vmcb, kernel_gs_base) == 0x620, "kgs");
_Static_assert(offsetof(struct vmcb, cr2) == 0x640, "cr2");
_Static_assert(offsetof(struct vmcb, g_pat) == 0x668, "g_pat");

/* intercept_cr bits: MOV from CRn is bit n, MOV to CRn bit 16 + n */
#define SVM_INTERCEPT_CR8_READ   (1u << 8)
#define SVM_INTERCEPT_CR8_WRITE  (1u << 24)

/* intercept_misc1 bits */
#define SVM_INTERCEPT_INTR       (1u << 0)
#define SVM_INTERCEPT_NMI        (1u << 1)
#define SVM_INTERCEPT_SMI        (1u << 2)
#define SVM_INTERCEPT_INIT       (1u << 3)
#define SVM_INTERCEPT_VINTR      (1u << 4)
#define SVM_INTERCEPT_CR0_SEL_WRITE (1u << 5)   /* CR0 writes that change more than TS/MP */
#define SVM_INTERCEPT_RDTSC      (1u << 14)
#define SVM_INTERCEPT_RDPMC      (1u << 15)
#define SVM_INTERCEPT_CPUID      (1u << 18)
#define SVM_INTERCEPT_IRET       (1u << 20)
#define SVM_INTERCEPT_INVD       (1u << 22)
#define SVM_INTERCEPT_HLT        (1u << 24)
#define SVM_INTERCEPT_INVLPGA    (1u << 26)
#define SVM_INTERCEPT_IOIO_PROT  (1u << 27)
#define SVM_INTERCEPT_MSR_PROT   (1u << 28)
#define SVM_INTERCEPT_TASK_SWITCH (1u << 29)
#define SVM_INTERCEPT_SHUTDOWN   (1u << 31)
/* intercept_exc bits: exception vector n */
#define SVM_INTERCEPT_EXC_DB     (1u << 1)

/* intercept_misc2 bits */
#define SVM_INTERCEPT_VMRUN      (1u << 0)
#define SVM_INTERCEPT_VMMCALL    (1u << 1)
#define SVM_INTERCEPT_VMLOAD     (1u << 2)
#define SVM_INTERCEPT_VMSAVE     (1u << 3)
#define SVM_INTERCEPT_STGI       (1u << 4)
#define SVM_INTERCEPT_CLGI       (1u << 5)
#define SVM_INTERCEPT_SKINIT     (1u << 6)
#define SVM_INTERCEPT_RDTSCP     (1u << 7)
#define SVM_INTERCEPT_WBINVD     (1u << 9)    /* and WBNOINVD */
#define SVM_INTERCEPT_MONITOR    (1u << 10)   /* and MONITORX */
#define SVM_INTERCEPT_MWAIT      (1u << 11)   /* and MWAITX, unconditionally */
#define SVM_INTERCEPT_RDPRU      (1u << 14)
#define SVM_INTERCEPT_XSETBV     (1u << 13)

/* intercept_dr bits: reads of DRn are bit n, writes bit 16 + n */
#define SVM_INTERCEPT_DR_WRITE(n) (1u << (16 + (n)))

/* intercept_exc bits: one per exception vector */
#define SVM_INTERCEPT_EXC_DB     (1u << 1)    /* #DB: its delivery can loop (CVE-2015-8104) */
#define SVM_INTERCEPT_EXC_AC     (1u << 17)   /* #AC: its delivery can loop (CVE-2015-5307) */

/* Every intercept lightpath sets: at the vCPU's set-up (vendor_vcpu_init)
 * and, for the _RUNTIME ones, while the vCPU runs (the interrupt and NMI
 * windows, the VM's clock, the host CR guard). At boot the exit table is
 * checked to have a row for each exit these can produce
 * (vendor_intercept_spans). */
#define SVM_CR_INTERCEPTS (SVM_INTERCEPT_CR8_READ | SVM_INTERCEPT_CR8_WRITE)
#define SVM_EXC_INTERCEPTS (SVM_INTERCEPT_EXC_DB | SVM_INTERCEPT_EXC_AC)
#define SVM_MISC1_INTERCEPTS                                                                  \
	(SVM_INTERCEPT_INTR | SVM_INTERCEPT_NMI | SVM_INTERCEPT_CPUID | SVM_INTERCEPT_HLT |  \
	 SVM_INTERCEPT_INVLPGA | SVM_INTERCEPT_INVD | SVM_INTERCEPT_IOIO_PROT |               \
	 SVM_INTERCEPT_MSR_PROT | SVM_INTERCEPT_SHUTDOWN |                                   \
	 SVM_INTERCEPT_RDPMC)   /* docs/SECURITY.md: what a guest can execute */
#define SVM_MISC1_RUNTIME                                                                     \
	(SVM_INTERCEPT_VINTR | SVM_INTERCEPT_IRET | SVM_INTERCEPT_RDTSC |                     \
	 SVM_INTERCEPT_CR0_SEL_WRITE)
#define SVM_MISC2_INTERCEPTS                                                                  \
	(SVM_INTERCEPT_VMRUN | SVM_INTERCEPT_VMMCALL | SVM_INTERCEPT_VMLOAD |                 \
	 SVM_INTERCEPT_VMSAVE | SVM_INTERCEPT_STGI | SVM_INTERCEPT_CLGI | SVM_INTERCEPT_SKINIT | \
	 SVM_INTERCEPT_XSETBV | SVM_INTERCEPT_WBINVD | SVM_INTERCEPT_MONITOR |                 \
	 SVM_INTERCEPT_MWAIT | SVM_INTERCEPT_RDPRU)
#define SVM_MISC2_RUNTIME SVM_INTERCEPT_RDTSCP
/* DR reads and writes: all of them until dr=lazy's first use, then some
 * writes (vmm/svm/debug.c) */
#define SVM_DR_INTERCEPT_ALL 0x00ff00ffu
#define SVM_DR_INTERCEPTS SVM_DR_INTERCEPT_ALL

/* exit codes */
#define SVM_EXIT_READ_CR0        0x000   /* + the register number; writes + 0x10 */
#define SVM_EXIT_READ_CR8        0x008
#define SVM_EXIT_WRITE_CR8       0x018
#define SVM_EXIT_READ_DR0        0x020
#define SVM_EXIT_WRITE_DR0       0x030   /* + the register number */
#define SVM_EXIT_WRITE_DR15      0x03f
#define SVM_EXIT_EXCP_BASE       0x040   /* + the exception vector */
#define SVM_EXIT_EXCP_DB         0x041
#define SVM_EXIT_EXCP_AC         0x051
#define SVM_EXIT_INTR            0x060
#define SVM_EXIT_NMI             0x061
#define SVM_EXIT_VINTR           0x064
#define SVM_EXIT_CR0_SEL_WRITE   0x065
#define SVM_EXIT_RDTSC           0x06e
#define SVM_EXIT_RDPMC           0x06f
#define SVM_EXIT_CPUID           0x072
#define SVM_EXIT_IRET            0x074
#define SVM_EXIT_INVD            0x076
#define SVM_EXIT_HLT             0x078
#define SVM_EXIT_INVLPGA         0x07a
#define SVM_EXIT_IOIO            0x07b
#define SVM_EXIT_MSR             0x07c
#define SVM_EXIT_TASK_SWITCH     0x07d
#define SVM_EXIT_SHUTDOWN        0x07f
#define SVM_EXIT_VMRUN           0x080
#define SVM_EXIT_VMMCALL         0x081
#define SVM_EXIT_VMLOAD          0x082
#define SVM_EXIT_VMSAVE          0x083
#define SVM_EXIT_STGI            0x084
#define SVM_EXIT_CLGI            0x085
#define SVM_EXIT_SKINIT          0x086
#define SVM_EXIT_RDTSCP          0x087
#define SVM_EXIT_WBINVD          0x089
#define SVM_EXIT_MONITOR         0x08a
#define SVM_EXIT_MWAIT           0x08b
#define SVM_EXIT_MWAIT_COND      0x08c   /* MWAIT with the monitor armed */
#define SVM_EXIT_XSETBV          0x08d
#define SVM_EXIT_RDPRU           0x08e
#define SVM_EXIT_NPF             0x400
/* VMRUN refused the guest state: -1 by the APM; QEMU stores the 32-bit
 * 0xffffffff, so the backend compares the low 32 bits only. */
#define SVM_EXIT_INVALID         0xffffffffu

/* EXITINFO1 of a nested page fault */
#define SVM_NPF_FETCH            (1ull << 4)
#define SVM_NPF_FINAL_ACCESS     (1ull << 32)   /* the access itself, not a guest page walk */

/* int_ctl */
#define SVM_INT_CTL_V_IRQ        (1ull << 8)
#define SVM_INT_CTL_V_NMI        (1ull << 11)   /* vNMI: an NMI waits for the guest */
#define SVM_INT_CTL_V_NMI_BLOCKED (1ull << 12)  /* vNMI: the guest blocks NMIs (until IRET) */
#define SVM_INT_CTL_V_INTR_PRIO_MAX (0xfull << 16)
#define SVM_INT_CTL_V_IGN_TPR    (1ull << 20)
#define SVM_INT_CTL_V_INTR_MASKING (1ull << 24)
#define SVM_INT_CTL_V_NMI_ENABLE (1ull << 26)
#define SVM_INT_CTL_V_INTR_VECTOR_SHIFT 32   /* V_INTR_VECTOR: byte 0x64 */
#define SVM_INT_CTL_V_INTR_VECTOR (0xffull << SVM_INT_CTL_V_INTR_VECTOR_SHIFT)
/* int_state */
#define SVM_INT_STATE_SHADOW     (1ull << 0)

/* segment attributes (the descriptor's bits 40-47 and 52-55, packed) */
#define SVM_SEG_ATTR_L           (1u << 9)
#define SVM_SEG_ATTR_DB          (1u << 10)

/* EVENTINJ */
#define SVM_EVTINJ_VALID         (1ull << 31)
#define SVM_EVTINJ_ERR_VALID     (1ull << 11)
#define SVM_EVTINJ_TYPE_MASK     (7ull << 8)
#define SVM_EVTINJ_TYPE_INTR     (0ull << 8)
#define SVM_EVTINJ_TYPE_NMI      (2ull << 8)
#define SVM_EVTINJ_TYPE_EXC      (3ull << 8)

#endif
