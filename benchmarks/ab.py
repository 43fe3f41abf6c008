#!/usr/bin/env python3
"""A/B two builds of the same benchmark binary, alternating processes.

    benchmarks/ab.py A_BIN B_BIN --filter REGEX [--rounds 5] [--min-time 0.2]
                     [--label-a A] [--label-b B] [--json OUT]

Runs A_BIN and B_BIN (Google Benchmark binaries, e.g. an old checkout's
build/release/benchmarks/bench_core and this one's) in turns, A B A B ...,
`rounds` times each, with the same filter, and prints for every case each
side's figure, their ratio B/A, and the spread (max/min) of each side.

The figure is report.py's (benchlib.QUANTITY): the median, over the
samples, of the time per item in ns on the case's own clock; here a
sample is one process's run of the case, so --rounds (5 or more) is the
number of samples per side. An A/B ratio is thus a ratio of two rows as
report.py would show them. Alternating processes spreads a change in the
machine's load over both sides instead of landing on one; the spreads say
how far to trust a ratio.

A_BIN or B_BIN may instead be a JSON file Google Benchmark wrote (such as
benchmarks/results/<machine>/core/<date>.json): it is read, not run, and
stands for every round of its side; `ab.py F F --filter X` with one
results file on both sides prints the figures report.py shows for it.
Python 3 standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def run_once(binary, flt, min_time):
    """{case name: Case} of one process of binary (or of a JSON file)."""
    if binary.endswith(".json"):
        data = benchlib.read(binary)
        found = benchlib.cases(data)
        return {k: c for k, c in found.items() if re.search(flt, k)}
    out = subprocess.run(
        [binary, f"--benchmark_filter={flt}", f"--benchmark_min_time={min_time}",
         "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    return benchlib.cases(json.loads(out))


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Figures: " + benchlib.QUANTITY + ".")
    ap.add_argument("a", help="A's benchmark binary, or a Google Benchmark JSON file")
    ap.add_argument("b", help="B's benchmark binary, or a Google Benchmark JSON file")
    ap.add_argument("--filter", required=True, help="passed to --benchmark_filter")
    ap.add_argument("--rounds", type=int, default=5,
                    help="processes per side, the samples of each figure (default 5)")
    ap.add_argument("--min-time", default="0.2", help="--benchmark_min_time of each process")
    ap.add_argument("--label-a", default="A")
    ap.add_argument("--label-b", default="B")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    both_files = args.a.endswith(".json") and args.b.endswith(".json")
    rounds = 1 if both_files else args.rounds
    if rounds < 5 and not both_files:
        print("ab.py: fewer than 5 rounds: the medians rest on %d samples" % rounds,
              file=sys.stderr)

    # Every process's samples of a case, pooled per side; a JSON file's
    # cases are taken once (its own repetitions are its samples).
    pooled = {"a": {}, "b": {}}
    for r in range(rounds):
        for side, binary in (("a", args.a), ("b", args.b)):
            if binary.endswith(".json") and r > 0:
                continue
            for name, c in run_once(binary, args.filter, args.min_time).items():
                have = pooled[side].get(name)
                if have is None:
                    pooled[side][name] = c
                else:
                    have.samples += c.samples
                    have.iter_ns += c.iter_ns
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)

    def spread(c):
        """Slowest / fastest sample; None with fewer than two (a file of
        aggregates only)."""
        got = [s[0] for s in c.samples if s[0] is not None] or c.iter_ns
        return max(got) / min(got) if len(got) >= 2 else None

    def fmt_spread(v):
        return f"{v:9.2f}" if v is not None else f"{'n/a':>9}"

    rows = []
    print(f"{'case':44} {args.label_a + ' ns':>14} {args.label_b + ' ns':>14} "
          f"{'B/A':>6} {'spread A':>9} {'spread B':>9}")
    for name, ca in pooled["a"].items():
        cb = pooled["b"].get(name)
        if cb is None or ca.error or cb.error:
            continue
        ma, mb = ca.ns, cb.ns
        if not ma or mb is None:
            continue
        row = {"case": ca.name, "median_a_ns": ma, "median_b_ns": mb, "ratio_b_a": mb / ma,
               "spread_a": spread(ca), "spread_b": spread(cb), "rounds": rounds,
               "per_item": ca.ns_per_item is not None}
        rows.append(row)
        print(f"{ca.name:44} {ma:14.2f} {mb:14.2f} {mb / ma:6.3f} "
              f"{fmt_spread(row['spread_a'])} {fmt_spread(row['spread_b'])}"
              + ("" if row["per_item"] else "   (per iteration: no items counted)"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.label_a, "b": args.label_b, "filter": args.filter,
                       "quantity": benchlib.QUANTITY, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
