/* The host TSC and its frequency (calibrated against the PIT at boot). */
#ifndef CORE_TSC_H
#define CORE_TSC_H

#include <stdint.h>

void tsc_calibrate(void);
uint64_t tsc_hz(void);
/* `ns` nanoseconds in TSC ticks (rounded down). */
uint64_t tsc_from_ns(uint64_t ns);

#endif
