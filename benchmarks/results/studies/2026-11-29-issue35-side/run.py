#!/usr/bin/env python3
"""run.py WEFTBIN PEERBIN OUT.tsv REPS ROW...: the side-by-side cells,
one process per cell, cells alternating within each repetition (every
program of the row at T = 1, then T = 2), the repetitions one after
another. Appends one line per process to OUT.tsv: row, rep, cell, T, the
process's figure (the median ms per round of its timed rounds), the
1-minute load average when it ended, the process's wall seconds. A
process that fails or prints WRONG stops the run.
ROW: fib fibgroup chain wave pipe (lines 1, 2, 4, 8) algo (transform scan
sort). fibgroup: the task group fib, weft_group (w_kit) and
weft::task_group (w_kit_cpp) against Taskflow's TaskGroup (tf_kit fibtg)
and oneTBB's task_group (tbb_kit fib)."""
import os, subprocess, sys, time

WB, PB, OUT, REPS, ROWS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
W = lambda p: os.path.join(WB, p)
P = lambda p: os.path.join(PB, p)
ROUNDS = "5"   # timed rounds per process, after one untimed
FLOW = lambda k: [("weft", [W("w_kit"), k]), ("weft_cpp", [W("w_kit_cpp"), k]),
                  ("taskflow", [P("tf_kit"), k]), ("oneTBB", [P("tbb_kit"), k])]
CELLS = {
    "fib": [("weft", [W("w_kit"), "fib"]), ("weft_join", [W("w_kit"), "fibjoin"]),
            ("weft_cpp", [W("w_kit_cpp"), "fib"]), ("taskflow", [P("tf_kit"), "fib"]),
            ("taskflow_sum", [P("tf_kit"), "fibsum"]), ("taskflow_tg", [P("tf_kit"), "fibtg"]),
            ("oneTBB", [P("tbb_kit"), "fib"])],
    "fibgroup": [("weft", [W("w_kit"), "fibgroup"]), ("weft_cpp", [W("w_kit_cpp"), "fibgroup"]),
                 ("taskflow", [P("tf_kit"), "fibtg"]), ("oneTBB", [P("tbb_kit"), "fib"])],
}
for k in ("chain", "wave", "transform", "scan", "sort"):
    CELLS[k] = FLOW(k)
GROUPS = {"fib": ["fib"], "fibgroup": ["fibgroup"], "chain": ["chain"], "wave": ["wave"],
          "pipe": ["pipe_L1", "pipe_L2", "pipe_L4", "pipe_L8"], "algo": ["transform", "scan", "sort"]}


def one(row, rep, cell, t, argv):
    t0 = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0 or not out or "WRONG" in out[-1]:
        sys.exit("%s %s T=%s failed: rc %d %s %s" % (row, cell, t, p.returncode, p.stdout, p.stderr))
    with open(OUT, "a") as f:
        f.write("%s\t%d\t%s\t%s\t%s\t%.2f\t%.1f\n" % (row, rep, cell, t, out[-1].split()[-1], os.getloadavg()[0],
                                                      time.time() - t0))


rows = [r for g in ROWS for r in GROUPS[g]]
for rep in range(REPS):
    for row in rows:
        if row.startswith("pipe_L"):
            lines, cells = row[6:], [(c, a[:1] + ["pipe"]) for c, a in FLOW("pipe")]
        else:
            lines, cells = "1", CELLS[row]
        for t in ("1", "2"):
            for cell, argv in cells:
                one(row, rep, cell, t, argv + [t, ROUNDS, lines])
    print("rep %d done %s" % (rep, time.strftime("%H:%M:%S")), file=sys.stderr, flush=True)
