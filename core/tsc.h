/* The host TSC and its frequency (calibrated against the PIT at boot). */
#ifndef CORE_TSC_H
#define CORE_TSC_H

#include <stdint.h>

void tsc_calibrate(void);
uint64_t tsc_hz(void);

#endif
