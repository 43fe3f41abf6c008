#!/usr/bin/env python3
"""Build weft's release preset, run every benchmark, record the machine.

    benchmarks/run.py [--no-build] [--jobs N] [--machine SLUG]
                      [--repetitions N] [--min-time SECONDS] [--interleave]
                      [--bench NAME ...] [--filter REGEX] [--no-callgrind]
                      [--no-coldwarm] [--extras-only]

Writes into benchmarks/results/<machine>/ (the layout is in
benchmarks/results/README.md; <date> is today's, YYYY-MM-DD UTC, and a
second run on the same day replaces the first):
    <suite>/<date>.json   Google Benchmark's JSON for the bench_<suite>
                          binary, every repetition kept
    meta.json             CPU, cores, compilers, kernel; git commit and date
                          of each binary's run ("runs")
    callgrind/<date>.json instructions per fiber switch, per channel round
                          trip, per spawn + run, per steal + run and per fib
                          call, counted by callgrind (benchmarks/icount.c
                          for the last three)
    coldwarm/<date>.json  first run against warm runs, and memory per task,
                          of fib, 10^6 spawns, a linear chain and 10^6
                          independent graph tasks, each in fresh processes
                          (benchmarks/coldwarm.c)
    README.md, <suite>/<date>.md, *.png
                          the machine's page, each suite's page and the
                          plots, made by report.py from the files above

--bench sync (or bench_sync; repeatable) runs only those binaries and
leaves the other binaries' files as they are, so one suite can be re-run
without re-measuring the rest. --filter narrows the cases inside each
binary run; a binary's JSON of the day is replaced by what that run
produced, and none is written when no case matched. callgrind counts the fiber switch when
bench_fiber runs, the channel round trip when bench_sync runs, and spawn,
steal and fib when bench_core runs; coldwarm runs when bench_core or
bench_graph runs. --extras-only runs no bench_* binary, only all the
callgrind counts and coldwarm (they take about two minutes), and rewrites
the README from the rest as it is.

--interleave passes Google Benchmark's --benchmark_enable_random_interleaving:
the repetitions of all cases of a binary run in a random order, so a change
in the machine's load during the run spreads over every case instead of
landing on a few; with more, shorter repetitions (--min-time, seconds per
repetition; Google Benchmark's default is 0.5) it spreads more evenly.

<machine> is a short slug of the CPU model and the core count, such as
xeon-8375c-2c. Nothing is pinned: each case is repeated and report.py
shows, per case, benchlib.QUANTITY (the median over the repetitions of
the time per item, the figure ab.py gives too). Python 3 standard library
only (report.py draws the plots with matplotlib when some python3 here has
it, and skips them otherwise).
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys

import benchlib
import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "release")
PRESET = "release"



def relativize(path):
    """Google Benchmark records the binary's absolute path; keep results
    free of this machine's paths by making it relative to the repo."""
    with open(path) as f:
        data = json.load(f)
    exe = data.get("context", {}).get("executable")
    if exe and os.path.isabs(exe):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        data["context"]["executable"] = os.path.relpath(exe, root)
        with open(path, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")

def sh(cmd, **kw):
    """Runs cmd from the repository root, echoing it; stops on failure."""
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True, **kw)


def out_of(cmd):
    """First line of cmd's output, or '' if it cannot run."""
    try:
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return ""
    return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr).strip() else ""


# ---- the machine -------------------------------------------------------------

cpuinfo = benchlib.cpuinfo
machine_slug = benchlib.machine_slug


def cmake_cache(key):
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def git(*args):
    return out_of(["git", *args])


def perf_state():
    """Whether `perf stat` can count instructions here (VMs often cannot)."""
    if not shutil.which("perf"):
        return "not installed"
    r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "true"],
                       capture_output=True, text=True)
    if r.returncode != 0 or "not supported" in r.stderr or "<not" in r.stderr:
        return "cannot count instructions on this machine; callgrind was used"
    return "available (not used: callgrind counts are exact and repeatable)"


def commit_id():
    """HEAD, with -dirty if what is measured differs from it (results
    written by this or an earlier run do not count)."""
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "src", "include",
                            "benchmarks", "examples", "CMakeLists.txt", "cmake",
                            ":(exclude)benchmarks/results"],
                           cwd=ROOT).returncode != 0
    return git("rev-parse", "HEAD") + ("-dirty" if dirty else "")


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def meta(info, cores, slug, args, ran, old, outdir):
    """meta.json: the machine, and for each binary the run that wrote its
    JSON. A run of some binaries (--bench) keeps the others' entries, and
    the top-level commit and date, which describe the last full run."""
    run = {
        "git_commit": args.commit,
        "git_branch": git("rev-parse", "--abbrev-ref", "HEAD"),
        "date": now_utc(),
        "repetitions": args.repetitions,
        "command": "benchmarks/run.py " + " ".join(sys.argv[1:]),
    }
    full = not args.bench and not args.filter
    m = {
        "machine": slug,
        "cpu_model": info.get("model name", "unknown"),
        "cpu_family": info.get("cpu family", ""),
        "cpu_model_number": info.get("model", ""),
        "cores": cores,
        "kernel": platform.release(),
        "c_compiler": out_of([cmake_cache("CMAKE_C_COMPILER") or "cc", "--version"]),
        "cxx_compiler": out_of([cmake_cache("CMAKE_CXX_COMPILER") or "c++", "--version"]),
        "build_type": cmake_cache("CMAKE_BUILD_TYPE"),
        "git_commit": run["git_commit"] if full else old.get("git_commit", ""),
        "git_branch": run["git_branch"] if full else old.get("git_branch", ""),
        "date": run["date"] if full else old.get("date", ""),
        "repetitions": args.repetitions if full else old.get("repetitions", args.repetitions),
        "env": {"OMP_WAIT_POLICY": "passive"},
        "perf": perf_state(),
        "command": run["command"] if full else old.get("command", ""),
    }
    runs = {} if full else dict(old.get("runs", {}))
    if not full:
        # Binaries measured by an earlier full run keep its commit and date.
        for suite in benchlib.suites(outdir):
            b = benchlib.binary_of(suite)
            if b not in runs:
                runs[b] = {k: old[k] for k in
                           ("git_commit", "git_branch", "date", "repetitions", "command") if k in old}
    for b in ran:
        runs[b] = run
    m["runs"] = runs
    return m


# ---- instruction counts ----------------------------------------------------------

def callgrind_counts(path, exe):
    """Total Ir, and Ir per instruction address inside exe, from a callgrind
    file written with --dump-instr=yes --compress-pos=no
    --compress-strings=no. Summing by address, not by callgrind's function
    contexts, matters here: across a stack switch callgrind's idea of the
    current function goes wrong, while an address is always right."""
    total, by_addr = 0, {}
    obj, skip_next = None, False
    exe = os.path.realpath(exe)
    with open(path) as f:
        for line in f:
            if line.startswith("ob="):
                obj = os.path.realpath(line[3:].strip())
            elif line.startswith("calls="):
                skip_next = True   # the next cost line is the call's inclusive cost
            elif line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
            elif line.startswith("0x"):
                if skip_next:
                    skip_next = False
                    continue
                if obj == exe:
                    parts = line.split()
                    addr = int(parts[0], 16)
                    by_addr[addr] = by_addr.get(addr, 0) + int(parts[-1])
    return total, by_addr


def symbols(exe):
    """[(start, end, name)] of the functions in exe, from nm; [] if nm fails."""
    try:
        out = subprocess.run(["nm", "-S", "--defined-only", exe],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    syms = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            start = int(parts[0], 16)
            syms.append((start, start + int(parts[1], 16), parts[3]))
    return syms


def symbol_range(exe, name):
    """[start, end) of a function in exe, from nm; None if not found."""
    for start, end, n in symbols(exe):
        if n == name:
            return start, end
    return None


def cg_run(exe, args, tag, collect_atstart=True):
    """Runs exe under callgrind; (total Ir, Ir by address in exe)."""
    cg = os.path.join(BUILD, "callgrind.%s.%s.out" % (os.path.basename(exe), tag))
    cmd = ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-pos=no",
           "--compress-strings=no", "--callgrind-out-file=" + cg]
    if not collect_atstart:
        cmd.append("--collect-atstart=no")
    sh(cmd + [exe] + [str(a) for a in args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return callgrind_counts(cg, exe)


def by_function(exe, counts, items, least=0.5):
    """{function: instructions per item} from two runs' counts by address:
    the difference of each function's own instructions over the items the
    second run adds, biggest first, those of at least `least`."""
    per = {}
    for start, end, name in symbols(exe):
        d = [sum(ir for a, ir in c[1].items() if start <= a < end) for c in counts]
        v = (d[1] - d[0]) / items
        if abs(v) >= least:
            per[name] = round(v, 2)
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


# icount's workloads: key -> (icount's mode, sizes, rounds, items the second
# size adds per round, what one item is). Sizes stay within the default
# deque (256), so spawn and steal measure the deque, not the overflow to
# the global ring. "spawn" stays within one slab of task records (64), so
# the worker's pool serves every spawn; "spawn_many" keeps 100 to 200
# tasks queued, so its pool also hands magazines of records to the
# scheduler's spares and takes them back.
def _fib_spawns(n):
    x, y = 0, 1   # spawns(n) = F(n+1) - 1
    for _ in range(n + 1):
        x, y = y, x + y
    return x - 1


ICOUNT = {
    "spawn": ("spawn", (25, 50), 40, lambda a, b: b - a,
              "spawn + run of an empty task from a task on 1 worker, 25 to 50 queued (the "
              "parent's weft_wait_until runs them inline)"),
    "spawn_many": ("spawn", (100, 200), 20, lambda a, b: b - a,
                   "the same with 100 to 200 queued: more than a slab of task records, so "
                   "magazines of records also move between the worker's pool and the spares"),
    "steal": ("steal", (100, 200), 20, lambda a, b: b - a,
              "steal + run of an empty task: on 2 workers, the thief's whole loop per task "
              "it takes from the other worker's deque (that worker's thread is asleep)"),
    "fib": ("fib", (18, 20), 2, lambda a, b: _fib_spawns(b) - _fib_spawns(a),
            "one call of fib with one spawn (spawn, fib's own work, the wait), 1 worker, as "
            "bench_core's fib cases"),
}


def callgrind(outdir, fiber=True, chan=True, sched=True):
    """Instructions per one-way fiber switch (fiber_pingpong), per channel
    round trip on one worker (chan_pingpong), and per spawn, steal and fib
    call (benchmarks/icount), each program run under callgrind at two
    sizes so that setup cancels out of the difference. Merged into
    callgrind/<date>.json: a part not measured keeps the previous run's
    figures."""
    previous = benchlib.latest(outdir, "callgrind")
    path = benchlib.dated(outdir, "callgrind")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    result = {}
    if previous:
        with open(previous) as f:
            result = json.load(f)
    if not shutil.which("valgrind"):
        print("callgrind: skipped (no valgrind)")
        return None
    tool = out_of(["valgrind", "--version"]) + " --tool=callgrind"
    stamp = {"git_commit": commit_id(), "date": now_utc()}
    measured = False
    # Each pingpong program does one warm-up run and `runs` timed runs of n
    # round trips.
    sizes, runs = (100000, 200000), 1

    def count(exe):
        return [cg_run(exe, [n, runs], n) for n in sizes]

    exe = os.path.join(BUILD, "examples", "fiber_pingpong")
    if fiber and os.path.exists(exe):
        counts = count(exe)
        switches = 2 * (runs + 1) * (sizes[1] - sizes[0])   # two one-way switches per round trip

        def in_function(name):
            rng = symbol_range(exe, name)
            if rng is None:
                return None
            d = [sum(ir for a, ir in c[1].items() if rng[0] <= a < rng[1]) for c in counts]
            return round((d[1] - d[0]) / switches, 2)

        result.update({
            "tool": tool,
            "program": "examples/fiber_pingpong N %d, N = %d and %d" % (runs, *sizes),
            "method": "difference between the two runs / the one-way switches it adds",
            "per_oneway_switch": {
                "whole_pingpong_loop": round((counts[1][0] - counts[0][0]) / switches, 2),
                "weft__fiber_switch_self": in_function("weft__fiber_switch"),
                "weft__ctx_switch_self": in_function("weft__ctx_switch"),
            },
        }, **stamp)
        measured = True
    exe = os.path.join(BUILD, "examples", "chan_pingpong")
    if chan and os.path.exists(exe):
        counts = count(exe)
        trips = (runs + 1) * (sizes[1] - sizes[0])
        result["channel_round_trip"] = dict({
            "tool": tool,
            "program": "examples/chan_pingpong N %d, N = %d and %d" % (runs, *sizes),
            "method": "difference between the two runs (whole process) / the round trips it adds",
            "per_round_trip_one_worker": round((counts[1][0] - counts[0][0]) / trips, 1),
        }, **stamp)
        measured = True
    exe = os.path.join(BUILD, "benchmarks", "icount")
    if sched and os.path.exists(exe):
        sched_counts = {}
        for key, (mode, msizes, rounds, added, what) in ICOUNT.items():
            try:
                counts = [cg_run(exe, [mode, n, rounds], "%s.%d" % (mode, n), collect_atstart=False)
                          for n in msizes]
            except subprocess.CalledProcessError as e:
                print("callgrind: icount %s failed (%s); not counted" % (mode, e))
                continue
            items = rounds * added(*msizes)
            if counts[0][0] == 0:
                print("callgrind: icount %s counted nothing (built without valgrind/callgrind.h?)" % mode)
                continue
            sched_counts[key] = {
                "what": what,
                "program": "benchmarks/icount %s SIZE %d, SIZE = %d and %d" % (mode, rounds, *msizes),
                "per_item": round((counts[1][0] - counts[0][0]) / items, 1),
                "by_function": by_function(exe, counts, items),
            }
        if sched_counts:
            result["scheduler"] = dict({
                "tool": tool + " --collect-atstart=no",
                "method": "icount switches collection on around the measured part, on the "
                          "thread that does it, after a warm-up round; difference between "
                          "the two sizes / the items it adds",
                "counts": sched_counts,
            }, **stamp)
            measured = True
    if not measured:
        print("callgrind: skipped (no fiber_pingpong, chan_pingpong or icount)")
        return None
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    return result


# ---- cold and warm runs, memory ----------------------------------------------------

# coldwarm's cases: (workload, size, the benchmark group it mirrors, less
# the _t<threads> suffix). Each runs at 1 thread and at every core.
COLDWARM = [
    ("fib", 25, "fib25"),
    ("fib", 30, "fib30"),
    ("spawn", 1000000, "spawn"),
    ("chain", 1 << 20, "chain_2^20"),
    ("independent", 1000000, "parallel_10^6"),
]


def coldwarm(outdir, cores, processes=3, warm=10):
    """Runs benchmarks/coldwarm for each case of COLDWARM at 1 thread and
    at `cores`, `processes` fresh processes each (a cold run is a
    process's first), and writes coldwarm/<date>.json with every process's
    figures; report.py takes the medians."""
    exe = os.path.join(BUILD, "benchmarks", "coldwarm")
    if not os.path.exists(exe):
        print("coldwarm: skipped (no %s)" % os.path.relpath(exe, ROOT))
        return None
    threads = sorted({1, cores})
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    out = {
        "program": "benchmarks/coldwarm",
        "git_commit": commit_id(),
        "date": now_utc(),
        "load_avg_start": [round(x, 2) for x in load],
        "processes": processes,
        "warm_runs": warm,
        "cases": [],
    }
    for name, size, group in COLDWARM:
        for t in threads:
            runs = []
            for _ in range(processes):
                cmd = [exe, name, str(size), str(t), str(warm)]
                print("+ " + " ".join([os.path.relpath(exe, ROOT)] + cmd[1:]), flush=True)
                r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
                if r.returncode != 0:
                    print("coldwarm: %s failed: %s" % (" ".join(cmd[1:]), r.stderr.strip()))
                    break
                runs.append(json.loads(r.stdout))
            if runs:
                out["cases"].append({"case": name, "size": size, "threads": t,
                                     "group": "%s_t%d" % (group, t), "runs": runs})
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    out["load_avg_end"] = [round(x, 2) for x in load]
    path = benchlib.dated(outdir, "coldwarm")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    return out


# ---- main ------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-build", action="store_true", help="use the existing build/release")
    ap.add_argument("--machine", help="machine folder name (default: CPU model + cores)")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, help="seconds each repetition runs at least")
    ap.add_argument("--interleave", action="store_true",
                    help="run the repetitions of all cases in a random order")
    ap.add_argument("--jobs", type=int, help="parallel build jobs (default: the build tool's)")
    ap.add_argument("--bench", action="append", metavar="NAME",
                    help="run only bench_NAME (repeatable); the other results stay")
    ap.add_argument("--filter", help="passed to --benchmark_filter")
    ap.add_argument("--no-callgrind", action="store_true", help="count no instructions")
    ap.add_argument("--no-coldwarm", action="store_true", help="do not run benchmarks/coldwarm")
    ap.add_argument("--extras-only", action="store_true",
                    help="run no bench_* binary: only the callgrind counts and coldwarm")
    args = ap.parse_args()
    if args.extras_only and (args.bench or args.filter):
        sys.exit("run.py: --extras-only runs no bench_* binary; --bench and --filter do not apply")
    if args.repetitions < 5:
        print("run.py: fewer than 5 repetitions: each figure is a median of %d samples"
              % args.repetitions)
    args.commit = commit_id()   # before the results change the tree

    if not args.no_build:
        sh(["cmake", "--preset", PRESET])
        sh(["cmake", "--build", "--preset", PRESET] + (["-j%d" % args.jobs] if args.jobs else []))

    info = cpuinfo()
    cores = os.cpu_count() or 1
    slug = args.machine or machine_slug(info, cores)
    outdir = os.path.join(benchlib.RESULTS, slug)
    os.makedirs(outdir, exist_ok=True)

    bindir = os.path.join(BUILD, "benchmarks")
    benches = sorted(b for b in os.listdir(bindir)
                     if b.startswith("bench_") and os.access(os.path.join(bindir, b), os.X_OK)
                     and os.path.isfile(os.path.join(bindir, b)))
    if args.bench:
        wanted = {n if n.startswith("bench_") else "bench_" + n for n in args.bench}
        missing = wanted - set(benches)
        if missing:
            sys.exit("run.py: no such binary in %s: %s" % (bindir, ", ".join(sorted(missing))))
        benches = [b for b in benches if b in wanted]
    if not benches:
        sys.exit("run.py: no bench_* binaries in " + bindir)

    meta_path = os.path.join(outdir, "meta.json")
    old = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            old = json.load(f)

    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    ran = []
    for b in ([] if args.extras_only else benches):
        out = benchlib.dated(outdir, benchlib.suite_of(b))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        tmp = out + ".new"
        # Every repetition goes to the file (the samples of the figure);
        # the console shows the aggregates only.
        cmd = [os.path.join(bindir, b),
               "--benchmark_repetitions=%d" % args.repetitions,
               "--benchmark_display_aggregates_only=true",
               "--benchmark_out=" + tmp,
               "--benchmark_out_format=json"]
        if args.filter:
            cmd.append("--benchmark_filter=" + args.filter)
        if args.min_time:
            cmd.append("--benchmark_min_time=%g" % args.min_time)
        if args.interleave:
            cmd.append("--benchmark_enable_random_interleaving=true")
        sh(cmd, env=env)
        # A filter that matches nothing in this binary still truncates
        # the output file: write nothing then (earlier runs stay).
        try:
            with open(tmp) as f:
                produced = bool(json.load(f).get("benchmarks"))
        except (OSError, ValueError):
            produced = False
        if not produced:
            print("run.py: %s: no case ran; %s not written" % (b, os.path.relpath(out, ROOT)))
            if os.path.exists(tmp):
                os.remove(tmp)
            continue
        os.replace(tmp, out)
        relativize(out)
        ran.append(b)

    if ran or not os.path.exists(meta_path):
        with open(meta_path, "w") as f:
            json.dump(meta(info, cores, slug, args, ran, old, outdir), f, indent=2)
            f.write("\n")
    extras = args.extras_only
    if not args.no_callgrind and (extras or {"bench_fiber", "bench_sync", "bench_core"} & set(ran)):
        callgrind(outdir, fiber=extras or "bench_fiber" in ran, chan=extras or "bench_sync" in ran,
                  sched=extras or "bench_core" in ran)
    if not args.no_coldwarm and (extras or {"bench_core", "bench_graph"} & set(ran)):
        coldwarm(outdir, cores)

    report.write(outdir)


if __name__ == "__main__":
    main()
