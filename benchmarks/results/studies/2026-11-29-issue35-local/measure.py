# measure.py OUT.tsv REPS DIR_BASE DIR_NEW TF_KIT: alternating processes, as the sfjoin study's measure.py.
# Each cell runs twice, 4 and 24 rounds (after one untimed round each); its CPU ms per round is the
# difference of the two processes' user + system time over 20 rounds, its wall the 24-round process's
# median round. DIR_*: w_kit and w_kit_cpp built against main's and the branch's libweft.a.
import subprocess, resource, sys, os
out, reps = sys.argv[1], int(sys.argv[2])
A, B, TF = sys.argv[3:6]
cells = [("main_sum", A + "/w_kit", "fib"), ("branch_sum", B + "/w_kit", "fib"),
         ("main_join", A + "/w_kit", "fibjoin"), ("branch_join", B + "/w_kit", "fibjoin"),
         ("main_cpp", A + "/w_kit_cpp", "fib"), ("branch_cpp", B + "/w_kit_cpp", "fib"),
         ("taskflow_join", TF, "fib"), ("taskflow_sum", TF, "fibsum")]
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
                if "WRONG" in p.stdout:
                    sys.exit("WRONG: " + name)
                cpu = (c[1] - c[0]) * 1000 / (R - 4)
                ms = float(p.stdout.split()[-1])
                f.write("%d\t%s\t%d\t%.3f\t%.3f\t%.1f\n" % (rep, name, T, ms, cpu, os.getloadavg()[0]))
                f.flush()
