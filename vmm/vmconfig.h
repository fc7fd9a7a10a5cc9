/* VM descriptions: a small text file, given to lightpath as a multiboot
 * module, that says what one VM runs (an xl.cfg-like `key = value` list).
 *
 *   # lightpath vm
 *   name    = linux
 *   kernel  = vmlinuz                      # module basename, required
 *   initrd  = initrd.cpio.gz               # module basename, optional
 *   cmdline = "console=ttyS0 panic=-1"     # the guest kernel's command line
 *   memory  = 256                          # MiB, 16..3072, default 256
 *   cpus    = 1                            # only 1 is accepted today
 *   timeout = 30                           # seconds, 0..86400; 0 = no limit
 *   unclaimed = stop                       # pc (default) | stop: see README
 *
 * The first line must be exactly `# lightpath vm` (trailing blanks and a CR
 * allowed): it is how lightpath tells a config module from a kernel image.
 * After it: blank lines, `#` comment lines, and `key = value` lines. A value
 * may be in double quotes (then it may hold `#` and leading or trailing
 * blanks; it cannot hold a `"`). An unquoted value ends at the end of the
 * line or at a `#` that follows a blank (a trailing comment). Each key at
 * most once; keys are lower case.
 *
 * kernel and initrd name other modules of the same boot by the basename of
 * their path (`kernel = vmlinuz` matches the module `build/linux/vmlinuz`);
 * lightpath does not start those modules as VMs of their own.
 *
 * Freestanding (lib/string.h, lib/printf.h only): built into the hypervisor
 * and into the host unit tests. */
#ifndef VMM_VMCONFIG_H
#define VMM_VMCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VMCONFIG_MAGIC           "# lightpath vm"
#define VMCONFIG_MEMORY_MIN_MB   16u
#define VMCONFIG_MEMORY_MAX_MB   3072u
#define VMCONFIG_MEMORY_DEFAULT  256u
#define VMCONFIG_CPUS_MAX        1u
#define VMCONFIG_TIMEOUT_MAX_S   86400u   /* as the boot option vm.timeout= */

struct vmconfig {
	char name[32];       /* [A-Za-z0-9._-], may be empty: the caller picks one */
	char kernel[128];    /* required */
	char initrd[128];    /* "" = none */
	char cmdline[1024];  /* "" = empty command line */
	unsigned memory_mb;  /* VMCONFIG_MEMORY_MIN_MB..VMCONFIG_MEMORY_MAX_MB */
	unsigned cpus;       /* 1 */
	bool has_timeout;    /* a `timeout =` line was given: it overrides vm.timeout= */
	unsigned timeout_s;  /* the VM's time limit in seconds, 0 = none */
	bool has_unclaimed;  /* an `unclaimed =` line was given: it overrides unclaimed= */
	bool unclaimed_stop; /* stop the VM at an access nobody claims */
};

/* Does this module start with the line "# lightpath vm"? Cheap enough to
 * ask of every module (binary images never start with '#'). */
bool vmconfig_is_config(const uint8_t *data, size_t len);

/* Parses text[0..len) (need not be NUL-terminated) into *out, defaults
 * first. Returns 0, or -1 with one line (no newline) in err that starts with
 * ':' so that the caller only prepends the file name:
 *   ":3: unknown key 'foo' (accepted: name kernel initrd cmdline memory cpus timeout unclaimed)"
 *   ":5: memory = 12: use an even number 16..3072 (MiB)"
 *   ":6: timeout = 1.5: use whole seconds 0..86400 (0 = no limit)"
 *   ": no 'kernel = ...' line (every VM needs a kernel)"      (whole file)
 * i.e. printf("%s%s\n", "linux.cfg", err) gives "linux.cfg:3: ...".
 * *out is only meaningful when 0 is returned. */
int vmconfig_parse(const char *text, size_t len, struct vmconfig *out, char *err, size_t errlen);

#endif
