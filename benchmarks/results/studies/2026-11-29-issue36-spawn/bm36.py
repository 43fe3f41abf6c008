#!/usr/bin/env python3
"""bm36.py BENCH_SPAWN ROUNDS OUT.json: the spawn_main_t1/t2 rows of
bench_spawn, one process per case, cases alternating, ROUNDS rounds; each
process runs its case for 3 repetitions (Google Benchmark's own, 0.3 s
each) and gives the median ns per task. Prints per case the median of the
process medians and their range; writes every process's figure to OUT."""
import json, statistics, subprocess, sys
exe, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cases = ["spawn_main_t1/weft_bound", "spawn_main_t1/tbb_group", "spawn_main_t1/omp_task",
         "spawn_main_t2/weft_bound", "spawn_main_t2/weft_plain", "spawn_main_t2/tbb_group",
         "spawn_main_t2/omp_task"]
res = {c: [] for c in cases}
for r in range(rounds):
    for c in cases:
        p = subprocess.run([exe, "--benchmark_filter=^%s/real_time$" % c, "--benchmark_repetitions=3",
                            "--benchmark_min_time=0.3", "--benchmark_format=json"],
                           capture_output=True, text=True, check=True)
        runs = [b for b in json.loads(p.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
        ns = statistics.median(b["real_time"] for b in runs)   # ms per 10^6 tasks = ns per task
        res[c].append(ns)
for c in cases:
    v = sorted(res[c])
    print("%-28s median %7.1f ns/task  range %.1f-%.1f (n=%d)" % (c, statistics.median(v), v[0], v[-1], len(v)))
json.dump(res, open(out, "w"), indent=1)
