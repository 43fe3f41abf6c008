# measure.py OUT.tsv REPS W_KIT_MAIN W_KIT_BRANCH TF_KIT: alternating processes; CPU time (user+sys) per round from a 24-round and a 4-round
# process of each cell (their difference over 20 rounds), and the 24-round process's median wall ms.
import subprocess, resource, sys, os, time
out, reps = sys.argv[1], int(sys.argv[2])
A, B, TF = sys.argv[3:6]   # the side-by-side's w_kit.c built against main's and the branch's libweft.a; its tf_kit
cells = [("main", A, "fibjoin"), ("branch", B, "fibjoin"), ("taskflow_join", TF, "fib"),
         ("main_sum", A, "fib"), ("branch_sum", B, "fib"), ("taskflow_sum", TF, "fibsum")]
R = 24
with open(out, "w") as f:
    f.write("rep\tcell\tT\tms\tcpu_ms_per_round\tload\n")
    for rep in range(reps):
        for T in (1, 2):
            for name, exe, k in cells:
                c = []
                for RR in (4, R):
                    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    p = subprocess.run([exe, k, str(T), str(RR)], capture_output=True, text=True, check=True)
                    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    c.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
                cpu = (c[1] - c[0]) * 1000 / (R - 4)   # per timed round: setup and the first round cancel
                ms = float(p.stdout.split()[-1])
                f.write("%d\t%s\t%d\t%.3f\t%.3f\t%.1f\n" % (rep, name, T, ms, cpu, os.getloadavg()[0]))
                f.flush()
