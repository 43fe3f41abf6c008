#!/usr/bin/env python3
"""run.py BIN OUT.tsv REPS ROW...: the side-by-side cells, one process
per cell, cells alternating within each repetition (rows 1-4: every
program at T = 1 and 2; row 5: 20 processes per program with a busy loop
on one core). Appends one line per process to OUT.tsv: row, rep, cell,
T, the process's figure (its median ns per unit; row 5: seconds), the
1-minute load average when it ended. A process that fails or prints
WRONG stops the run. ROW: rw pin spawn cond pp idle."""
import os, subprocess, sys, time

BIN, OUT, REPS, ROWS = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
ROUNDS = "5"   # timed rounds per process (after one untimed)
CELLS = {   # row: (N per round, [(cell, program, extra args)])
    "rw": ("10000", [("weft", "w_rw", []), ("weft_bound", "w_rw", ["bound"]), ("taskflow", "tf_rw", []), ("scheduling", "sc_rw", []),
                     ("enkiTS", "en_rw", []), ("oneTBB", "tbb_rw", []), ("OpenMP", "omp_rw", [])]),
    "pin": ("5000", [("weft", "w_pin", []), ("enkiTS", "en_pin", []), ("enkiTS_C", "en_pin_c", [])]),
    "spawn": ("1000000", [("weft_bound", "w_spawn", ["bound"]), ("weft_plain", "w_spawn", ["plain"]),
                          ("enkiTS", "en_spawn", []), ("enkiTS_C", "en_spawn_c", []),
                          ("marl", "marl_spawn", []), ("taskflow", "tf_spawn", []),
                          ("scheduling", "sc_spawn", []), ("oneTBB", "tbb_spawn", []),
                          ("OpenMP", "omp_spawn", [])]),
    "cond": ("1000000", [("weft", "w_cond", []), ("weft_bound", "w_cond", ["bound"]), ("taskflow", "tf_cond", []), ("oneTBB", "tbb_cond", [])]),
}
PP = [("weft_event", ["w_pp", "e"]), ("weft_channel", ["w_pp", "c"]), ("marl_event", ["marl_pp", "e"])]
PP_N, PP_PROCS = "100000", 20

def one(row, rep, cell, t, argv, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([os.path.join(BIN, argv[0])] + argv[1:], capture_output=True, text=True,
                           timeout=timeout)
        out = p.stdout.strip().splitlines()
        if p.returncode != 0 or not out or "WRONG" in out[-1]:
            sys.exit("%s %s T=%s failed: rc %d %s %s" % (row, cell, t, p.returncode, p.stdout, p.stderr))
        v = out[-1].split()[-1]
    except subprocess.TimeoutExpired:
        v = "timeout>%d" % timeout
    with open(OUT, "a") as f:
        f.write("%s\t%d\t%s\t%s\t%s\t%.2f\t%.1f\n" % (row, rep, cell, t, v, os.getloadavg()[0],
                                                      time.time() - t0))

for row in ROWS:
    if row in CELLS:
        n, cells = CELLS[row]
        for rep in range(REPS):
            for t in ("1", "2"):
                for cell, prog, extra in cells:
                    one(row, rep, cell, t, [prog, t, n, ROUNDS] + extra, 300)
    elif row == "pp":
        busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        try:
            for rep in range(PP_PROCS):
                for cell, argv in PP:
                    one(row, rep, cell, "2", argv + [PP_N], 60)
        finally:
            busy.kill()
    elif row == "idle":
        for rep in range(3):
            for t in ("1", "2"):
                p = subprocess.run([os.path.join(BIN, "w_idle"), t, "3"], capture_output=True, text=True)
                with open(OUT, "a") as f:
                    f.write("idle\t%d\t%s\t%s\t%.2f\n" % (rep, t, p.stdout.strip(), os.getloadavg()[0]))
