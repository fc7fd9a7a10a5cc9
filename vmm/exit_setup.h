/* The exit table's index and each vCPU's light handlers
 * (vmm/exit_setup.c). */
#ifndef VMM_EXIT_SETUP_H
#define VMM_EXIT_SETUP_H

#include <stdint.h>

#include "vmm/light.h"
#include "vmm/exit_table.h"

struct lp_options;
struct vcpu;

/* Indexes the backend's table; call once at boot. Returns negative (after
 * one line) if the table is malformed. */
int exit_table_init(void);
/* A new vCPU's exit state: no code page cached, its CPUID, and the light
 * handlers of its VM's switch set. */
void exit_vcpu_init(struct vcpu *v);
/* The switch set this VM's options select on this CPU (vmm/light.h). */
unsigned exit_switch_set(const struct lp_options *o);
/* Points v->light_table at the handlers of switch set `sw`. */
void exit_light_table_fill(struct vcpu *v, unsigned sw);
/* The light handler of switch set `sw` for exit-table row r (0: none) as
 * this vCPU's VM takes it (several vCPUs: fewer light kinds); a measuring
 * vCPU (stats=cost|sites) gets exit_cost_light, which calls the real one
 * (exit_light_handler_real, vmm/vcpu_exit.h). */
light_handler_fn *exit_light_handler(const struct vcpu *v, unsigned sw, const struct exit_row *r);

#endif
