import sys, statistics as st, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
v = collections.defaultdict(dict); load = collections.defaultdict(list)
for rep, form, T, cell, c, w, l in rows:
    v[(form, int(T), cell)][int(rep)] = (float(c), float(w)); load[(form, int(T))].append(float(l))
print("| form | T | main CPU ms | branch CPU ms | Taskflow CPU ms | main / branch (paired) | Taskflow / branch (paired) | Taskflow / main (paired) | branch wall ms | Taskflow wall ms | load |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for form in ("sum", "join", "cpp_sum"):
    for T in (1, 2):
        m, b, t = v[(form, T, "main")], v[(form, T, "branch")], v[(form, T, "taskflow")]
        reps = sorted(set(m) & set(b) & set(t))
        med = lambda d, i=0: st.median(d[r][i] for r in reps)
        pr = lambda x, y: st.median(x[r][0] / y[r][0] for r in reps)
        print("| %s | %d | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.2fx | %.2f | %.2f | %.1f-%.1f (%d reps) |" % (
            form, T, med(m), med(b), med(t), pr(m, b), pr(t, b), pr(t, m), med(b, 1), med(t, 1), min(load[(form, T)]), max(load[(form, T)]), len(reps)))
