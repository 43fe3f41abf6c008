#!/usr/bin/env bash
# A/B of two weft builds on graph building and running, alternating
# processes (A B A B ...), for a change to src/graph:
#
#   benchmarks/graph_ab.sh A_BUILD B_BUILD OUT_DIR [ROUNDS]
#
# A_BUILD and B_BUILD are release build directories (each holding
# benchmarks/bench_graph and benchmarks/graph_phases, or a graph_phases
# built from this tree's benchmarks/graph_phases.c against the other's
# libweft.a). OUT_DIR is a study's folder,
# benchmarks/results/studies/<date>-<topic>/ (benchmarks/results/README.md),
# where a README.md says what was compared. Writes into OUT_DIR:
#   graph_ab.txt      benchmarks/ab.py over bench_graph's warm and brd rows
#                     (weft, oneTBB and sequential, 1 and 2 threads)
#   phases_a.jsonl    graph_phases lines of A, phases_b.jsonl of B: chain,
#                     tree, wave, independent and backchain of 2^20 tasks at 1 and 2
#                     threads, 5 repetitions per process, ROUNDS processes
#   memory.jsonl      graph_phases memory 2^23 of A then B, 3 times
set -euo pipefail
a=$1 b=$2 out=$3 rounds=${4:-5}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
: > "$out/phases_a.jsonl"
: > "$out/phases_b.jsonl"
: > "$out/memory.jsonl"
for r in $(seq "$rounds"); do
    for shape in chain tree wave independent backchain; do
        for t in 1 2; do
            "$a/benchmarks/graph_phases" "$shape" 1048576 "$t" 5 >> "$out/phases_a.jsonl"
            "$b/benchmarks/graph_phases" "$shape" 1048576 "$t" 5 >> "$out/phases_b.jsonl"
        done
    done
done
for r in 1 2 3; do
    echo "{\"side\":\"a\",\"result\":$("$a/benchmarks/graph_phases" memory 8388608)}" >> "$out/memory.jsonl"
    echo "{\"side\":\"b\",\"result\":$("$b/benchmarks/graph_phases" memory 8388608)}" >> "$out/memory.jsonl"
done
python3 "$here/ab.py" "$a/benchmarks/bench_graph" "$b/benchmarks/bench_graph" \
    --filter '(chain_2\^20|chain_2\^23|tree_2\^20|wavefront_1024|wavefront_4096_8x8|matmul_512|parallel_10\^6)_(brd_)?(t1|t2|seq)/(weft|tbb|sequential)' \
    --rounds "$rounds" --min-time 0.2 --label-a A --label-b B --json "$out/graph_ab.json" | tee "$out/graph_ab.txt"
