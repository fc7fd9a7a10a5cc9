/* The host TSC and its frequency (calibrated against the PIT at boot). */
#ifndef CORE_TSC_H
#define CORE_TSC_H

#include <stdint.h>

/* Calibrates against the host's ACPI PM timer (found in the FADT), several
 * short windows each bracketed by TSC reads, the least jittered kept, and
 * checks the result against PIT channel 2 (or uses the PIT when there is no
 * PM timer); prints one line "lightpath: TSC N MHz (...)". */
void tsc_calibrate(void);
/* tsc.check=SECONDS: times `seconds` by the PM timer and by the TSC at the
 * calibrated rate and prints both and their difference in ppm (a test's
 * reference: under QEMU both follow the host's clock, so only a wrong
 * calibration separates them). 0: nothing. */
void tsc_check(unsigned seconds);
uint64_t tsc_hz(void);
/* `ns` nanoseconds in TSC ticks (rounded down). */
uint64_t tsc_from_ns(uint64_t ns);

#endif
