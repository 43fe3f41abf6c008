# cellsum.py OUT.tsv REF: per T, each cell's median CPU and wall, and the median of per-repetition ratios cell/REF
# and REF/cell (> 1 in the second: the reference takes less CPU than... read as other / ref), load range.
import sys, statistics as st, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
ref = sys.argv[2]
v = collections.defaultdict(dict); load = collections.defaultdict(list); names = []
for rep, T, cell, c, w, l in rows:
    v[(int(T), cell)][int(rep)] = (float(c), float(w)); load[int(T)].append(float(l))
    if cell not in names: names.append(cell)
for T in sorted(load):
    print("T=%d load %.1f-%.1f" % (T, min(load[T]), max(load[T])))
    r = v[(T, ref)]
    for n in names:
        x = v[(T, n)]; reps = sorted(set(x) & set(r))
        print("  %-12s cpu %7.2f  wall %7.2f  %s/%s %.3f  (%d reps)" % (n, st.median(x[i][0] for i in reps), st.median(x[i][1] for i in reps),
              n, ref, st.median(x[i][0] / r[i][0] for i in reps), len(reps)))
