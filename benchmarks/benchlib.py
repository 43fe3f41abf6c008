"""What run.py, report.py and ab.py share: where results live, and the one
quantity every figure of theirs is.

The quantity. A benchmark row's figure is the **median, over its samples,
of the time per item in nanoseconds**:

  - a sample is one repetition of the case (a run record of Google
    Benchmark's JSON whose run_type is "iteration"): run.py asks for 5 or
    more repetitions per process, ab.py alternates 5 or more processes per
    side (each process's repetitions are pooled);
  - the time per item is 1e9 / items_per_second: the time the case is
    timed by (this thread's CPU time, or the wall clock for a case whose
    name ends in /real_time) over the items one iteration does (a spawned
    task, a round trip, an element: report.py's UNITS). A case that counts
    no items gives its time per iteration instead (same clock);
  - a file written with aggregates only (results filed before this module)
    has no samples; its figure is Google Benchmark's own median aggregate
    of items_per_second, which is the same median for an odd number of
    repetitions.

So a report row (report.py) and one side of an A/B (ab.py) are the same
number for the same case on the same samples, and an A/B ratio B/A is a
ratio of two report rows.

The layout (benchmarks/results/README.md says it for people):

    benchmarks/results/<machine>/<suite>/<date>.json   one run of one suite
    benchmarks/results/<machine>/<suite>/<date>.md     report.py's page of it
    benchmarks/results/<machine>/meta.json, README.md, *.png
    benchmarks/results/studies/<date>-<topic>/          one-off studies

A suite is a bench_<suite> binary (core, fiber, graph, parallel, sync,
engine, ...), or one of run.py's extras (callgrind, coldwarm). <date> is
YYYY-MM-DD (UTC) of the run; a second run of a suite on the same day
replaces the first. Python 3 standard library only.
"""

import datetime
import json
import os
import platform
import re
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")

QUANTITY = ("median over the samples (repetitions, or alternating processes) of the "
            "time per item in ns: the case's clock (CPU time, or wall clock for "
            "/real_time cases) over items_per_second's items")

# Suites that are not Google Benchmark binaries: run.py's extras.
EXTRAS = ("callgrind", "coldwarm")

DATE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.json$")

SCALE = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# ---- the layout --------------------------------------------------------------------

def today():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def suite_of(binary):
    """'bench_core' -> 'core'."""
    return binary[len("bench_"):] if binary.startswith("bench_") else binary


def binary_of(suite):
    """'core' -> 'bench_core'; the extras keep their name."""
    return suite if suite in EXTRAS or suite.startswith("bench_") else "bench_" + suite


def dated(machine_dir, suite, date=None, ext="json"):
    """<machine_dir>/<suite>/<date>.<ext>; date defaults to today (UTC)."""
    return os.path.join(machine_dir, suite, "%s.%s" % (date or today(), ext))


def runs_of(machine_dir, suite):
    """The dated JSON files of a suite, oldest first."""
    d = os.path.join(machine_dir, suite)
    if not os.path.isdir(d):
        return []
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if DATE_RE.match(f)]


def latest(machine_dir, suite):
    """The newest dated JSON file of a suite, or None."""
    runs = runs_of(machine_dir, suite)
    return runs[-1] if runs else None


def suites(machine_dir):
    """The Google Benchmark suites a machine folder holds runs of, by name."""
    if not os.path.isdir(machine_dir):
        return []
    return [s for s in sorted(os.listdir(machine_dir))
            if s not in EXTRAS and runs_of(machine_dir, s)]


def date_of(path):
    m = DATE_RE.match(os.path.basename(path))
    return m.group(1) if m else None


# ---- the machine -------------------------------------------------------------------

def cpuinfo():
    """The first processor's fields from /proc/cpuinfo."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    return fields


# Words that say nothing about which CPU it is.
NOISE = {"intel", "amd", "cpu", "processor", "platinum", "gold", "silver",
         "bronze", "genuine", "core(tm)", "with", "radeon", "graphics"}


def machine_slug(info=None, cores=None):
    """'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz', 2 -> 'xeon-8375c-2c'.
    A model name without a model number ('AMD EPYC', as some hypervisors
    report it) gets the CPUID family and model: 'epyc-f25m1-2c'. Without
    arguments, this machine's."""
    info = cpuinfo() if info is None else info
    cores = cores or os.cpu_count() or 1
    name = info.get("model name", platform.processor() or platform.machine())
    name = re.sub(r"\((r|tm)\)", "", name, flags=re.I)
    name = re.sub(r"@.*$", "", name)
    name = re.sub(r"\b\d+-core\b", "", name, flags=re.I)
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in NOISE]
    if not any(re.search(r"\d", w) for w in words) and "cpu family" in info:
        words.append("f%sm%s" % (info["cpu family"], info.get("model", "0")))
    return "-".join(words[:3] + ["%dc" % cores])


# ---- Google Benchmark JSON and the statistic -----------------------------------------

# Fields of a Google Benchmark run that are not user counters.
STANDARD = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
            "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name",
            "aggregate_unit", "family_index", "per_family_instance_index", "label",
            "items_per_second", "bytes_per_second", "error_occurred", "error_message"}


def read(path):
    with open(path) as f:
        return json.load(f)


def per_item_ns(b, real_time):
    """One run record's time per item (see QUANTITY), and its wall-clock
    time per item; (None, None) when it counts no items."""
    ips = b.get("items_per_second")
    if not ips:
        return None, None
    ns = 1e9 / ips
    wall = None
    if b.get("cpu_time") and b.get("real_time"):
        wall = ns if real_time else ns * b["real_time"] / b["cpu_time"]
    return ns, wall


def per_iteration_ns(b, real_time):
    """One run record's time per iteration on the case's clock, in ns."""
    scale = SCALE[b.get("time_unit", "ns")]
    return b["real_time" if real_time else "cpu_time"] * scale


class Case:
    """One benchmark case of one file: its samples and Google Benchmark's
    aggregates."""

    def __init__(self, run_name):
        self.run_name = run_name
        self.real_time = run_name.endswith("/real_time")
        name = run_name[: -len("/real_time")] if self.real_time else run_name
        self.name = re.sub(r"/iterations:\d+", "", name)   # fixed counts say nothing here
        self.samples = []        # [(ns per item, wall ns per item, counters)] per repetition
        self.iter_ns = []        # ns per iteration per repetition (the case's clock)
        self.median_agg = None   # Google Benchmark's median aggregate record
        self.cv_agg = None       # its coefficient of variation of the time
        self.label = ""
        self.error = None

    def _median_per_item(self, clock):
        """Median over the samples of ns per item on clock 0 (the case's
        own) or 1 (wall), else Google Benchmark's median aggregate's."""
        got = [s[clock] for s in self.samples if s[clock] is not None]
        if got:
            return statistics.median(got)
        if self.median_agg is not None:
            return per_item_ns(self.median_agg, self.real_time)[clock]
        return None

    @property
    def ns_per_item(self):
        """The quantity (QUANTITY): None when the case counts no items."""
        return self._median_per_item(0)

    @property
    def ns(self):
        """ns_per_item, or for a case that counts no items the median time
        per iteration on the same clock."""
        v = self.ns_per_item
        if v is not None:
            return v
        if self.iter_ns:
            return statistics.median(self.iter_ns)
        if self.median_agg is not None:
            return per_iteration_ns(self.median_agg, self.real_time)
        return None

    @property
    def wall_ns_per_item(self):
        return self._median_per_item(1)

    @property
    def cv(self):
        """Spread of the samples (stddev / mean), or Google Benchmark's."""
        got = [s[0] for s in self.samples if s[0] is not None] or self.iter_ns
        if len(got) >= 2:
            return statistics.stdev(got) / statistics.mean(got)
        return self.cv_agg

    @property
    def counters(self):
        """User counters: the median aggregate's, or each one's median over
        the samples."""
        if self.median_agg is not None:
            return {k: v for k, v in self.median_agg.items()
                    if k not in STANDARD and isinstance(v, (int, float))}
        keys = []
        for s in self.samples:
            keys += [k for k in s[2] if k not in keys]
        return {k: statistics.median([s[2][k] for s in self.samples if k in s[2]]) for k in keys}


def cases(data):
    """{run_name: Case} of one Google Benchmark JSON document, in the order
    the binary registered the cases (a run with random interleaving writes
    them in the order they happened to finish)."""
    out = {}
    runs = sorted(data.get("benchmarks", []),
                  key=lambda b: (b.get("family_index", 0), b.get("per_family_instance_index", 0)))
    for b in runs:
        key = b.get("run_name", b["name"])
        c = out.get(key)
        if c is None:
            c = out[key] = Case(key)
        if b.get("error_occurred"):
            c.error = b.get("error_message", "error")
            continue
        if b.get("label"):
            c.label = b["label"]
        agg = b.get("aggregate_name")
        if b.get("run_type", "iteration") == "iteration" and agg is None:
            ns, wall = per_item_ns(b, c.real_time)
            counters = {k: v for k, v in b.items()
                        if k not in STANDARD and isinstance(v, (int, float))}
            c.samples.append((ns, wall, counters))
            c.iter_ns.append(per_iteration_ns(b, c.real_time))
        elif agg == "median":
            c.median_agg = b
        elif agg == "cv":
            c.cv_agg = b.get("real_time" if c.real_time else "cpu_time")
    return out
