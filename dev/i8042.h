/* A minimal i8042 keyboard controller (ports 0x60 data, 0x64 status and
 * command) with nothing plugged into it.
 *
 * Linux is told by the FADT that there is no 8042 (IAPC_BOOT_ARCH bit 1
 * clear, see dev/acpi.c): acpi_parse_fadt() then marks it
 * X86_LEGACY_I8042_FIRMWARE_ABSENT and the i8042 driver does not probe at
 * all, which is both the fastest and the honest answer. This model is for
 * what still touches the ports: firmware-style code and test kernels that
 * probe, and reboot (FADT RESET_REG and Linux's keyboard-controller reboot
 * write 0xFE to port 0x64).
 *
 * It answers: status (output buffer full only when a reply is queued; input
 * buffer never full; system flag set), self-test 0xAA -> 0x55, interface
 * tests 0xAB/0xA9 -> 0x00, read/write of the controller configuration byte
 * (0x20/0x60), port enable/disable (0xAD/0xAE/0xA7/0xA8), output port read
 * (0xD0) and write (0xD1; bit 0 clear resets), and 0xFE (pulse reset):
 * the VM ends with status 0 and "reset requested (i8042)". Bytes sent to a
 * device (writes to 0x60 outside a controller command) get no answer: no
 * keyboard or mouse is present, so drivers time out. */
#ifndef DEV_I8042_H
#define DEV_I8042_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"

#define I8042_DATA_PORT 0x60u
#define I8042_CMD_PORT  0x64u

#define I8042_STR_OBF     0x01
#define I8042_STR_IBF     0x02
#define I8042_STR_SYSFLAG 0x04
#define I8042_STR_CMD     0x08  /* last write was to the command port */
#define I8042_STR_UNLOCK  0x10  /* keyboard not inhibited */

struct i8042 {
	struct dev_host *host;
	uint8_t status;       /* SYSFLAG | CMD | UNLOCK bits */
	uint8_t config;       /* controller configuration byte */
	uint8_t out;          /* the queued reply */
	bool out_full;
	uint8_t pending_cmd;  /* a command waiting for its data byte (0x60, 0xD1...) */
	uint8_t output_port;
};

void i8042_init(void *dev, struct dev_host *h);
/* One callback for both ports, the descriptor's two ranges 0x60 and 0x64
 * (0x61 between them belongs to the PIT). */
int i8042_io(void *dev, uint64_t addr, uint64_t *data, unsigned size, bool is_write);
extern const struct dev_desc i8042_desc;

#endif
