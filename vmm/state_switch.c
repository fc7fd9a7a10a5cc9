#include "vmm/state_switch.h"

const uint32_t smsr_index[SMSR_COUNT] = {
	MSR_STAR, MSR_LSTAR, MSR_CSTAR, MSR_SFMASK, MSR_KERNEL_GS_BASE,
};
uint64_t host_smsr[SMSR_COUNT];

void state_switch_init(void)
{
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		host_smsr[i] = rdmsr(smsr_index[i]);
}

void state_switch_init_ap(void)
{
	for (unsigned i = 0; i < SMSR_COUNT; i++)
		wrmsr(smsr_index[i], host_smsr[i]);
}

int smsr_slot(uint32_t msr)
{
	for (int i = 0; i < SMSR_COUNT; i++)
		if (smsr_index[i] == msr)
			return i;
	return -1;
}
