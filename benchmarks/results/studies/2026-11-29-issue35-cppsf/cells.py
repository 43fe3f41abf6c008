# cells.py OUT.tsv REPS NAME=EXE:KERNEL ...: per repetition, per T in (1, 2), every cell once, the order rotated
# each repetition; CPU ms per round = (24-round process - 4-round process) user+sys over 20 rounds; wall: the
# 24-round process's own median ms per round; load: 1-minute load average when the cell ended.
import subprocess, resource, sys, os
out, reps = sys.argv[1], int(sys.argv[2])
cells = [(c.split("=")[0], c.split("=")[1].split(":")[0], c.split("=")[1].split(":")[1]) for c in sys.argv[3:]]
Ts = [int(t) for t in os.environ.get("TS", "1 2").split()]
def cpu(exe, k, T):
    c = []
    for RR in (4, 24):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([exe, k, str(T), str(RR)], capture_output=True, text=True, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if "WRONG" in p.stdout: sys.exit("WRONG " + exe)
        c.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return (c[1] - c[0]) * 1000 / 20, float(p.stdout.split()[-1])
with open(out, "w") as f:
    f.write("rep\tT\tcell\tcpu_ms_per_round\twall_ms\tload\n")
    for rep in range(reps):
        for T in Ts:
            n = len(cells); order = cells[rep % n:] + cells[:rep % n]
            for name, exe, k in order:
                c, w = cpu(exe, k, T)
                f.write("%d\t%d\t%s\t%.3f\t%.3f\t%.1f\n" % (rep, T, name, c, w, os.getloadavg()[0])); f.flush()
