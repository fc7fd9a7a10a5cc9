	.file	"asm-offsets.c"
	.text
	.p2align 4
	.globl	asm_offsets
	.type	asm_offsets, @function
asm_offsets:
#APP
# 15 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RBX $4104
# 0 "" 2
# 16 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RCX $4112
# 0 "" 2
# 17 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RDX $4120
# 0 "" 2
# 18 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RSI $4128
# 0 "" 2
# 19 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RDI $4136
# 0 "" 2
# 20 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_RBP $4144
# 0 "" 2
# 21 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R8 $4152
# 0 "" 2
# 22 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R9 $4160
# 0 "" 2
# 23 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R10 $4168
# 0 "" 2
# 24 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R11 $4176
# 0 "" 2
# 25 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R12 $4184
# 0 "" 2
# 26 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R13 $4192
# 0 "" 2
# 27 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R14 $4200
# 0 "" 2
# 28 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_R15 $4208
# 0 "" 2
# 29 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VCPU_LIGHT_TABLE $4216
# 0 "" 2
# 30 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET VMCB_EXITCODE $112
# 0 "" 2
# 31 "vmm/svm/asm-offsets.c" 1
	
@@OFFSET LIGHT_TABLE_LAST $144
# 0 "" 2
#NO_APP
	ret
	.size	asm_offsets, .-asm_offsets
	.ident	"GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"
	.section	.note.GNU-stack,"",@progbits
