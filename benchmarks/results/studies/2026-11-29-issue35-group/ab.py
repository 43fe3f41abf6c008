#!/usr/bin/env python3
"""ab.py OUT.tsv REPS PEERBIN LABEL=WEFTBIN...: the task group fib (the
side-by-side kit's fibgroup row) for several weft builds and both peers in
one run: within each repetition, at T = 1 then T = 2, one process per
cell in turn (every build's w_kit and w_kit_cpp, then Taskflow's
TaskGroup and oneTBB's task_group), so that the builds and peers
alternate under the same load. Lines as the kit's run.py writes them
(row, rep, cell, T, the process's median ms, 1-minute load, wall s),
and an eighth column: the process's CPU seconds (user + system, all its
rounds and its setup), a figure the machine's load disturbs less;
cells weft_LABEL, weft_cpp_LABEL, taskflow, oneTBB. KIT_FIB_ROW names the
row (default fibgroup), e.g. for builds made with -DKIT_FIB=30."""
import os, resource, subprocess, sys, time

OUT, REPS, PB, BUILDS = sys.argv[1], int(sys.argv[2]), sys.argv[3], [a.split("=", 1) for a in sys.argv[4:]]
ROW = os.environ.get("KIT_FIB_ROW", "fibgroup")
cells = []
for label, wb in BUILDS:
    cells += [("weft_" + label, [os.path.join(wb, "w_kit"), "fibgroup"]),
              ("weft_cpp_" + label, [os.path.join(wb, "w_kit_cpp"), "fibgroup"])]
cells += [("taskflow", [os.path.join(PB, "tf_kit"), "fibtg"]), ("oneTBB", [os.path.join(PB, "tbb_kit"), "fib"])]
for rep in range(REPS):
    for t in ("1", "2"):
        for cell, argv in cells:
            t0 = time.time()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p = subprocess.run(argv + [t, "5", "1"], capture_output=True, text=True, timeout=600)
            out = p.stdout.strip().splitlines()
            if p.returncode != 0 or not out or "WRONG" in out[-1]:
                sys.exit("%s T=%s failed: rc %d %s %s" % (cell, t, p.returncode, p.stdout, p.stderr))
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
            with open(OUT, "a") as f:
                f.write("%s\t%d\t%s\t%s\t%s\t%.2f\t%.1f\t%.3f\n" % (ROW, rep, cell, t, out[-1].split()[-1],
                                                                    os.getloadavg()[0], time.time() - t0, cpu))
    print("rep %d done %s" % (rep, time.strftime("%H:%M:%S")), file=sys.stderr, flush=True)
