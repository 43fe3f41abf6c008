"""What report.py shows and how: the cases' units, budgets and targets,
the rows read from a machine's results folder (through benchlib), and
the Markdown tables and sections built from them. report.py lays them
out in pages; report_plots.py draws them. Python 3 standard library
only."""

import glob
import json
import os
import re
import statistics

import benchlib

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


class Row:
    """One benchmark case of one suite's run: its figures are the
    benchlib.Case's (benchlib.QUANTITY), the group and case split out of
    its name for the tables."""

    def __init__(self, binary, c, path=None):
        self.binary = binary
        self.path = path          # the <suite>/<date>.json it came from
        self.run_name = c.run_name
        self.real_time = c.real_time
        self.name = c.name
        self.group, _, self.case = c.name.partition("/")
        if not self.case:
            self.group, self.case = "other", c.name
        self.ns_per_item = c.ns_per_item            # the quantity
        self.wall_ns_per_item = c.wall_ns_per_item  # the same, by the wall clock
        self.cv = c.cv            # coefficient of variation of the time used
        self.label = c.label
        self.error = c.error
        self.counters = c.counters

    @property
    def baseline(self):
        return self.label == "baseline"

    @property
    def weft(self):
        return self.case.startswith("weft")


def sources(results_dir):
    """[(binary, path)]: the newest <suite>/<date>.json of each suite in a
    machine folder (benchlib's layout), and any bench_*.json lying in the
    folder itself (a study that kept a binary's raw output)."""
    found = [(benchlib.binary_of(s), benchlib.latest(results_dir, s))
             for s in benchlib.suites(results_dir)]
    for path in sorted(glob.glob(os.path.join(results_dir, "bench_*.json"))):
        found.append((os.path.basename(path)[: -len(".json")], path))
    return found


def load(results_dir):
    """Rows of every suite's newest run, suites by name, cases in the
    order the binary registered them."""
    rows = []
    for binary, path in sources(results_dir):
        for c in benchlib.cases(benchlib.read(path)).values():
            rows.append(Row(binary, c, path))
    return rows


def read_json(results_dir, name):
    """An extra's newest run (callgrind/<date>.json), or <name>.json in the
    folder itself."""
    p = benchlib.latest(results_dir, name) or os.path.join(results_dir, name + ".json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return None


def context(results_dir):
    """meta.json, the Google Benchmark context of the first suite's run,
    and the newest callgrind and coldwarm runs (None where missing)."""
    meta = read_json(results_dir, "meta") or {}
    ctx = {}
    files = sources(results_dir)
    if files:
        ctx = benchlib.read(files[0][1]).get("context", {})
    return meta, ctx, read_json(results_dir, "callgrind"), read_json(results_dir, "coldwarm")


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
