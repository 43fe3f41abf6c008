# pair.py OUT.tsv REPS MAIN_DIR BRANCH_DIR TF_KIT: (each DIR holds w_kit and w_kit_cpp) per repetition, per T in (1, 2), per form, the main, branch and Taskflow processes back to back
# (alternating which of main and branch goes first); CPU ms per round as measure.py (24-round minus 4-round process
# over 20 rounds); prints medians of each cell and the median of the per-repetition ratios main/branch, Taskflow/branch.
import subprocess, resource, sys, os, statistics as st
out, reps = sys.argv[1], int(sys.argv[2])
A, B, TF = sys.argv[3:6]
forms = [("sum", A + "/w_kit", B + "/w_kit", "fib", TF, "fibsum"),
         ("join", A + "/w_kit", B + "/w_kit", "fibjoin", TF, "fib"),
         ("cpp_sum", A + "/w_kit_cpp", B + "/w_kit_cpp", "fib", TF, "fibsum")]
def cpu(exe, k, T):
    c = []
    for RR in (4, 24):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([exe, k, str(T), str(RR)], capture_output=True, text=True, check=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if "WRONG" in p.stdout: sys.exit("WRONG " + exe)
        c.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return (c[1] - c[0]) * 1000 / 20, float(p.stdout.split()[-1])
rows = []
with open(out, "w") as f:
    f.write("rep\tform\tT\tcell\tcpu_ms_per_round\twall_ms\tload\n")
    for rep in range(reps):
        for T in (1, 2):
            for form, a, b, k, tf, tk in forms:
                order = [("main", a, k), ("branch", b, k)]
                if rep % 2: order.reverse()
                for name, exe, kk in order + [("taskflow", tf, tk)]:
                    c, w = cpu(exe, kk, T)
                    f.write("%d\t%s\t%d\t%s\t%.3f\t%.3f\t%.1f\n" % (rep, form, T, name, c, w, os.getloadavg()[0])); f.flush()
