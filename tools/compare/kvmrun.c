/* kvmrun: the smallest /dev/kvm VMM that runs lightpath's bench guest.
 *
 *     kvmrun [--mem MIB] [--irqchip] IMAGE [ARGS...]
 *
 * Loads a multiboot (v1) ELF32 or ELF64 kernel at its p_paddr, builds a
 * multiboot info block (memory map, command line "IMAGE ARGS...") and starts
 * it the way lightpath does (vmm/loader.c, vendor_vcpu_init in vmm/svm/vcpu.c):
 * 32-bit protected mode, paging off, flat segments, EAX = 0x2BADB002,
 * EBX = the info block. The guest's exits are handled where a real KVM-based
 * VMM handles them:
 *   - VMMCALL, CPUID, RDMSR/WRMSR 0x2ff: by KVM in the kernel (the guest's
 *     CPUID is KVM_GET_SUPPORTED_CPUID, with KVM's 0x40000000 signature);
 *   - with --irqchip, the local APIC (x2APIC MSRs, IA32_TSC_DEADLINE and
 *     its timer's interrupt, the bench's timer_irq row): KVM's in-kernel
 *     irqchip (KVM_CREATE_IRQCHIP), as QEMU uses it, and CPUID.1:ECX shows
 *     the TSC-deadline timer, as QEMU sets it, when KVM has it. Without it
 *     (the exit rows' runs) there is no local APIC, as before the row
 *     existed: with it, KVM's exit rows here took 51 more instructions
 *     each (pio_out 98, pio_in_pmtimer 3) in one make compare run;
 *   - OUT to port 0x80: bound to an ioeventfd (KVM's in-kernel port path;
 *     nobody reads the eventfd, so no thread wakes up inside a measurement);
 *   - IN from the ACPI PM timer (0x608): KVM_EXIT_IO to this program, which
 *     answers from RDTSC as lightpath's PM timer does (QEMU's does it from its
 *     virtual clock: the device arithmetic is a handful of instructions
 *     either way, the exit to user space is what is measured);
 *   - the 16550 at 0x3f8 (THR writes are printed, each line behind
 *     GUEST_PREFIX, as lightpath prints "[vmN] ": tools/compare/compare.py
 *     reads only the guest's prefixed lines and only /init's unprefixed
 *     ones; LSR reads 0x60) and the isa-debug-exit port 0xf4 (a write of v
 *     ends the run with status v).
 * Exit status: the guest's status, or 125 when the VMM itself failed.
 * Linked statically so it runs from a busybox initramfs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB_HEADER_MAGIC 0x1BADB002u
#define MB_BOOT_MAGIC   0x2BADB002u
#define MB_INFO_GPA     0x9000u
#define MB_INFO_END     0x9f000u

#define PORT_COM1       0x3f8
#define PORT_COM1_LSR   0x3fd
#define PORT_DEBUG_EXIT 0xf4
#define PORT_POST       0x80
#define PORT_PMTIMER    0x608
#define PMTIMER_HZ      3579545u

#define STATUS_VMM_ERROR 125

struct elf_ident { uint8_t magic[4], cls, data, version, osabi, pad[8]; };
struct elf32_ehdr {
	struct elf_ident id; uint16_t type, machine; uint32_t version, entry, phoff, shoff, flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf32_phdr { uint32_t type, offset, vaddr, paddr, filesz, memsz, flags, align; };
struct elf64_ehdr {
	struct elf_ident id; uint16_t type, machine; uint32_t version; uint64_t entry, phoff, shoff;
	uint32_t flags; uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf64_phdr { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; };

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
	uint32_t syms[4], mmap_length, mmap_addr, drives_length, drives_addr, config_table;
	uint32_t boot_loader_name;
};
struct mb_mmap { uint32_t size; uint64_t addr, len; uint32_t type; } __attribute__((packed));

#define GUEST_PREFIX "[guest] "

static uint8_t *ram;
static uint64_t ram_size;
static int guest_line_open;	/* guest bytes printed since its last '\n' */

/* Ends the guest's unfinished line, so that what follows starts a line. */
static void end_guest_line(void)
{
	if (guest_line_open)
		putchar('\n');
	guest_line_open = 0;
	fflush(stdout);
}

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;
	end_guest_line();
	fputs("kvmrun: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(STATUS_VMM_ERROR);
}

static int xioctl(int fd, unsigned long req, void *arg, const char *what)
{
	int r = ioctl(fd, req, arg);
	if (r < 0)
		die("%s: %s", what, strerror(errno));
	return r;
}

static uint8_t *read_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("cannot open guest image '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0)
		die("stat '%s': %s", path, strerror(errno));
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		die("out of memory");
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			die("read '%s': %s", path, n < 0 ? strerror(errno) : "short read");
		got += (size_t)n;
	}
	close(fd);
	*size = got;
	return buf;
}

static void load_segment(const uint8_t *img, size_t size, uint64_t off, uint64_t paddr,
			 uint64_t filesz, uint64_t memsz)
{
	if (filesz > memsz || off > size || filesz > size - off)
		die("a segment lies outside the file");
	if (paddr < 0x100000 || paddr > ram_size || memsz > ram_size - paddr)
		die("a segment at 0x%llx+0x%llx does not fit in guest RAM (1 MiB..%llu MiB)",
		    (unsigned long long)paddr, (unsigned long long)memsz,
		    (unsigned long long)(ram_size >> 20));
	memcpy(ram + paddr, img + off, filesz);
	memset(ram + paddr + filesz, 0, memsz - filesz);
}

/* Loads the ELF; returns its entry point. */
static uint64_t load_multiboot_elf(const uint8_t *img, size_t size)
{
	if (size < sizeof(struct elf32_ehdr) || memcmp(img, "\x7f" "ELF", 4) != 0)
		die("not an ELF file (a multiboot ELF kernel was expected)");
	int found = 0;
	for (size_t o = 0; o + 12 <= size && o < 8192; o += 4) {
		const uint32_t *h = (const uint32_t *)(img + o);
		if (h[0] == MB_HEADER_MAGIC && h[0] + h[1] + h[2] == 0) {
			found = 1;
			break;
		}
	}
	if (!found)
		die("no multiboot header in the first 8 KiB");
	const struct elf_ident *id = (const void *)img;
	uint64_t entry;
	if (id->cls == 1) {
		const struct elf32_ehdr *eh = (const void *)img;
		if (eh->phoff > size || (uint64_t)eh->phnum * sizeof(struct elf32_phdr) > size - eh->phoff)
			die("program headers outside the file");
		const struct elf32_phdr *ph = (const void *)(img + eh->phoff);
		for (unsigned i = 0; i < eh->phnum; i++)
			if (ph[i].type == 1)
				load_segment(img, size, ph[i].offset, ph[i].paddr, ph[i].filesz, ph[i].memsz);
		entry = eh->entry;
	} else if (id->cls == 2) {
		const struct elf64_ehdr *eh = (const void *)img;
		if (size < sizeof(*eh) || eh->phoff > size ||
		    (uint64_t)eh->phnum * sizeof(struct elf64_phdr) > size - eh->phoff)
			die("program headers outside the file");
		const struct elf64_phdr *ph = (const void *)(img + eh->phoff);
		for (unsigned i = 0; i < eh->phnum; i++)
			if (ph[i].type == 1)
				load_segment(img, size, ph[i].offset, ph[i].paddr, ph[i].filesz, ph[i].memsz);
		entry = eh->entry;
	} else {
		die("unknown ELF class %u", id->cls);
	}
	if (entry >= ram_size || entry >= 0x100000000ull)
		die("entry point 0x%llx is outside guest RAM", (unsigned long long)entry);
	return entry;
}

/* The multiboot info block, laid out as lightpath's loader does. */
static uint32_t build_info(const char *cmdline)
{
	uint8_t *base = ram + MB_INFO_GPA;
	memset(base, 0, MB_INFO_END - MB_INFO_GPA);
	struct mb_info *mi = (struct mb_info *)base;
	uint32_t gpa = MB_INFO_GPA + sizeof(*mi);
	struct mb_mmap *mm = (struct mb_mmap *)(ram + gpa);
	const struct { uint64_t addr, len; uint32_t type; } map[] = {
		{ 0, 0x9fc00, 1 },
		{ 0x9fc00, 0x400, 2 },
		{ 0xf0000, 0x10000, 2 },
		{ 0x100000, ram_size - 0x100000, 1 },
	};
	unsigned n = sizeof(map) / sizeof(map[0]);
	for (unsigned i = 0; i < n; i++) {
		mm[i].size = sizeof(mm[i]) - 4;
		mm[i].addr = map[i].addr;
		mm[i].len = map[i].len;
		mm[i].type = map[i].type;
	}
	mi->mmap_addr = gpa;
	mi->mmap_length = n * sizeof(*mm);
	gpa += mi->mmap_length;
	size_t len = strlen(cmdline);
	if (len > 4000)
		die("command line longer than 4000 characters");
	memcpy(ram + gpa, cmdline, len + 1);
	mi->cmdline = gpa;
	gpa += (uint32_t)len + 1;
	memcpy(ram + gpa, "kvmrun", 7);
	mi->boot_loader_name = gpa;
	mi->mem_lower = 639;
	mi->mem_upper = (uint32_t)((ram_size - 0x100000) >> 10);
	mi->flags = (1u << 0) | (1u << 2) | (1u << 6) | (1u << 9);
	return MB_INFO_GPA;
}

static void flat_seg(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffffu;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->dpl = 0;
	s->db = 1;
	s->s = 1;
	s->l = 0;
	s->g = 1;
}

/* ACPI PM timer from the TSC: 24 bits at 3.579545 MHz. */
static uint64_t pm_mult;	/* 2^32 * PMTIMER_HZ / tsc_hz */

static uint32_t pmtimer_read(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	uint64_t tsc = ((uint64_t)hi << 32) | lo;
	return (uint32_t)(((unsigned __int128)tsc * pm_mult) >> 32) & 0xffffffu;
}

static void serial_out(uint8_t c)
{
	if (!guest_line_open)
		fputs(GUEST_PREFIX, stdout);
	putchar(c);
	guest_line_open = c != '\n';
	if (c == '\n')
		fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned mem_mib = 64;
	int irqchip = 0;
	int i = 1;
	if (i < argc && !strcmp(argv[i], "--mem") && i + 1 < argc) {
		mem_mib = (unsigned)strtoul(argv[i + 1], NULL, 0);
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--irqchip")) {
		irqchip = 1;
		i++;
	}
	if (i >= argc || argv[i][0] == '-') {
		fprintf(stderr, "usage: kvmrun [--mem MIB] [--irqchip] IMAGE [ARGS...]\n");
		return STATUS_VMM_ERROR;
	}
	if (mem_mib < 4 || mem_mib > 1024)
		die("--mem wants 4..1024 MiB");

	/* The guest command line: "IMAGE ARGS..." (the first word is the path). */
	char cmdline[4096] = "";
	for (int a = i; a < argc; a++) {
		if (strlen(cmdline) + strlen(argv[a]) + 2 > sizeof(cmdline))
			die("command line too long");
		if (a > i)
			strcat(cmdline, " ");
		strcat(cmdline, argv[a]);
	}

	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("cannot open /dev/kvm: %s", strerror(errno));
	int ver = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (ver != KVM_API_VERSION)
		die("KVM API version %d, expected %d", ver, KVM_API_VERSION);
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM: %s", strerror(errno));

	ram_size = (uint64_t)mem_mib << 20;
	ram = mmap(NULL, ram_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (ram == MAP_FAILED)
		die("mmap guest RAM: %s", strerror(errno));
	struct kvm_userspace_memory_region region = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = ram_size,
		.userspace_addr = (uint64_t)(uintptr_t)ram,
	};
	xioctl(vm, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");

	size_t img_size;
	uint8_t *img = read_file(argv[i], &img_size);
	uint64_t entry = load_multiboot_elf(img, img_size);
	free(img);
	uint32_t info = build_info(cmdline);

	/* Port 0x80 writes complete in the kernel: an ioeventfd, any value. */
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		die("eventfd: %s", strerror(errno));
	struct kvm_ioeventfd ioev = {
		.addr = PORT_POST, .len = 1, .fd = efd, .flags = KVM_IOEVENTFD_FLAG_PIO,
	};
	xioctl(vm, KVM_IOEVENTFD, &ioev, "KVM_IOEVENTFD (port 0x80)");

	/* Before the vCPU: its local APIC is then KVM's. */
	if (irqchip)
		xioctl(vm, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP");

	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU: %s", strerror(errno));
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run))
		die("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
	struct kvm_run *run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run: %s", strerror(errno));

	/* CPUID: everything KVM supports, including its own 0x40000000 leaves. */
	unsigned nent = 128;
	struct kvm_cpuid2 *cpuid;
	for (;;) {
		cpuid = calloc(1, sizeof(*cpuid) + nent * sizeof(struct kvm_cpuid_entry2));
		if (!cpuid)
			die("out of memory");
		cpuid->nent = nent;
		if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, cpuid) == 0)
			break;
		if (errno != E2BIG)
			die("KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		free(cpuid);
		nent *= 2;
	}
	/* KVM_GET_SUPPORTED_CPUID leaves the TSC-deadline bit to the VMM. */
	if (irqchip && ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0) {
		for (unsigned e = 0; e < cpuid->nent; e++)
			if (cpuid->entries[e].function == 1)
				cpuid->entries[e].ecx |= 1u << 24;
	}
	xioctl(vcpu, KVM_SET_CPUID2, cpuid, "KVM_SET_CPUID2");
	free(cpuid);

	int khz = ioctl(vcpu, KVM_GET_TSC_KHZ, 0);
	if (khz <= 0)
		die("KVM_GET_TSC_KHZ: %s", khz < 0 ? strerror(errno) : "0 kHz");
	pm_mult = (((uint64_t)PMTIMER_HZ << 32) + (uint64_t)khz * 500) / ((uint64_t)khz * 1000);

	struct kvm_sregs sregs;
	xioctl(vcpu, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	flat_seg(&sregs.cs, 0x10, 0xb);
	flat_seg(&sregs.ds, 0x18, 0x3);
	sregs.es = sregs.ss = sregs.fs = sregs.gs = sregs.ds;
	sregs.cr0 = 0x11;	/* PE | ET, paging off */
	sregs.cr3 = 0;
	sregs.cr4 = 0;
	sregs.efer = 0;
	xioctl(vcpu, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");

	struct kvm_regs regs;
	memset(&regs, 0, sizeof(regs));
	regs.rip = entry;
	regs.rax = MB_BOOT_MAGIC;
	regs.rbx = info;
	regs.rflags = 2;
	xioctl(vcpu, KVM_SET_REGS, &regs, "KVM_SET_REGS");

	fprintf(stderr, "kvmrun: %s: entry 0x%llx, %u MiB, TSC %d kHz\n", argv[i],
		(unsigned long long)entry, mem_mib, khz);

	unsigned long long user_exits = 0;
	for (;;) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("KVM_RUN: %s", strerror(errno));
		}
		user_exits++;
		switch (run->exit_reason) {
		case KVM_EXIT_IO: {
			uint8_t *data = (uint8_t *)run + run->io.data_offset;
			uint16_t port = run->io.port;
			for (uint32_t k = 0; k < run->io.count; k++, data += run->io.size) {
				if (run->io.direction == KVM_EXIT_IO_OUT) {
					if (port == PORT_COM1)
						serial_out(data[0]);
					else if (port == PORT_DEBUG_EXIT) {
						end_guest_line();
						fprintf(stderr, "kvmrun: guest ended with status %u "
							"(%llu exits to user space)\n", data[0], user_exits);
						return data[0];
					}
					/* other writes are dropped */
				} else {
					uint32_t v = 0xffffffffu;
					if (port == PORT_COM1_LSR)
						v = 0x60;	/* THR empty, idle */
					else if (port == PORT_PMTIMER)
						v = pmtimer_read();
					memcpy(data, &v, run->io.size);
				}
			}
			break;
		}
		case KVM_EXIT_HLT:
			die("the guest halted (rip after HLT; nothing can wake it)");
		case KVM_EXIT_SHUTDOWN:
			die("the guest triple-faulted (KVM_EXIT_SHUTDOWN)");
		case KVM_EXIT_MMIO:
			die("MMIO %s at 0x%llx: no device there",
			    run->mmio.is_write ? "write" : "read",
			    (unsigned long long)run->mmio.phys_addr);
		case KVM_EXIT_FAIL_ENTRY:
			die("VM entry failed: hardware reason 0x%llx",
			    (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		case KVM_EXIT_INTERNAL_ERROR:
			die("KVM internal error, suberror %u", run->internal.suberror);
		default:
			die("unexpected KVM exit reason %u", run->exit_reason);
		}
	}
}
