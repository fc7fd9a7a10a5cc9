/* Host stand-ins for the services dev/device.h declares, with knobs and
 * records the tests read. */
#ifndef TESTS_UNIT_STUBS_H
#define TESTS_UNIT_STUBS_H

#include <stdint.h>

#include "dev/device.h"

/* A struct vm is opaque to devices; tests hand them the address of this. */
extern int fake_vm_storage;
#define FAKE_VM ((struct vm *)&fake_vm_storage)

extern char stub_console[4096];   /* vm_console_putc output, NUL-terminated */
extern unsigned stub_console_len;
extern struct vm *stub_console_vm; /* vm of the last vm_console_putc */

extern unsigned stub_vm_end_calls;
extern unsigned stub_vm_end_status;
extern const char *stub_vm_end_why;
extern struct vm *stub_vm_end_vm;

extern uint64_t stub_tsc;          /* what platform_tsc() returns */
extern uint64_t stub_tsc_hz;       /* what platform_tsc_hz() returns */

void stubs_reset(void);

#endif
