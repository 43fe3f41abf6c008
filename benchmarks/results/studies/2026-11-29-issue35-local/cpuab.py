# cpuab.py REPS KERNEL T EXE... : alternating processes; CPU ms per round (24-round minus 4-round process, over 20 rounds); medians.
import subprocess, resource, sys, statistics as st, os
reps, k, T = int(sys.argv[1]), sys.argv[2], sys.argv[3]; exes = sys.argv[4:]
res = {e: [] for e in exes}
for r in range(reps):
    for e in exes:
        c = []
        for RR in (4, 24):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([e, k, T, str(RR)], capture_output=True, check=True)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            c.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        res[e].append((c[1] - c[0]) * 1000 / 20)
for e in exes:
    print("%-14s %s CPU ms/round median %.2f  (%s)" % (e, k, st.median(res[e]), " ".join("%.2f" % x for x in res[e])))
print("load", os.getloadavg()[0])
