"""report.py's plots: the summary's ratios, each suite's ratios against
its baselines, and time against threads. Needs matplotlib (Agg backend);
report.py runs itself again with a python3 that has it, or skips them."""

import glob
import os
import subprocess
import sys

import benchlib
from report_tables import (
    FAMILIES,
    PLOT_PATTERNS,
    SPECIAL,
    WEFT_COLORS,
    baselines_of,
    family,
    fmt_ratio,
    index,
    ratio,
    seq_group,
    split_threads,
    summary_rows,
    unit_of)


# ---- plots ---------------------------------------------------------------------------------

def have_matplotlib():
    try:
        import matplotlib   # noqa: F401
        return True
    except ImportError:
        return False


def other_python():
    """Debian's /usr/bin/python3 when it has matplotlib and is not this one."""
    alt = "/usr/bin/python3"
    if os.environ.get("WEFT_REPORT_REEXEC") or not os.path.exists(alt):
        return None
    if os.path.realpath(alt) == os.path.realpath(sys.executable):
        return None
    r = subprocess.run([alt, "-c", "import matplotlib"], capture_output=True)
    return alt if r.returncode == 0 else None


suite_of = benchlib.suite_of


def ratio_bars(ax, items, title, legend=True):
    """Horizontal bars: items is [(row label, [(baseline case, ratio)])]."""
    import matplotlib.patches as mpatches
    colors = dict(FAMILIES)
    y, yt, labels, vals = 0.0, [], [], []
    height = 0.8
    order = [f for f, _ in FAMILIES]
    for label, ratios in reversed(items):
        ratios = sorted(ratios, key=lambda cv: order.index(family(cv[0])))
        n = max(len(ratios), 1)
        h = height / n
        for k, (case, v) in enumerate(ratios):
            yy = y + (n - 1 - k) * h - (height - h) / 2
            # From the line at 1.0 to the ratio: left of it, weft is slower.
            ax.barh(yy, v - 1.0, left=1.0, height=h * 0.92, color=colors[family(case)],
                    edgecolor="none")
            ax.annotate("%s %s" % (fmt_ratio(v, 1), case), (max(v, 1.0), yy), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=6.5)
            vals.append(v)
        yt.append(y)
        labels.append(label)
        y += 1.0
    ax.set_yticks(yt)
    ax.set_yticklabels(labels, fontsize=8)
    ax.axvline(1.0, color="black", linewidth=0.9)
    if vals:
        lo, hi = min(vals + [1.0]), max(vals + [1.0])
        if hi / lo > 20:
            ax.set_xscale("log")
            ax.set_xlim(lo / 1.5, hi * 8)
        else:
            ax.set_xlim(0, hi * 1.45)
    ax.set_ylim(-0.6, y - 0.4)
    ax.set_xlabel("baseline time / weft time (right of the line: weft faster)", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", which="both", alpha=0.25)
    ax.tick_params(axis="x", labelsize=8)
    if legend:
        present = sorted({family(c) for _, rs in items for c, _ in rs},
                         key=lambda f: [x for x, _ in FAMILIES].index(f))
        ax.legend(handles=[mpatches.Patch(color=colors[f], label=f) for f in present],
                  fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="baseline",
                  title_fontsize=7)


def plots(results_dir, rows, meta):
    """Draws the PNGs; returns {name: (file, caption)}. Raises ImportError
    without matplotlib."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    by_group = index(rows)
    machine = meta.get("machine", os.path.basename(os.path.normpath(results_dir)))
    made = {}

    def save(fig, name, caption):
        fig.savefig(os.path.join(results_dir, name), dpi=110, bbox_inches="tight",
                    metadata={"Software": None})
        plt.close(fig)
        made[name] = (name, caption)

    # The summary's ratios.
    items = [(what, [c for f, _ in FAMILIES for c in fam.get(f, [])])
             for what, g, r, fam in summary_rows(by_group)]
    items = [i for i in items if i[1]]   # rows whose baselines were not run have no bars
    if items:
        fig, ax = plt.subplots(figsize=(9, 0.42 * sum(max(len(i[1]), 1) for i in items) / 1.6 + 1.2))
        ratio_bars(ax, items, "weft against the baselines, %s (medians)" % machine)
        save(fig, "summary.png", "The summary's workloads: each baseline's time over weft's.")

    # (a) One chart per suite: every weft case of every group against each baseline.
    for binary in sorted({r.binary for r in rows}):
        items = []
        for g, grows in by_group.items():
            if grows[0].binary != binary:
                continue
            bases = baselines_of(g, by_group)
            for r in grows:
                if not r.weft or r.ns_per_item is None:
                    continue
                rs = [(b.case, ratio(b.ns_per_item, r.ns_per_item)) for b in bases]
                rs = [(c, v) for c, v in rs if v is not None]
                if rs:
                    items.append(("%s / %s" % (g, r.case), rs))
        if not items:
            continue
        nbars = sum(len(i[1]) for i in items)
        fig, ax = plt.subplots(figsize=(9, 0.14 * nbars + 0.2 * len(items) + 1.2))
        ratio_bars(ax, items, "%s: weft against each baseline, %s" % (binary, machine))
        save(fig, "ratios_%s.png" % suite_of(binary),
             "%s: every weft case against each baseline of its group." % binary)

    # (b) Time against threads, for groups run at several thread counts.
    bases = {}
    for g in by_group:
        base, t = split_threads(g)
        if t is not None and base.split("_", 1)[0] not in SPECIAL:
            bases.setdefault(base, []).append(t)
    bases = {b: sorted(ts) for b, ts in bases.items() if len(ts) > 1}
    if bases:
        ncol = min(4, len(bases))
        nrow = (len(bases) + ncol - 1) // ncol
        fig, axes = plt.subplots(nrow, ncol, figsize=(4.1 * ncol, 3.3 * nrow), squeeze=False)
        for k, (base, ts) in enumerate(bases.items()):
            ax = axes[k // ncol][k % ncol]
            cases = []
            for t in ts:
                for r in by_group["%s_t%d" % (base, t)]:
                    if r.case not in cases:
                        cases.append(r.case)
            vals, seen, wefts = [], {}, 0
            for case in cases:
                xs, ys = [], []
                for t in ts:
                    r = [x for x in by_group["%s_t%d" % (base, t)] if x.case == case]
                    if r and r[0].ns_per_item:
                        xs.append(t)
                        ys.append(r[0].ns_per_item)
                if not xs:
                    continue
                vals += ys
                if case.startswith("weft"):
                    # weft's cases in colours of their own, solid.
                    color, style, marker = WEFT_COLORS[wefts % len(WEFT_COLORS)], "-", "o"
                    wefts += 1
                else:
                    # A baseline in its family's colour; a second one of the family dash-dotted.
                    f = family(case)
                    k = seen[f] = seen.get(f, -1) + 1
                    color, style, marker = dict(FAMILIES)[f], ("--", "-.", ":")[k % 3], "os^"[k % 3]
                ax.plot(xs, ys, marker=marker, markersize=4, linewidth=1.7 if style == "-" else 1.1,
                        linestyle=style, color=color, label=case)
            seq = [r for r in by_group.get(seq_group(base), []) if r.ns_per_item]
            for r in seq:
                ax.axhline(r.ns_per_item, color=dict(FAMILIES)["sequential"], linestyle=":",
                           linewidth=1.1, label=r.case)
                vals.append(r.ns_per_item)
            if vals and max(vals) / min(vals) > 10:
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
                ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
                ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            elif vals:
                ax.set_ylim(0, max(vals) * 1.15)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ts)
            ax.set_xticklabels([str(t) for t in ts])
            ax.set_xlim(ts[0] / 1.3, ts[-1] * 1.3)
            ax.set_title(base, fontsize=10)
            ax.set_xlabel("threads", fontsize=8)
            ax.set_ylabel("median " + unit_of(base), fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.25, which="both")
            ax.legend(fontsize=6.5)
        for k in range(len(bases), nrow * ncol):
            axes[k // ncol][k % ncol].axis("off")
        fig.suptitle("Median time per item against threads, %s (lower is better)" % machine,
                     fontsize=11)
        fig.tight_layout()
        save(fig, "threads.png", "Groups run at several thread counts: each case's median "
                                 "time per item (weft solid, baselines dashed, sequential dotted).")
    return made


def clear_plots(results_dir):
    for pattern in PLOT_PATTERNS:
        for p in glob.glob(os.path.join(results_dir, pattern)):
            os.remove(p)
