/* VM descriptions: a small text file, given to lightpath as a multiboot
 * module, that says what one VM runs (an xl.cfg-like `key = value` list).
 *
 *   # lightpath vm
 *   name    = linux
 *   kernel  = vmlinuz                      # module basename, required
 *   initrd  = initrd.cpio.gz               # module basename, optional
 *   modules = "a.bin x=1", b.bin           # multiboot modules, optional
 *   cmdline = "console=ttyS0 panic=-1"     # the guest kernel's command line
 *   memory  = 256                          # MiB, 16..3072, default 256
 *   cpus    = 1                            # vCPUs, 1..64 (each on a host CPU of its own)
 *   pcpus   = 2                            # host CPUs to pin them to, optional
 *   timeout = 30                           # seconds, 0..86400; 0 = no limit
 *   unclaimed = stop                       # pc (default) | stop: docs/USAGE.md
 *   disk    = rootfs.img,ro                # module basename: a virtio-blk disk, optional;
 *                                          # ,ro read-only, ,rw (default) changes kept in RAM
 *   net     = link0,mac=52:54:00:12:34:56  # a virtio-net device on the link link0 (between
 *                                          # VMs side by side), optional; mac= optional
 *
 * The first line must be exactly `# lightpath vm` (trailing blanks and a CR
 * allowed): it is how lightpath tells a config module from a kernel image.
 * After it: blank lines, `#` comment lines, and `key = value` lines. A value
 * may be in double quotes (then it may hold `#` and leading or trailing
 * blanks; it cannot hold a `"`). An unquoted value ends at the end of the
 * line or at a `#` that follows a blank (a trailing comment). Each key at
 * most once; keys are lower case.
 *
 * kernel, initrd, modules and disk name other modules of the same boot by the
 * basename of their path (`kernel = vmlinuz` matches the module
 * `build/linux/vmlinuz`); lightpath does not start those modules as VMs of
 * their own.
 *
 * modules = is a comma-separated list of at most VMCONFIG_MODULES_MAX
 * entries, each a module name (no blanks, commas or quotes) or a quoted
 * string "name args..." whose first word is the module name; the whole
 * entry is the module's string as a multiboot kernel sees it. A multiboot
 * kernel gets initrd (if any) and then these as its module list, in that
 * order; a Linux kernel takes no modules (its initrd is initrd =).
 *
 * Freestanding (lib/string.h, lib/printf.h only): built into the hypervisor
 * and into the host unit tests. */
#ifndef VMM_VMCONFIG_H
#define VMM_VMCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/limits.h"

#define VMCONFIG_MAGIC           "# lightpath vm"
#define VMCONFIG_MEMORY_MIN_MB   16u
#define VMCONFIG_MEMORY_MAX_MB   3072u
#define VMCONFIG_MEMORY_DEFAULT  256u
#define VMCONFIG_CPUS_MAX        LP_MAX_CPUS
#define VMCONFIG_TIMEOUT_MAX_S   86400u   /* as the boot option vm.timeout= */
#define VMCONFIG_MODULES_MAX     8u
#define VMCONFIG_MODULE_NAME_MAX 128u     /* with the NUL, as kernel and initrd */
#define VMCONFIG_MODULE_STR_MAX  256u     /* "name args", with the NUL */

struct vmconfig_module {
	char name[VMCONFIG_MODULE_NAME_MAX];   /* the entry's first word */
	char string[VMCONFIG_MODULE_STR_MAX];  /* the whole entry */
};

struct vmconfig {
	char name[32];       /* [A-Za-z0-9._-], may be empty: the caller picks one */
	char kernel[128];    /* required */
	char initrd[128];    /* "" = none */
	unsigned nr_modules; /* modules = ..., in order */
	struct vmconfig_module modules[VMCONFIG_MODULES_MAX];
	char cmdline[1024];  /* "" = empty command line */
	unsigned memory_mb;  /* VMCONFIG_MEMORY_MIN_MB..VMCONFIG_MEMORY_MAX_MB */
	unsigned cpus;       /* 1..VMCONFIG_CPUS_MAX (lightpath runs 1 yet: vmm/guests.c) */
	unsigned nr_pcpus;   /* pcpus = a,b,...: 0 = not given (lightpath picks) */
	uint8_t pcpus[VMCONFIG_CPUS_MAX];   /* host CPU numbers, 0..VMCONFIG_CPUS_MAX-1 */
	bool has_timeout;    /* a `timeout =` line was given: it overrides vm.timeout= */
	unsigned timeout_s;  /* the VM's time limit in seconds, 0 = none */
	bool has_unclaimed;  /* an `unclaimed =` line was given: it overrides unclaimed= */
	bool unclaimed_stop; /* stop the VM at an access nobody claims */
	char disk[128];      /* "" = no disk */
	bool disk_ro;
	char net[32];        /* the link's name, [A-Za-z0-9._-]; "" = no network device */
	bool has_mac;        /* mac= given (else lightpath picks one) */
	uint8_t mac[6];      /* a unicast address, not all zeros */
};

/* Does this module start with the line "# lightpath vm"? Cheap enough to
 * ask of every module (binary images never start with '#'). */
bool vmconfig_is_config(const uint8_t *data, size_t len);

/* Parses text[0..len) (need not be NUL-terminated) into *out, defaults
 * first. Returns 0, or -1 with one line (no newline) in err that starts with
 * ':' so that the caller only prepends the file name:
 *   ":3: unknown key 'foo' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)"
 *   ":5: memory = 12: use an even number 16..3072 (MiB)"
 *   ":6: timeout = 1.5: use whole seconds 0..86400 (0 = no limit)"
 *   ":4: modules: missing closing '\"' in entry 2"
 *   ": no 'kernel = ...' line (every VM needs a kernel)"      (whole file)
 * i.e. printf("%s%s\n", "linux.cfg", err) gives "linux.cfg:3: ...".
 * *out is only meaningful when 0 is returned. */
int vmconfig_parse(const char *text, size_t len, struct vmconfig *out, char *err, size_t errlen);

#endif
