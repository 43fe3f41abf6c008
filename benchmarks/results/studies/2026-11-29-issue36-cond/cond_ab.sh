#!/bin/bash
# The condition-loop row, one process per cell, cells alternating:
#   cond_ab.sh A_DIR B_DIR TF_COND REPS > cells.tsv
# A_DIR, B_DIR: each holds bench_graph and weft_cond (weft_cond.c here)
# built from main and from the branch; TF_COND: tf_cond.cpp here, built
# against a fetched Taskflow. Prints one line per process: rep, cell,
# threads, ns per loop iteration (bench_graph: its real time per
# benchmark iteration / 10^6; weft_cond and tf_cond: their own mean over
# 10 runs of 10^6 iterations).
set -e
A=$1; B=$2; TF=$3; REPS=${4:-7}
gb() {   # BIN FILTER -> ns per loop iteration
    "$1" --benchmark_filter="$2" --benchmark_format=json 2>/dev/null |
        python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(b["real_time"] * {"ms": 1e6, "us": 1e3, "ns": 1}[b["time_unit"]] / 1e6)'
}
for r in $(seq "$REPS"); do
    for t in 1 2; do
        echo -e "$r\tmain_weft\t$t\t$(gb "$A/bench_graph" "^condloop_t$t/weft/")"
        echo -e "$r\tbranch_weft\t$t\t$(gb "$B/bench_graph" "^condloop_t$t/weft/")"
        echo -e "$r\tbranch_chain2\t$t\t$(gb "$B/bench_graph" "^condloop_t$t/weft_chain2/")"
        echo -e "$r\ttbb_flow\t$t\t$(gb "$B/bench_graph" "^condloop_t$t/tbb/")"
        echo -e "$r\ttaskflow\t$t\t$("$TF" "$t" 1000000 10 | awk '{print $3}')"
        echo -e "$r\tmain_weft_self\t$t\t$("$A/weft_cond" "$t" 1000000 10 self | awk '{print $3}')"
        echo -e "$r\tbranch_weft_self\t$t\t$("$B/weft_cond" "$t" 1000000 10 self | awk '{print $3}')"
        echo -e "$r\ttaskflow_self\t$t\t$("$TF" "$t" 1000000 10 self | awk '{print $3}')"
    done
done
