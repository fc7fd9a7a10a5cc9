/* The instruction emulator on the heavy path (vmm/heavy_emulate.c). */
#ifndef VMM_HEAVY_EMULATE_H
#define VMM_HEAVY_EMULATE_H

#include <stdint.h>

#include "vmm/vm.h"

struct io_intercept;

/* What the emulator is asked to do. */
enum heavy_emul {
	HEAVY_EMUL_MMIO,      /* NPF/EPT violation on MMIO: emul_mmio */
	HEAVY_EMUL_STRING_IO, /* io=fast, string I/O exit: emul_string_io */
	HEAVY_EMUL_PORT_IO,   /* io=emulate, any I/O exit: emul_port_io */
};

/* Runs the emulator for an MMIO fault (fault_gpa) or a port I/O exit (io)
 * and acts on its result. */
void heavy_emulate(struct vcpu *v, enum heavy_emul what, uint64_t fault_gpa,
		   const struct io_intercept *io);

#endif
