/* How many CPUs lightpath knows of, in one place: the host CPUs it runs on
 * (the MADT it reads, the cpus= boot option, pcpus = numbers) and the vCPUs
 * a VM may have (cpus =, the MADT it writes for the guest). */
#ifndef CORE_LIMITS_H
#define CORE_LIMITS_H

#define LP_MAX_CPUS 64u

#endif
