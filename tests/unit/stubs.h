/* Host stand-ins for the services dev/device.h declares, with knobs and
 * records the tests read. */
#ifndef TESTS_UNIT_STUBS_H
#define TESTS_UNIT_STUBS_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/device.h"
#include "dev/rtc.h"
#include "dev/virtqueue.h"

/* A struct dev_host is opaque to devices; tests hand them the address of
 * this, and interrupt lines made by stub_irq() (what dev_irq_line gives). */
extern int fake_host_storage;
#define FAKE_HOST ((struct dev_host *)&fake_host_storage)
struct irq_line stub_irq(unsigned gsi);

/* What dev_ram_size, dev_nr_vcpus and dev_wall_clock answer (after
 * stubs_reset: 32 MiB, 1 vCPU, 2026-01-01 00:00:00). */
extern uint64_t stub_ram_size;
extern unsigned stub_nr_vcpus;
extern struct rtc_time stub_wall_clock;

extern char stub_console[4096];   /* dev_console_putc output, NUL-terminated */
extern unsigned stub_console_len;
extern struct dev_host *stub_console_host; /* host of the last dev_console_putc */

extern unsigned stub_vm_end_calls;
extern unsigned stub_vm_end_status;
extern const char *stub_vm_end_why;
extern struct dev_host *stub_vm_end_host;

/* A guest RAM of STUB_RAM_SIZE bytes at guest-physical 0, with the
 * accessors a virtqueue takes (every range checked, as the hypervisor's). */
#define STUB_RAM_SIZE 0x10000u
extern uint8_t stub_ram[STUB_RAM_SIZE];
extern const struct vq_guest_mem stub_ram_mem;

extern uint64_t stub_tsc;          /* what platform_tsc() returns */
/* dev_clock(): the VM's time is stub_tsc (offset 0), never polling */
extern struct guest_clock stub_clock;
extern unsigned stub_clock_polls;   /* clock_read_slow calls */
/* what irq_line_edge_state() answers (IRQ_EDGE_FREE after stubs_reset) */
extern enum irq_edge_state stub_irq_edge_state;
extern uint64_t stub_tsc_hz;       /* what platform_tsc_hz() returns */

/* irq_line_set: the level each line was last driven to, how many times it
 * was raised (a call with level = true), and the calls in order. */
#define STUB_IRQ_LINES 24
extern bool stub_irq_level[STUB_IRQ_LINES];
extern unsigned stub_irq_raises[STUB_IRQ_LINES];
extern unsigned stub_irq_calls;

/* vm_timer_arm/vm_timer_cancel keep the armed timers here, as the
 * hypervisor does (armed = true, deadline_tsc set; cancel clears armed). */
#define STUB_MAX_TIMERS 16
extern struct vm_timer *stub_timers[STUB_MAX_TIMERS];
extern unsigned stub_nr_timers;
extern unsigned stub_timer_arms;
extern unsigned stub_timer_cancels;

/* Moves stub_tsc forward to `tsc`, firing every armed timer whose deadline
 * is reached on the way, earliest first, each at exactly its deadline (an
 * ideal hypervisor); fire() may re-arm. Returns the number of fires. */
unsigned stubs_advance_to(uint64_t tsc);
/* The earliest armed deadline, or 0 if no timer is armed. */
uint64_t stubs_next_deadline(void);

void stubs_reset(void);

/* Range i of a device's descriptor is [base, base + len) on callback fn,
 * light or not. */
bool stub_desc_range_is(const struct dev_desc *d, unsigned i, uint64_t base, uint64_t len,
			io_handler_fn fn, bool light);

#endif
