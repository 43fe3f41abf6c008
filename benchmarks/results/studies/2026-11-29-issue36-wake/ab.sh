#!/bin/bash
# ab.sh R OUT prog... : R alternating repetitions at T=1 and T=2; median of process medians, ratios vs en_pin
R=$1; out=$2; shift 2; : > $out
for r in $(seq $R); do for t in 1 2; do for p in "$@"; do echo "$p $t $(./$p $t 5000 5 | awk '{print $NF}')" >> $out; done; done; done
echo "load: $(cat /proc/loadavg)" >> $out
python3 - $out "$@" <<'PY'
import sys, statistics as st
out, progs = sys.argv[1], sys.argv[2:]
rows = [l.split() for l in open(out) if not l.startswith("load")]
for t in ("1", "2"):
    med = {p: st.median(float(r[2]) for r in rows if r[0] == p and r[1] == t) for p in progs}
    print("T=%s " % t + "  ".join("%s %.0f ns (en/x %.2f)" % (p, m, med["en_pin"] / m) for p, m in med.items()))
PY
