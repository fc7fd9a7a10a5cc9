"""Guest registers across exits (docs/SECURITY.md, case 22): lightpath keeps
the guest's rbx, rbp and r10-r15 in the CPU while its light handlers run (no
hypervisor code uses rbx, r10 or r11: -ffixed-rbx -ffixed-r10 -ffixed-r11)
and stores the rest in memory. guests/hostile/gprs64.c loads all 15 GPRs
with markers, makes one exit of each light kind (CPUID, the null and the
statistics hypercall, OUT, IN, RDMSR, WRMSR, HLT woken by a timer
interrupt, APIC MOVs through a light register, through EBX, through r10/r11,
which the light path leaves to the heavy one, and through r10 as the
address) and checks every register the instruction does not
define came back as loaded; then the simple exits again, after the heavy
path ran. resetcheck64 follows and must find its reset state. Under QEMU
(SVM without NRIP), Bochs VT-x and Bochs ryzen (SVM with NRIP save), each
with the default switches and with the heavy paths forced."""

import itest

GUEST = "gprs64"


def simple_descs():
    kept = "every other register comes back as loaded"
    return ["CPUID leaf 0: " + kept,
            "CPUID leaf 0's EBX in RBX (upper half zeroed), as a second CPUID",
            "the statistics hypercall (RBX in and out): " + kept,
            "the statistics hypercall: RAX exits = RBX light + RCX heavy, RBX > 0",
            "the null hypercall: " + kept, "the null hypercall returns 0",
            "OUT to port 0x80: " + kept,
            "IN from the PM timer: " + kept, "IN EAX zeroes RAX's upper half",
            "RDMSR MTRR_DEF_TYPE: " + kept,
            "WRMSR MTRR_DEF_TYPE (the value it had): " + kept]


def guest_lines(vm):
    kept = "every other register comes back as loaded"
    descs = simple_descs()
    descs += ["LP_HC_TIMER(500 us) returns 0", "HLT woken by a timer interrupt: " + kept,
              "the timer interrupt came"] * 3
    descs += ["MOV ESI to the TPR, MOV the TPR to EDX: " + kept,
              "the TPR reads back 0x20 into RDX (upper half zeroed)",
              "MOV EBX to the TPR, MOV the TPR to EBX: " + kept,
              "the TPR reads back 0x40 into RBX (upper half zeroed)",
              "MOV R10D to the TPR, MOV the TPR to R11D: " + kept,
              "the TPR reads back 0x30 into R11 (upper half zeroed)",
              "MOV R11D to [R10 + TPR], MOV [R10 + TPR] to EAX: " + kept,
              "the TPR reads back 0x10 into RAX",
              "MOV R8D (0) to the TPR, MOV the TPR to R10D: " + kept,
              "the TPR reads back 0 into R10"]
    descs += simple_descs()
    return itest.ok_lines(vm, GUEST, descs)


def qemu_tests():
    return itest.both_switch_sets("", GUEST, itest.guest64_then_resetcheck(GUEST, guest_lines))


def vmx_tests():
    return itest.bochs_vmx_and_svm(GUEST, guest_lines)
