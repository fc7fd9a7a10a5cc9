/* POST-code port 0x80: firmware and kernels write progress codes (and use it
 * as an I/O delay); lightpath only remembers the last one. It is the
 * light-path sink of the port-write benchmark, so it does as little as a
 * device can. */
#ifndef DEV_POSTCODE_H
#define DEV_POSTCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define POSTCODE_PORTS 1u

struct postcode {
	uint16_t base;
	uint8_t last; /* last byte written; reads return it */
};

void postcode_init(void *dev, struct dev_host *h);

/* Write: stores the low byte. Read: returns the last byte written,
 * zero-extended, whatever the access size. */
int postcode_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);

extern const struct dev_desc postcode_desc;

#endif
