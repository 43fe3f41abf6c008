import subprocess, sys, re, collections
# cgline.py A B CALLS [FILESUBSTR]: per source line Ir (B - A) / CALLS, inclusive of nothing
def lines(f):
    out = subprocess.run(["callgrind_annotate", "--auto=yes", "--show-percs=no", "--context=100000", f],
                         capture_output=True, text=True).stdout.splitlines()
    d = collections.Counter(); src = {}
    cur = None; ln = 0
    for l in out:
        m = re.match(r"-- Auto-annotated source: (.*)", l)
        if m: cur = m.group(1).strip(); ln = 0; continue
        if cur is None: continue
        if l.startswith("-- "): 
            m = re.match(r"-- line (\d+)", l)
            if m: ln = int(m.group(1)) - 1
            continue
        m = re.match(r"\s*([\d,]+|\.)\s\s(.*)$", l)
        if not m: continue
        if m.group(2).lstrip().startswith("=>") or "events annotated" in m.group(2): continue
        ln += 1
        if m.group(1) != ".":
            d[(cur, ln)] += int(m.group(1).replace(",", ""))
        src[(cur, ln)] = m.group(2)
    return d, src
(a, sa), (b, sb) = lines(sys.argv[1]), lines(sys.argv[2]); calls = float(sys.argv[3])
filt = sys.argv[4] if len(sys.argv) > 4 else ""
rows = [(k, (b[k] - a[k]) / calls) for k in set(a) | set(b) if filt in k[0]]
rows.sort(key=lambda r: (r[0][0], r[0][1]))
tot = 0
for (f, ln), v in rows:
    if abs(v) >= 0.5:
        tot += v
        print("%7.1f %s:%d  %s" % (v, f.split('/')[-1], ln, (sb.get((f, ln)) or sa.get((f, ln), ""))[:110].strip()))
print("total %.1f" % tot)
