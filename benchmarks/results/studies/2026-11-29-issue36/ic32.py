import subprocess, os, sys, json, tempfile
# usage: ic32.py A_DIR B_DIR  (each holds ab32 and icount)
def fibspawns(n):
    x, y = 0, 1
    for _ in range(n + 1): x, y = y, x + y
    return x - 1
W = {"spawn": ("icount", ["spawn"], (25, 50), "40", lambda a, b: (b - a) * 40),
     "steal": ("icount", ["steal"], (100, 200), "20", lambda a, b: (b - a) * 20),
     "fib": ("icount", ["fib"], (18, 20), "2", lambda a, b: (fibspawns(b) - fibspawns(a)) * 2),
     "chain": ("ab32", ["chain"], (1024, 2048), "10", lambda a, b: (b - a) * 10),
     "tree": ("ab32", ["tree"], (1023, 2047), "10", lambda a, b: (b - a) * 10),
     "wavefront": ("ab32", ["wavefront"], (32, 45), "10", lambda a, b: (b * b - a * a) * 10),
     "pingpong": ("ab32", ["pingpong"], (1000, 2000), "10", lambda a, b: (b - a) * 10)}
def total(exe, args):
    out = os.path.join(tempfile.gettempdir(), "cg32.%d.out" % os.getpid())
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", "--callgrind-out-file=" + out] + [exe] + args,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for line in open(out):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
res = {}
for side, d in (("A", sys.argv[1]), ("B", sys.argv[2])):
    for k, (prog, mode, sizes, rounds, items) in W.items():
        t = [total(os.path.join(d, prog), mode + [str(s), rounds]) for s in sizes]
        res.setdefault(k, {})[side] = (t[1] - t[0]) / items(*sizes)
for k, v in res.items():
    print("%-9s A %9.1f  B %9.1f  B/A %.4f" % (k, v["A"], v["B"], v["B"] / v["A"]))
json.dump(res, open(sys.argv[3] if len(sys.argv) > 3 else "ic32.json", "w"), indent=1)
