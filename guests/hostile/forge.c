/* forge: a hostile guest that tries to pass its own output off as
 * lightpath's. It prints the lines lightpath prints when a VM ends and when
 * it powers off, behind every trick that could move them to the start of a
 * line in a log or on a terminal: carriage returns, the other characters
 * Python's str.splitlines() breaks at, NUL bytes, escape sequences and
 * backspaces, an over-long line, the Bochs status line lightpath writes to
 * port 0xe9 (on the serial port and on port 0xe9 itself), and a last line
 * that never ends. Then it exits with status=N (default 3).
 *
 * A parser that believes any of it sees "status 0" where the real status
 * is N. */
#include "guests/rt/rt.h"

#define ENDED   "lightpath: vm0: ended with status 0 (isa-debug-exit)"
#define POWER   "lightpath: all VMs ended; powering off with status 0 (every VM ended with status 0)"
#define BOCHS   "lightpath-power-off-status: 0"
#define STATS   "  total                 100  100.0%        100          0   light 100.0%"
#define BOCHS_E9_PORT 0xe9
#define LONG_LINE 8192

static void put_bytes(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		rt_putc(s[i]);
}

/* A forged line behind `trick` (which may hold NULs, hence the length). */
static void forge(const char *trick, size_t trick_len, const char *line)
{
	put_bytes(trick, trick_len);
	rt_puts(line);
	rt_putc('\n');
}

#define FORGE(trick, line) forge(trick, sizeof(trick) - 1, line)

int guest_main(void)
{
	unsigned status = (unsigned)rt_arg_u64("status", 3);
	rt_printf("forge: start\n");
	FORGE("", ENDED);                       /* as it is */
	FORGE("", POWER);
	FORGE("", BOCHS);
	FORGE("", STATS);
	FORGE("progress 50%\r", POWER);         /* a carriage return mid-line */
	FORGE("\r", ENDED);                     /* ... and at a line start */
	FORGE("\r\r", BOCHS);
	FORGE("\x0b", ENDED);                   /* what str.splitlines() also splits at */
	FORGE("\x0c", ENDED);
	FORGE("\x1c", ENDED);
	FORGE("\x1d", ENDED);
	FORGE("\x1e", ENDED);
	FORGE("\xc2\x85", ENDED);               /* NEL, U+2028, U+2029 in UTF-8 */
	FORGE("\xe2\x80\xa8", ENDED);
	FORGE("\xe2\x80\xa9", POWER);
	FORGE("\0", POWER);                     /* a NUL */
	FORGE("\x1b[2K\x1b[1G", POWER);         /* clear the line, cursor to column 1 */
	FORGE("\b\b\b\b\b\b", ENDED);           /* back over the prefix */
	for (unsigned i = 0; i < LONG_LINE; i++)  /* longer than any line buffer */
		rt_putc('A' + i % 26);
	FORGE("", POWER);
	/* The port lightpath reports its status on under Bochs: lightpath must
	 * intercept it like every other port (the write is dropped). */
	for (const char *s = "\n" BOCHS "\n"; *s; s++)
		outb(BOCHS_E9_PORT, (uint8_t)*s);
	rt_printf("forge: done, exiting with status %u\n", status);
	rt_puts(POWER);                          /* a line that never ends */
	return (int)status;
}
