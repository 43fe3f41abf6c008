#!/usr/bin/env python3
"""Summarize a results folder written by run.py as Markdown.

    benchmarks/report.py benchmarks/results/<machine>   (prints README.md)

load() turns the Google Benchmark JSON files into rows; markdown() lays
them out. Conventions shared with the benchmark sources:

  - a case is named "<group>/<case>"; every case of a group counts the
    same unit in items_per_second (UNITS below);
  - cases labelled "baseline" are what the others in their group are
    compared with: the ratio is baseline time / case time, so 20x means
    the case is twenty times faster than that baseline.

Python 3 standard library only.
"""

import glob
import json
import os
import sys

# What one item is in each group, for the column heading: by the group's
# name, or by its first word (saxpy_2^24_t2 -> saxpy).
UNITS = {
    "oneway": "ns per one-way switch",
    "roundtrip": "ns per round trip",
    "create": "ns per fiber (or thread)",
    "pingpong": "ns per round trip",
    "mutex": "ns per lock + increment + unlock",
    "waitgroup": "ns per task",
    "skynet": "ns per tree node",
    "saxpy": "ns per element",
    "mandel": "ns per pixel",
    "sum": "ns per element",
}

# DESIGN.md "Performance budget" and the issues' targets, in ns per item,
# for the cases they name.
BUDGETS = {
    "oneway/weft_fiber_switch": 5.0,
    "roundtrip/weft_fiber_resume_suspend": 30.0,
    "pingpong/weft_one_worker": 100.0,
}

# User counters shown as columns (from the median), per group, with
# their headings. Counters not listed (such as ns_per_round_trip, which
# repeats items_per_second) are left out.
COUNTERS = {
    "pingpong": {"cpu_ns_per_round_trip": "workers' CPU ns per round trip"},
    "mutex": {"cpu_ns_per_increment": "CPU ns per increment (all threads)"},
    "skynet": {"fiber_switches_per_node": "fiber switches per node",
               "fibers_created": "fibers created"},
}

# Targets stated as "at least as fast as" a baseline of the same group:
# case -> (baseline case, least ratio).
RATIO_TARGETS = {
    "mutex/weft_64_fibers_2_workers": ("pthread_64_threads", 1.0),
}
# Issue 6, for every thread count bench_parallel can run: weft within 3%
# of OpenMP's static schedule on the uniform loops, and faster than it on
# the uneven one from 2 threads (with one there is nothing to balance).
for _t in (1 << k for k in range(9)):
    for _loop, _cases in (("saxpy_2^17", ("weft_auto", "weft_auto_task", "weft_g4096")),
                          ("saxpy_2^24", ("weft_auto", "weft_auto_task", "weft_g65536")),
                          ("sum_10^8", ("weft_auto", "weft_auto_task", "weft_g1048576")),
                          ("mandel_1024", ("weft_auto", "weft_auto_task", "weft_g1"))):
        if _loop.startswith("mandel") and _t < 2:
            continue
        for _c in _cases:
            RATIO_TARGETS["%s_t%d/%s" % (_loop, _t, _c)] = (
                "omp_static", 1.0 if _loop.startswith("mandel") else 1 / 1.03)


class Row:
    """One benchmark case: medians over the repetitions."""

    def __init__(self, binary, run_name):
        self.binary = binary
        self.run_name = run_name
        self.real_time = run_name.endswith("/real_time")
        name = run_name[: -len("/real_time")] if self.real_time else run_name
        self.group, _, self.case = name.partition("/")
        if not self.case:
            self.group, self.case = "other", name
        self.name = name
        self.ns_per_item = None   # from the median's items_per_second
        self.wall_ns_per_item = None   # the same, scaled by median real/CPU time
        self.cv = None            # coefficient of variation of the time used
        self.label = ""
        self.error = None
        self.counters = {}        # the median's user counters (COUNTERS)

    @property
    def baseline(self):
        return self.label == "baseline"


def load(results_dir):
    """Rows from every bench_*.json in results_dir, files by name, cases in
    the order the binary registered them (a run with --interleave writes
    them in the order they happened to finish)."""
    rows = []
    for path in sorted(glob.glob(os.path.join(results_dir, "bench_*.json"))):
        binary = os.path.basename(path)[: -len(".json")]
        with open(path) as f:
            data = json.load(f)
        by_name = {}
        runs = sorted(data.get("benchmarks", []),
                      key=lambda b: (b.get("family_index", 0), b.get("per_family_instance_index", 0)))
        for b in runs:
            key = b.get("run_name", b["name"])
            row = by_name.get(key)
            if row is None:
                row = by_name[key] = Row(binary, key)
                rows.append(row)
            if b.get("error_occurred"):
                row.error = b.get("error_message", "error")
                continue
            agg = b.get("aggregate_name")
            if b.get("label"):
                row.label = b["label"]
            time_key = "real_time" if row.real_time else "cpu_time"
            if agg == "median" or (agg is None and row.ns_per_item is None):
                row.counters = {k: b[k] for k in COUNTERS.get(row.group, {}) if k in b}
                ips = b.get("items_per_second")
                if ips:
                    row.ns_per_item = 1e9 / ips
                    if b.get("cpu_time") and b.get("real_time"):
                        row.wall_ns_per_item = (row.ns_per_item if row.real_time else
                                                row.ns_per_item * b["real_time"] / b["cpu_time"])
            elif agg == "cv":
                row.cv = b.get(time_key)
    return rows


def context(results_dir):
    """meta.json and the Google Benchmark context of the first JSON file."""
    meta = {}
    p = os.path.join(results_dir, "meta.json")
    if os.path.exists(p):
        with open(p) as f:
            meta = json.load(f)
    ctx = {}
    files = sorted(glob.glob(os.path.join(results_dir, "bench_*.json")))
    if files:
        with open(files[0]) as f:
            ctx = json.load(f).get("context", {})
    cg = None
    p = os.path.join(results_dir, "callgrind.json")
    if os.path.exists(p):
        with open(p) as f:
            cg = json.load(f)
    return meta, ctx, cg


def fmt_ns(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return "{:,.0f}".format(v)
    return "{:.2f}".format(v) if v < 100 else "{:.1f}".format(v)


def fmt_count(v):
    """A counter: whole numbers without decimals."""
    return "{:,.0f}".format(v) if float(v).is_integer() else fmt_ns(v)


def fmt_ratio(base, v):
    if base is None or v is None or v == 0:
        return "n/a"
    r = base / v
    return "{:,.0f}x".format(r) if r >= 100 else "{:.2f}x".format(r)


def group_table(group, rows):
    baselines = [r for r in rows if r.baseline]
    unit = UNITS.get(group) or UNITS.get(group.split("_", 1)[0], "ns per item")
    names = COUNTERS.get(group, {})
    counters = [k for k in names if any(k in r.counters for r in rows)]
    head = (["case", "median " + unit, "CV", "wall"] + [names[k] for k in counters] +
            ["vs " + b.case for b in baselines])
    has_target = any(r.name in BUDGETS or r.name in RATIO_TARGETS for r in rows)
    if has_target:
        head.append("target" if any(r.name in RATIO_TARGETS for r in rows) else "budget")
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for r in rows:
        case = r.case + (" *(baseline)*" if r.baseline else "")
        if r.real_time:
            case += " (wall)"
        if r.error:
            lines.append("| %s | error: %s |%s" % (case, r.error, " |" * (len(head) - 2)))
            continue
        cells = [case, fmt_ns(r.ns_per_item),
                 "n/a" if r.cv is None else "{:.1f}%".format(100 * r.cv),
                 fmt_ns(r.wall_ns_per_item)]
        cells += [fmt_count(r.counters[k]) if k in r.counters else "" for k in counters]
        cells += ["—" if b is r else fmt_ratio(b.ns_per_item, r.ns_per_item) for b in baselines]
        if has_target:
            budget = BUDGETS.get(r.name)
            ratio = RATIO_TARGETS.get(r.name)
            base = [b for b in baselines if ratio and b.case == ratio[0]]
            if budget is not None and r.ns_per_item is not None:
                ok = r.ns_per_item <= budget
                cells.append("≤ {:g} ns: {}".format(budget, "met" if ok else "**missed**"))
            elif base and base[0].ns_per_item and r.ns_per_item:
                ok = base[0].ns_per_item / r.ns_per_item >= ratio[1]
                cells.append("≥ {:.3g}x {}: {}".format(ratio[1], ratio[0], "met" if ok else "**missed**"))
            else:
                cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(results_dir):
    rows = load(results_dir)
    meta, ctx, cg = context(results_dir)
    out = ["# weft benchmarks: %s" % meta.get("machine", os.path.basename(results_dir.rstrip("/"))), ""]
    facts = [
        ("CPU", "%s (family %s, model %s)" % (meta.get("cpu_model", "?"),
                                              meta.get("cpu_family", "?"),
                                              meta.get("cpu_model_number", "?"))),
        ("cores", meta.get("cores", ctx.get("num_cpus", "?"))),
        ("MHz (reported)", ctx.get("mhz_per_cpu", "?")),
        ("kernel", meta.get("kernel", "?")),
        ("C compiler", meta.get("c_compiler", "?")),
        ("C++ compiler", meta.get("cxx_compiler", "?")),
        ("build", "%s preset (%s)" % ("release", meta.get("build_type", "?"))),
        ("git commit" + (" (last full run)" if meta.get("runs") else ""), meta.get("git_commit", "?")),
        ("date" + (" (last full run)" if meta.get("runs") else ""), meta.get("date", ctx.get("date", "?"))),
        ("load average at start", ", ".join("%.2f" % x for x in ctx.get("load_avg", [])) or "?"),
        ("repetitions", "%s per case, medians shown; nothing pinned" % meta.get("repetitions", "?")),
        ("environment", ", ".join("%s=%s" % kv for kv in meta.get("env", {}).items()) or "—"),
    ]
    if ctx.get("library_build_type") == "debug":
        facts.append(("note", "Debian's libbenchmark reports it was built as DEBUG; "
                              "that affects its own bookkeeping, not the timed code"))
    for k, v in facts:
        out.append("- **%s**: %s" % (k, v))
    out += ["", "Reproduce: `%s`" % meta.get("command", "benchmarks/run.py").strip(), ""]
    runs = meta.get("runs", {})
    if runs:
        out += ["Each binary's figures come from its own run (`run.py --bench` re-runs one):", "",
                "| binary | git commit | date | load average at start | command |",
                "|---|---|---|---|---|"]
        for b in sorted(runs):
            r = runs[b]
            load_avg = ""
            p = os.path.join(results_dir, b + ".json")
            if os.path.exists(p):
                with open(p) as f:
                    load_avg = ", ".join("%.2f" % x for x in
                                         json.load(f).get("context", {}).get("load_avg", []))
            out.append("| %s | %s | %s | %s | `%s` |" % (b, r.get("git_commit", "?")[:12],
                                                      r.get("date", "?"), load_avg or "?",
                                                      r.get("command", "?").strip()))
        out.append("")

    groups = []
    for r in rows:
        if r.group not in groups:
            groups.append(r.group)
    for g in groups:
        out += ["## %s" % g, "", group_table(g, [r for r in rows if r.group == g]), ""]
    out += ["Ratios are baseline time / case time: above 1x the case is faster. "
            "CV is the spread of the %s repetitions (stddev / mean). "
            "Cases marked \"(wall)\" are timed by the wall clock because they involve "
            "another thread; the others by this thread's CPU time, and the \"wall\" "
            "column shows their wall-clock figure: where it is much higher, other work "
            "took the CPU away during the run." % meta.get("repetitions", "N"), ""]

    if cg and cg.get("per_oneway_switch"):
        p = cg["per_oneway_switch"]
        out += ["## instructions per one-way switch", "",
                "Counted with `%s` on `%s` (%s)." % (cg["tool"], cg["program"], cg["method"]), "",
                "| what | instructions |", "|---|---:|",
                "| weft__ctx_switch (the asm) | %s |" % p["weft__ctx_switch_self"],
                "| weft__fiber_switch around it (TLS store, call glue) | %s |" % p["weft__fiber_switch_self"],
                "| the whole ping-pong loop, per switch | %s |" % p["whole_pingpong_loop"],
                ""]
    if cg and cg.get("channel_round_trip"):
        c = cg["channel_round_trip"]
        out += ["## instructions per channel round trip", "",
                "Counted with `%s` on `%s` (%s): %s instructions per round trip "
                "(two fiber switches and four channel calls) on one worker." %
                (c["tool"], c["program"], c["method"], c["per_round_trip_one_worker"]), ""]
    if meta.get("perf"):
        out += ["perf: %s" % meta["perf"], ""]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS_DIR")
    sys.stdout.write(markdown(sys.argv[1]))
