/* Architectural MSR numbers the guests use (Intel SDM vol. 4, AMD APM vol. 2),
 * in one place; a guest defines only the ones it alone uses. */
#ifndef GUESTS_RT_MSR_H
#define GUESTS_RT_MSR_H

#define MSR_TSC              0x10u
#define MSR_APIC_BASE        0x1bu
#define MSR_TSC_ADJUST       0x3bu
#define MSR_SPEC_CTRL        0x48u
#define MSR_SYSENTER_CS      0x174u
#define MSR_SYSENTER_ESP     0x175u
#define MSR_SYSENTER_EIP     0x176u
#define MSR_PAT              0x277u
#define MSR_TSC_DEADLINE     0x6e0u
#define MSR_X2APIC_EOI       0x80bu
#define MSR_X2APIC_SVR       0x80fu
#define MSR_X2APIC_ICR       0x830u
#define MSR_X2APIC_LVTT      0x832u
#define MSR_EFER             0xc0000080u
#define MSR_STAR             0xc0000081u
#define MSR_LSTAR            0xc0000082u
#define MSR_CSTAR            0xc0000083u
#define MSR_SFMASK           0xc0000084u
#define MSR_FS_BASE          0xc0000100u
#define MSR_GS_BASE          0xc0000101u
#define MSR_KERNEL_GS_BASE   0xc0000102u
#define MSR_TSC_AUX          0xc0000103u

#endif
