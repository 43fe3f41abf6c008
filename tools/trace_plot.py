#!/usr/bin/env python3
"""Draw a weft trace (weft_trace_write's JSON) as a PNG timeline.

    tools/trace_plot.py TRACE.json -o OUT.png [--from MS] [--to MS] [--title T]

One row per thread, named by its thread_name metadata ("worker 0", "bound
thread 2"). Each task stretch ("cat":"task", "ph":"X") is a bar coloured
by the task's name, the same colour for the same name; the legend lists
the names that take the most time. The stretches of one run (same
args.run) are joined by a dotted line across the time the fiber waited,
labelled with args.wait where there is room; wake-ups ("cat":"wake", s/f
pairs) are thin arrows from the waker's row. Parallel loop chunks and
zones are thinner bars inside their task; a thread's park to its next
wake is a grey line under its row; graph runs (b/e pairs) get a row of
their own on top. --from and --to cut the picture to a window, in ms
from the start of the trace.

Needs matplotlib (Debian: python3-matplotlib), drawn with the Agg
backend; when this python3 cannot import it and /usr/bin/python3 can (a
pyenv or venv python3 first on PATH), the script runs itself again with
that one. Fields the layout names may be missing: an event without what
it needs is skipped.
"""

import argparse
import json
import os
import subprocess
import sys
import zlib

LEGEND_NAMES = 12
# tab20's pairs, dark then light, so neighbouring names differ.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a",
           "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#dbdb8d"]
OTHER = "#b0b0b0"


def need_matplotlib():
    """Imports matplotlib (Agg), or runs this script again with
    /usr/bin/python3, or exits naming the Debian package."""
    try:
        import matplotlib
    except ImportError:
        alt = "/usr/bin/python3"
        if (not os.environ.get("WEFT_TRACE_PLOT_REEXEC") and os.path.exists(alt)
                and os.path.realpath(alt) != os.path.realpath(sys.executable)
                and subprocess.run([alt, "-c", "import matplotlib"],
                                   capture_output=True).returncode == 0):
            env = dict(os.environ, WEFT_TRACE_PLOT_REEXEC="1")
            sys.exit(subprocess.run([alt] + sys.argv, env=env).returncode)
        sys.exit("trace_plot.py: matplotlib is missing for %s; on Debian: "
                 "apt-get install python3-matplotlib" % sys.executable)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def num(v, default=None):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def load(path):
    """The events and the document; bytes that are not UTF-8 (a name the
    writer got wrong) become U+FFFD rather than failing the whole file."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8", errors="replace"))
    except (OSError, ValueError) as e:
        sys.exit("trace_plot.py: cannot read %s: %s" % (path, e))
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        sys.exit("trace_plot.py: %s: no traceEvents list" % path)
    return [e for e in events if isinstance(e, dict)], doc if isinstance(doc, dict) else {}


def busiest(tasks):
    """Task names, the most time first."""
    total = {}
    for t in tasks:
        total[t["name"]] = total.get(t["name"], 0.0) + t["dur"]
    return sorted(total, key=lambda n: (-total[n], n))


def colours(tasks):
    """A colour per task name, for the whole file (a window of it keeps
    the colours): the LEGEND_NAMES names with the most time each get a
    palette colour picked by a hash of the name (the next free one on a
    clash, so mostly the same from file to file); the rest are grey."""
    taken, colour = set(), {}
    for name in sorted(busiest(tasks)[:LEGEND_NAMES]):
        i = zlib.crc32(name.encode()) % len(PALETTE)
        while i in taken:
            i = (i + 1) % len(PALETTE)
        taken.add(i)
        colour[name] = PALETTE[i]
    return lambda n: colour.get(n, OTHER)


def parse(events):
    """Sorts the events the picture uses into plain records."""
    names, slices, flows, graphs, instants = {}, [], {}, {}, []
    for e in events:
        ph, tid, ts = e.get("ph"), e.get("tid", 0), num(e.get("ts"))
        ea = e.get("args") if isinstance(e.get("args"), dict) else {}
        if ph == "M" and e.get("name") == "thread_name" and isinstance(ea.get("name"), str):
            names[tid] = ea["name"]
        elif ts is None:
            continue
        elif ph == "X":
            name = "".join(c if c.isprintable() else "?" for c in str(e.get("name") or "(unnamed)"))
            slices.append({"cat": e.get("cat", "task"), "name": name,
                           "tid": tid, "ts": ts, "dur": max(num(e.get("dur"), 0.0), 0.0),
                           "run": ea.get("run"), "wait": ea.get("wait")})
        elif ph in ("s", "f") and e.get("id") is not None:
            flows.setdefault((e.get("cat"), e["id"]), {})[ph] = (tid, ts)
        elif ph in ("b", "e") and e.get("cat") == "graph":
            graphs.setdefault(e.get("id"), {})[ph] = ts
        elif ph in ("i", "I"):
            instants.append((e.get("name"), tid, ts))
    return names, slices, flows, graphs, instants


def nest(slices):
    """Sets s["depth"]: how many slices of its thread enclose it (a zone
    in a task, a chunk in a loop's task, a task run inline by another)."""
    by_tid = {}
    for s in slices:
        by_tid.setdefault(s["tid"], []).append(s)
    for group in by_tid.values():
        group.sort(key=lambda s: (s["ts"], -s["dur"]))
        open_ends = []
        for s in group:
            while open_ends and open_ends[-1] <= s["ts"]:
                open_ends.pop()
            s["depth"] = len(open_ends)
            open_ends.append(s["ts"] + s["dur"])


def lanes(gaps):
    """Gives each (start, end, ...) a lane: the lowest not in use at its
    start. Returns [(lane, gap)] and the number of lanes."""
    ends, out = [], []
    for g in sorted(gaps, key=lambda g: g[0]):
        lane = next((i for i, e in enumerate(ends) if e <= g[0]), len(ends))
        ends[lane:lane + 1] = [g[1]]
        out.append((lane, g))
    return out, len(ends)


def main():
    ap = argparse.ArgumentParser(description="Draw a weft trace as a PNG timeline.")
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    ap.add_argument("--from", dest="t0", type=float, help="window start, ms")
    ap.add_argument("--to", dest="t1", type=float, help="window end, ms")
    ap.add_argument("--title", help="the picture's title (default: the file's name)")
    args = ap.parse_args()
    events, doc = load(args.trace)
    plt = need_matplotlib()
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    names, slices, flows, graphs, instants = parse(events)

    # The window, in µs from the start (the trace's times already are).
    stamps = [s["ts"] for s in slices] + [s["ts"] + s["dur"] for s in slices]
    stamps += [i[2] for i in instants] + [t for g in graphs.values() for t in g.values()]
    if not stamps:
        sys.exit("trace_plot.py: %s holds no timed events" % args.trace)
    lo = args.t0 * 1000 if args.t0 is not None else min(stamps)
    hi = args.t1 * 1000 if args.t1 is not None else max(stamps)
    if hi <= lo:
        sys.exit("trace_plot.py: empty window (--from must be below --to, both in ms)")
    inside = lambda a, b: b >= lo and a <= hi  # noqa: E731
    nest(slices)
    colour_of = colours([s for s in slices if s["cat"] == "task"])
    slices = [s for s in slices if inside(s["ts"], s["ts"] + s["dur"])]
    tasks = [s for s in slices if s["cat"] == "task"]

    # Rows: threads with something in the window, by id; graph runs last.
    tids = sorted({s["tid"] for s in slices} | {i[1] for i in instants if lo <= i[2] <= hi},
                  key=lambda t: (not isinstance(t, int), t if isinstance(t, int) else 0, str(t)))
    runs = [g for g in graphs.values() if "b" in g and inside(g["b"], g.get("e", hi))]
    nrows = len(tids) + (1 if runs else 0)
    row = {t: i for i, t in enumerate(tids)}
    labels = [names.get(t, "thread %s" % t) for t in tids] + (["graph runs"] if runs else [])

    ms = hi - lo >= 2000            # the axis in ms from 2 ms up, else µs
    k = 1e-3 if ms else 1.0
    width, dpi = 14.0, 110
    fig, ax = plt.subplots(figsize=(width, 1.3 + 0.75 * nrows), dpi=dpi)   # + the legend, at the end
    px_per_us = width * 0.86 * dpi / (hi - lo)   # about: the axes take ~86% of the width
    x = lambda us: us * k  # noqa: E731

    # A row, y = its index (the axis points down): bars from y - 0.4 to
    # y + 0.3, a slice nested d deep from 0.18 d lower, so each encloser
    # keeps a strip on top for its name; parked and steals under the bars.
    TOP, BOTTOM, STEP = -0.4, 0.3, 0.18

    def name_in(s, y, size):
        vis = (min(s["ts"] + s["dur"], hi) - max(s["ts"], lo)) * px_per_us
        if vis > 0.62 * size * len(s["name"]) + 6:
            ax.text(x(max(s["ts"], lo)) + x(3 / px_per_us), y, s["name"], va="center",
                    ha="left", fontsize=size, clip_on=True, zorder=4)

    # Bars go out in one call per style: a frame's thousands of loop
    # chunks stay quick to draw. A bar is at least half a pixel wide;
    # enclosers first, so what they enclose is drawn over them.
    bars = {}
    for s in sorted(slices, key=lambda s: s["depth"]):
        d = min(s["depth"], 3)
        y0 = row[s["tid"]] + TOP + STEP * d
        if s["cat"] == "chunk":    # an outline on its task, where it does not merge into a blot
            if s["dur"] * px_per_us < 4:
                continue
            style = ("none", "#333333", 0.4)
        elif s["cat"] == "zone":
            style = ("#fff3b0", "#806600", 0.5)
        else:
            style = (colour_of(s["name"]), "none", 0.0)
        bars.setdefault((y0, BOTTOM - TOP - STEP * d) + style, []).append(
            (x(s["ts"]), x(max(s["dur"], 0.5 / px_per_us))))
        if s["cat"] != "chunk":
            name_in(s, y0 + STEP / 2, 7 if s["cat"] == "task" else 6)
    for (y0, h, fc, ec, lw), xs in bars.items():
        ax.broken_barh(xs, (y0, h), facecolors=fc, edgecolor=ec, linewidth=lw, zorder=3)

    # A run's stretches: between two, a pale bar of the task's colour for
    # the time it waited, named with what it waited on; waits that overlap
    # on one thread take lanes. Drawn under the bars of what ran meanwhile.
    by_run, gaps = {}, {}
    for s in tasks:
        if s["run"] is not None:
            by_run.setdefault(s["run"], []).append(s)
    for stretches in by_run.values():
        stretches.sort(key=lambda s: s["ts"])
        for a, b in zip(stretches, stretches[1:]):
            if b["ts"] > a["ts"] + a["dur"] and inside(a["ts"] + a["dur"], b["ts"]):
                gaps.setdefault(a["tid"], []).append((a["ts"] + a["dur"], b["ts"], a))
    # A wait's label goes where no task bar of its thread covers it.
    busy = {}
    for s in tasks:
        busy.setdefault(s["tid"], []).append((s["ts"], s["ts"] + s["dur"]))
    for spans in busy.values():
        spans.sort()

    def clear_from(tid, t, need):
        for b0, b1 in busy.get(tid, []):
            if b0 < t + need and b1 > t:
                t = b1
        return t

    waits = 0
    for tid, group in gaps.items():
        placed, n = lanes(group)
        h = (BOTTOM - TOP) / min(n, 6)
        for lane, (x0, x1, a) in placed:
            waits += 1
            y0 = row[tid] + TOP + h * (lane % 6)
            ax.broken_barh([(x(x0), x(x1 - x0))], (y0 + 0.01, h - 0.02), facecolors=colour_of(a["name"]),
                           alpha=0.35, edgecolor=colour_of(a["name"]), linewidth=0.6, zorder=2)
            what = "%s: %s" % (a["name"], a["wait"] or "waiting")
            need = (3.8 * len(what) + 8) / px_per_us
            at = clear_from(tid, max(x0, lo), need)
            if min(x1, hi) - at > need and h >= 0.15:
                ax.text(x(at) + x(3 / px_per_us), y0 + h / 2, what, va="center", ha="left",
                        fontsize=6, color="#333333", clip_on=True, zorder=4)

    # Wake-ups from another thread: an arrow from the waker's row to the
    # woken stretch (a wake on the same thread is the pale bar's end).
    arrows = 0
    for f in flows.values():
        if "s" in f and "f" in f and f["s"][0] in row and f["f"][0] in row:
            (t0, x0), (t1, x1) = f["s"], f["f"]
            if row[t0] != row[t1] and inside(min(x0, x1), max(x0, x1)):
                arrows += 1
                down = row[t0] < row[t1]
                ax.annotate("", xy=(x(x1), row[t1] + (TOP if down else BOTTOM)),
                            xytext=(x(x0), row[t0] + (BOTTOM if down else TOP)),
                            arrowprops=dict(arrowstyle="->", lw=0.7, color="black", alpha=0.7,
                                            shrinkA=0, shrinkB=0), zorder=5)

    # Parked: a thread's park to its next wake (or the window's end).
    parked = steals = 0
    for t in tids:
        marks = sorted((ts, n) for n, tid, ts in instants if tid == t and n in ("park", "wake"))
        for (ts, n), nxt in zip(marks, marks[1:] + [(hi, "wake")]):
            if n == "park" and nxt[1] == "wake" and inside(ts, nxt[0]):
                parked += 1
                ax.plot([x(ts), x(nxt[0])], [row[t] + 0.38] * 2, color="#aaaaaa", lw=1.5,
                        solid_capstyle="butt")
        xs = [x(ts) for n, tid, ts in instants if tid == t and n == "steal" and lo <= ts <= hi]
        steals += len(xs)
        if xs:
            ax.plot(xs, [row[t] + 0.38] * len(xs), ls="none", marker="^", ms=3.5, color="black")

    for g in runs:
        ax.broken_barh([(x(g["b"]), x(g.get("e", hi) - g["b"]))], (len(tids) - 0.25, 0.5),
                       facecolors="#dddddd", edgecolor="#666666", linewidth=0.5)

    ax.set_yticks(range(nrows))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(nrows - 0.45, -0.55)           # thread 0 on top, graph runs last
    ax.set_xlim(x(lo), x(hi))
    ax.set_xlabel("time from the start of the trace (%s)" % ("ms" if ms else "µs"), fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#eeeeee", lw=0.6)
    ax.set_axisbelow(True)
    other = doc.get("otherData") if isinstance(doc.get("otherData"), dict) else {}
    sub = "%d task stretch%s on %d thread%s" % (len(tasks), "" if len(tasks) == 1 else "es",
                                                 len(tids), "" if len(tids) == 1 else "s")
    if num(other.get("dropped")):
        sub += ", %d events dropped (full buffers)" % other["dropped"]
    ax.set_title("%s\n%s" % (args.title or os.path.basename(args.trace), sub), fontsize=10)

    shown = [n for n in busiest(tasks) if colour_of(n) != OTHER]
    handles = [Patch(color=colour_of(n), label=n) for n in shown]
    if len(shown) < len(busiest(tasks)):
        handles.append(Patch(color=OTHER, label="other tasks"))
    if waits:
        handles.append(Patch(facecolor="#999999", alpha=0.35, edgecolor="#999999", label="waiting"))
    if any(s["cat"] == "chunk" and s["dur"] * px_per_us >= 4 for s in slices):
        handles.append(Patch(facecolor="none", edgecolor="#333333", lw=0.4, label="loop chunk"))
    if any(s["cat"] == "zone" for s in slices):
        handles.append(Patch(facecolor="#fff3b0", edgecolor="#806600", lw=0.5, label="zone"))
    if arrows:
        handles.append(Line2D([], [], color="black", lw=0.7, marker=">", ms=3, label="wake-up"))
    if parked:
        handles.append(Line2D([], [], color="#aaaaaa", lw=1.5, label="parked"))
    if steals:
        handles.append(Line2D([], [], color="black", ls="none", marker="^", ms=3.5, label="steal"))
    legend_in = 0.19 * ((len(handles) + 5) // 6) + 0.1
    height = 1.3 + 0.75 * nrows + legend_in
    fig.set_size_inches(width, height)
    fig.legend(handles=handles, loc="lower center", ncol=6, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, legend_in / height, 1, 1))
    fig.savefig(args.output, dpi=dpi)
    print("trace_plot.py: wrote %s (%d task stretches, %d threads, %.3f %s)"
          % (args.output, len(tasks), len(tids), x(hi - lo), "ms" if ms else "µs"))


if __name__ == "__main__":
    main()
