/* x86 instruction emulator for MMIO and port I/O (heavy exit path).
 *
 * An exit that reports less than the access needs comes here: a nested
 * page fault on emulated MMIO (only the guest-physical address), string
 * I/O (no memory address), and every port access with io=emulate. The
 * emulator fetches the instruction at CS:RIP through the guest's own page
 * tables (paging off, 32-bit, PAE, 4-level), decodes it (emul/x86_decode.h),
 * performs the access through callbacks and updates registers, flags and
 * RIP. It knows no backend: vmm/heavy_emulate.c wires it for both.
 *
 * The wiring, in vmm/heavy_emulate.c:
 *  1. struct emul_ctx is filled through the vendor state hooks
 *     (vmm/vendor_state.h): the GPRs, vendor_guest_rip, vendor_rflags,
 *     vendor_seg_bases, vendor_guest_paging, vendor_cpl; the callbacks
 *     reach the VM's RAM (gpa_ptr: a host pointer for a range inside one
 *     RAM page, NULL for anything else), its MMIO and port registries
 *     (mmio, pio, pio_rep: the contract of dev/device.h's handlers) and
 *     the vCPU through `opaque`.
 *  2. emul_mmio (a fault on the final access to an MMIO address),
 *     emul_string_io or emul_port_io (the port, size and direction the
 *     exit reported are checked against the decoded instruction).
 *  3. The result: EMUL_DONE stores the registers back (vendor_set_rip,
 *     vendor_set_rflags, ...); a REP instruction not finished leaves RIP
 *     at itself with rCX/rSI/rDI advanced, so the guest runs it again and
 *     interrupts can come in between. EMUL_EXCEPTION stores them as the
 *     architecture leaves them at the fault and injects res.vector
 *     (vendor_inject_exception; for #PF CR2 = res.cr2 first).
 *     EMUL_RETRY (the code or page tables changed under the emulator)
 *     resumes the guest to execute it again. EMUL_UNSUPPORTED changed
 *     nothing: the VM stops with one line naming res.reason and the bytes.
 *     EMUL_VM_END and EMUL_IO_ERROR pass a device callback's verdict on.
 *
 * Not modelled: segment limits and attributes (the CPU checked them for the
 * faulting access; later REP iterations are not re-checked), I/O permission
 * (the CPU checks IOPL and the TSS bitmap before the exit), alignment
 * checks, protection keys; accessed/dirty bits are set only in page tables
 * in RAM. Accesses are not atomic with respect to other vCPUs (LOCK and XCHG
 * on MMIO are a read and a write). RFLAGS.TF is the caller's: with TF set
 * it asks for one REP iteration a call (rep_max = 1) and raises the #DB. */
#ifndef EMUL_X86_EMULATE_H
#define EMUL_X86_EMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emul/x86_decode.h"
#include "emul/guest_paging.h"
#include "emul/io_intercept.h"

#define EMUL_REP_MAX 256u

/* Control-register and RFLAGS bits the emulator looks at. */
#define EMUL_CR0_PE     (1ull << 0)
#define EMUL_CR0_WP     (1ull << 16)
#define EMUL_CR0_PG     (1ull << 31)
#define EMUL_CR4_PSE    (1ull << 4)
#define EMUL_CR4_PAE    (1ull << 5)
#define EMUL_CR4_SMEP   (1ull << 20)
#define EMUL_CR4_SMAP   (1ull << 21)
#define EMUL_EFER_LMA   (1ull << 10)
#define EMUL_EFER_NXE   (1ull << 11)

#define EMUL_RFLAGS_CF  (1ull << 0)
#define EMUL_RFLAGS_PF  (1ull << 2)
#define EMUL_RFLAGS_AF  (1ull << 4)
#define EMUL_RFLAGS_ZF  (1ull << 6)
#define EMUL_RFLAGS_SF  (1ull << 7)
#define EMUL_RFLAGS_DF  (1ull << 10)
#define EMUL_RFLAGS_OF  (1ull << 11)
#define EMUL_RFLAGS_RF  (1ull << 16)
#define EMUL_RFLAGS_VM  (1ull << 17)
#define EMUL_RFLAGS_AC  (1ull << 18)
#define EMUL_RFLAGS_STATUS (EMUL_RFLAGS_CF | EMUL_RFLAGS_PF | EMUL_RFLAGS_AF | \
			    EMUL_RFLAGS_ZF | EMUL_RFLAGS_SF | EMUL_RFLAGS_OF)

/* Exception vectors the emulator injects. */
#define EMUL_VEC_UD 6
#define EMUL_VEC_SS 12
#define EMUL_VEC_GP 13
#define EMUL_VEC_PF 14

/* #PF error code bits. */
#define EMUL_PFEC_P    (1u << 0)
#define EMUL_PFEC_W    (1u << 1)
#define EMUL_PFEC_U    (1u << 2)
#define EMUL_PFEC_RSVD (1u << 3)
#define EMUL_PFEC_I    (1u << 4)

enum emul_status {
	EMUL_DONE = 0,
	EMUL_EXCEPTION,
	EMUL_UNSUPPORTED,
	EMUL_RETRY,
	EMUL_VM_END,
	EMUL_IO_ERROR,
};

enum emul_access { EMUL_ACC_READ = 0, EMUL_ACC_WRITE, EMUL_ACC_FETCH };

struct emul_ctx;

/* RAM: host pointer for [gpa, gpa + len), len <= bytes left in the page;
 * NULL: not RAM (the access goes to mmio). */
typedef void *(*emul_gpa_ptr_fn)(struct emul_ctx *ctx, uint64_t gpa, size_t len);
/* Device access; returns 0 (IO_OK), 1 (IO_VM_END) or a negative error. For a
 * read, store the value in *data (low `size` bytes are used). */
typedef int (*emul_mmio_fn)(struct emul_ctx *ctx, uint64_t gpa, uint64_t *data,
			    unsigned size, bool is_write);
typedef int (*emul_pio_fn)(struct emul_ctx *ctx, uint16_t port, uint64_t *data,
			   unsigned size, bool is_write);
/* n elements of `size` bytes between `port` and RAM at host, host + step,
 * ... (step is negative with DF set), in order: OUTS writes each element
 * read from RAM to the port, INS stores each value read from the port. Stops
 * at the first element whose access does not return 0 (that element is not
 * done, nothing of it stored) and returns that result, else 0; *done is the
 * number of elements done. */
typedef int (*emul_pio_rep_fn)(struct emul_ctx *ctx, uint16_t port, uint8_t *host,
			       int64_t step, unsigned size, uint64_t n, bool is_write,
			       uint64_t *done);

/* Little-endian loads and stores of 1, 2, 4 or 8 bytes at any alignment. */
static inline uint64_t emul_load_le(const void *p, unsigned size)
{
	switch (size) {
	case 1:
		return *(const uint8_t *)p;
	case 2: {
		uint16_t v;
		__builtin_memcpy(&v, p, 2);
		return v;
	}
	case 4: {
		uint32_t v;
		__builtin_memcpy(&v, p, 4);
		return v;
	}
	default: {
		uint64_t v;
		__builtin_memcpy(&v, p, 8);
		return v;
	}
	}
}

static inline void emul_store_le(void *p, uint64_t v, unsigned size)
{
	switch (size) {
	case 1:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case 2: {
		uint16_t x = (uint16_t)v;
		__builtin_memcpy(p, &x, 2);
		break;
	}
	case 4: {
		uint32_t x = (uint32_t)v;
		__builtin_memcpy(p, &x, 4);
		break;
	}
	default:
		__builtin_memcpy(p, &v, 8);
		break;
	}
}

struct emul_ctx {
	uint64_t gpr[16];          /* enum x86_gpr order */
	uint64_t rip;
	uint64_t rflags;
	uint64_t seg_base[6];      /* enum x86_seg order: ES CS SS DS FS GS */
	struct guest_paging pg;
	uint8_t cpl;
	uint8_t maxphyaddr;        /* 0 means 52 */
	unsigned rep_max;          /* 0 means EMUL_REP_MAX */
	emul_gpa_ptr_fn gpa_ptr;
	emul_mmio_fn mmio;
	emul_pio_fn pio;
	emul_pio_rep_fn pio_rep;   /* optional */
	void *opaque;
};

struct emul_result {
	/* EMUL_EXCEPTION */
	uint8_t vector;
	bool has_error_code;
	uint32_t error_code;
	uint64_t cr2;              /* #PF: faulting linear address */
	/* EMUL_UNSUPPORTED (and filled whenever the bytes were fetched) */
	uint8_t bytes[X86_MAX_INSN_LEN];
	uint8_t nbytes;
	uint64_t rip;              /* RIP of the instruction */
	const char *reason;        /* one short phrase, for the report */
	bool fetch_not_ram;        /* the instruction fetch reached a GPA that is not RAM: */
	uint64_t fetch_gpa;        /* that GPA */
	/* EMUL_IO_ERROR */
	int io_error;
	/* statistics */
	unsigned iterations;       /* element accesses performed (REP) */
	struct x86_insn insn;      /* the decoded instruction (when decoded; else len 0) */
	/* The entry points set only what the outcome needs (not a memset of
	 * this structure): bytes[] beyond nbytes is stale. */
};

/* Nested page fault on an MMIO GPA: emulate the instruction at CS:RIP,
 * whose memory access must touch fault_gpa's page. */
enum emul_status emul_mmio(struct emul_ctx *ctx, uint64_t fault_gpa, struct emul_result *res);

/* String port I/O intercept (INS/OUTS, possibly REP). exit_io may be NULL;
 * otherwise its port/size/in are checked against the decoded instruction. */
enum emul_status emul_string_io(struct emul_ctx *ctx, const struct io_intercept *exit_io,
				struct emul_result *res);

/* Any port I/O intercept (io=emulate): IN/OUT (E4-E7, EC-EF) or INS/OUTS
 * at CS:RIP. The string forms run as in emul_string_io. exit_io may be NULL;
 * otherwise its port, size, direction and string bit must match the decoded
 * instruction (else EMUL_RETRY). IN writes AL/AX (merged) or EAX
 * (zero-extended into RAX); OUT sends AL/AX/EAX; RIP advances past it. */
enum emul_status emul_port_io(struct emul_ctx *ctx, const struct io_intercept *exit_io,
			      struct emul_result *res);

/* Building blocks, exported for the hypervisor and the tests. */

/* The mode the CPU decodes in: 64 (long mode, CS.L), 32 (CS.D) or 16 (real,
 * virtual-8086, 16-bit protected mode). */
enum x86_mode emul_cpu_mode(const struct emul_ctx *ctx);

/* Translates a linear address for one access of the given kind at the
 * context's CPL, checking present/write/user/NX/SMEP/SMAP/reserved bits like
 * the CPU, and setting accessed (and dirty, for writes) bits. Returns
 * EMUL_DONE with *gpa, EMUL_EXCEPTION (#PF in *res), or EMUL_UNSUPPORTED (a
 * page-table entry outside RAM). */
enum emul_status emul_translate(struct emul_ctx *ctx, uint64_t lin, enum emul_access acc,
				uint64_t *gpa, struct emul_result *res);

/* Fetches up to X86_MAX_INSN_LEN bytes at CS:RIP into res->bytes and
 * decodes them. */
enum emul_status emul_fetch_decode(struct emul_ctx *ctx, struct emul_result *res);

/* Arithmetic with flags exactly as the CPU: returns the result (truncated
 * to size) and updates the status flags in *rflags. op is enum x86_alu_op. */
uint64_t emul_alu(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t *rflags);

#endif
