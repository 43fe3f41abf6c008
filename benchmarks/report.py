#!/usr/bin/env python3
"""Summarize a results folder written by run.py as Markdown and plots.

    benchmarks/report.py RESULTS_DIR                 writes RESULTS_DIR/README.md and *.png
    benchmarks/report.py --readme README.md RESULTS_DIR
                                                     also rewrites the block between
                                                     README.md's report.py markers
    benchmarks/report.py --print RESULTS_DIR         prints the Markdown, writes nothing

load() turns the Google Benchmark JSON files into rows; markdown() lays
them out, beside callgrind.json (instruction counts) and coldwarm.json
(first runs and memory); plots() draws the PNGs. Conventions shared with
the benchmark sources:

  - a case is named "<group>/<case>"; every case of a group counts the
    same unit in items_per_second (UNITS below), or, in the wake and idle
    groups, reports counters instead (latency percentiles, CPU use);
  - cases labelled "baseline" are what the others in their group are
    compared with: the ratio is baseline time / case time, so 20x means
    the case is twenty times faster than that baseline. A <base>_t<T>
    group (fib<N>, the graph shapes) is also compared with <base>_seq's
    sequential case; a graph's <base>_brd_t<T> group (build + run +
    destroy every iteration) with the same <base>_seq.

The Markdown needs the Python 3 standard library only. The plots need
matplotlib (Debian: python3-matplotlib), drawn with the Agg backend; when
this python3 cannot import it and /usr/bin/python3 can (a pyenv or venv
python3 first on PATH), report.py runs itself again with that one. With
neither, it writes the Markdown and says that the plots were skipped.
"""

import glob
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

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
    "fib25": "ns per spawn", "fib30": "ns per spawn", "fib32": "ns per spawn",
    "fib35": "ns per spawn",
    "spawn": "ns per task",
    "chain": "ns per task", "tree": "ns per task", "wavefront": "ns per task",
    "matmul": "ns per task", "parallel": "ns per task",
}

# docs/design.md#performance-budget and the issues' targets, in ns per item,
# for the cases they name.
BUDGETS = {
    "oneway/weft_fiber_switch": 5.0,
    "roundtrip/weft_fiber_resume_suspend": 30.0,
    "pingpong/weft_one_worker": 100.0,
    # issue 18: build + run + wait + destroy of a 2^20 chain, 1 thread
    "chain_2^20_brd_t1/weft": 40.0,
}

# Budgets per task in ns*thread (wall ns per item times the group's
# thread count), by the group's name without _t<T>: (weft case, budget).
# Issue 3's spawn + run target, on the fork-join path it names.
THREAD_BUDGETS = {
    "spawn_join": ("weft", 15.0),
}


def budget_of(r):
    """(budget, measured, unit) for a case with a budget, else None."""
    if r.name in BUDGETS and r.ns_per_item is not None:
        return BUDGETS[r.name], r.ns_per_item, "ns"
    base, t = split_threads(r.group)
    tb = THREAD_BUDGETS.get(base)
    if tb and t and r.case == tb[0] and r.ns_per_item is not None:
        return tb[1], r.ns_per_item * t, "ns·thread"
    return None


# User counters shown as columns (from the median), per group or the
# group's first word, with their headings. Counters not listed (such as
# ns_per_round_trip, which repeats items_per_second) are left out.
COUNTERS = {
    "pingpong": {"cpu_ns_per_round_trip": "workers' CPU ns per round trip"},
    "mutex": {"cpu_ns_per_increment": "CPU ns per increment (all threads)"},
    "skynet": {"fiber_switches_per_node": "fiber switches per node",
               "fibers_created": "fibers created"},
    "wake": {"p50_us": "p50 us", "p99_us": "p99 us", "condvar_p50_us": "condvar p50 us",
             "condvar_p99_us": "condvar p99 us"},
    "idle": {"cpu_percent_of_a_core": "CPU, % of a core"},
    "spawn": {"steals_per_round": "steals per join"},   # spawn_join's
}

# Groups laid out in one table of their own (wake_table), not per group.
SPECIAL = ("wake", "idle")

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

# The summary: (group, weft case, what it is). A group ending in _tMAX
# stands for the highest thread count this machine ran it at.
SUMMARY = [
    ("fib30_t1", "weft", "fib(30), one spawn per call, 1 thread"),
    ("fib30_tMAX", "weft", "fib(30), one spawn per call, {t} threads"),
    ("spawn_join_t1", "weft", "spawn + run + join of empty tasks, 64 per join, 1 thread"),
    ("spawn_join_tMAX", "weft", "spawn + run + join of empty tasks, 64 per join, {t} threads"),
    ("spawn_tMAX", "weft_from_worker", "10^6 empty tasks spawned by one task, {t} threads"),
    ("spawn_outside_tMAX", "weft", "10^6 empty tasks spawned from outside the pool, {t} threads"),
    ("chain_2^23_tMAX", "weft", "graph: linear chain of 2^23 tasks, {t} threads"),
    ("tree_2^20_tMAX", "weft", "graph: binary tree of 2^20 tasks, {t} threads"),
    ("wavefront_256_tMAX", "weft", "graph: wavefront of 256x256 tasks, {t} threads"),
    ("chain_2^20_brd_t1", "weft", "graph: build + run + destroy, chain of 2^20 tasks, 1 thread"),
    ("chain_2^20_brd_tMAX", "weft", "graph: build + run + destroy, chain of 2^20 tasks, {t} threads"),
    ("tree_2^20_brd_tMAX", "weft", "graph: build + run + destroy, binary tree of 2^20 tasks, {t} threads"),
    ("wavefront_4096_8x8_brd_tMAX", "weft",
     "graph: build + run + destroy, wavefront 4096 in 8x8 blocks (512x512 tasks), {t} threads"),
    ("matmul_512_tMAX", "weft", "graph: blocked matmul 512 (32x32 blocks), {t} threads"),
    ("parallel_10^6_tMAX", "weft", "graph: 10^6 independent tasks, {t} threads"),
    ("oneway", "weft_fiber_switch", "one-way fiber switch"),
    ("roundtrip", "weft_fiber_resume_suspend", "fiber suspend + resume round trip"),
    ("create", "weft_fiber_create_run_release", "fiber create + run + release"),
    ("pingpong", "weft_one_worker", "channel round trip, two tasks on 1 worker"),
    ("mutex", "weft_64_fibers_2_workers", "contended mutex, 64 fibers on 2 workers"),
    ("waitgroup", "weft_fan_in_10k", "wait group fan-in of 10^4 tasks"),
    ("skynet", "weft_1M_leaves", "skynet, 10^6 leaves"),
    ("saxpy_2^17_t1", "weft_auto", "parallel_for saxpy 2^17, 1 thread, called from outside"),
    ("saxpy_2^24_tMAX", "weft_auto", "parallel_for saxpy 2^24, {t} threads, called from outside"),
    ("mandel_1024_tMAX", "weft_auto", "parallel_for Mandelbrot 1024 (uneven), {t} threads"),
    ("sum_10^8_tMAX", "weft_auto", "parallel_reduce sum of 10^8 doubles, {t} threads"),
]

# Baseline families: the summary's columns and the plots' colours.
FAMILIES = [
    ("oneTBB", "#1f77b4"),
    ("OpenMP", "#ff7f0e"),
    ("sequential", "#7f7f7f"),
    ("pthread / ucontext", "#2ca02c"),
]

# weft's own cases in the time-against-threads plots.
WEFT_COLORS = ["#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

# The plots report.py writes; any other PNG in the folder is left alone.
PLOT_PATTERNS = ("summary.png", "ratios_*.png", "threads.png")

# Marks around the block --readme rewrites.
BEGIN = "<!-- report.py:begin"
END = "<!-- report.py:end -->"


def family(case):
    if case.startswith("tbb"):
        return "oneTBB"
    if case.startswith("omp"):
        return "OpenMP"
    if case in ("seq", "sequential"):
        return "sequential"
    return "pthread / ucontext"


def unit_of(group):
    return UNITS.get(group) or UNITS.get(group.split("_", 1)[0], "ns per item")


def counters_of(group):
    return COUNTERS.get(group) or COUNTERS.get(group.split("_", 1)[0], {})


def split_threads(group):
    """'fib25_t2' -> ('fib25', 2); 'oneway' -> ('oneway', None)."""
    m = re.match(r"^(.*)_t(\d+)$", group)
    return (m.group(1), int(m.group(2))) if m else (group, None)


# Fields of a Google Benchmark run that are not user counters.
STANDARD = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
            "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name",
            "aggregate_unit", "family_index", "per_family_instance_index", "label",
            "items_per_second", "bytes_per_second", "error_occurred", "error_message"}


class Row:
    """One benchmark case: medians over the repetitions."""

    def __init__(self, binary, run_name):
        self.binary = binary
        self.run_name = run_name
        self.real_time = run_name.endswith("/real_time")
        name = run_name[: -len("/real_time")] if self.real_time else run_name
        name = re.sub(r"/iterations:\d+", "", name)   # fixed iteration counts say nothing here
        self.group, _, self.case = name.partition("/")
        if not self.case:
            self.group, self.case = "other", name
        self.name = name
        self.ns_per_item = None   # from the median's items_per_second
        self.wall_ns_per_item = None   # the same, scaled by median real/CPU time
        self.cv = None            # coefficient of variation of the time used
        self.label = ""
        self.error = None
        self.counters = {}        # the median's user counters (all of them)

    @property
    def baseline(self):
        return self.label == "baseline"

    @property
    def weft(self):
        return self.case.startswith("weft")


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
                row.counters = {k: v for k, v in b.items()
                                if k not in STANDARD and isinstance(v, (int, float))}
                ips = b.get("items_per_second")
                if ips:
                    row.ns_per_item = 1e9 / ips
                    if b.get("cpu_time") and b.get("real_time"):
                        row.wall_ns_per_item = (row.ns_per_item if row.real_time else
                                                row.ns_per_item * b["real_time"] / b["cpu_time"])
            elif agg == "cv":
                row.cv = b.get(time_key)
    return rows


def read_json(results_dir, name):
    p = os.path.join(results_dir, name)
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return None


def context(results_dir):
    """meta.json, the Google Benchmark context of the first JSON file, and
    callgrind.json and coldwarm.json (None where missing)."""
    meta = read_json(results_dir, "meta.json") or {}
    ctx = {}
    files = sorted(glob.glob(os.path.join(results_dir, "bench_*.json")))
    if files:
        with open(files[0]) as f:
            ctx = json.load(f).get("context", {})
    return meta, ctx, read_json(results_dir, "callgrind.json"), read_json(results_dir, "coldwarm.json")


def fmt_ns(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return "{:,.0f}".format(v)
    return "{:.2f}".format(v) if v < 100 else "{:.1f}".format(v)


def fmt_count(v):
    """A counter: whole numbers without decimals."""
    return "{:,.0f}".format(v) if float(v).is_integer() else fmt_ns(v)


def ratio(base, v):
    if base is None or v is None or v == 0:
        return None
    return base / v


def fmt_ratio(base, v):
    r = ratio(base, v)
    if r is None:
        return "n/a"
    return "{:,.0f}x".format(r) if r >= 100 else "{:.2f}x".format(r)


def fmt_bytes(v):
    if v is None:
        return "n/a"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale:
            return "{:.1f} {}".format(v / scale, unit)
    return "{:.0f} B".format(v)


def fmt_per_task(total, tasks):
    """Bytes per task: small shares keep three significant digits."""
    if total is None or not tasks:
        return "n/a"
    v = total / tasks
    return ("%.1f B" % v) if v >= 10 else ("%.3g B" % v)


def fmt_ms(ns):
    if ns is None:
        return "n/a"
    ms = ns / 1e6
    return "{:,.0f}".format(ms) if ms >= 100 else ("{:.1f}".format(ms) if ms >= 10 else "{:.2f}".format(ms))


# ---- what is compared with what ----------------------------------------------------

def index(rows):
    by_group = {}
    for r in rows:
        by_group.setdefault(r.group, []).append(r)
    return by_group


def seq_group(base):
    """The sequential group of a <base>_t<T> group's base: 'fib30' ->
    'fib30_seq'; a graph's build + run + destroy rows share the warm
    rows' loop: 'chain_2^20_brd' -> 'chain_2^20_seq'."""
    return re.sub(r"_brd$", "", base) + "_seq"


def baselines_of(group, by_group):
    """The group's own baselines, then the sequential case of seq_group()
    for a <base>_t<T> group (fib<N>, and the graph shapes)."""
    own = [r for r in by_group.get(group, []) if r.baseline]
    m = re.match(r"^(.+)_t\d+$", group)
    if m:
        own += [r for r in by_group.get(seq_group(m.group(1)), []) if r.case == "sequential"]
    return own


def resolve(group, by_group):
    """'fib30_tMAX' -> the fib30_t<T> group with the highest T present."""
    if not group.endswith("_tMAX"):
        return group if group in by_group else None
    base = group[: -len("_tMAX")]
    ts = [split_threads(g)[1] for g in by_group if split_threads(g)[0] == base and split_threads(g)[1]]
    return "%s_t%d" % (base, max(ts)) if ts else None


# ---- tables --------------------------------------------------------------------------

def group_table(group, rows, by_group):
    baselines = baselines_of(group, by_group)
    unit = unit_of(group)
    names = counters_of(group)
    counters = [k for k in names if any(k in r.counters for r in rows)]
    head = (["case", "median " + unit, "CV", "wall"] + [names[k] for k in counters] +
            ["vs " + b.case for b in baselines])
    has_target = any(budget_of(r) or r.name in RATIO_TARGETS for r in rows)
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
            budget = budget_of(r)
            target = RATIO_TARGETS.get(r.name)
            base = [b for b in baselines if target and b.case == target[0]]
            if budget is not None:
                limit, got, per = budget
                shown = "" if per == "ns" else " (%s %s)" % (fmt_ns(got), per)
                cells.append("≤ {:g} {}{}: {}".format(limit, per, shown,
                                                       "met" if got <= limit else "**missed**"))
            elif base and base[0].ns_per_item and r.ns_per_item:
                ok = base[0].ns_per_item / r.ns_per_item >= target[1]
                cells.append("≥ {:.3g}x {}: {}".format(target[1], target[0], "met" if ok else "**missed**"))
            else:
                cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def group_note(group, rows, by_group):
    """A paragraph under a group's table, where the table needs one."""
    by_case = {r.case: r for r in rows}
    m = re.match(r"^(matmul_\d+)_t1$", group)
    if m:
        seq = [r for r in by_group.get(m.group(1) + "_seq", []) if r.ns_per_item]
        times = [r for r in rows if r.ns_per_item]
        if seq and times:
            spread = ", ".join("%s %s" % (r.case, fmt_ratio(seq[0].ns_per_item, r.ns_per_item))
                               for r in times)
            return ["At 1 thread each task here is tens of microseconds of block multiply, the "
                    "same code for every runtime (`Dag::run`), against weft's and oneTBB's cost "
                    "per task of tens to hundreds of nanoseconds (the chain and tree rows): "
                    "about 1%% of the time or less. The differences between runtimes "
                    "(vs sequential: %s) come from the order the blocks run in, with its cache "
                    "effects, and from this machine's noise (the CV column), not from "
                    "scheduling overhead." % spread, ""]
    if re.match(r"^chain_2\^20_brd_t1$", group):
        return ["The *_brd_t<T>* groups time what a graph costs its user when it is made for "
                "one run, the way Taskflow's and oneTBB's own graph benchmarks time it: every "
                "iteration creates the graph, adds every task and edge, runs it, waits and "
                "destroys it (weft: `weft_graph_create`, `weft_graph_add`, "
                "`weft_task_precede`, `weft_graph_run` with its first-run cycle check, "
                "`weft_graph_wait`, `weft_graph_destroy`; oneTBB: a `flow::graph` with a "
                "`continue_node` per task and `make_edge` per dependency, `try_put` to the "
                "roots, `wait_for_all`, destroy). The scheduler is made before the timed loop. "
                "The same shapes' *_t<T>* groups run a graph built once (warm runs); "
                "*sequential* is the same loop as theirs. Each brd case checks after its "
                "timed loop that every run ran every task once and that one more run gives "
                "the sequential loop's results.", ""]
    m = re.match(r"^spawn_join_t(\d+)$", group)
    if m:
        return ["Each thread has 64 roots; a root spawns 64 empty tasks and joins them, 256 "
                "times (weft: `weft_spawn` and `weft_wait_until` on a counter the tasks "
                "bump; oneTBB: `task_group::run` and `wait`; OpenMP: `task` and `taskwait`), "
                "2^20 tasks per thread. A join's tasks mostly run where they were spawned, "
                "so this is the spawn -> run -> join path with the task records in cache; "
                "*steals per join* is the tasks other threads took (roots included) per "
                "join. The budget is the issue's 15 ns·thread per spawn + run: the wall "
                "time per task times the thread count (%s)." % m.group(1), ""]
    if group == "oneway":
        floor, sw = by_case.get("fp_control_floor"), by_case.get("weft_fiber_switch")
        if floor and sw and floor.ns_per_item and sw.ns_per_item:
            return ["*fp_control_floor* is the part of a switch the ABI fixes: saving one side's "
                    "floating-point control state and loading the other's (`stmxcsr`, `fnstcw`, "
                    "`ldmxcsr`, `fldcw` on x86-64; `mrs`/`msr fpcr` on AArch64), with nothing "
                    "else. It takes %s ns here, %.0f%% of weft_fiber_switch (%s ns): a budget "
                    "below it cannot be met by a switch that keeps that state, as the "
                    "ABI requires." % (fmt_ns(floor.ns_per_item),
                                        100 * floor.ns_per_item / sw.ns_per_item,
                                        fmt_ns(sw.ns_per_item)), ""]
    return []


def counter_table(rows):
    """A group whose cases report counters and no items/s (none today
    but wake and idle, which wake_table shows): the counters as they are."""
    keys = []
    for r in rows:
        keys += [k for k in r.counters if k not in keys]
    lines = ["| case | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for r in rows:
        lines.append("| %s | %s |" % (r.case, " | ".join(
            fmt_count(r.counters[k]) if k in r.counters else "" for k in keys)))
    return "\n".join(lines)


def wake_table(by_group, repetitions):
    """wake_t<T> and idle_t<T> in one table: latency percentiles and idle
    CPU, per case and thread count."""
    groups = [g for g in by_group if split_threads(g)[0] in SPECIAL]
    if not groups:
        return []
    threads = sorted({split_threads(g)[1] for g in groups})
    cases = []
    for g in groups:
        for r in by_group[g]:
            if r.case not in cases:
                cases.append(r.case)
    lines = ["| case | threads | wake latency p50 | wake latency p99 | condvar, same loop: p50 "
             "| condvar, same loop: p99 | idle CPU 1 s after work stops |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for case in cases:
        for t in threads:
            wake = [r for r in by_group.get("wake_t%d" % t, []) if r.case == case]
            idle = [r for r in by_group.get("idle_t%d" % t, []) if r.case == case]
            if not wake and not idle:
                continue
            w = wake[0].counters if wake else {}
            i = idle[0].counters if idle else {}
            label = case + (" *(baseline)*" if (wake and wake[0].baseline) else "")
            pct = i.get("cpu_percent_of_a_core")
            us = lambda k: "%s us" % fmt_ns(w[k]) if k in w else ""
            lines.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                label, t, us("p50_us"), us("p99_us"), us("condvar_p50_us"), us("condvar_p99_us"),
                "" if pct is None else "{:.4f}% of a core".format(pct)))
    return ["### wake-from-idle latency and idle CPU (wake_t*, idle_t*)", "",
            "\n".join(lines), "",
            "Wake latency: the benchmark thread lets the workers park (300 us, longer "
            "than their spin), spawns one task, and waits until the task stamps the "
            "time; p50 and p99 over 2000 wakes, the median of %s repetitions. It waits "
            "either spinning (the plain case names: a caller that keeps its CPU busy) "
            "or asleep on a semaphore the task posts after stamping (`*_caller_sleeps`). "
            "On a VM the two differ at p99 for every runtime: the guest kernel often "
            "puts the woken thread on the spinning caller's CPU, where it waits for "
            "the caller's time slice to end. The condvar columns are the floor any "
            "scheduler pays: one thread asleep on a pthread condition variable, woken "
            "the same way in the same loop, its samples taking turns with weft's (a "
            "VM's wake-up tail drifts within seconds: measured one after the other, "
            "the second looked faster). Idle CPU: the process's CPU time "
            "over 1 s, starting 1 ms after 10^5 empty tasks ran, as a share of one "
            "core." % repetitions, ""]


def summary_rows(by_group):
    """[(what, row, {family: [(baseline case, ratio)]})] for SUMMARY's
    groups that exist here."""
    out, seen = [], set()
    for spec, case, what in SUMMARY:
        g = resolve(spec, by_group)
        if not g or (g, case) in seen:   # fib30_tMAX is fib30_t1 on one core
            continue
        seen.add((g, case))
        r = [x for x in by_group[g] if x.case == case]
        if not r or r[0].ns_per_item is None:
            continue
        fam = {}
        for b in baselines_of(g, by_group):
            v = ratio(b.ns_per_item, r[0].ns_per_item)
            if v is not None:
                fam.setdefault(family(b.case), []).append((b.case, v))
        what = re.sub(r"\b1 threads\b", "1 thread", what.format(t=split_threads(g)[1]))
        out.append((what, g, r[0], fam))
    return out


SUMMARY_NOTE = ("Ratios are baseline time / weft time: above 1x weft is faster. For fib, "
                "sequential is plain recursion without tasks, so that ratio is what a spawn "
                "per call costs over a plain call; for a graph, it is one thread calling every "
                "node's work in build order, with no scheduler.")


def summary_table(by_group):
    rows = summary_rows(by_group)
    if not rows:
        return ""
    lines = ["| workload | weft | per | " + " | ".join("vs " + f for f, _ in FAMILIES) + " |",
             "|---|---:|---|" + "---:|" * len(FAMILIES)]
    for what, g, r, fam in rows:
        cells = [what + " (`%s`)" % g, fmt_ns(r.ns_per_item) + " ns",
                 unit_of(g).replace("ns per ", "")]
        for f, _ in FAMILIES:
            vs = fam.get(f, [])
            if len(vs) == 1:
                cells.append(fmt_ratio(vs[0][1], 1))
            else:
                cells.append(", ".join("%s %s" % (fmt_ratio(v, 1), c) for c, v in vs))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def wake_summary(by_group):
    """One line: the wake latency and idle CPU at the highest thread count."""
    g = resolve("wake_tMAX", by_group)
    i = resolve("idle_tMAX", by_group)
    parts = []
    for case, how in (("weft", "caller spinning"), ("weft_caller_sleeps", "caller asleep")):
        w = [r for r in by_group[g] if r.case == case] if g else []
        if w and "p50_us" in w[0].counters:
            c = w[0].counters
            line = "wake from idle (%s, %s) p50 %s us, p99 %s us" % (
                g, how, fmt_ns(c["p50_us"]), fmt_ns(c["p99_us"]))
            if "condvar_p50_us" in c:
                line += " (a pthread condvar wake in the same loop: p50 %s us, p99 %s us)" % (
                    fmt_ns(c["condvar_p50_us"]), fmt_ns(c["condvar_p99_us"]))
            parts.append(line)
    if i:
        r = [x for x in by_group[i] if x.case == "weft"]
        if r and "cpu_percent_of_a_core" in r[0].counters:
            parts.append("idle pool (%s) %.4f%% of a core" % (i, r[0].counters["cpu_percent_of_a_core"]))
    return "; ".join(parts)


# ---- instruction counts ------------------------------------------------------------------

def count_rows(cg):
    """[(operation, instructions, how)] from callgrind.json."""
    out = []
    if not cg:
        return out
    p = cg.get("per_oneway_switch")
    if p:
        how = "`%s`" % cg["program"]
        out += [("one-way fiber switch: weft__ctx_switch (the asm)", p["weft__ctx_switch_self"], how),
                ("one-way fiber switch: weft__fiber_switch around it", p["weft__fiber_switch_self"], how),
                ("one-way fiber switch: the whole ping-pong loop, per switch", p["whole_pingpong_loop"], how)]
    c = cg.get("channel_round_trip")
    if c:
        out.append(("channel round trip on one worker (two switches, four channel calls)",
                    c["per_round_trip_one_worker"], "`%s`" % c["program"]))
    s = (cg.get("scheduler") or {}).get("counts", {})
    names = {"spawn": "spawn + run of an empty task, 1 worker",
             "spawn_many": "spawn + run of an empty task, 1 worker, 100 to 200 queued",
             "steal": "steal + run of an empty task, 2 workers (the thief)",
             "fib": "fib call with one spawn, 1 worker"}
    for mode in names:
        if mode in s:
            out.append((names[mode], s[mode]["per_item"], "`%s`" % s[mode]["program"]))
    return out


def counts_section(cg):
    rows = count_rows(cg)
    if not rows:
        return []
    out = ["## instructions per operation", "",
           "Counted with callgrind (`%s`): each program runs at two sizes and the difference "
           "is divided by the operations it adds, so setup cancels out. The machine's load does "
           "not change them: the single-threaded counts repeat exactly, and the steal count, "
           "where two threads take turns under valgrind, moved by about 0.1%% between runs "
           "when this was written." %
           (cg.get("tool") or (cg.get("scheduler") or {}).get("tool", "valgrind")), "",
           "| operation | instructions | program (sizes) |", "|---|---:|---|"]
    out += ["| %s | %s | %s |" % (op, n, how) for op, n, how in rows]
    out.append("")
    s = cg.get("scheduler")
    if s:
        out += ["Spawn, steal and fib come from `benchmarks/icount.c` (%s). What one item is:" %
                s["method"], ""]
        for mode, c in s["counts"].items():
            out.append("- **%s**: %s." % (mode, c["what"]))
        out += ["", "Where they go, instructions per item by function (at least 0.5; "
                "inlined code counts in its caller):", "",
                "| function | " + " | ".join(s["counts"]) + " |",
                "|---|" + "---:|" * len(s["counts"])]
        funcs = []
        for c in s["counts"].values():
            funcs += [f for f in c["by_function"] if f not in funcs]
        for f in funcs:
            out.append("| `%s` | %s |" % (f, " | ".join(
                str(c["by_function"].get(f, "")) for c in s["counts"].values())))
        out += ["", "Counted at commit %s (%s)." % (s.get("git_commit", "?")[:12], s.get("date", "?")), ""]
    return out


# ---- cold and warm, memory ---------------------------------------------------------------

def pretty_size(n):
    """1048576 -> '2^20', 1000000 -> '10^6', 25 -> '25'."""
    if n >= 1024 and n & (n - 1) == 0:
        return "2^%d" % (n.bit_length() - 1)
    k = 0
    while n >= 10 and n % 10 == 0:
        n //= 10
        k += 1
    return "10^%d" % k if n == 1 and k >= 3 else str(n * 10 ** k)


COLDWARM_NAMES = {
    "fib": "fib({})",
    "spawn": "{} empty tasks spawned by a task",
    "chain": "graph: chain of {} tasks",
    "independent": "graph: {} independent tasks",
}


def coldwarm_cases(cw, by_group):
    """Per case of coldwarm.json: the medians over its processes, and the
    benchmark's own median for the same workload when it exists."""
    out = []
    for c in (cw or {}).get("cases", []):
        runs = c["runs"]
        if not runs:
            continue
        med = lambda k: statistics.median(r[k] for r in runs)
        colds = sorted(r["cold_ns"] for r in runs)
        tasks = runs[0]["tasks_per_run"]
        bench = None
        for r in by_group.get(c["group"], []):
            if r.case in ("weft", "weft_from_worker"):
                bench = r.ns_per_item
                break
        out.append({
            "what": COLDWARM_NAMES.get(c["case"], c["case"] + " {}").format(pretty_size(c["size"])),
            "group": c["group"], "threads": c["threads"],
            "tasks": tasks, "processes": len(runs),
            "create": med("create_ns"), "build": med("build_ns"),
            "cold": med("cold_ns"), "cold_min": colds[0], "cold_max": colds[-1],
            "warm": med("warm_median_ns"), "bench_ns_per_task": bench,
            "heap_before": med("heap_before_first_run"), "heap_peak": med("heap_peak"),
            "warm_allocs": max(r["heap_allocs_during_warm"] for r in runs),
            "warm_runs": len(runs[0]["warm_ns"]),
            "fibers": med("fibers_created"), "fiber_bytes": runs[0]["fiber_reserved_bytes_each"],
            "rss": (med("rss_hwm_kib") - med("rss_base_kib")) * 1024
                   if all(r["hwm_reset"] and r["rss_hwm_kib"] >= 0 for r in runs) else None,
            "leak": max(r["heap_live_after_destroy"] for r in runs),
        })
    return out


def coldwarm_section(cw, by_group):
    cases = coldwarm_cases(cw, by_group)
    if not cases:
        return []
    out = ["## first run (cold) and warm runs", "",
           "From `benchmarks/coldwarm.c`, one fresh process per measurement, %d per case "
           "(medians; the cold column gives their range), %d warm runs each, at commit %s "
           "(%s, load average %s at the start, %s at the end). *create*: "
           "`weft_sched_create`; *build*: making the graph; *cold*: the process's first run, "
           "where the workers wake for the first time, task slabs and fibers are made, and a "
           "graph is checked for cycles (bench_graph leaves that first run out of its timing); "
           "*warm*: the median of the runs after it. The last column is the Google Benchmark "
           "median of the same workload from the tables above (another run, another load)." % (
               cw.get("processes", 0), cw.get("warm_runs", 0), cw.get("git_commit", "?")[:12],
               cw.get("date", "?"), ", ".join("%.2f" % x for x in cw.get("load_avg_start", [])),
               ", ".join("%.2f" % x for x in cw.get("load_avg_end", []))), "",
           "| workload | threads | tasks per run | create ms | build ms | cold ms | warm ms | "
           "cold / warm | cold ns per task | warm ns per task | benchmark ns per task |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        out.append("| %s | %d | {:,} | %s | %s | %s (%s–%s) | %s | %.1fx | %s | %s | %s |".format(c["tasks"]) % (
            c["what"], c["threads"], fmt_ms(c["create"]), fmt_ms(c["build"]) if c["build"] else "—",
            fmt_ms(c["cold"]), fmt_ms(c["cold_min"]), fmt_ms(c["cold_max"]), fmt_ms(c["warm"]),
            c["cold"] / c["warm"], fmt_ns(c["cold"] / c["tasks"]), fmt_ns(c["warm"] / c["tasks"]),
            fmt_ns(c["bench_ns_per_task"])))
    out += ["", "## memory per task", "",
            "Same processes. *heap*: the peak of live bytes weft allocated (every weft "
            "allocation goes through `weft_set_allocator`'s hook, which coldwarm counts), "
            "for a graph its tasks and edges included, and that peak over the tasks one run "
            "makes; *allocations in warm runs*: how many the %d warm runs made (the most over "
            "the processes). *fibers*: fibers made, whose stacks are mmap'd outside the hook: "
            "each reserves %s of address space, touched only as deep as it ran. *RSS*: the "
            "resident-set peak (VmHWM) minus the resident set before weft was created, with the "
            "peak reset after coldwarm's own arrays were made: what the kernel charged, stack "
            "pages, malloc's overhead and the threads included." % (
                cases[0]["warm_runs"], fmt_bytes(cases[0]["fiber_bytes"])), "",
            "| workload | threads | heap before first run | heap peak | heap peak per task | "
            "allocations in warm runs | fibers | RSS peak − base | RSS per task |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        out.append("| %s | %d | %s | %s | %s | %d | %d | %s | %s |" % (
            c["what"], c["threads"], fmt_bytes(c["heap_before"]), fmt_bytes(c["heap_peak"]),
            fmt_per_task(c["heap_peak"], c["tasks"]), c["warm_allocs"], c["fibers"],
            fmt_bytes(c["rss"]), fmt_per_task(c["rss"], c["tasks"])))
    leaks = [c for c in cases if c["leak"]]
    out.append("")
    if leaks:
        out += ["**Heap still live after weft_sched_destroy**: " + ", ".join(
            "%s t%d: %d B" % (c["what"], c["threads"], c["leak"]) for c in leaks), ""]
    else:
        out += ["Every process ended with no weft heap live after `weft_graph_destroy` and "
                "`weft_sched_destroy`.", ""]
    return out


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


def suite_of(binary):
    return binary[len("bench_"):] if binary.startswith("bench_") else binary


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


# ---- the page --------------------------------------------------------------------------------

def image(made, name, prefix=""):
    if name not in made:
        return []
    f, caption = made[name]
    return ["![%s](%s)" % (caption, prefix + f), ""]


def markdown(results_dir, made=None, skipped=None):
    """The results README. made: the plots drawn ({name: (file, caption)});
    skipped: why there are none."""
    made = made or {}
    rows = load(results_dir)
    by_group = index(rows)
    meta, ctx, cg, cw = context(results_dir)
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
        ("git commit" + (" (last full run)" if meta.get("runs") else ""),
         meta.get("git_commit") or "none: only partial runs, see the table below"),
        ("date" + (" (last full run)" if meta.get("runs") else ""),
         meta.get("date") or ctx.get("date", "?")),
        ("load average at start", ", ".join("%.2f" % x for x in ctx.get("load_avg", [])) or "?"),
        ("repetitions", "%s per case, medians shown; nothing pinned" % meta.get("repetitions", "?")),
        ("environment", ", ".join("%s=%s" % kv for kv in meta.get("env", {}).items()) or "—"),
    ]
    if ctx.get("library_build_type") == "debug":
        facts.append(("note", "Debian's libbenchmark reports it was built as DEBUG; "
                              "that affects its own bookkeeping, not the timed code"))
    for k, v in facts:
        out.append("- **%s**: %s" % (k, v))
    here = os.path.relpath(results_dir, os.path.dirname(HERE))
    cmd = (meta.get("command") or "").strip()
    out += ["", ("Reproduce: `%s` (the last full run); " % cmd if cmd else "Reproduce: ") +
            "everything, after `tools/build.sh deps`: `python3 benchmarks/run.py`; this page and "
            "its plots alone, from the JSON here: `python3 benchmarks/report.py %s`" % here, ""]
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

    table = summary_table(by_group)
    if table:
        out += ["## summary", "", table, ""]
        line = wake_summary(by_group)
        if line:
            out += [line[0].upper() + line[1:] + ".", ""]
        out += [SUMMARY_NOTE + " All cases of every group, with their spread, are in the "
                "sections below.", ""]
    if skipped:
        out += ["*Plots skipped: %s.*" % skipped, ""]
    out += image(made, "summary.png") + image(made, "threads.png")

    binaries = []
    for r in rows:
        if r.binary not in binaries:
            binaries.append(r.binary)
    for binary in binaries:
        out += ["## %s" % binary, ""]
        out += image(made, "ratios_%s.png" % suite_of(binary))
        groups = []
        for r in rows:
            if r.binary == binary and r.group not in groups:
                groups.append(r.group)
        special = False
        for g in groups:
            if split_threads(g)[0].split("_", 1)[0] in SPECIAL:
                special = True
                continue
            grows = by_group[g]
            if all(r.ns_per_item is None and not r.error for r in grows):
                out += ["### %s" % g, "", counter_table(grows), ""]
            else:
                out += ["### %s" % g, "", group_table(g, grows, by_group), ""]
                out += group_note(g, grows, by_group)
        if special:
            out += wake_table(by_group, meta.get("repetitions", "N"))
    out += ["Ratios are baseline time / case time: above 1x the case is faster. "
            "CV is the spread of the %s repetitions (stddev / mean). "
            "Cases marked \"(wall)\" are timed by the wall clock because they involve "
            "another thread; the others by this thread's CPU time, and the \"wall\" "
            "column shows their wall-clock figure: where it is much higher, other work "
            "took the CPU away during the run." % meta.get("repetitions", "N"), ""]

    out += counts_section(cg)
    out += coldwarm_section(cw, by_group)
    if meta.get("perf"):
        out += ["perf: %s" % meta["perf"], ""]
    return "\n".join(out)


def readme_block(results_dir, readme, made):
    """The block --readme puts in the top-level README: the summary table,
    the instruction counts, cold and warm at the highest thread count, and
    the plots, with paths relative to the README."""
    rows = load(results_dir)
    by_group = index(rows)
    meta, ctx, cg, cw = context(results_dir)
    rel = os.path.relpath(results_dir, os.path.dirname(os.path.abspath(readme)))
    prefix = rel.rstrip("/") + "/"
    out = ["Generated by `python3 benchmarks/report.py --readme README.md %s` from the committed "
           "results of `%s` (%s, %s cores, %s)." % (rel, meta.get("machine", "?"),
                                                      meta.get("cpu_model", "?"), meta.get("cores", "?"),
                                                      meta.get("c_compiler", "?")), ""]
    table = summary_table(by_group)
    if table:
        out += [table, "", SUMMARY_NOTE, ""]
        line = wake_summary(by_group)
        if line:
            out += [line[0].upper() + line[1:] + ".", ""]
    counts = [(op, n) for op, n, _ in count_rows(cg) if "weft__" not in op]
    if counts:
        out += ["Instructions per operation, counted with callgrind (`benchmarks/icount.c`, "
                "`examples/*_pingpong.c`):", "",
                "| operation | instructions |", "|---|---:|"]
        out += ["| %s | %s |" % (op.replace(": the whole ping-pong loop, per switch", ""), n)
                for op, n in counts]
        out.append("")
    all_cases = coldwarm_cases(cw, by_group)
    cases = [c for c in all_cases if c["threads"] == max(x["threads"] for x in all_cases)]
    if cases:
        out += ["First run in a fresh process (cold: scheduler and graph just made; a graph's "
                "first run also checks it) against the median warm run, and memory per task "
                "(`benchmarks/coldwarm.c`, %d threads, medians of %d processes):" % (
                    cases[0]["threads"], cases[0]["processes"]), "",
                "| workload | cold ms | warm ms | cold / warm | weft heap peak per task | "
                "RSS peak per task |",
                "|---|---:|---:|---:|---:|---:|"]
        for c in cases:
            out.append("| %s | %s | %s | %.1fx | %s | %s |" % (
                c["what"], fmt_ms(c["cold"]), fmt_ms(c["warm"]), c["cold"] / c["warm"],
                fmt_per_task(c["heap_peak"], c["tasks"]), fmt_per_task(c["rss"], c["tasks"])))
        out.append("")
    out += image(made, "summary.png", prefix) + image(made, "threads.png", prefix)
    suites = [n for n in sorted(made) if n.startswith("ratios_")]
    if suites:
        out += ["<details><summary>Every weft case against each baseline, per suite</summary>", ""]
        for n in suites:
            out += image(made, n, prefix)
        out += ["</details>", ""]
    return "\n".join(out).rstrip("\n")


def update_readme(readme, block):
    with open(readme) as f:
        text = f.read()
    b = text.find(BEGIN)
    e = text.find(END)
    if b < 0 or e < b:
        sys.exit("report.py: %s has no '%s ... -->' ... '%s' block" % (readme, BEGIN, END))
    b = text.index("-->", b) + len("-->")
    text = text[:b] + "\n" + block + "\n" + text[e:]
    with open(readme, "w") as f:
        f.write(text)


def write(results_dir, readme=None):
    """Writes results_dir/README.md and the plots (and the --readme block).
    Returns the paths written."""
    if not have_matplotlib():
        alt = other_python()
        if alt:
            print("report.py: no matplotlib in %s; running again with %s" % (sys.executable, alt))
            env = dict(os.environ, WEFT_REPORT_REEXEC="1")
            cmd = [alt, os.path.abspath(__file__), results_dir] + (["--readme", readme] if readme else [])
            subprocess.run(cmd, check=True, env=env)
            return None
    rows = load(results_dir)
    meta = context(results_dir)[0]
    clear_plots(results_dir)
    made, skipped = {}, None
    try:
        made = plots(results_dir, rows, meta)
    except ImportError as e:
        skipped = ("matplotlib could not be imported (%s); on Debian: apt-get install "
                   "python3-matplotlib" % e)
        print("report.py: plots skipped: " + skipped)
    path = os.path.join(results_dir, "README.md")
    with open(path, "w") as f:
        f.write(markdown(results_dir, made, skipped))
    written = [path] + [os.path.join(results_dir, f) for f, _ in made.values()]
    if readme:
        update_readme(readme, readme_block(results_dir, readme, made))
        written.append(readme)
    root = os.path.dirname(HERE)
    print("wrote " + ", ".join(os.path.relpath(p, root) for p in written))
    return written


def main(argv):
    args = list(argv)
    readme = None
    if "--print" in args:
        args.remove("--print")
        if len(args) != 1:
            sys.exit(__doc__.split("\n\n")[1])
        sys.stdout.write(markdown(args[0]))
        return
    if "--readme" in args:
        i = args.index("--readme")
        if i + 1 >= len(args):
            sys.exit("report.py: --readme needs a file")
        readme = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit("usage:\n" + __doc__.split("\n\n")[1])
    write(args[0], readme)


if __name__ == "__main__":
    main(sys.argv[1:])
