/* vmm/vmconfig.c: the VM description format, every key, and every way to
 * get it wrong (each error names its line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/vmconfig.h"

static char err[256];
static struct vmconfig cfg;

/* Parses a NUL-terminated text (its length without the NUL). */
static int parse(const char *text)
{
	memset(&cfg, 0xa5, sizeof(cfg));
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	return vmconfig_parse(text, strlen(text), &cfg, err, sizeof(err));
}

static void expect_error(const char *text, const char *msg)
{
	int rc = parse(text);
	if (rc == 0 || strcmp(err, msg) != 0)
		fail_msg("config:\n%s\nexpected error \"%s\", got rc %d err \"%s\"", text, msg, rc, err);
}

#define MAGIC "# lightpath vm\n"

static void test_minimal_and_defaults(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\n"), 0);
	assert_string_equal(err, "");
	assert_string_equal(cfg.kernel, "vmlinuz");
	assert_string_equal(cfg.name, "");
	assert_string_equal(cfg.initrd, "");
	assert_string_equal(cfg.cmdline, "");
	assert_int_equal(cfg.memory_mb, 256);
	assert_int_equal(cfg.cpus, 1);
	assert_false(cfg.has_timeout);         /* vm.timeout= applies */
	assert_int_equal(cfg.timeout_s, 0);
	assert_false(cfg.has_unclaimed);       /* unclaimed= applies */
	assert_int_equal(cfg.nr_modules, 0);
}

static void test_full(void **state)
{
	(void)state;
	const char *text =
		"# lightpath vm\n"
		"# a Linux guest\n"
		"\n"
		"name = linux-1.test_A\n"
		"kernel=vmlinuz\n"
		"  initrd\t=\t initrd.cpio.gz   \n"
		"cmdline = \"console=ttyS0 panic=-1 # not a comment \"\n"
		"memory = 512  # MiB\n"
		"cpus = 1\n";
	assert_int_equal(parse(text), 0);
	assert_string_equal(cfg.name, "linux-1.test_A");
	assert_string_equal(cfg.kernel, "vmlinuz");
	assert_string_equal(cfg.initrd, "initrd.cpio.gz");
	assert_string_equal(cfg.cmdline, "console=ttyS0 panic=-1 # not a comment ");
	assert_int_equal(cfg.memory_mb, 512);
	assert_int_equal(cfg.cpus, 1);
}

/* The file build/linux/linux.cfg that tools/linux/build.sh writes looks like this. */
static void test_project_config(void **state)
{
	(void)state;
	const char *text =
		"# lightpath vm\n"
		"# Debian's kernel with a busybox initramfs (tools/linux/build.sh)\n"
		"name    = linux\n"
		"kernel  = vmlinuz\n"
		"initrd  = initrd.cpio.gz\n"
		"cmdline = \"console=ttyS0 panic=-1\"\n"
		"memory  = 256\n";
	assert_int_equal(parse(text), 0);
	assert_string_equal(cfg.cmdline, "console=ttyS0 panic=-1");
}

static void test_unquoted_values(void **state)
{
	(void)state;
	/* unquoted: ends at a '#' after a blank; a '#' inside a word stays */
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\ncmdline = a=b#c d  # comment\n"), 0);
	assert_string_equal(cfg.cmdline, "a=b#c d");
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\ncmdline = # nothing\n"), 0);
	assert_string_equal(cfg.cmdline, "");
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\ncmdline =\n"), 0);
	assert_string_equal(cfg.cmdline, "");
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\ninitrd = \"\"\n"), 0);
	assert_string_equal(cfg.initrd, "");
	/* quoted, then a trailing comment */
	assert_int_equal(parse(MAGIC "kernel = \"vmlinuz\"   # the kernel\n"), 0);
	assert_string_equal(cfg.kernel, "vmlinuz");
	/* quotes keep blanks at both ends */
	assert_int_equal(parse(MAGIC "kernel = vmlinuz\ncmdline = \"  x  \"\n"), 0);
	assert_string_equal(cfg.cmdline, "  x  ");
}

static void test_line_endings(void **state)
{
	(void)state;
	/* CRLF, no final newline, trailing blanks on the magic line */
	assert_int_equal(parse("# lightpath vm  \r\nkernel = vmlinuz\r\nmemory = 64\r\n"), 0);
	assert_string_equal(cfg.kernel, "vmlinuz");
	assert_int_equal(cfg.memory_mb, 64);
	assert_int_equal(parse(MAGIC "kernel = vmlinuz"), 0);
	assert_string_equal(cfg.kernel, "vmlinuz");
}

/* len bounds the text: nothing after it is read, no NUL needed. */
static void test_length_bounded(void **state)
{
	(void)state;
	static const char text[] = MAGIC "kernel = vmlinuzXXXX";
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(vmconfig_parse(text, sizeof(text) - 1 - 4, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.kernel, "vmlinuz");
	/* a NULL or zero-sized err buffer is allowed */
	assert_int_equal(vmconfig_parse("x", 1, &cfg, NULL, 0), -1);
	assert_int_equal(vmconfig_parse(text, sizeof(text) - 1, &cfg, NULL, 0), 0);
}

static void test_magic(void **state)
{
	(void)state;
	const char *msg = ":1: the first line must be '# lightpath vm' (it marks a VM description)";
	expect_error("kernel = vmlinuz\n", msg);
	expect_error("\n# lightpath vm\nkernel = vmlinuz\n", msg);
	expect_error(" # lightpath vm\nkernel = vmlinuz\n", msg);
	expect_error("# lightpath vmx\nkernel = vmlinuz\n", msg);
	expect_error("# lightpath\nkernel = vmlinuz\n", msg);
	expect_error("\x7f" "ELF\x02\x01\x01", msg);
	expect_error("", ": empty file (the first line must be '# lightpath vm')");
	assert_int_equal(vmconfig_parse(NULL, 0, &cfg, err, sizeof(err)), -1);
}

static void test_is_config(void **state)
{
	(void)state;
#define IS(s) vmconfig_is_config((const uint8_t *)(s), sizeof(s) - 1)
	assert_true(IS("# lightpath vm\nkernel = x\n"));
	assert_true(IS("# lightpath vm\r\n"));
	assert_true(IS("# lightpath vm \t\n"));
	assert_true(IS("# lightpath vm"));
	assert_false(IS("# lightpath v"));
	assert_false(IS("# lightpath vmm\n"));
	assert_false(IS("#lightpath vm\n"));
	assert_false(IS("\n# lightpath vm\n"));
	assert_false(IS("\x7f" "ELF\x02\x01\x01\x00"));
	assert_false(IS(""));
	assert_false(vmconfig_is_config(NULL, 0));
	/* only len bytes are looked at */
	assert_false(vmconfig_is_config((const uint8_t *)"# lightpath vm", 10));
	/* a bzImage's first bytes */
	static const uint8_t bz[] = { 0x4d, 0x5a, 0xea, 0x07, 0x00, 0xc0, 0x07, 0x8c };
	assert_false(vmconfig_is_config(bz, sizeof(bz)));
#undef IS
}

static void test_unknown_key(void **state)
{
	(void)state;
	expect_error(MAGIC "kernel = vmlinuz\nfoo = 1\n",
		     ":3: unknown key 'foo' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
	expect_error(MAGIC "Kernel = vmlinuz\n",
		     ":2: unknown key 'Kernel' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
	expect_error(MAGIC "kernel = vmlinuz\nmem = 64\n",
		     ":3: unknown key 'mem' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
	/* a long key is cut in the message */
	expect_error(MAGIC "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 1\n",
		     ":2: unknown key 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' "
		     "(accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
}

static void test_missing_equals(void **state)
{
	(void)state;
	expect_error(MAGIC "kernel vmlinuz\n",
		     ":2: missing '=' in 'kernel vmlinuz' (lines are 'key = value')");
	expect_error(MAGIC "kernel = vmlinuz\n\n# c\nmemory\n",
		     ":5: missing '=' in 'memory' (lines are 'key = value')");
	expect_error(MAGIC "= vmlinuz\n", ":2: missing key before '='");
}

static void test_duplicate(void **state)
{
	(void)state;
	expect_error(MAGIC "kernel = a\nmemory = 64\nmemory = 64\n",
		     ":4: duplicate key 'memory' (already set on line 3)");
	expect_error(MAGIC "kernel = a\nkernel = b\n",
		     ":3: duplicate key 'kernel' (already set on line 2)");
	expect_error(MAGIC "kernel = a\ncmdline = \"\"\ncmdline = x\n",
		     ":4: duplicate key 'cmdline' (already set on line 3)");
}

static void test_memory(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\nmemory = 16\n"), 0);
	assert_int_equal(cfg.memory_mb, 16);
	assert_int_equal(parse(MAGIC "kernel = k\nmemory = 3072\n"), 0);
	assert_int_equal(cfg.memory_mb, 3072);
	assert_int_equal(parse(MAGIC "kernel = k\nmemory = \"128\"\n"), 0);
	assert_int_equal(cfg.memory_mb, 128);
	expect_error(MAGIC "kernel = k\n\n\nmemory = 12\n", ":5: memory = 12: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 3073\n", ":3: memory = 3073: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 257\n", ":3: memory = 257: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 0\n", ":3: memory = 0: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 256M\n", ":3: memory = 256M: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = -1\n", ":3: memory = -1: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 99999999999\n",
		     ":3: memory = 99999999999: use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory =\n", ":3: memory = : use an even number 16..3072 (MiB)");
	expect_error(MAGIC "kernel = k\nmemory = 1 6\n", ":3: memory = 1 6: use an even number 16..3072 (MiB)");
}

static void test_cpus(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\ncpus = 1\n"), 0);
	assert_int_equal(cfg.cpus, 1);
	assert_int_equal(cfg.nr_pcpus, 0);
	/* more than 1 parses: lightpath refuses it when it starts the VM */
	assert_int_equal(parse(MAGIC "kernel = k\ncpus = 64\n"), 0);
	assert_int_equal(cfg.cpus, 64);
	expect_error(MAGIC "kernel = k\ncpus = 65\n", ":3: cpus = 65: use 1..64 (the VM's vCPUs)");
	expect_error(MAGIC "kernel = k\ncpus = 0\n", ":3: cpus = 0: use 1..64 (the VM's vCPUs)");
	expect_error(MAGIC "kernel = k\ncpus = one\n", ":3: cpus = one: use 1..64 (the VM's vCPUs)");
}

static void test_pcpus(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\npcpus = 3\n"), 0);
	assert_int_equal(cfg.nr_pcpus, 1);
	assert_int_equal(cfg.pcpus[0], 3);
	assert_int_equal(parse(MAGIC "kernel = k\ncpus = 2\npcpus = 2 , 0\n"), 0);
	assert_int_equal(cfg.nr_pcpus, 2);
	assert_int_equal(cfg.pcpus[0], 2);
	assert_int_equal(cfg.pcpus[1], 0);
	assert_int_equal(parse(MAGIC "kernel = k\npcpus = 63 # the last\n"), 0);
	assert_int_equal(cfg.pcpus[0], 63);
	static const char use[] = "use host CPU numbers 0..63, separated by commas, one per vCPU";
	char want[160];
	const char *bad[] = { "64", "-1", "x", "", "1,", ",1", "1,,2", "1 2", "0x1" };
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[96];
		snprintf(text, sizeof(text), MAGIC "kernel = k\ncpus = 2\npcpus = %s\n", bad[i]);
		snprintf(want, sizeof(want), ":4: pcpus = %s: %s", bad[i], use);
		expect_error(text, want);
	}
	expect_error(MAGIC "kernel = k\ncpus = 2\npcpus = 1,1\n", ":4: pcpus = 1,1: CPU 1 is listed twice");
	expect_error(MAGIC "pcpus = 1,2\nkernel = k\n",
		     ":2: pcpus = lists 2 CPUs, but the VM has 1 vCPU (cpus = 1): give one CPU per vCPU");
	expect_error(MAGIC "kernel = k\ncpus = 2\npcpus = 1\n",
		     ":4: pcpus = lists 1 CPU, but the VM has 2 vCPUs (cpus = 2): give one CPU per vCPU");
}

static void test_timeout(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\ntimeout = 2\n"), 0);
	assert_true(cfg.has_timeout);
	assert_int_equal(cfg.timeout_s, 2);
	/* 0 is a value too: no limit for this VM, whatever vm.timeout= says */
	assert_int_equal(parse(MAGIC "kernel = k\ntimeout = 0   # none\n"), 0);
	assert_true(cfg.has_timeout);
	assert_int_equal(cfg.timeout_s, 0);
	assert_int_equal(parse(MAGIC "kernel = k\ntimeout = \"86400\"\n"), 0);
	assert_int_equal(cfg.timeout_s, 86400);
	expect_error(MAGIC "kernel = k\n\ntimeout = 1.5\n",
		     ":4: timeout = 1.5: use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "kernel = k\ntimeout = 86401\n",
		     ":3: timeout = 86401: use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "kernel = k\ntimeout = -1\n",
		     ":3: timeout = -1: use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "kernel = k\ntimeout = 2s\n",
		     ":3: timeout = 2s: use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "kernel = k\ntimeout =\n",
		     ":3: timeout = : use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "kernel = k\ntimeout = 99999999999\n",
		     ":3: timeout = 99999999999: use whole seconds 0..86400 (0 = no limit)");
	expect_error(MAGIC "timeout = 1\nkernel = k\ntimeout = 2\n",
		     ":4: duplicate key 'timeout' (already set on line 2)");
}

static void test_unclaimed(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\nunclaimed = stop\n"), 0);
	assert_true(cfg.has_unclaimed);
	assert_true(cfg.unclaimed_stop);
	assert_int_equal(parse(MAGIC "kernel = k\nunclaimed = \"pc\"  # as on a PC\n"), 0);
	assert_true(cfg.has_unclaimed);
	assert_false(cfg.unclaimed_stop);
	expect_error(MAGIC "kernel = k\nunclaimed = Stop\n", ":3: unclaimed = Stop: use pc or stop");
	expect_error(MAGIC "kernel = k\nunclaimed = stopped\n", ":3: unclaimed = stopped: use pc or stop");
	expect_error(MAGIC "kernel = k\nunclaimed =\n", ":3: unclaimed = : use pc or stop");
	expect_error(MAGIC "unclaimed = pc\nkernel = k\nunclaimed = stop\n",
		     ":4: duplicate key 'unclaimed' (already set on line 2)");
}

static void test_disk(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\n"), 0);
	assert_string_equal(cfg.disk, "");
	assert_int_equal(parse(MAGIC "kernel = k\ndisk = rootfs.img\n"), 0);
	assert_string_equal(cfg.disk, "rootfs.img");
	assert_false(cfg.disk_ro);
	assert_int_equal(parse(MAGIC "kernel = k\ndisk = rootfs.img,ro  # shared\n"), 0);
	assert_string_equal(cfg.disk, "rootfs.img");
	assert_true(cfg.disk_ro);
	assert_int_equal(parse(MAGIC "kernel = k\ndisk = \"a.img,rw\"\n"), 0);
	assert_string_equal(cfg.disk, "a.img");
	assert_false(cfg.disk_ro);
	expect_error(MAGIC "kernel = k\ndisk = a.img,RO\n",
		     ":3: disk = a.img,RO: use a module name, then ,ro or ,rw if you like");
	expect_error(MAGIC "kernel = k\ndisk = a.img,\n",
		     ":3: disk = a.img,: use a module name, then ,ro or ,rw if you like");
	expect_error(MAGIC "kernel = k\ndisk = ,ro\n",
		     ":3: disk = ,ro: use a module name, then ,ro or ,rw if you like");
	expect_error(MAGIC "kernel = k\ndisk = \"a b.img\"\n",
		     ":3: disk = 'a b.img': a module name has no blanks");
	expect_error(MAGIC "kernel = k\ndisk = a.img,ro,ro\n",
		     ":3: disk = a.img,ro,ro: use a module name, then ,ro or ,rw if you like");
}

static void test_net(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\n"), 0);
	assert_string_equal(cfg.net, "");
	assert_int_equal(parse(MAGIC "kernel = k\nnet = link0\n"), 0);
	assert_string_equal(cfg.net, "link0");
	assert_false(cfg.has_mac);
	assert_int_equal(parse(MAGIC "kernel = k\nnet = lan.a-1,mac=52:54:00:Ab:cD:0f  # x\n"), 0);
	assert_string_equal(cfg.net, "lan.a-1");
	assert_true(cfg.has_mac);
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x0f };
	assert_memory_equal(cfg.mac, mac, 6);
	expect_error(MAGIC "kernel = k\nnet = \"a b\"\n",
		     ":3: net = a b: use a link name (1..31 of A-Z a-z 0-9 . _ -), then "
		     ",mac=xx:xx:xx:xx:xx:xx if you like");
	expect_error(MAGIC "kernel = k\nnet = ,mac=52:54:00:00:00:01\n",
		     ":3: net = ,mac=52:54:00:00:00:01: use a link name (1..31 of A-Z a-z 0-9 . _ -), "
		     "then ,mac=xx:xx:xx:xx:xx:xx if you like");
	expect_error(MAGIC "kernel = k\nnet = l0123456789012345678901234567890\n",
		     ":3: net = l0123456789012345678901234567890: use a link name (1..31 of A-Z a-z "
		     "0-9 . _ -), then ,mac=xx:xx:xx:xx:xx:xx if you like");
	expect_error(MAGIC "kernel = k\nnet = l0,mac=52:54:00:00:01\n",
		     ":3: net = l0,mac=52:54:00:00:01: after the link name, ,mac=xx:xx:xx:xx:xx:xx "
		     "(six hex bytes)");
	expect_error(MAGIC "kernel = k\nnet = l0,mac=52-54-00-00-00-01\n",
		     ":3: net = l0,mac=52-54-00-00-00-01: after the link name, "
		     ",mac=xx:xx:xx:xx:xx:xx (six hex bytes)");
	expect_error(MAGIC "kernel = k\nnet = l0,mac=5g:54:00:00:00:01\n",
		     ":3: net = l0,mac=5g:54:00:00:00:01: after the link name, "
		     ",mac=xx:xx:xx:xx:xx:xx (six hex bytes)");
	expect_error(MAGIC "kernel = k\nnet = l0,mac=ff:ff:ff:ff:ff:ff\n",
		     ":3: net = l0,mac=ff:ff:ff:ff:ff:ff: a VM's MAC address must be unicast (first "
		     "byte even) and not zero");
	expect_error(MAGIC "kernel = k\nnet = l0,mac=00:00:00:00:00:00\n",
		     ":3: net = l0,mac=00:00:00:00:00:00: a VM's MAC address must be unicast (first "
		     "byte even) and not zero");
}

/* modules = "name args", name, ...: each entry is a module's string, its
 * first word the module's name. */
static void test_modules(void **state)
{
	(void)state;
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = \"a.bin x=1  y\", b.bin,c.bin\n"), 0);
	assert_int_equal(cfg.nr_modules, 3);
	assert_string_equal(cfg.modules[0].name, "a.bin");
	assert_string_equal(cfg.modules[0].string, "a.bin x=1  y");
	assert_string_equal(cfg.modules[1].name, "b.bin");
	assert_string_equal(cfg.modules[1].string, "b.bin");
	assert_string_equal(cfg.modules[2].name, "c.bin");
	assert_string_equal(cfg.modules[2].string, "c.bin");
	/* one entry, blanks around commas, a trailing comment, '#' inside a word */
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = a#1.bin   # the one\n"), 0);
	assert_int_equal(cfg.nr_modules, 1);
	assert_string_equal(cfg.modules[0].string, "a#1.bin");
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = \"a # not a comment\" ,\tb # c\n"), 0);
	assert_int_equal(cfg.nr_modules, 2);
	assert_string_equal(cfg.modules[0].string, "a # not a comment");
	assert_string_equal(cfg.modules[0].name, "a");
	assert_string_equal(cfg.modules[1].string, "b");
	/* an empty list is no list; the same module twice is two modules */
	assert_int_equal(parse(MAGIC "kernel = k\nmodules =\n"), 0);
	assert_int_equal(cfg.nr_modules, 0);
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = # none\n"), 0);
	assert_int_equal(cfg.nr_modules, 0);
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = a, a\n"), 0);
	assert_int_equal(cfg.nr_modules, 2);
	/* eight fit */
	assert_int_equal(parse(MAGIC "kernel = k\nmodules = a,b,c,d,e,f,g,\"h last\"\n"), 0);
	assert_int_equal(cfg.nr_modules, 8);
	assert_string_equal(cfg.modules[7].string, "h last");
}

static void test_modules_errors(void **state)
{
	(void)state;
	expect_error(MAGIC "kernel = k\nmodules = a,b,c,d,e,f,g,h,i\n",
		     ":3: modules: more than 8 entries");
	expect_error(MAGIC "kernel = k\nmodules = a,\n", ":3: modules: nothing after the last ','");
	expect_error(MAGIC "kernel = k\nmodules = a, # c\n", ":3: modules: nothing after the last ','");
	expect_error(MAGIC "kernel = k\nmodules = , a\n", ":3: modules: entry 1 is empty");
	expect_error(MAGIC "kernel = k\nmodules = a,,b\n", ":3: modules: entry 2 is empty");
	expect_error(MAGIC "kernel = k\nmodules = a, \"\"\n", ":3: modules: entry 2 is empty");
	expect_error(MAGIC "kernel = k\nmodules = \"a x\", \"b y\n",
		     ":3: modules: entry 2 has no closing '\"'");
	expect_error(MAGIC "kernel = k\nmodules = a x\n",
		     ":3: modules: unexpected 'x' after entry 1 (entries are separated by ',')");
	expect_error(MAGIC "kernel = k\nmodules = \"a\" \"b\"\n",
		     ":3: modules: unexpected '\"b\"' after entry 1 (entries are separated by ',')");
	expect_error(MAGIC "kernel = k\nmodules = a\"b\"\n",
		     ":3: modules: unexpected '\"' inside entry 1 (quote the whole entry)");
	expect_error(MAGIC "kernel = k\nmodules = \" a\"\n",
		     ":3: modules: entry 1 must start with the module's name");
	expect_error(MAGIC "modules = a\nkernel = k\nmodules = b\n",
		     ":4: duplicate key 'modules' (already set on line 2)");
	expect_error(MAGIC "kernel = k\nmodules = a\x01\n",
		     ":3: control character 0x01 (a VM description is text)");

	/* an entry is at most 255 characters, its name at most 127 */
	char text[1024], val[400];
	memset(val, 'm', 255);
	val[255] = '\0';
	val[100] = ' ';
	snprintf(text, sizeof(text), MAGIC "kernel = k\nmodules = \"%s\"\n", val);
	assert_int_equal(parse(text), 0);
	assert_int_equal(strlen(cfg.modules[0].string), 255);
	assert_int_equal(strlen(cfg.modules[0].name), 100);
	memset(val, 'm', 256);
	val[256] = '\0';
	val[100] = ' ';
	snprintf(text, sizeof(text), MAGIC "kernel = k\nmodules = x, \"%s\"\n", val);
	expect_error(text, ":3: modules: entry 2 is too long (256 characters, at most 255)");
	memset(val, 'm', 128);
	val[128] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = k\nmodules = %s\n", val);
	expect_error(text, ":3: modules: the module name in entry 1 is too long (128 characters, "
		     "at most 127)");
	val[127] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = k\nmodules = %s\n", val);
	assert_int_equal(parse(text), 0);
}

static void test_too_long(void **state)
{
	(void)state;
	char text[2048];
	char val[1100];

	/* cmdline: 1023 characters fit, 1024 do not */
	memset(val, 'c', 1023);
	val[1023] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = k\ncmdline = \"%s\"\n", val);
	assert_int_equal(parse(text), 0);
	assert_int_equal(strlen(cfg.cmdline), 1023);
	memset(val, 'c', 1024);
	val[1024] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = k\ncmdline = %s\n", val);
	expect_error(text, ":3: the value of 'cmdline' is too long (1024 characters, at most 1023)");

	/* kernel and initrd: 127; name: 31 */
	memset(val, 'k', 128);
	val[128] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = %s\n", val);
	expect_error(text, ":2: the value of 'kernel' is too long (128 characters, at most 127)");
	val[127] = '\0';
	snprintf(text, sizeof(text), MAGIC "kernel = %s\n", val);
	assert_int_equal(parse(text), 0);
	snprintf(text, sizeof(text), MAGIC "kernel = k\ninitrd = %sk\n", val);
	expect_error(text, ":3: the value of 'initrd' is too long (128 characters, at most 127)");
	expect_error(MAGIC "kernel = k\nname = abcdefghijklmnopqrstuvwxyz012345\n",
		     ":3: the value of 'name' is too long (32 characters, at most 31)");
	assert_int_equal(parse(MAGIC "kernel = k\nname = abcdefghijklmnopqrstuvwxyz01234\n"), 0);
	assert_string_equal(cfg.name, "abcdefghijklmnopqrstuvwxyz01234");
}

static void test_missing_kernel(void **state)
{
	(void)state;
	const char *msg = ": no 'kernel = ...' line (every VM needs a kernel)";
	expect_error(MAGIC, msg);
	expect_error("# lightpath vm", msg);
	expect_error(MAGIC "name = x\ninitrd = i\nmemory = 64\n", msg);
	expect_error(MAGIC "kernel =\n", ":2: kernel = needs a module name");
	expect_error(MAGIC "kernel = \"\"\n", ":2: kernel = needs a module name");
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error(MAGIC "kernel = my kernel\n", ":2: kernel = 'my kernel': a module name has no blanks");
	expect_error(MAGIC "kernel = k\ninitrd = \"a b\"\n",
		     ":3: initrd = 'a b': a module name has no blanks");
	expect_error(MAGIC "kernel = k\nname = my vm\n",
		     ":3: name = 'my vm': use letters, digits, '.', '_' and '-'");
	expect_error(MAGIC "kernel = k\nname = vm/1\n",
		     ":3: name = 'vm/1': use letters, digits, '.', '_' and '-'");
	expect_error(MAGIC "kernel = k\ncmdline = \"console=ttyS0\n",
		     ":3: missing closing '\"' in the value of 'cmdline'");
	expect_error(MAGIC "kernel = k\ncmdline = \"a\" b\n",
		     ":3: unexpected 'b' after the quoted value of 'cmdline'");
	expect_error(MAGIC "kernel = k\ncmdline = \"a\"\"b\"\n",
		     ":3: unexpected '\"b\"' after the quoted value of 'cmdline'");
}

static void test_control_characters(void **state)
{
	(void)state;
	static const char nul[] = MAGIC "kernel = k\0x\n";
	memset(err, 0, sizeof(err));
	assert_int_equal(vmconfig_parse(nul, sizeof(nul) - 1, &cfg, err, sizeof(err)), -1);
	assert_string_equal(err, ":2: control character 0x00 (a VM description is text)");
	expect_error(MAGIC "kernel = k\ncmdline = a\x1b[1mb\n",
		     ":3: control character 0x1b (a VM description is text)");
	expect_error(MAGIC "kernel = k\rmemory = 64\n",
		     ":2: control character 0x0d (a VM description is text)");
	/* tabs are blanks */
	assert_int_equal(parse(MAGIC "\tkernel\t=\tk\t\n"), 0);
	assert_string_equal(cfg.kernel, "k");
}

/* The caller prints "<file><err>": "linux.cfg:3: ..." */
static void test_error_prefix_and_truncation(void **state)
{
	(void)state;
	char line[300];
	expect_error(MAGIC "kernel = k\nfoo = 1\n",
		     ":3: unknown key 'foo' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
	snprintf(line, sizeof(line), "linux.cfg%s", err);
	assert_string_equal(line,
			    "linux.cfg:3: unknown key 'foo' (accepted: name kernel initrd modules cmdline memory cpus pcpus timeout unclaimed disk net)");
	/* a short err buffer gets a cut, NUL-terminated line */
	char small[8];
	memset(small, 'x', sizeof(small));
	assert_int_equal(vmconfig_parse(MAGIC "foo = 1\n", strlen(MAGIC "foo = 1\n"), &cfg, small,
					sizeof(small)), -1);
	assert_string_equal(small, ":2: unk");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_and_defaults),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_project_config),
		cmocka_unit_test(test_unquoted_values),
		cmocka_unit_test(test_line_endings),
		cmocka_unit_test(test_length_bounded),
		cmocka_unit_test(test_magic),
		cmocka_unit_test(test_is_config),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_missing_equals),
		cmocka_unit_test(test_duplicate),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_cpus),
		cmocka_unit_test(test_pcpus),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_unclaimed),
		cmocka_unit_test(test_disk),
		cmocka_unit_test(test_net),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_modules_errors),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_missing_kernel),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_error_prefix_and_truncation),
	};
	return cmocka_run_group_tests_name("vmconfig", tests, NULL, NULL);
}
