/* The console shared by the VMs: each guest's serial output behind its
 * "[vmN] " prefix (held by the line while VMs run side by side), and which
 * running VM console input goes to. */
#include "vmm/vm_console.h"

#include "core/console.h"
#include "lib/printf.h"
#include "vmm/vm.h"

static bool console_visible(char c)
{
	unsigned char u = (unsigned char)c;
	return c == '\t' || (u >= 0x20 && u != 0x7f);
}

/* VMs running now (between their start and their end), by id, and the one
 * console input goes to (-1: none yet; the next VM to start takes it). Both
 * under the console lock. */
#define VM_MAX_IDS 16
static struct vm *running[VM_MAX_IDS];
static unsigned nr_running;
static int input_vm = -1;

static void vm_prefix(struct vm *vm, char *buf, size_t len)
{
	snprintf(buf, len, "[vm%u] ", vm->id);
}

/* Writes what VM `vm` held back (console lock held): on its own open line,
 * or on a fresh line behind the prefix. */
void vm_line_flush(struct vm *vm)
{
	unsigned me = vm->id + 1;
	if (!vm->out_len)
		return;
	if (console_line_open_by_other(me) || console_at_line_start()) {
		char prefix[16];
		if (!console_at_line_start())
			console_putc('\n');
		vm_prefix(vm, prefix, sizeof(prefix));
		for (const char *p = prefix; *p; p++)
			console_putc_as(me, *p);
	}
	for (unsigned i = 0; i < vm->out_len; i++)
		console_putc_as(me, vm->out_line[i]);
	vm->out_len = 0;
}

static void vm_line_add(struct vm *vm, const char *s)
{
	while (*s && vm->out_len < VM_LINE_MAX)
		vm->out_line[vm->out_len++] = *s++;
}

void vm_console_putc(struct vm *vm, char c)
{
	/* Every line that holds guest bytes starts with "[vmN] " (lightpath's
	 * own lines start with "lightpath:" or blanks), so nothing a guest
	 * prints can pass for the hypervisor's output in a log split at '\n'.
	 * A bare '\r' followed by a visible character gets the prefix again,
	 * for a terminal, which went back to column 0 (not before an escape
	 * sequence: that would break the guest's cursor control). */
	unsigned me = vm->id + 1;
	char prefix[16];
	console_lock();
	vm->out_quiet = 0;
	if (!vm_side_by_side) {
		/* one VM at a time: straight to the console, as typed */
		if (console_line_open_by_other(me))
			console_putc('\n');
		if (console_at_line_start() || (vm->console_after_cr && console_visible(c))) {
			vm_prefix(vm, prefix, sizeof(prefix));
			for (const char *p = prefix; *p; p++)
				console_putc_as(me, *p);
		}
		vm->console_after_cr = c == '\r';
		console_putc_as(me, c);
		console_unlock();
		return;
	}
	/* VMs side by side: the line is held until it ends, so that lines of
	 * VMs running at once are never mixed (nor cut by lightpath's lines);
	 * a line too long for the buffer goes out in pieces, each a line of
	 * its own. */
	if (vm->out_len && vm->console_after_cr && console_visible(c)) {
		vm_prefix(vm, prefix, sizeof(prefix));
		vm_line_add(vm, prefix);
	}
	vm->console_after_cr = c == '\r';
	vm->out_line[vm->out_len++] = c;
	if (c == '\n') {
		vm_line_flush(vm);
	} else if (vm->out_len + 16 >= VM_LINE_MAX) {
		vm_line_flush(vm);
		console_putc('\n');
		vm->console_after_cr = false;
	}
	console_unlock();
}

void vm_console_idle(struct vm *vm)
{
	/* an unfinished line (a shell's prompt) that has waited 100 ms goes
	 * out while no other VM runs, or when its VM has console input (the
	 * user is typing to it): it may then be cut by a later line */
	if (!vm->out_len || ++vm->out_quiet < VM_LINE_QUIET_POLLS)
		return;
	console_lock();
	if (nr_running <= 1 || input_vm == (int)vm->id)
		vm_line_flush(vm);
	console_unlock();
}

void vm_running_add(struct vm *vm)
{
	console_lock();
	if (vm->id < VM_MAX_IDS)
		running[vm->id] = vm;
	nr_running++;
	if (input_vm < 0) {
		input_vm = (int)vm->id;
		if (vm_side_by_side)   /* which VM started first is a race: say it */
			kprintf("lightpath: console input goes to vm%u now\n", vm->id);
	}
	console_unlock();
}

/* The next running VM after `id`, in id order, wrapping; -1 if none. */
static int next_running(unsigned id)
{
	for (unsigned k = 1; k <= VM_MAX_IDS; k++) {
		unsigned n = (id + k) % VM_MAX_IDS;
		if (running[n] && n != id)
			return (int)n;
	}
	return -1;
}

void vm_running_remove(struct vm *vm)
{
	console_lock();
	if (vm->id < VM_MAX_IDS && running[vm->id] != vm) {   /* never added */
		console_unlock();
		return;
	}
	if (vm->id < VM_MAX_IDS)
		running[vm->id] = 0;
	nr_running--;
	if (input_vm == (int)vm->id) {
		input_vm = next_running(vm->id);
		if (input_vm >= 0 && vm_side_by_side)
			kprintf("lightpath: console input goes to vm%d now (vm%u ended)\n", input_vm,
				vm->id);
	}
	console_unlock();
}

bool vm_side_by_side;

bool vm_console_input_mine(const struct vm *vm)
{
	return __atomic_load_n(&input_vm, __ATOMIC_RELAXED) == (int)vm->id;
}

void vm_console_switch(struct vm *vm)
{
	console_lock();
	int next = next_running(vm->id);
	if (next < 0) {
		kprintf("lightpath: console input stays with vm%u (no other VM is running)\n", vm->id);
	} else {
		input_vm = next;
		kprintf("lightpath: console input goes to vm%d now\n", next);
	}
	console_unlock();
}
