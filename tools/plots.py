"""The matplotlib pictures' common part, for `make bench` (tools/bench.py)
and `make linux-report` (tools/linux-boot-report.py): deterministic SVGs in
docs/img/ (fixed ids, no date, text as text: the same figures give the same
bytes) and the grouped bar chart on a log axis both tools draw.

matplotlib is optional: pyplot() says in one line why a picture is not drawn
and the tools write everything else.
"""

import contextlib
import io
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMG_DIR = os.path.join(ROOT, "docs", "img")
STYLE = {"svg.hashsalt": "lightpath", "svg.fonttype": "none", "font.size": 8}


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def img(name):
    """docs/img/NAME, as messages name it."""
    return os.path.relpath(os.path.join(IMG_DIR, name), ROOT)


def pyplot(tool, what, make):
    """matplotlib.pyplot on the Agg backend (no display needed), or None
    after printing one line saying why `what` was not drawn."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot as plt
    except ImportError as e:
        print("%s: %s not drawn: %s (%s installs python3-matplotlib)" % (tool, what, e, make),
              flush=True)
        return None
    return plt


@contextlib.contextmanager
def svg(plt, name, figsize, say=print):
    """A figure and its axes for the with-block, written to docs/img/NAME
    at its end (tight layout)."""
    with plt.rc_context(STYLE):   # savefig reads svg.* too: it stays inside
        fig, ax = plt.subplots(figsize=figsize)
        try:
            yield fig, ax
            fig.tight_layout()
            out = io.StringIO()
            fig.savefig(out, format="svg", metadata={"Date": None})
        finally:
            plt.close(fig)
    os.makedirs(IMG_DIR, exist_ok=True)
    write_atomic(os.path.join(IMG_DIR, name), out.getvalue())
    say("wrote %s" % img(name))


def grouped_barh(ax, rows, series, xlabel):
    """One group of horizontal bars per row (top to bottom in the order
    given), one bar per series (label, colour, {row: value}), each value
    written at its bar's end, on a log x axis: a bar runs from 1 to its
    value, and a row a series has no value for (or 0) gets no bar."""
    bar = 0.8 / len(series)
    top = 1
    for i, (label, color, values) in enumerate(series):
        have = [(r, values[row]) for r, row in enumerate(rows) if values.get(row)]
        ys = [r + (i - (len(series) - 1) / 2) * bar for r, _ in have]
        xs = [x for _, x in have]
        top = max([top] + xs)
        ax.barh(ys, [x - 1 for x in xs], height=bar, left=1, color=color, label=label)
        for y, x in zip(ys, xs):
            ax.text(x * 1.04, y, str(x), va="center", fontsize=5)
    ax.set_xscale("log")
    ax.set_xlim(1, 4 * top)   # room for the labels and the legend
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", which="major", linewidth=0.5, alpha=0.5)
    ax.set_xlabel(xlabel)
