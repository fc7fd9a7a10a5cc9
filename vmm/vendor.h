/* What a vendor backend (vmm/svm/, vmm/vmx/) provides to the common code:
 * the umbrella of the hook headers, grouped by concern, and the backend's
 * inline hooks.
 *   vmm/vendor_setup.h    the CPU, the VM and the vCPU set up, the run loop
 *   vmm/vendor_state.h    guest registers, RIP, RFLAGS, CRs, segments, MSRs
 *   vmm/vendor_exit.h     the exit information decoded
 *   vmm/vendor_events.h   exceptions, interrupts and NMIs injected
 *   vmm/exit_table.h      what an exit means (the exit table's rows)
 * The choice is made at link time, never through function pointers: the
 * common code is compiled once per backend, and the backend's inline hooks
 * come from its own arch_exit.h (-Ivmm/svm or -Ivmm/vmx), so that the light
 * path compiles into one straight line per exit. A file that needs only
 * out-of-line hooks includes their header alone.
 *
 * Backends keep only what differs between AMD and Intel: where guest state
 * lives (VMCB fields or VMCS fields), how an exit is reported, how events are
 * injected, and the CPU setup. Everything an exit means is in the exit core
 * (vmm/vcpu_exit.h). */
#ifndef VMM_VENDOR_H
#define VMM_VENDOR_H

#include <stdbool.h>
#include <stdint.h>

#include "emul/pio_decode.h"    /* struct io_intercept */
#include "emul/x86_emulate.h"   /* struct guest_paging */
#include "vmm/exit_table.h"
#include "vmm/vcpu_exit.h"
#include "vmm/vendor_events.h"
#include "vmm/vendor_exit.h"
#include "vmm/vendor_setup.h"
#include "vmm/vendor_state.h"

/* The backend's inline hooks, listed in the headers above. */
#include "arch_exit.h"

/* After lightpath completed the guest's instruction (RIP advanced), on the
 * light or the heavy path: an STI or MOV SS shadow the instruction sat in
 * ends with it (the CPU reports the shadow at the exit; left set, the next
 * entry would hold interrupts through one more guest instruction, and a
 * `sti; out; cli` would never take the interrupt waiting for it: intr32/64),
 * and with RFLAGS.TF set the single-step #DB is due, as on a CPU
 * (VCPU_PENDING_STEP; the heavy path delivers it). Inline: the light path
 * pays the shadow clear and one test. */
static inline __attribute__((always_inline)) void exit_insn_completed(struct vcpu *v)
{
	vendor_clear_interrupt_shadow(v);
	if (__builtin_expect(vendor_guest_tf(v), 0))
		v->pending |= VCPU_PENDING_STEP;
}

#endif
