#!/usr/bin/env python3
"""A/B two builds of the same benchmark binary, alternating processes.

    benchmarks/ab.py A_BIN B_BIN --filter REGEX [--rounds 5] [--min-time 0.2]
                     [--label-a A] [--label-b B] [--json OUT]

Runs A_BIN and B_BIN (Google Benchmark binaries, e.g. an old checkout's
build/release/benchmarks/bench_core and this one's) in turns, A B A B ...,
`rounds` times each, with the same filter, and prints for every case the
median real time of each side over its rounds, their ratio B/A, and the
spread (max/min) of each side. Alternating processes spreads a change in
the machine's load over both sides instead of landing on one; the medians
over rounds and the spreads say how far to trust a ratio. Python 3
standard library only.
"""

import argparse
import json
import statistics
import subprocess
import sys


def run_once(binary, flt, min_time):
    out = subprocess.run(
        [binary, f"--benchmark_filter={flt}", f"--benchmark_min_time={min_time}",
         "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        times[b["name"]] = b["real_time"] * scale
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--filter", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--json")
    args = ap.parse_args()

    samples = {"a": {}, "b": {}}
    for r in range(args.rounds):
        for side, binary in (("a", args.a), ("b", args.b)):
            for name, t in run_once(binary, args.filter, args.min_time).items():
                samples[side].setdefault(name, []).append(t)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    rows = []
    print(f"{'case':44} {args.label_a + ' ns':>14} {args.label_b + ' ns':>14} "
          f"{'B/A':>6} {'spread A':>9} {'spread B':>9}")
    for name in samples["a"]:
        a, b = samples["a"][name], samples["b"].get(name)
        if not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        row = {"case": name, "median_a_ns": ma, "median_b_ns": mb, "ratio_b_a": mb / ma,
               "spread_a": max(a) / min(a), "spread_b": max(b) / min(b),
               "rounds": args.rounds}
        rows.append(row)
        print(f"{name:44} {ma:14.1f} {mb:14.1f} {mb / ma:6.3f} "
              f"{row['spread_a']:9.2f} {row['spread_b']:9.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.label_a, "b": args.label_b, "filter": args.filter,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
