"""Reading lightpath's serial output without trusting the guests in it.

lightpath puts "[vmN] " in front of every line that holds guest output and
starts its own lines on a fresh line, with "lightpath:" or blanks (the exit
statistics table). So, split at '\\n' and nothing else, a line that does not
start with "[vm" was printed by lightpath, whatever the guests printed.

What must not be used on a serial log: str.splitlines() (it also splits at
'\\r', '\\v', '\\f', '\\x1c'-'\\x1e', NEL, U+2028 and U+2029, all of which a
guest can print), open() in text mode without newline="" (it turns a lone
'\\r' into a line end), and stripping every '\\r' before splitting is safe only
together with the rule above. Shared by tools/bench.py, tools/compare/ and
the integration tests.
"""

import re

VM_PREFIX = re.compile(r"\[vm(\d+)\] ")


def read(path):
    """The log as text, bytes exactly as written (invalid UTF-8 replaced,
    no newline translation)."""
    with open(path, "rb") as f:
        return decode(f.read())


def decode(data):
    return data.decode("utf-8", errors="replace")


def lines(text):
    """The lines of a serial log: split at '\\n' only, without the "\\r" the
    console sends before each '\\n' (other '\\r's stay)."""
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()
    return [l.rstrip("\r") for l in out]


def is_lightpath_line(line):
    """Printed by lightpath itself: at a line start, not behind a "[vmN] "
    prefix, and free of the control characters lightpath never prints."""
    return not line.startswith("[vm") and not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", line)


def lightpath_lines(text):
    return [l for l in lines(text) if is_lightpath_line(l)]


def guest_lines(text, vm=None):
    """[(N, rest)] for the lines of guest output ("[vmN] rest"), of vmN only
    when vm is given."""
    out = []
    for l in lines(text):
        m = VM_PREFIX.match(l)
        if m and (vm is None or int(m.group(1)) == vm):
            out.append((int(m.group(1)), l[m.end():]))
    return out
