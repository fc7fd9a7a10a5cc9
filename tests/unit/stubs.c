#include "tests/unit/stubs.h"

#include <string.h>

int fake_vm_storage;

char stub_console[4096];
unsigned stub_console_len;
struct vm *stub_console_vm;

unsigned stub_vm_end_calls;
unsigned stub_vm_end_status;
const char *stub_vm_end_why;
struct vm *stub_vm_end_vm;

uint64_t stub_tsc;
uint64_t stub_tsc_hz;

void stubs_reset(void)
{
	memset(stub_console, 0, sizeof(stub_console));
	stub_console_len = 0;
	stub_console_vm = NULL;
	stub_vm_end_calls = 0;
	stub_vm_end_status = 0;
	stub_vm_end_why = NULL;
	stub_vm_end_vm = NULL;
	stub_tsc = 0;
	stub_tsc_hz = 0;
}

void vm_console_putc(struct vm *vm, char c)
{
	stub_console_vm = vm;
	if (stub_console_len + 1 < sizeof(stub_console))
		stub_console[stub_console_len++] = c;
}

void vm_end(struct vm *vm, unsigned status, const char *why)
{
	stub_vm_end_calls++;
	stub_vm_end_vm = vm;
	stub_vm_end_status = status;
	stub_vm_end_why = why;
}

uint64_t platform_tsc(void)
{
	return stub_tsc;
}

uint64_t platform_tsc_hz(void)
{
	return stub_tsc_hz;
}
