/* stats=cost and stats=sites (docs/EXITS.md): per exit reason, the TSC
 * ticks each exit took (instructions, under QEMU -icount and Bochs) and the
 * guest RIPs that exit most.
 *
 * Only a vCPU with v->cost measures. Its light table then sends every exit
 * through exit_cost_light, which reads the TSC around the handler the table
 * would have named; an exit that goes on to the heavy path is closed by
 * exit_cost_heavy_done after its heavy handler (vcpu_run's measuring loop).
 * The exit stub's own instructions (register save and restore, VMRUN or
 * VMRESUME) are outside: what is measured is the handling. With stats=on or
 * off nothing is allocated and no path has an instruction more. */
#ifndef VMM_EXIT_COST_H
#define VMM_EXIT_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "lightpath/abi.h"

struct vcpu;
struct vm;

#define COST_BUCKETS 24  /* log2 buckets: [2^k, 2^(k+1)); the last one takes the rest */
#define COST_SITES   8   /* guest RIPs kept per reason */

struct exit_cost_reason {
	uint64_t n, min, max, sum;
	uint64_t hist[COST_BUCKETS];
};

/* One exit site: a guest RIP and how many exits it made. Kept with the
 * space-saving scheme: a new RIP takes the least counted slot and its count
 * plus one, so a RIP that exits more often than 1/COST_SITES of the reason's
 * exits is always there, with a count at most `err` too high. */
struct exit_site {
	uint64_t rip, n, err;
};

struct exit_cost {
	bool cost, sites;        /* what stats= asked for */
	unsigned sw;             /* the switch set of the handlers measured */
	uint64_t t_start;        /* TSC when the measurement began (the VM's start) */
	bool open;               /* an exit is on its way through the heavy path */
	unsigned open_reason;
	uint64_t open_t0;
	struct exit_cost_reason r[LP_EXIT_COUNT];
	struct exit_site site[LP_EXIT_COUNT][COST_SITES];
};

/* Gives the vCPU its measurement when the VM's options ask for one; false
 * when out of memory. exit_cost_free gives it back. */
bool exit_cost_alloc(struct vcpu *v);
void exit_cost_free(struct vcpu *v);

/* The light-table entry of a measuring vCPU, for every exit code. */
struct vcpu *exit_cost_light(struct vcpu *v);

/* After the heavy handler: the exit the light path left open ends here. */
void exit_cost_heavy_done(struct vcpu *v);

/* The VM's measurements (all its vCPUs'), after its exit statistics. */
void exit_cost_print(struct vm *vm);

#endif
