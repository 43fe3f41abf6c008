import subprocess, sys, re, collections
def fns(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", f], capture_output=True, text=True).stdout
    d = collections.Counter()
    for l in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(\S+?):(\S+)", l)
        if m:
            d[m.group(3)] += int(m.group(1).replace(",", ""))
    return d
a, b = fns(sys.argv[1]), fns(sys.argv[2]); calls = float(sys.argv[3])
diff = {k: (b[k] - a[k]) / calls for k in set(a) | set(b)}
tot = 0
for k, v in sorted(diff.items(), key=lambda kv: -abs(kv[1])):
    tot += v
    if abs(v) >= 2: print("%8.1f  %s" % (v, k))
print("total %.1f" % tot)
